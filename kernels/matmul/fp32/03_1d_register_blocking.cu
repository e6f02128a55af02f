// Rung 03: 1D register blocking: each thread computes a column of 8 elements of C.
//
// Change: the block computes a 64 x 64 tile of C with 512 threads, 8 vertically adjacent elements
// each (TM = 8), stepping K by BK = 8. Per step a thread loads one element of A's 64 x 8 tile and one
// of B's 8 x 64 tile into shared memory; then, for each of the 8 k, it reads one B value into a
// register and reuses it for its 8 multiply-adds, reading the 8 A values (broadcasts: the warp's 32
// threads share their rows) from shared memory.
// Why: in rung 02 each FFMA needed a shared load of B; here one load of B feeds 8 FFMA. The 8 x 8
// values of A a thread needs per k-tile are rows of As, which ptxas reads as 16 LDS.128: the SASS has
// 24 LDS per 64 FFMA (from 40 per 32), and the block tile is 4x larger, so each global element feeds
// 64 FFMA instead of 32.
// Counters: LDS per FFMA from 1.25 to 0.375; shared wavefronts per FFMA down ~3x; pipe fma up;
// 8 accumulators per thread (39 registers).
#define BM 64
#define BN 64
#define BK 8
#define TM 8
#define THREADS (BM * BN / TM)  // 512

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm03_1d_blocking(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                    int K) {
    __shared__ float As[BM * BK];  // row-major 64 x 8
    __shared__ float Bs[BK * BN];  // row-major 8 x 64
    const int t = threadIdx.x;
    const int thread_col = t % BN, thread_row = t / BN;  // this thread's C: rows thread_row*8 .. +7, one column
    const int a_row = t / BK, a_col = t % BK;             // the element of A's tile this thread loads
    const int b_row = t / BN, b_col = t % BN;             // ... and of B's
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        As[a_row * BK + a_col] = A[a_row * K + a_col];
        Bs[b_row * BN + b_col] = B[b_row * N + b_col];
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k * BN + thread_col];
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[(thread_row * TM + i) * BK + k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) C[(thread_row * TM + i) * N + thread_col] = acc[i];
}
