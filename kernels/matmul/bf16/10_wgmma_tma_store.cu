// Rung 10: rung 09 with its epilogue through shared memory and TMA stores.
//
// C = A @ B, A (m x k) and B (k x n) row-major bf16, fp32 accumulation, C bf16. Rung 09's kernel
// (clusters of two blocks sharing B by multicast; producer warpgroup + two consumer warpgroups of
// wgmma.m64n256k16; persistent) with one change, the epilogue. Rungs 07-09 store each thread's
// accumulators straight to global memory: 64 four-byte stores a thread, each warp's store touching
// 8 rows with 16 bytes each, and the consumers issue the next tile's wgmma only when the last store
// has left. Here each consumer converts its 64 x 256 block in four 64 x 64 chunks into a
// double-buffered 8 KiB staging area in shared memory (128-byte swizzled, so the 32 lanes of a
// store hit 32 banks), fences them to the async proxy, and one thread writes each chunk with a TMA
// store (cp.async.bulk.tensor, whole 128-byte rows); it waits only until the store of two chunks ago
// has read its buffer (cp.async.bulk.wait_group.read 1), so the global writes overlap the next
// chunk's conversion and the next tile's first K steps. Shared memory: 4 stages (192 KiB) + 2 x 2 x
// 8 KiB of staging + alignment = 225 KiB.
//
// The tensor maps are encoded by problem.py: `maps` holds A's (box 64 x 128), B's (64 x 64) and
// C's (64 x 64, 128-byte swizzle) 128 bytes each.
#include "bf16.cuh"
#include "hopper.cuh"

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define GROUP_M 4  // in 256-row cluster tiles: 8 block tile rows, as rung 08
#define THREADS 384
#define CLUSTER 2
#define A_BYTES (BM * BK * 2)
#define B_BYTES (BK * BN * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define C_CHUNK_BYTES (64 * 64 * 2)  // one 64 x 64 bf16 box of C
#define SMEM_BYTES (STAGES * STAGE_BYTES + 2 * 2 * C_CHUNK_BYTES + 1024)
#define CONSUMER_WARPS 8

__device__ __forceinline__ void tile_coords(unsigned t, unsigned tiles_m, unsigned tiles_n, unsigned& tm, unsigned& tn) {
    const unsigned per_group = GROUP_M * tiles_n, first = (t / per_group) * GROUP_M;
    const unsigned rows = min(tiles_m - first, (unsigned)GROUP_M), in_group = t % per_group;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) __cluster_dims__(CLUSTER, 1, 1)
