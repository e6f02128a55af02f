// Rung 05: one launch; the last block to finish adds up the per-block sums.
//
// Change: rung 04's second launch goes away. Each block writes its sum, makes it visible to the
// whole GPU (__threadfence), and takes a ticket from a global counter (one atomicAdd per block);
// the block that draws the last ticket knows every other sum is written, adds them, writes the
// result and resets the counter for the next call. The order of the final additions is fixed, so
// the result is the same run to run (unlike atomicAdd of floats into the output).
// Counters: one kernel per call instead of two (launch__* of a single launch); the time saved is
// the second launch and the gap before it, a few microseconds.
#define BLOCK 256
#define BLOCKS_PER_SM 4
#define UNROLL 4
#define FULL 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    return v;
}

__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_sums[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = 0.0f;
    if (warp == 0) {
        if (lane < blockDim.x / 32) v = warp_sums[lane];
        v = warp_sum(v);
    }
    __syncthreads();  // warp_sums may be reused by a second block_sum in the same block
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
reduce_single_pass(const float* __restrict__ x, float* __restrict__ partial, unsigned* __restrict__ tickets,
                   float* __restrict__ out, unsigned n) {
    __shared__ bool last;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    const unsigned n4 = n / 4;
    const unsigned stride = gridDim.x * BLOCK;
    unsigned i = blockIdx.x * BLOCK + threadIdx.x;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = x4[i + u * stride];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) { a0 += v[u].x; a1 += v[u].y; a2 += v[u].z; a3 += v[u].w; }
    }
    for (; i < n4; i += stride) {
        const float4 v = x4[i];
        a0 += v.x; a1 += v.y; a2 += v.z; a3 += v.w;
    }
    const unsigned g = blockIdx.x * BLOCK + threadIdx.x;
    if (g < n - 4 * n4) a0 += x[4 * n4 + g];
    const float s = block_sum((a0 + a1) + (a2 + a3));
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s;
        __threadfence();  // the sum is visible GPU-wide before the ticket is taken
        last = atomicAdd(tickets, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // see every other block's sum
    float v = 0.0f;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += BLOCK) v += __ldcg(&partial[b]);  // from L2, not a stale L1 line
    v = block_sum(v);
    if (threadIdx.x == 0) {
        out[0] = v;
        tickets[0] = 0;  // ready for the next call
    }
}
