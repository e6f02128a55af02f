// Rung 04: the row cached in registers: one read of the row, bf16 in, fp32 math, bf16 out.
//
// Change: the row length is fixed at compile time (COLS = 4096), so each thread loads its two uint4
// (16 values) once, at the start, and keeps them: the statistics and the output come from registers
// and the row is never re-read from L1/L2. With every value at hand, the statistics use the exact
// two-step form (the mean, then the sum of squared deviations from it) over registers - Welford's
// streaming update is no longer needed - at the price of one more block sum.
// Counters: L1/L2 read sectors = the input's exactly (no re-read); dram__throughput near its peak;
// registers per thread up (launch__registers_per_thread), occupancy still full.
#include "bf16.cuh"
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define COLS 4096
#define VECS (COLS / 8 / BLOCK)  // uint4 per thread: 2
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
layernorm04_registers(const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ b,
                      bf16* __restrict__ out, float eps) {
    __shared__ float warp_vals[WARPS];
    const uint4* __restrict__ row = reinterpret_cast<const uint4*>(x) + static_cast<size_t>(blockIdx.x) * (COLS / 8);
    uint4* __restrict__ dst = reinterpret_cast<uint4*>(out) + static_cast<size_t>(blockIdx.x) * (COLS / 8);
    uint4 raw[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) raw[k] = row[k * BLOCK + threadIdx.x];  // both loads in flight at once
    float v[VECS][8];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        unpack8(raw[k], v[k]);
#pragma unroll
        for (int i = 0; i < 8; ++i) s += v[k][i];
    }
    const float mean = block_sum(s, warp_vals) * (1.0f / COLS);
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            v[k][i] -= mean;
            q += v[k][i] * v[k][i];
        }
    const float rstd = rsqrtf(block_sum(q, warp_vals) * (1.0f / COLS) + eps);
    const uint4* __restrict__ w8 = reinterpret_cast<const uint4*>(w);
    const uint4* __restrict__ b8 = reinterpret_cast<const uint4*>(b);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        float wv[8], bv[8];
        unpack8(w8[k * BLOCK + threadIdx.x], wv);
        unpack8(b8[k * BLOCK + threadIdx.x], bv);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[k][i] = v[k][i] * rstd * wv[i] + bv[i];
        dst[k * BLOCK + threadIdx.x] = pack8(v[k]);
    }
}
