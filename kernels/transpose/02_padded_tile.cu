// Rung 02: pad each tile row by one word, so a column of the tile spans all 32 banks.
//
// Change: tile[32][33] instead of tile[32][32]. Element (i, j) sits at word 33i + j, in bank
// (i + j) mod 32, so the 32 lanes reading tile[tx][ty] (tx = 0..31) hit 32 different banks: one
// shared-memory wavefront per read instead of 32. Rows are still read conflict-free.
// Counters: l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld drops to ~0;
// smsp__pcsamp_warps_issue_stalled_mio_throttle (shared-memory queue) down.
#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
transpose_padded_tile(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[TILE][TILE + 1];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    tile[ty][tx] = x[static_cast<size_t>(r0 + ty) * cols + c0 + tx];
    __syncthreads();
    out[static_cast<size_t>(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}
