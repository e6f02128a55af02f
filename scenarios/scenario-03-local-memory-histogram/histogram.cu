// Scenario 03: for every 256-byte record, a 16-bin histogram of the high nibbles of its bytes
// (a cheap entropy estimate, e.g. to decide which blocks of a file are worth compressing).
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c -Xptxas -v`.
// No headers: NVRTC has no host include path.
//
// One thread per record. The records are stored word-interleaved: word w (bytes 4w .. 4w+3) of
// record r is words[w * records + r], so that the 32 threads of a warp read 32 consecutive words
// (128 bytes) at every step. Counts are written bin-major, counts[b * records + r], for the same
// reason. Global memory is coalesced in both kernels; they differ only in where the 16 counters live.

constexpr int BINS = 16;            // one bin per value of the high nibble
constexpr int WORDS = 64;           // 256-byte records, read 4 bytes at a time
constexpr int THREADS = 256;        // threads per block

__device__ __forceinline__ unsigned bin_of(unsigned word, int byte)
{
    return (word >> (8 * byte + 4)) & (BINS - 1);
}

// slow: a per-thread array indexed by the data. Registers cannot be indexed at run time, so the
// compiler places `hist` in local memory (ptxas: "64 bytes stack frame", no spills): every
// increment is a local load and a local store, 8 bytes of L1 traffic per byte of input, and the 32
// threads of a warp hit up to 32 different 32-byte sectors because their bins differ.
extern "C" __global__ void __launch_bounds__(THREADS)
nibble_hist_local(const unsigned* __restrict__ words, int* __restrict__ counts, int records)
{
    const int r = blockIdx.x * THREADS + threadIdx.x;
    if (r >= records) return;
    int hist[BINS];
#pragma unroll
    for (int b = 0; b < BINS; ++b) hist[b] = 0;
    for (int w = 0; w < WORDS; ++w) {
        const unsigned word = words[(long long)w * records + r];
#pragma unroll
        for (int k = 0; k < 4; ++k) hist[bin_of(word, k)] += 1;
    }
#pragma unroll
    for (int b = 0; b < BINS; ++b) counts[(long long)b * records + r] = hist[b];
}

// fixed: the same counters in shared memory, one column per thread: hist[b][t] is word
// b * THREADS + t, in bank t % 32 whatever b is, so a warp's 32 increments always touch 32
// different banks (no conflict) and need no atomics (each thread owns its column).
extern "C" __global__ void __launch_bounds__(THREADS)
nibble_hist_shared(const unsigned* __restrict__ words, int* __restrict__ counts, int records)
{
    __shared__ int hist[BINS][THREADS];
    const int t = threadIdx.x;
    const int r = blockIdx.x * THREADS + t;
    if (r >= records) return;
#pragma unroll
    for (int b = 0; b < BINS; ++b) hist[b][t] = 0;
    for (int w = 0; w < WORDS; ++w) {
        const unsigned word = words[(long long)w * records + r];
#pragma unroll
        for (int k = 0; k < 4; ++k) hist[bin_of(word, k)][t] += 1;
    }
#pragma unroll
    for (int b = 0; b < BINS; ++b) counts[(long long)b * records + r] = hist[b][t];
}
