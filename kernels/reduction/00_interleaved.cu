// Rung 00: interleaved addressing with a divergent branch (the textbook first attempt).
//
// Each block of BLOCK threads loads BLOCK values into shared memory and halves them in a tree: at
// step s, thread t adds sdata[t + s] into sdata[t] if t is a multiple of 2s. The block's sum goes
// to partial[blockIdx.x]; the launcher runs the kernel again on the partial sums until one is left.
//
// Correct, and slow for two reasons that the next rungs remove one at a time:
//   - `tid % (2 * s)` selects threads scattered across every warp, so every warp stays busy (and
//     divergent) at every step while doing less and less useful work; the modulo itself is a
//     dozen integer instructions.
//   - each thread loads one 4-byte value, so few bytes are in flight per SM.
// Counters that should move in the next rung: smsp__thread_inst_executed_per_inst_executed
// (divergence), sm__inst_executed (instructions per byte), dram__throughput.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_interleaved(const float* __restrict__ x, float* __restrict__ partial, unsigned n) {
    __shared__ float sdata[BLOCK];
    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * BLOCK + tid;
    sdata[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned s = 1; s < BLOCK; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}
