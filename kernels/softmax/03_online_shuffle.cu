// Rung 03: warp shuffles for the block's merge of (max, sum) pairs.
//
// Change: the 256 pairs are merged inside each warp with __shfl_xor_sync (5 steps in registers, every
// lane ends with the warp's pair), the 8 warp pairs meet in shared memory once, and every thread
// merges those 8 itself: 1 barrier instead of 9 per row. The two passes over the row are rung 02's.
// Counters: smsp__pcsamp_warps_issue_stalled_barrier down; shared-memory instructions per row down.
#include "bf16.cuh"
#define BLOCK 256
#define NEG_INF __uint_as_float(0xff800000u)  // -infinity (NVRTC has no <cmath> for INFINITY)

struct MaxSum {
    float m, s;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);
    if (m == NEG_INF) return a;  // both empty
    return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

#define FULL 0xffffffffu
#define WARPS (BLOCK / 32)

__device__ __forceinline__ MaxSum block_merge(MaxSum v, MaxSum* warp_pairs) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = merge(v, {__shfl_xor_sync(FULL, v.m, offset), __shfl_xor_sync(FULL, v.s, offset)});
    if (threadIdx.x % 32 == 0) warp_pairs[threadIdx.x / 32] = v;
    __syncthreads();
    MaxSum r = warp_pairs[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) r = merge(r, warp_pairs[w]);
    return r;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax03_online_shuffle(const bf16* __restrict__ x, bf16* __restrict__ out, unsigned cols) {
    __shared__ MaxSum s[WARPS];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    MaxSum acc{NEG_INF, 0.0f};
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) {
        const float v = bf16_to_float(x[base + j]);
        if (v > acc.m) {
            acc.s = acc.s * __expf(acc.m - v) + 1.0f;  // exp(-inf) = 0 for the first value
            acc.m = v;
        } else {
            acc.s += __expf(v - acc.m);
        }
    }
    const MaxSum row = block_merge(acc, s);
    const float inv = 1.0f / row.s;
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK)
        out[base + j] = float_to_bf16(__expf(bf16_to_float(x[base + j]) - row.m) * inv);
}
