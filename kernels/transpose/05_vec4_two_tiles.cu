// Rung 05: two float4 per thread: each block moves a 64 x 32 tile (64 rows of x, 32 columns).
//
// Change: the block of rung 04 loads rows ty and ty + 32 of a 64-row tile: two independent 16-byte
// loads in flight per thread before the barrier (32 bytes instead of 16), half as many blocks and
// barriers per byte. The two halves of the tile use the same conflict-free layout as rung 04 (row
// i + 32 lands in the same bank as row i, and the halves are accessed by different instructions).
// Counters: dram__throughput up a little; sm__warps_active unchanged; fewer launch__grid_size blocks.
#define TILE 32

extern "C" __global__ void __launch_bounds__(256)
transpose_vec4_two_tiles(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[2 * TILE][TILE + 1];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned r0 = blockIdx.y * 2 * TILE, c0 = blockIdx.x * TILE;
    const float4 a = *reinterpret_cast<const float4*>(x + static_cast<size_t>(r0 + ty) * cols + c0 + 4 * tx);
    const float4 b = *reinterpret_cast<const float4*>(x + static_cast<size_t>(r0 + TILE + ty) * cols + c0 + 4 * tx);
    tile[ty][4 * tx + 0] = a.x;
    tile[ty][4 * tx + 1] = a.y;
    tile[ty][4 * tx + 2] = a.z;
    tile[ty][4 * tx + 3] = a.w;
    tile[TILE + ty][4 * tx + 0] = b.x;
    tile[TILE + ty][4 * tx + 1] = b.y;
    tile[TILE + ty][4 * tx + 2] = b.z;
    tile[TILE + ty][4 * tx + 3] = b.w;
    __syncthreads();
    float* row = out + static_cast<size_t>(c0 + ty) * rows + r0;
    *reinterpret_cast<float4*>(row + 4 * tx) =
        make_float4(tile[4 * tx + 0][ty], tile[4 * tx + 1][ty], tile[4 * tx + 2][ty], tile[4 * tx + 3][ty]);
    *reinterpret_cast<float4*>(row + TILE + 4 * tx) = make_float4(tile[TILE + 4 * tx + 0][ty], tile[TILE + 4 * tx + 1][ty],
                                                                  tile[TILE + 4 * tx + 2][ty], tile[TILE + 4 * tx + 3][ty]);
}
