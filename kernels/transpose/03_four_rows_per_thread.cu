// Rung 03: more work per thread: a block of 32 x 8 threads moves the 32 x 32 tile, 4 rows each.
//
// Change: 256 threads per block instead of 1024, each thread reading 4 elements (rows ty, ty + 8,
// ty + 16, ty + 24) before the barrier and writing 4 after it. The 4 loads of a thread are
// independent, so they are in flight together; the index arithmetic and the barrier are paid once
// per 4 elements; and smaller blocks let more blocks share an SM, so one block's barrier wait is
// covered by another's memory traffic.
// Counters: sm__inst_executed per element down; smsp__pcsamp_warps_issue_stalled_barrier down.
#define TILE 32
#define ROWS 8

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_four_rows(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[TILE][TILE + 1];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS) tile[ty + k][tx] = x[static_cast<size_t>(r0 + ty + k) * cols + c0 + tx];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS) out[static_cast<size_t>(c0 + ty + k) * rows + r0 + tx] = tile[tx][ty + k];
}