mmbf16_10_wgmma_tma_store(const uint4* __restrict__ maps, bf16* __restrict__ c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned ring = (smem_addr(smem_raw) + 1023u) & ~1023u;  // the same offset in both blocks
    const void* map_a = maps;
    const void* map_b = maps + 8;
    const void* map_c = maps + 16;
    const unsigned tid = threadIdx.x, wg = tid / 128, rank = cluster_ctarank();
    const unsigned cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    // Cluster tiles: 256 x 256; block `rank` takes rows rank * 128.. of it. With an odd number of
    // 128-row tiles (the small check size), the last cluster tile's second block has no rows of its
    // own: it loads the rows above (valid addresses), multicasts its half of B, and stores nothing.
    const unsigned tiles_m = (m / BM + 1) / CLUSTER, tiles_n = n / BN, tiles = tiles_m * tiles_n, steps = k / BK;

    if (tid == 0) {
        tma_prefetch_map(map_a);
        tma_prefetch_map(map_b);
        tma_prefetch_map(map_c);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), CLUSTER * CONSUMER_WARPS);
        }
        mbar_init_fence();
    }
    cluster_sync();

    if (wg == 0) {  // producer
        setmaxnreg_dec<40>();
        if (tid == 0) {
            unsigned it = 0;
            for (unsigned t = cluster; t < tiles; t += clusters) {
                unsigned tm, tn;
                tile_coords(t, tiles_m, tiles_n, tm, tn);
                const int row0 = min(tm * (CLUSTER * BM) + rank * BM, m - BM), col0 = tn * BN;
                for (unsigned step = 0; step < steps; ++step, ++it) {
                    const unsigned s = it % STAGES, full_bar = smem_addr(&full[s]);
                    mbar_wait(smem_addr(&empty[s]), ((it / STAGES) & 1) ^ 1);  // both blocks' consumers are done
                    const unsigned a_dst = ring + s * STAGE_BYTES, b_dst = a_dst + A_BYTES;
                    mbar_arrive_expect_tx(full_bar, STAGE_BYTES);  // own A + all four B boxes (two from the peer)
                    tma_load_2d(a_dst, map_a, full_bar, step * BK, row0);
#pragma unroll
                    for (int j = rank * 2; j < rank * 2 + 2; ++j)
                        tma_load_2d_multicast(b_dst + j * 8192, map_b, full_bar, col0 + 64 * j, step * BK, 0x3);
                }
            }
        }
        __syncwarp();
    } else {  // consumers
        setmaxnreg_inc<232>();
        const unsigned cw = wg - 1, warp = (tid % 128) / 32, lane = tid % 32;
        const bool leader = tid % 128 == 0;  // issues this consumer's TMA stores
        const unsigned staging = ring + STAGES * STAGE_BYTES + cw * 2 * C_CHUNK_BYTES;
        float d[128];
        unsigned it = 0;
        for (unsigned t = cluster; t < tiles; t += clusters) {
            unsigned tm, tn;
            tile_coords(t, tiles_m, tiles_n, tm, tn);
            const unsigned row0 = tm * (CLUSTER * BM) + rank * BM, col0 = tn * BN;
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.0f;
            fence_accumulators(d);
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
                wgmma_wait<1>();
                if (step > 0 && lane == 0) {
                    mbar_arrive(smem_addr(&empty[prev]));
                    mbar_arrive_cluster(smem_addr(&empty[prev]), rank ^ 1);  // the peer's barrier
                }
                prev = s;
            }
            wgmma_wait<0>();
            if (lane == 0) {
                mbar_arrive(smem_addr(&empty[prev]));
                mbar_arrive_cluster(smem_addr(&empty[prev]), rank ^ 1);  // the peer's barrier
            }
            fence_accumulators(d);
            if (row0 < m) {  // uniform in the block: the named barriers below see all 128 threads or none
                const unsigned r = warp * 16 + lane / 4;  // this thread's rows r and r + 8 of the 64
#pragma unroll
                for (int q = 0; q < BN / 64; ++q) {  // chunk q: columns 64q..64q+63 of the tile
                    const unsigned buf = staging + (q & 1) * C_CHUNK_BYTES;
                    if (leader) bulk_wait_read<1>();  // the store that last read this buffer is done with it
                    named_barrier(1 + cw, 128);
#pragma unroll
                    for (int i = 0; i < 8; ++i) {  // accumulator group 8q + i: columns 8i.. of the chunk
                        const int g = 8 * q + i;
#pragma unroll
                        for (int h = 0; h < 2; ++h) {  // 16-byte unit i of row r + 8h, swizzled: i ^ (row % 8)
                            const unsigned row = r + 8 * h;
                            st_shared_u32(buf + row * 128 + ((i ^ (row & 7)) << 4) + (lane % 4) * 4,
                                          pack_bf16x2(d[4 * g + 2 * h], d[4 * g + 2 * h + 1]));
                        }
                    }
                    fence_proxy_async_smem();
                    named_barrier(1 + cw, 128);
                    if (leader) {
                        tma_store_2d(map_c, buf, col0 + 64 * q, row0 + cw * 64);
                        bulk_commit();
                    }
                }
            }
        }
        if (leader) bulk_wait<0>();  // the last stores have read shared memory and written C
    }
    cluster_sync();  // no block exits while its peer may still arrive on its barriers
}
