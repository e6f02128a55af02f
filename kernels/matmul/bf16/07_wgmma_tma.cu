// Rung 07: the Hopper instructions by hand - wgmma (SASS HGMMA) fed by TMA (SASS UTMALDG), inline PTX.
//
// C = A @ B, A (m x k) and B (k x n) row-major bf16, fp32 accumulation, C bf16. What Triton emits
// for rungs 03-05, written out: a block of 256 threads (two warpgroups) owns a 128 x 256 tile of C
// and walks K in steps of 64 through a ring of 4 shared-memory stages (48 KiB each: A 128 x 64,
// B 64 x 256). Thread 0 fills the ring with TMA copies - one 128 x 64 box of A and four 64 x 64 boxes
// of B a stage, 128-byte swizzled - each stage completing on its mbarrier when its 49,152 bytes have
// landed. Each warpgroup waits on the stage's barrier and issues 4 wgmma.m64n256k16 (its 64 rows of
// the tile, B read transposed from its N-major rows), then waits for them (wait_group 0); a block
// barrier then frees the stage for the copy issued at the top of the next step, 3 steps ahead.
//
// Not yet here (rung 08): the copies are issued by a thread that also multiplies, the block barrier
// serialises the two warpgroups once per K step, wait_group 0 drains the tensor pipe at every step,
// and one block per tile leaves a tail of 15.5 waves.
//
// The tensor maps (A: box 64 x 128, B: box 64 x 64, both bf16 with 128-byte swizzle) are encoded by
// the host (problem.py, cuTensorMapEncodeTiled) and read from global memory: `maps` holds A's 128
// bytes, then B's.
#include "bf16.cuh"
#include "hopper.cuh"

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define THREADS 256
#define A_BYTES (BM * BK * 2)                 // 16 KiB: 128 rows of 128 bytes
#define B_BYTES (BK * BN * 2)                 // 32 KiB: four 64 x 64 boxes of 8 KiB
#define STAGE_BYTES (A_BYTES + B_BYTES)       // 48 KiB, the bytes a stage's barrier expects
#define SMEM_BYTES (STAGES * STAGE_BYTES + 1024)  // + room to align the ring to 1024 bytes

extern "C" __global__ void __launch_bounds__(THREADS, 1)
mmbf16_07_wgmma_tma(const uint4* __restrict__ maps, bf16* __restrict__ c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES];
    const unsigned ring = (smem_addr(smem_raw) + 1023u) & ~1023u;  // swizzle atoms start 1024-aligned
    const void* map_a = maps;
    const void* map_b = maps + 8;  // 8 x 16 bytes on
    const unsigned tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const unsigned steps = k / BK;

    if (tid == 0) {
        tma_prefetch_map(map_a);
        tma_prefetch_map(map_b);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) mbar_init(smem_addr(&full[s]), 1);
        mbar_init_fence();
    }
    __syncthreads();

    auto issue = [&](unsigned step) {  // thread 0: the copies of K step `step` into its stage
        const unsigned s = step % STAGES, a_dst = ring + s * STAGE_BYTES, b_dst = a_dst + A_BYTES;
        const unsigned bar = smem_addr(&full[s]);
        mbar_arrive_expect_tx(bar, STAGE_BYTES);
        tma_load_2d(a_dst, map_a, bar, step * BK, row0);
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) tma_load_2d(b_dst + j * 8192, map_b, bar, col0 + 64 * j, step * BK);
    };
    if (tid == 0)
        for (unsigned step = 0; step < STAGES - 1 && step < steps; ++step) issue(step);

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    fence_accumulators(d);  // the zeros are written before wgmma.fence, not moved past it

    for (unsigned step = 0; step < steps; ++step) {
        if (tid == 0 && step + STAGES - 1 < steps) issue(step + STAGES - 1);  // into the stage freed last step
        const unsigned s = step % STAGES;
        mbar_wait(smem_addr(&full[s]), (step / STAGES) & 1);
        const unsigned a_tile = ring + s * STAGE_BYTES + wg * (64 * 128);  // this warpgroup's 64 rows
        const unsigned b_tile = ring + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)  // A: 32 bytes along the row; B: 16 rows of 128 bytes
            wgmma_m64n256k16(d, wgmma_desc(a_tile + kk * 32, 16, 1024), wgmma_desc(b_tile + kk * 2048, 8192, 1024), 1);
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();  // both warpgroups are done with stage s: thread 0 may refill it
    }
    fence_accumulators(d);

    // Epilogue: straight from the accumulators to global memory, two bf16 per 4-byte store.
    const size_t r = (size_t)row0 + wg * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        const size_t col = (size_t)col0 + 8 * i + 2 * (lane % 4);
        *reinterpret_cast<unsigned*>(c + r * n + col) = pack_bf16x2(d[4 * i], d[4 * i + 1]);
        *reinterpret_cast<unsigned*>(c + (r + 8) * n + col) = pack_bf16x2(d[4 * i + 2], d[4 * i + 3]);
    }
}
