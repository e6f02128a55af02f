// Rung 02: online softmax - the maximum and the sum in one pass (Milakov and Gimelshein, 2018).
//
// Change: each thread keeps a running maximum m and a running sum s of exp(x - m); when a value
// exceeds m, the sum so far is rescaled by exp(m_old - m_new). The block then merges the (m, s)
// pairs of its threads: (m, s) + (m', s') = (M, s exp(m - M) + s' exp(m' - M)), M = max(m, m').
// Two passes over the row instead of three (read-and-reduce, then read-and-write), one exponential
// per element in the first pass as before, and one tree instead of two.
// Counters: lts__t_sectors_srcunit_tex_op_read (L2 reads) down by a third; one barrier tree fewer.
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

__device__ __forceinline__ MaxSum block_merge(MaxSum v, MaxSum* s) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] = merge(s[threadIdx.x], s[threadIdx.x + k]);
        __syncthreads();
    }
    const MaxSum r = s[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax02_online(const bf16* __restrict__ x, bf16* __restrict__ out, unsigned cols) {
    __shared__ MaxSum s[BLOCK];
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
