// Rung 04: the row in registers, moved in 16-byte vectors of 8 bf16.
//
// Change: the row length is fixed at compile time (COLS = 4096), so each of the block's 256 threads
// can hold its share of the row - two uint4 of 8 bf16, loaded with two LDG.E.128 at the start - in
// registers for the whole kernel. The maximum, the exponentials (computed once and kept: 16 floats
// per thread) and the sum all come from registers; the row is read from memory exactly once and
// never again from L1 or L2, and written once in 16-byte stores. With the whole row at hand, the
// online rescaling of rungs 02-03 buys nothing: the max is taken first, then the sum.
// Counters: lts__t_sectors_srcunit_tex_op_read = the input's sectors exactly; memory instructions per
// byte down 8x (LDG.E.128 instead of 2-byte loads); dram__throughput near its peak.
#include "bf16.cuh"
#define BLOCK 256
#define COLS 4096
#define VECS (COLS / 8 / BLOCK)  // uint4 per thread: 2
#define FULL 0xffffffffu
#define WARPS (BLOCK / 32)
#define NEG_INF __uint_as_float(0xff800000u)  // -infinity (NVRTC has no <cmath> for INFINITY)

__device__ __forceinline__ float block_max(float v, float* warp_vals) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL, v, offset));
    if (threadIdx.x % 32 == 0) warp_vals[threadIdx.x / 32] = v;
    __syncthreads();
    float r = warp_vals[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) r = fmaxf(r, warp_vals[w]);
    return r;
}

__device__ __forceinline__ float block_sum(float v, float* warp_vals) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(FULL, v, offset);
    if (threadIdx.x % 32 == 0) warp_vals[threadIdx.x / 32] = v;
    __syncthreads();
    float r = warp_vals[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) r += warp_vals[w];
    return r;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax04_vec_registers(const bf16* __restrict__ x, bf16* __restrict__ out) {
    __shared__ float maxes[WARPS], sums[WARPS];  // separate, so no barrier is needed between the two
    const uint4* __restrict__ in = reinterpret_cast<const uint4*>(x) + static_cast<size_t>(blockIdx.x) * (COLS / 8);
    uint4* __restrict__ dst = reinterpret_cast<uint4*>(out) + static_cast<size_t>(blockIdx.x) * (COLS / 8);
    uint4 raw[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) raw[k] = in[k * BLOCK + threadIdx.x];  // both loads in flight at once
    float v[VECS][8];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        unpack8(raw[k], v[k]);
#pragma unroll
        for (int i = 0; i < 8; ++i) m = fmaxf(m, v[k][i]);
    }
    m = block_max(m, maxes);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            v[k][i] = __expf(v[k][i] - m);
            s += v[k][i];
        }
    const float inv = 1.0f / block_sum(s, sums);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
#pragma unroll
        for (int i = 0; i < 8; ++i) v[k][i] *= inv;
        dst[k * BLOCK + threadIdx.x] = pack8(v[k]);
    }
}
