// Rung 01: sequential addressing.
//
// Change: the tree folds the upper half of the active range onto the lower half (stride s runs
// BLOCK/2, BLOCK/4, ..., 1) and thread t is active when t < s. Active threads are now contiguous:
// whole warps drop out as s shrinks instead of every warp idling most of its lanes, there is no
// modulo, and at each step the 32 lanes of a warp read 32 consecutive words (32 distinct banks).
// Everything else (one value per thread, a pass per BLOCK-fold reduction) is as in rung 00.
// Counters: smsp__thread_inst_executed_per_inst_executed up (less divergence), sm__inst_executed
// down by about half.
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_sequential(const float* __restrict__ x, float* __restrict__ partial, unsigned n) {
    __shared__ float sdata[BLOCK];
    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * BLOCK + tid;
    sdata[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}
