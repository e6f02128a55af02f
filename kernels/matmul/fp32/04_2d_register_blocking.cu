// Rung 04: 2D register blocking: each thread computes an 8 x 8 block of C.
//
// Change: a 128 x 128 block tile, 256 threads, each owning an 8 x 8 sub-block of C (64 accumulators in
// registers), BK = 8. Per k a thread reads 8 values of A's tile and 8 of B's tile from shared memory
// into registers and does the 64 multiply-adds of their outer product.
// Why: register reuse grows from 8 FFMA per 9 shared loads (rung 03) to 64 FFMA per 16 loads, and the
// larger block tile halves global traffic per FFMA again (each element of A or B feeds 128 FFMA).
// Written with 4-byte accesses throughout. ptxas (nvcc 13.0) merges the shared loads into LDS.128 by
// itself: a row of A's tile holds the 8 k of one m contiguously and it can see the alignment, so the
// SASS has 32 LDS.128 per k-tile, not 128 LDS.32 (it keeps all 64 A values of a k-tile in registers).
// What stays 4-byte: 8 LDG.32 and 8 STS.32 per thread per k-tile, 64 STG.32 for C; and the 16 lanes of
// a warp that read B at columns 8 floats apart put 4 of them on each bank (4-way conflicts).
// Counters: FFMA ~90% of the k-loop's instructions; pipe fma 40-50% of peak; shared-memory bank
// conflicts (l1tex__data_bank_conflicts_pipe_lsu_mem_shared) on B's loads.
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define THREADS (BM * BN / (TM * TN))  // 256

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm04_2d_blocking(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                    int K) {
    __shared__ float As[BM * BK];  // row-major 128 x 8
    __shared__ float Bs[BK * BN];  // row-major 8 x 128
    const int t = threadIdx.x;
    const int thread_col = t % (BN / TN), thread_row = t / (BN / TN);  // a 16 x 16 grid of 8 x 8 blocks
    const int a_row = t / BK, a_col = t % BK;  // A's tile: 32 rows per pass, 4 passes
    const int b_row = t / BN, b_col = t % BN;  // B's tile: 2 rows per pass, 4 passes
    constexpr int A_STRIDE = THREADS / BK, B_STRIDE = THREADS / BN;
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int r = 0; r < BM; r += A_STRIDE) As[(a_row + r) * BK + a_col] = A[(a_row + r) * K + a_col];
#pragma unroll
        for (int r = 0; r < BK; r += B_STRIDE) Bs[(b_row + r) * BN + b_col] = B[(b_row + r) * N + b_col];
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[(thread_row * TM + i) * BK + k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k * BN + thread_col * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) C[(thread_row * TM + i) * N + thread_col * TN + j] = acc[i][j];
}
