// Rung 01: one kernel, one block per row: mean, variance and the output in three loops.
//
// Change: the normalising kernel is folded into the statistics kernel. After the two loops that find
// the mean and the variance, the same block loops over its row a third time and writes y. That
// third read, like the second, finds the 8 KB row in L1 or L2: DRAM sees each element read once,
// not twice, and one launch does the work of two.
// Counters: dram__bytes_read.sum falls from 2x to ~1x the input; lts__t_sector_hit_rate up.
#include "bf16.cuh"
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu

__device__ __forceinline__ float block_sum(float v, float* warp_vals) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(FULL, v, offset);
    if (threadIdx.x % 32 == 0) warp_vals[threadIdx.x / 32] = v;
    __syncthreads();
    float r = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) r += warp_vals[w];
    __syncthreads();  // warp_vals may be reused by the next call
    return r;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm01_fused(const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ b,
                  bf16* __restrict__ out, unsigned cols, float eps) {
    __shared__ float warp_vals[WARPS];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    float s = 0.0f;
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) s += bf16_to_float(x[base + j]);
    const float mean = block_sum(s, warp_vals) / cols;
    float q = 0.0f;
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) {
        const float d = bf16_to_float(x[base + j]) - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, warp_vals) / cols + eps);
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK)
        out[base + j] = float_to_bf16((bf16_to_float(x[base + j]) - mean) * rstd * bf16_to_float(w[j]) + bf16_to_float(b[j]));
}
