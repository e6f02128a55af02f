// Rung 00: tensor cores through the pre-Hopper instruction - mma.sync (SASS HMMA.16816.F32.BF16).
//
// C = A @ B, A (m x k) and B (k x n) row-major bf16, fp32 accumulation, C bf16. The Ampere recipe
// in its plainest form: a block of 256 threads (8 warps) owns a 128 x 128 tile of C and walks K in
// steps of 32. Each step, every thread copies two 16-byte vectors of A and two of B from global to
// shared memory (rows padded by 8 bf16 so that ldmatrix reads hit 32 different banks), the block
// waits at a barrier, and each warp computes its 64 x 32 sub-tile: per 16-wide k slice it loads
// fragments with ldmatrix (A as stored, B transposed by ldmatrix.trans) and issues 4 x 4
// mma.sync.m16n8k16 into 64 fp32 accumulators per thread. Nothing overlaps the global loads with the
// math (no cp.async, no double buffer): that is what the Triton rungs add.
//
// Counters: the SASS histogram shows HMMA (not HGMMA); sm__pipe_tensor_op_hmma_cycles_active is the
// busy pipe; warps stall on the barrier and on long scoreboard (the global loads) between slices.
#include "bf16.cuh"

#define BM 128
#define BN 128
#define BK 32
#define THREADS 256
#define A_STRIDE (BK + 8)  // 40 bf16 = 80 bytes: 8 consecutive rows start in 8 distinct 16-byte bank groups
#define B_STRIDE (BN + 8)  // 136 bf16 = 272 bytes: likewise
#define WARP_M 64          // 2 x 4 warps of 64 x 32
#define WARP_N 32

__device__ __forceinline__ unsigned shared_address(const void* p) {
    unsigned addr;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(addr) : "l"(p));
    return addr;
}

// Four 8 x 8 bf16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
}

// d += a (16 x 16, row) * b (16 x 8, col); fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)  // 2 blocks per SM: at most 128 registers
mmbf16_00_mma_sync(const bf16* __restrict__ a, const bf16* __restrict__ b, bf16* __restrict__ c,
                   unsigned m, unsigned n, unsigned k) {
    __shared__ __align__(16) bf16 as[BM * A_STRIDE];
    __shared__ __align__(16) bf16 bs[BK * B_STRIDE];
    const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const unsigned warp_m = (warp / 4) * WARP_M, warp_n = (warp % 4) * WARP_N;
    const size_t row0 = (size_t)blockIdx.y * BM, col0 = (size_t)blockIdx.x * BN;
    float acc[4][4][4] = {};  // [m16 tile][n8 tile][fragment]

    for (unsigned k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (unsigned i = 0; i < 2; ++i) {  // A tile: 128 rows x 4 vectors of 8 bf16
            const unsigned v = tid + i * THREADS, r = v / 4, cv = v % 4;
            *reinterpret_cast<uint4*>(as + r * A_STRIDE + cv * 8) =
                *reinterpret_cast<const uint4*>(a + (row0 + r) * k + k0 + cv * 8);
        }
#pragma unroll
        for (unsigned i = 0; i < 2; ++i) {  // B tile: 32 rows x 16 vectors of 8 bf16
            const unsigned v = tid + i * THREADS, r = v / 16, cv = v % 16;
            *reinterpret_cast<uint4*>(bs + r * B_STRIDE + cv * 8) =
                *reinterpret_cast<const uint4*>(b + (size_t)(k0 + r) * n + col0 + cv * 8);
        }
        __syncthreads();
#pragma unroll
        for (unsigned kk = 0; kk < BK; kk += 16) {
            unsigned af[4][4];
#pragma unroll
            for (unsigned mi = 0; mi < 4; ++mi)  // rows lane % 16, k halves by lane / 16: a0..a3 in mma order
                ldmatrix_x4(af[mi], as + (warp_m + mi * 16 + lane % 16) * A_STRIDE + kk + (lane / 16) * 8);
#pragma unroll
            for (unsigned nj = 0; nj < 2; ++nj) {  // k rows lane % 16, n halves by lane / 16: two n8 tiles
                unsigned bfr[4];  // b0, b1 of n8 tile 2 nj, then of tile 2 nj + 1
                ldmatrix_x4_trans(bfr, bs + (kk + lane % 16) * B_STRIDE + warp_n + nj * 16 + (lane / 16) * 8);
#pragma unroll
                for (unsigned mi = 0; mi < 4; ++mi) {
                    mma_16816(acc[mi][2 * nj], af[mi], bfr[0], bfr[1]);
                    mma_16816(acc[mi][2 * nj + 1], af[mi], bfr[2], bfr[3]);
                }
            }
        }
        __syncthreads();
    }

    // Accumulator fragment: d0, d1 at (lane / 4, 2 (lane % 4) + {0, 1}); d2, d3 eight rows below.
#pragma unroll
    for (unsigned mi = 0; mi < 4; ++mi)
#pragma unroll
        for (unsigned ni = 0; ni < 4; ++ni) {
            const size_t r = row0 + warp_m + mi * 16 + lane / 4, col = col0 + warp_n + ni * 8 + 2 * (lane % 4);
            *reinterpret_cast<unsigned*>(c + r * n + col) = pack_bf16x2(acc[mi][ni][0], acc[mi][ni][1]);
            *reinterpret_cast<unsigned*>(c + (r + 8) * n + col) = pack_bf16x2(acc[mi][ni][2], acc[mi][ni][3]);
        }
}
