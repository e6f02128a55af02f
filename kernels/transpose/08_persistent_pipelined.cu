// Rung 08: a persistent grid whose blocks load their next tile while they store the current one.
//
// Change: rung 06's 64 x 64 tile, its block of 8 x 32 threads and its banks, run by a grid of 8
// blocks per SM (the residency rung 06 already had: 29 registers, 16.6 KB of shared memory) that
// walk the tiles in rung 06's launch order, tile = blockIdx.x + k * gridDim.x. Once a tile is in
// shared memory and past the barrier, its block issues the four float4 loads of its next tile into
// the registers the tile has just left, then gathers and stores the current tile.
// Why: in rung 06 a block issues its loads, waits the whole loaded DRAM latency with nothing else
// to do, stores, and exits; a new block then starts on the slot. Here every block has its next
// 16 KB of reads in flight while it stores, reads and writes overlap inside each block, and the
// 65,536 block launches and exits become 1,056.
// Bytes in flight per SM stay those of rung 06 (8 x 16 KB at most): the lever is their duty cycle.
// The stores go one float4 at a time (no unrolling), so that the four gathered float4 do not sit in
// registers beside the four of the prefetch: 32 registers, no spills.
// Counters: launch__grid_size 65,536 -> about 1,056; dram__throughput up by about a point if the
// per-block load-wait-store rhythm was costing; 32 registers.
#define TILE 32

__device__ __forceinline__ void load_tile(const float* __restrict__ x, unsigned cols, unsigned t, unsigned tiles_x,
                                          float4 (&v)[4]) {
    const unsigned r0 = t / tiles_x * 2 * TILE, c0 = t % tiles_x * 2 * TILE;
    const float* src = x + static_cast<size_t>(r0 + threadIdx.y) * cols + c0 + 4 * threadIdx.x;
    const size_t down = static_cast<size_t>(TILE) * cols;
    v[0] = *reinterpret_cast<const float4*>(src);
    v[1] = *reinterpret_cast<const float4*>(src + TILE);
    v[2] = *reinterpret_cast<const float4*>(src + down);
    v[3] = *reinterpret_cast<const float4*>(src + down + TILE);
}

extern "C" __global__ void __launch_bounds__(256, 8)
transpose_persistent_pipelined(const float* __restrict__ x, float* __restrict__ out, unsigned rows, unsigned cols) {
    __shared__ float tile[2 * TILE][2 * TILE + 1];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned tiles_x = cols / (2 * TILE), tiles = tiles_x * (rows / (2 * TILE));
    unsigned t = blockIdx.x;
    if (t >= tiles) return;
    float4 v[4];
    load_tile(x, cols, t, tiles_x, v);
    for (;;) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const unsigned i = ty + (q >> 1) * TILE, j = 4 * tx + (q & 1) * TILE;  // q: (row half, column half)
            tile[i][j + 0] = v[q].x;
            tile[i][j + 1] = v[q].y;
            tile[i][j + 2] = v[q].z;
            tile[i][j + 3] = v[q].w;
        }
        __syncthreads();
        const unsigned next = t + gridDim.x;
        if (next < tiles) load_tile(x, cols, next, tiles_x, v);  // in flight while this tile is stored
        const unsigned r0 = t / tiles_x * 2 * TILE, c0 = t % tiles_x * 2 * TILE;
#pragma unroll 1
        for (int q = 0; q < 4; ++q) {
            const unsigned j = ty + (q >> 1) * TILE, i = 4 * tx + (q & 1) * TILE;  // out row c0 + j, columns r0 + i..i+3
            *reinterpret_cast<float4*>(out + static_cast<size_t>(c0 + j) * rows + r0 + i) =
                make_float4(tile[i + 0][j], tile[i + 1][j], tile[i + 2][j], tile[i + 3][j]);
        }
        if (next >= tiles) return;
        __syncthreads();  // the tile is rewritten by the next one
        t = next;
    }
}
