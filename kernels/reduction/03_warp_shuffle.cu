// Rung 03: warp shuffles.
//
// Change: the tree inside a warp uses register shuffles (__shfl_down_sync) instead of shared memory
// and barriers. Each warp reduces its 32 values in five shuffle steps with no __syncthreads; warp
// sums meet in shared memory once (BLOCK/32 = 8 words) and the first warp reduces those with
// shuffles too. The block-wide barriers drop from 9 to 1. Loads are as in rung 02.
// Counters: smsp__pcsamp_warps_issue_stalled_barrier (stall on barriers) down, shared-memory
// instructions (smsp__inst_executed_op_shared_*) down.
#define BLOCK 256
#define FULL 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    return v;  // lane 0 holds the warp's sum
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_warp_shuffle(const float* __restrict__ x, float* __restrict__ partial, unsigned n) {
    __shared__ float warp_sums[BLOCK / 32];
    const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const unsigned i = blockIdx.x * (2 * BLOCK) + tid;
    float v = i < n ? x[i] : 0.0f;
    if (i + BLOCK < n) v += x[i + BLOCK];
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) partial[blockIdx.x] = v;
    }
}
