// Rung 08: rung 07's wgmma and TMA, warp-specialised and persistent - the structure of CUTLASS's and
// cuBLAS's Hopper GEMMs, by hand.
//
// C = A @ B, A (m x k) and B (k x n) row-major bf16, fp32 accumulation, C bf16. A block of 384 threads
// per SM (grid = the SM count) walks the 128 x 256 tiles of C in grouped order (8 tile rows at a
// time), tile t, t + grid, ... Its three warpgroups split the work:
//   - warpgroup 0, the producer, gives back registers (setmaxnreg.dec 40) and one thread issues all
//     the TMA copies: for every K step of every tile, it waits until the stage is empty (its `empty`
//     mbarrier), arms its `full` barrier with 49,152 bytes and copies one 128 x 64 box of A and four
//     64 x 64 boxes of B into it. It runs up to 4 stages ahead of the math, across tile boundaries.
//   - warpgroups 1 and 2, the consumers, take the registers (setmaxnreg.inc 232) and each computes 64
//     rows of the tile: wait on `full`, 4 wgmma.m64n256k16, commit, then wait_group 1 - the previous
//     step's wgmma are done, so that stage is released (one arrival per consumer warp on `empty`,
//     8 in all) while this step's run. After the tile's last step, wait_group 0 and the epilogue
//     (accumulators -> bf16 -> global), during which the producer already fills the next tile's stages.
// Against rung 07: no thread both copies and multiplies, no block barrier in the K loop, one wgmma
// batch always in flight, and no wave tail beyond the last partial round of tiles (2,048 tiles on
// 132 SMs: 15.5 rounds).
//
// The tensor maps are rung 07's (problem.py encodes them; `maps`: A's 128 bytes, then B's).
#include "bf16.cuh"
#include "hopper.cuh"

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define GROUP_M 8
#define THREADS 384
#define A_BYTES (BM * BK * 2)
#define B_BYTES (BK * BN * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define SMEM_BYTES (STAGES * STAGE_BYTES + 1024)
#define CONSUMER_WARPS 8

// Tile t of the grouped order -> (tile row, tile column).
__device__ __forceinline__ void tile_coords(unsigned t, unsigned tiles_m, unsigned tiles_n, unsigned& tm, unsigned& tn) {
    const unsigned per_group = GROUP_M * tiles_n, first = (t / per_group) * GROUP_M;
    const unsigned rows = min(tiles_m - first, (unsigned)GROUP_M), in_group = t % per_group;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
mmbf16_08_wgmma_specialized(const uint4* __restrict__ maps, bf16* __restrict__ c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned ring = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const void* map_a = maps;
    const void* map_b = maps + 8;
    const unsigned tid = threadIdx.x, wg = tid / 128;
    const unsigned tiles_m = m / BM, tiles_n = n / BN, tiles = tiles_m * tiles_n, steps = k / BK;

    if (tid == 0) {
        tma_prefetch_map(map_a);
        tma_prefetch_map(map_b);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), CONSUMER_WARPS);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {  // producer
        setmaxnreg_dec<40>();
        if (tid == 0) {
            unsigned it = 0;  // K steps issued so far, over all tiles: stage it % STAGES, use it / STAGES
            for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
                unsigned tm, tn;
                tile_coords(t, tiles_m, tiles_n, tm, tn);
                const int row0 = tm * BM, col0 = tn * BN;
                for (unsigned step = 0; step < steps; ++step, ++it) {
                    const unsigned s = it % STAGES, full_bar = smem_addr(&full[s]);
                    mbar_wait(smem_addr(&empty[s]), ((it / STAGES) & 1) ^ 1);  // first pass: free at once
                    const unsigned a_dst = ring + s * STAGE_BYTES, b_dst = a_dst + A_BYTES;
                    mbar_arrive_expect_tx(full_bar, STAGE_BYTES);
                    tma_load_2d(a_dst, map_a, full_bar, step * BK, row0);
#pragma unroll
                    for (int j = 0; j < BN / 64; ++j)
                        tma_load_2d(b_dst + j * 8192, map_b, full_bar, col0 + 64 * j, step * BK);
                }
            }
        }
        return;
    }

    // consumers
    setmaxnreg_inc<232>();
    const unsigned cw = wg - 1, warp = (tid % 128) / 32, lane = tid % 32;
    float d[128];
    unsigned it = 0;
    for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
        unsigned tm, tn;
        tile_coords(t, tiles_m, tiles_n, tm, tn);
        const unsigned row0 = tm * BM, col0 = tn * BN;
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        fence_accumulators(d);  // the zeros are written before wgmma.fence, not moved past it
        unsigned prev = 0;
        for (unsigned step = 0; step < steps; ++step, ++it) {
            const unsigned s = it % STAGES;
            mbar_wait(smem_addr(&full[s]), (it / STAGES) & 1);
            const unsigned a_tile = ring + s * STAGE_BYTES + cw * (64 * 128);
            const unsigned b_tile = ring + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
                wgmma_m64n256k16(d, wgmma_desc(a_tile + kk * 32, 16, 1024), wgmma_desc(b_tile + kk * 2048, 8192, 1024), 1);
            wgmma_commit();
            wgmma_wait<1>();  // the previous step's batch is done reading its stage
            if (step > 0 && lane == 0) mbar_arrive(smem_addr(&empty[prev]));
            prev = s;
        }
        wgmma_wait<0>();
        if (lane == 0) mbar_arrive(smem_addr(&empty[prev]));
        fence_accumulators(d);

        const size_t r = (size_t)row0 + cw * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int i = 0; i < 32; ++i) {
            const size_t col = (size_t)col0 + 8 * i + 2 * (lane % 4);
            *reinterpret_cast<unsigned*>(c + r * n + col) = pack_bf16x2(d[4 * i], d[4 * i + 1]);
            *reinterpret_cast<unsigned*>(c + (r + 8) * n + col) = pack_bf16x2(d[4 * i + 2], d[4 * i + 3]);
        }
    }
}
