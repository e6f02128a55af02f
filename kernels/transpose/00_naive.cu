// Rung 00: one thread per element, out[c][r] = x[r][c] (the naive version).
//
// x is rows x cols, row-major; out is cols x rows. Consecutive threads (threadIdx.x) take
// consecutive columns: their reads are coalesced (32 consecutive floats, 128 bytes per warp), but
// their writes land `rows` floats apart, one 32-byte sector per thread, so each warp store moves
// 32 sectors to write 128 useful bytes.
// Counters: l1tex__t_sectors_pipe_lsu_mem_global_op_st per request = 32 (ideal 4);
// dram__bytes_write well above the 1 GiB written, as partly written sectors are written back whole.
extern "C" __global__ void __launch_bounds__(256)
transpose_naive(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    const unsigned c = blockIdx.x * 32 + threadIdx.x;
    const unsigned r = blockIdx.y * 8 + threadIdx.y;
    if (r < rows && c < cols) out[static_cast<size_t>(c) * rows + r] = x[static_cast<size_t>(r) * cols + c];
}
