// Rung 03: 16-byte accesses: eight bf16 per load and per store.
//
// Change: both loops of rung 02 move the row as uint4 (8 bf16): thread t takes vectors t, t + 256, ...
// of the row, one LDG.E.128 where rung 02 issued eight 2-byte loads, and the output leaves in one
// STG.E.128; w and b are read the same way. Welford runs over the 8 unpacked values. Requires
// cols % 8 == 0 (the launcher checks). Still two loops: the second re-reads the row from L1/L2.
// Counters: l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st} per byte down 8x; dram__throughput up.
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
layernorm03_vec8(const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ b,
                 bf16* __restrict__ out, unsigned cols, float eps) {
    __shared__ Stats warp_vals[WARPS];
    const unsigned vecs = cols / 8;
    const uint4* __restrict__ row = reinterpret_cast<const uint4*>(x) + static_cast<size_t>(blockIdx.x) * vecs;
    uint4* __restrict__ dst = reinterpret_cast<uint4*>(out) + static_cast<size_t>(blockIdx.x) * vecs;
    const uint4* __restrict__ w8 = reinterpret_cast<const uint4*>(w);
    const uint4* __restrict__ b8 = reinterpret_cast<const uint4*>(b);
    Stats st{0.0f, 0.0f, 0.0f};
    float v[8];
    for (unsigned k = threadIdx.x; k < vecs; k += BLOCK) {
        unpack8(row[k], v);
#pragma unroll
        for (int i = 0; i < 8; ++i) push(st, v[i]);
    }
    st = block_stats(st, warp_vals);
    const float mean = st.mean, rstd = rsqrtf(st.m2 / cols + eps);
    for (unsigned k = threadIdx.x; k < vecs; k += BLOCK) {
        float wv[8], bv[8];
        unpack8(row[k], v);
        unpack8(w8[k], wv);
        unpack8(b8[k], bv);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = (v[i] - mean) * rstd * wv[i] + bv[i];
        dst[k] = pack8(v);
    }
}
