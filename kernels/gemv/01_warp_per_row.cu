// Rung 01: one warp per row, lanes striding along it, a shuffle reduction at the end.
//
// Change: the 32 lanes of a warp share one row: lane l takes columns l, l + 32, ..., so each load
// instruction reads 64 consecutive bytes of the row (coalesced), and the 32 partial sums meet through
// __shfl_xor_sync (5 steps). x is read the same way and stays in L1.
// Counters: l1tex__t_sectors_pipe_lsu_mem_global_op_ld per request 32 -> 2; dram__throughput up;
// still k / 32 = 256 two-byte loads of W per lane per row: the instruction count now limits.
#include "bf16.cuh"
#define FULL 0xffffffffu

extern "C" __global__ void __launch_bounds__(256)
gemv01_warp_per_row(const bf16* __restrict__ w, const bf16* __restrict__ x, bf16* __restrict__ y, unsigned n,
                    unsigned k) {
    const unsigned lane = threadIdx.x % 32;
    const unsigned r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (r >= n) return;  // the whole warp leaves together
    const bf16* row = w + static_cast<size_t>(r) * k;
    float acc = 0.0f;
    for (unsigned j = lane; j < k; j += 32) acc += bf16_to_float(row[j]) * bf16_to_float(x[j]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(FULL, acc, offset);
    if (lane == 0) y[r] = float_to_bf16(acc);
}
