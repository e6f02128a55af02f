// Rung 07: rung 06 with its blocks taken in bands of 32 block-rows, column by column.
//
// Change: blocks start in about launch order (x fastest; observed, not documented), so rung 06's
// ~1,056 resident blocks (8 per SM) are about 4 block-rows of x side by side: each x row is read 64 KB at a
// stretch, but each out row is written only 4 x 256 B = 1 KB at a stretch, the rest of it 64 KB
// of out rows later. Here the launch index is remapped: blocks walk down a band of GROUP = 32
// block-rows (2,048 rows of x) before moving one tile to the right, so the resident blocks form
// a square of about 32 x 33 tiles: 8 KB at a stretch on both sides, several DRAM pages each.
// The last band is shorter where the block-rows do not divide by GROUP (the small test size).
// The tile, its banks and its four float4 loads per thread are rung 06's.
// Counters: dram__throughput up if the write side's page locality was costing; else unchanged.
#define TILE 32
#define GROUP 32

extern "C" __global__ void __launch_bounds__(256)
transpose_banded_order(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[2 * TILE][2 * TILE + 1];
    const unsigned gx = gridDim.x, gy = gridDim.y;
    const unsigned launch = blockIdx.y * gx + blockIdx.x;  // the order blocks start in
    const unsigned first = launch / (GROUP * gx) * GROUP;  // first block-row of this band
    const unsigned height = gy - first < GROUP ? gy - first : GROUP;
    const unsigned k = launch - first * gx;                // position inside the band, column-major
    const unsigned by = first + k % height, bx = k / height;
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned r0 = by * 2 * TILE, c0 = bx * 2 * TILE;
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
