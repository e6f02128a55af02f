// Scenario 05: sum a dictionary-encoded column, segment by segment, with the dictionary cached in
// shared memory.
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c -Xptxas -v`.
// No headers: NVRTC has no host include path.
//
// A column store keeps a column as 128-byte pages of 31 codes (indices into a 16,384-entry dictionary
// of float values) and, in the last word, the index of the segment's next page (-1 after the last).
// The pages of all segments are interleaved in one pool. The kernel sums the decoded values of each
// segment: one warp walks one segment's pages (lane i reads word i: one coalesced 128-byte request),
// each lane decodes its code through the dictionary, and lane 31's word says where the next page is.
// That next load cannot start before this one returns: each warp has one load in flight and waits a
// full memory round trip per page, so the kernel is latency-bound and an SM goes as fast as the
// number of warps it holds.
//
// The dictionary, 64 KB of floats, is copied into each block's shared memory once (dynamic shared
// memory: the launch passes DICT * 4 bytes). That 64 KB, plus the 1 KB the system reserves per block,
// lets three blocks share an SM's 228 KB whatever their size; the block size decides how many warps
// those three blocks bring. The two kernels are the same code with 128 and 1024 threads per block.

constexpr int LANES = 32;                 // one warp per segment at a time; lane 31 carries the link
constexpr int DICT = 16384;               // dictionary entries: codes are 14 bits
constexpr int SEGMENTS_PER_WARP = 8;      // each warp walks 8 segments in turn: the copy of the
                                          // dictionary is paid once per block, not once per segment
constexpr unsigned FULL = 0xffffffffu;

template <int THREADS>
__device__ __forceinline__ void sum_segments(const int* __restrict__ pages, const int* __restrict__ heads,
                                             const float* __restrict__ dictionary, float* __restrict__ sums,
                                             int segments)
{
    extern __shared__ float4 dict4[];     // DICT floats, copied 16 bytes at a time
    const float4* src = reinterpret_cast<const float4*>(dictionary);
#pragma unroll 8
    for (int i = 0; i < DICT / 4 / THREADS; ++i) dict4[i * THREADS + threadIdx.x] = src[i * THREADS + threadIdx.x];
    __syncthreads();
    const float* dict = reinterpret_cast<const float*>(dict4);

    const int lane = threadIdx.x % LANES;
    const int warp = blockIdx.x * (THREADS / LANES) + threadIdx.x / LANES;
    for (int k = 0; k < SEGMENTS_PER_WARP; ++k) {
        const int segment = warp * SEGMENTS_PER_WARP + k;
        if (segment >= segments) return;  // whole warps: the bound is the same for every lane
        float s = 0.0f;
        for (int page = heads[segment]; page >= 0;) {
            const int word = pages[(long long)page * LANES + lane];
            page = __shfl_sync(FULL, word, LANES - 1);                        // the link
            if (lane < LANES - 1) s += dict[word & (DICT - 1)];             // decode, off the chain
        }
#pragma unroll
        for (int o = LANES / 2; o > 0; o /= 2) s += __shfl_xor_sync(FULL, s, o);
        if (lane == 0) sums[segment] = s;
    }
}

// slow: 128 threads share a 64 KB dictionary. Three such blocks fill the SM's shared memory (3 x 65 KB
// of 228 KB with the reserved 1 KB per block), so an SM holds 3 x 4 = 12 of its 64 warps.
extern "C" __global__ void __launch_bounds__(128)
sum_segments_128(const int* __restrict__ pages, const int* __restrict__ heads, const float* __restrict__ dictionary,
                 float* __restrict__ sums, int segments)
{
    sum_segments<128>(pages, heads, dictionary, sums, segments);
}

// fixed: 1024 threads share the same 64 KB. Two blocks fill the SM's 64 warp slots (and 130 of its
// 228 KB of shared memory): the same shared memory per block, 5.3x the warps. __launch_bounds__(1024, 2)
// holds the registers at 32 per thread, which two 1024-thread blocks need.
extern "C" __global__ void __launch_bounds__(1024, 2)
sum_segments_1024(const int* __restrict__ pages, const int* __restrict__ heads, const float* __restrict__ dictionary,
                  float* __restrict__ sums, int segments)
{
    sum_segments<1024>(pages, heads, dictionary, sums, segments);
}
