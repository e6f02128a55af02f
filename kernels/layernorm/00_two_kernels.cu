// Rung 00: two kernels - row statistics (mean, then variance, two loops over the row), then a
// normalising kernel with one thread per element (the naive version).
//
// y = (x - mean) / sqrt(var + eps) * w + b per row, var the biased variance, fp32 arithmetic on bf16
// data. The statistics kernel (one block per row) reads the row twice - the second time from L1/L2 -
// and writes mean and 1/sqrt(var + eps); the second kernel reads x from DRAM again, plus w and b.
// DRAM: 2 reads and 1 write of 256 MiB. Block sums use warp shuffles (the reduction and softmax
// ladders teach that step; this ladder is about passes and bytes).
// Counters: dram__bytes_read.sum = 2x the input; two kernels per call.
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
layernorm00_stats(const bf16* __restrict__ x, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                  unsigned cols, float eps) {
    __shared__ float warp_vals[WARPS];
    const bf16* row = x + static_cast<size_t>(blockIdx.x) * cols;
    float s = 0.0f;
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) s += bf16_to_float(row[j]);
    const float mean = block_sum(s, warp_vals) / cols;
    float q = 0.0f;
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) {
        const float d = bf16_to_float(row[j]) - mean;
        q += d * d;
    }
    const float var = block_sum(q, warp_vals) / cols;
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rsqrtf(var + eps);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm00_normalize(const bf16* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ rstd,
                      const bf16* __restrict__ w, const bf16* __restrict__ b, bf16* __restrict__ out, unsigned cols,
                      unsigned total) {
    const unsigned i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= total) return;
    const unsigned r = i / cols, j = i - r * cols;
    const float y = (bf16_to_float(x[i]) - mean[r]) * rstd[r] * bf16_to_float(w[j]) + bf16_to_float(b[j]);
    out[i] = float_to_bf16(y);
}
