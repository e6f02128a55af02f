// Rung 06: a 64 x 64 tile per block: four float4 loads in flight per thread.
//
// Change: rung 05's block of 8 x 32 threads moves a 64-row by 64-column tile. Every thread loads
// rows ty and ty + 32 at columns 4tx and 32 + 4tx of the tile: four independent 16-byte loads
// (64 bytes) before the barrier instead of two, and one barrier per 16 KB instead of per 8 KB.
// Each warp instruction still reads four 128-byte rows of x and writes four 128-byte rows of out.
// Banks: tile[64][65] puts element (i, j) in bank (i + j) mod 32. A warp is tx 0..7 by four
// consecutive ty; the tile stores hit banks (ty + 4tx + k) mod 32 and the column reads
// (4tx + k + ty) mod 32 (32a and 32b drop out mod 32): 32 distinct banks, as in rungs 04 and 05.
// 16.6 KB of shared memory per block, 8 blocks of 256 threads per SM: 133 KB.
// Counters: dram__throughput up a little; launch__grid_size halves; registers up by about 8.
#define TILE 32

extern "C" __global__ void __launch_bounds__(256)
transpose_square_tile(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[2 * TILE][2 * TILE + 1];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned r0 = blockIdx.y * 2 * TILE, c0 = blockIdx.x * 2 * TILE;
    const float* src = x + static_cast<size_t>(r0 + ty) * cols + c0 + 4 * tx;
    const size_t down = static_cast<size_t>(TILE) * cols;
    const float4 v[4] = {*reinterpret_cast<const float4*>(src), *reinterpret_cast<const float4*>(src + TILE),
                         *reinterpret_cast<const float4*>(src + down),
                         *reinterpret_cast<const float4*>(src + down + TILE)};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const unsigned i = ty + (q >> 1) * TILE, j = 4 * tx + (q & 1) * TILE;  // q: (row half, column half)
        tile[i][j + 0] = v[q].x;
        tile[i][j + 1] = v[q].y;
        tile[i][j + 2] = v[q].z;
        tile[i][j + 3] = v[q].w;
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const unsigned j = ty + (q >> 1) * TILE, i = 4 * tx + (q & 1) * TILE;  // out row c0 + j, columns r0 + i..i+3
        *reinterpret_cast<float4*>(out + static_cast<size_t>(c0 + j) * rows + r0 + i) =
            make_float4(tile[i + 0][j], tile[i + 1][j], tile[i + 2][j], tile[i + 3][j]);
    }
}
