// Rung 01: stage a 32 x 32 tile in shared memory so that both the reads and the writes are coalesced.
//
// Change: a block of 32 x 32 threads reads a tile row by row (coalesced), waits, and writes the tile
// column by column into rows of out (coalesced again): the transposition happens in shared memory,
// where any access order is cheap... almost: reading tile[tx][ty] down a column puts the 32 lanes of
// a warp 32 words apart, all in the same bank, so each such read is replayed 32 times (rung 02).
// Counters: global store sectors per request 32 -> 4; l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld
// now high.
#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
transpose_smem_tile(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[TILE][TILE];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    tile[ty][tx] = x[static_cast<size_t>(r0 + ty) * cols + c0 + tx];
    __syncthreads();
    out[static_cast<size_t>(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}
