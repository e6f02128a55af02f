// Rung 02: 16-byte loads: eight bf16 of W and of x per load.
//
// Change: lane l reads uint4 number l, l + 32, ... of its warp's row (8 bf16 each): one LDG.E.128
// instead of eight 2-byte loads, a warp instruction covering 512 contiguous bytes. x is read the
// same way. 8 multiply-adds per load. Requires k % 256 == 0 (the launcher checks).
// Counters: l1tex__t_requests_pipe_lsu_mem_global_op_ld per byte down 8x; dram__throughput up;
// bytes in flight per lane 2 -> 16 (per loop iteration).
#include "bf16.cuh"
#define FULL 0xffffffffu

extern "C" __global__ void __launch_bounds__(256)
gemv02_vec8(const bf16* __restrict__ w, const bf16* __restrict__ x, bf16* __restrict__ y, unsigned n, unsigned k) {
    const unsigned lane = threadIdx.x % 32;
    const unsigned r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (r >= n) return;
    const unsigned vecs = k / 8;
    const uint4* __restrict__ row = reinterpret_cast<const uint4*>(w) + static_cast<size_t>(r) * vecs;
    const uint4* __restrict__ x8 = reinterpret_cast<const uint4*>(x);
    float acc = 0.0f;
    for (unsigned j = lane; j < vecs; j += 32) {
        float a[8], b[8];
        unpack8(row[j], a);
        unpack8(x8[j], b);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc = fmaf(a[i], b[i], acc);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(FULL, acc, offset);
    if (lane == 0) y[r] = float_to_bf16(acc);
}
