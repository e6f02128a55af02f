// Rung 00: one thread per output row (the naive version).
//
// y = W x for W of n rows by k columns (row-major bf16, the layout of nn.Linear's weight), x of k,
// y of n, fp32 accumulation. Thread r walks row r from left to right. The 32 threads of a warp read
// 32 different rows at once, 2 bytes each, k * 2 bytes apart: every load instruction touches 32
// sectors and uses 2 bytes of each. The next 15 loads of each thread find their sector in L1 if it
// survived, so DRAM traffic stays near the minimum while L1 is asked for 16x the requests.
// Counters: l1tex__t_sectors_pipe_lsu_mem_global_op_ld per request = 32 (ideal 2 for 2-byte loads
// by 32 lanes); lsu/l1tex throughput near its peak while dram__throughput is low.
#include "bf16.cuh"

extern "C" __global__ void __launch_bounds__(256)
gemv00_thread_per_row(const bf16* __restrict__ w, const bf16* __restrict__ x, bf16* __restrict__ y, unsigned n,
                      unsigned k) {
    const unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    const bf16* row = w + static_cast<size_t>(r) * k;
    float acc = 0.0f;
    for (unsigned j = 0; j < k; ++j) acc += bf16_to_float(row[j]) * bf16_to_float(x[j]);
    y[r] = float_to_bf16(acc);
}
