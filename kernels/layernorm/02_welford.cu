// Rung 02: Welford's one-pass mean and variance.
//
// Change: the mean and the variance come from one loop over the row instead of two: each thread keeps
// Welford's running (count, mean, M2), which stays accurate where the one-pass formula
// E[x^2] - E[x]^2 cancels catastrophically, and the block merges the 256 partial statistics with
// Chan's formula through warp shuffles. Two loops over the row instead of three (stats, output).
// Counters: L1/L2 read sectors per row down by a third; one block-wide merge instead of two sums.
#include "bf16.cuh"
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu

// Welford's running statistics of a stream of values: count, mean, and M2 = sum (x - mean)^2.
struct Stats {
    float n, mean, m2;
};

__device__ __forceinline__ void push(Stats& s, float x) {
    s.n += 1.0f;
    const float d = x - s.mean;
    s.mean += __fdividef(d, s.n);
    s.m2 += d * (x - s.mean);
}

// Chan et al.'s merge of two partial statistics.
__device__ __forceinline__ Stats merge(Stats a, Stats b) {
    const float n = a.n + b.n;
    if (n == 0.0f) return a;
    const float d = b.mean - a.mean, f = __fdividef(b.n, n);
    return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
}

__device__ __forceinline__ Stats block_stats(Stats v, Stats* warp_vals) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = merge(v, {__shfl_xor_sync(FULL, v.n, offset), __shfl_xor_sync(FULL, v.mean, offset),
                      __shfl_xor_sync(FULL, v.m2, offset)});
    if (threadIdx.x % 32 == 0) warp_vals[threadIdx.x / 32] = v;
    __syncthreads();
    Stats r = warp_vals[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) r = merge(r, warp_vals[w]);
    return r;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm02_welford(const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ b,
                    bf16* __restrict__ out, unsigned cols, float eps) {
    __shared__ Stats warp_vals[WARPS];
    const size_t base = static_cast<size_t>(blockIdx.x) * cols;
    Stats st{0.0f, 0.0f, 0.0f};
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) push(st, bf16_to_float(x[base + j]));
    st = block_stats(st, warp_vals);
    const float mean = st.mean, rstd = rsqrtf(st.m2 / cols + eps);
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK)
        out[base + j] = float_to_bf16((bf16_to_float(x[base + j]) - mean) * rstd * bf16_to_float(w[j]) + bf16_to_float(b[j]));
}
