// Scenario 02: out = in^T for a rows x cols float32 matrix, through 32 x 32 tiles in shared memory.
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c`.
// No headers: NVRTC has no host include path.
//
// A block of 32 x 8 threads moves one 32 x 32 tile: it reads the tile row by row from `in` (each
// warp reads 32 consecutive floats, 128 bytes), writes it into shared memory row by row, and after
// the barrier reads it back column by column, so that each warp again writes 32 consecutive floats of
// `out`. Both global accesses are coalesced; the only difference between the two kernels below is
// the width of a shared-memory row.

constexpr int TILE = 32;        // tile edge: one warp per tile row
constexpr int BLOCK_ROWS = 8;   // a block is TILE x BLOCK_ROWS threads; each moves TILE / BLOCK_ROWS elements

// Shared memory has 32 banks of 4 bytes; word k sits in bank k % 32. With PAD = 0 a tile row is 32
// words long, so the 32 words of a tile column, tile[0][c] ... tile[31][c], all sit in bank c: a
// warp that reads a column is served one word per pass, 32 passes (a 32-way bank conflict). With
// PAD = 1 a row is 33 words and tile[i][c] sits in bank (i + c) % 32: the column spans all 32 banks.
template <int PAD>
__device__ __forceinline__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out,
                                               int rows, int cols)
{
    __shared__ float tile[TILE][TILE + PAD];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int in_col = blockIdx.x * TILE + tx;
    const int in_row = blockIdx.y * TILE + ty;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        tile[ty + j][tx] = in[(long long)(in_row + j) * cols + in_col];   // a row of the tile
    }
    __syncthreads();
    const int out_col = blockIdx.y * TILE + tx;
    const int out_row = blockIdx.x * TILE + ty;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        out[(long long)(out_row + j) * rows + out_col] = tile[tx][ty + j];  // a column of the tile
    }
}

// slow: 32-word rows, every column read is a 32-way bank conflict.
extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_tile32(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    transpose_tile<0>(in, out, rows, cols);
}

// fixed: 33-word rows (one unused word per row, 4 KB -> 4.125 KB per block), no conflict.
extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_tile33(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    transpose_tile<1>(in, out, rows, cols);
}
