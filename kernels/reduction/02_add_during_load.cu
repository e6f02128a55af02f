// Rung 02: first add during load.
//
// Change: each thread loads two values, one block-width apart, and adds them before they reach
// shared memory, so a block covers 2 * BLOCK values and half as many blocks run. In rung 01 half
// the threads went idle after the first tree step; now that first step is done in registers, and
// each thread has two independent loads in flight instead of one.
// Counters: sm__inst_executed per byte down, dram__throughput up (twice the bytes in flight per
// thread).
#define BLOCK 256

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_add_during_load(const float* __restrict__ x, float* __restrict__ partial, unsigned n) {
    __shared__ float sdata[BLOCK];
    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * (2 * BLOCK) + tid;
    float v = i < n ? x[i] : 0.0f;
    if (i + BLOCK < n) v += x[i + BLOCK];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}
