// Rung 05: 16-byte accesses everywhere, A's tile stored transposed.
//
// Change: the tiles and the 8 x 8 blocks of rung 04, but every access is a float4. Each thread loads
// one float4 of A's 128 x 8 tile and one of B's 8 x 128 tile per step (LDG.E.128); A's four values are
// stored transposed, As[k][m], so that a thread's 8 values of A for one k are contiguous (two LDS.128,
// like its 8 values of B); the results go out as float4 (STG.E.128). As's rows are padded by 4 floats
// (BM + 4): the transposing stores of one warp (16 rows, k = 0 and 4) then fall on 32 different banks.
// Why: 16-byte global accesses are a quarter of the load and store instructions of rung 04 (per
// thread and k-tile 2 LDG.128 instead of 8 LDG.32, 5 STS instead of 8; 16 STG.128 for C instead of
// 64 STG.32). The shared loads do not change: ptxas had already merged rung 04's into the same 32
// LDS.128 per k-tile; writing them explicitly, with A transposed, no longer depends on it doing so.
// Counters: global load instructions /4 (sectors per request x4); k-loop instructions ~2% fewer; B's
// 4-way bank conflicts remain (rung 06 removes them); pipe fma about as in rung 04.
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define PAD 4
#define THREADS (BM * BN / (TM * TN))  // 256

// Four floats from shared memory in one LDS.128 (src 16-byte aligned) into registers.
__device__ __forceinline__ void lds4(float* dst, const float* src) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm05_vectorized(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                   int K) {
    __shared__ __align__(16) float As[BK][BM + PAD];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x;
    const int thread_col = t % (BN / TN), thread_row = t / (BN / TN);
    const int a_row = t / (BK / 4), a_col = t % (BK / 4) * 4;  // one float4 of A's 128 x 8 tile
    const int b_row = t / (BN / 4), b_col = t % (BN / 4) * 4;  // one float4 of B's 8 x 128 tile
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        const float4 va = *reinterpret_cast<const float4*>(&A[a_row * K + a_col]);
        As[a_col + 0][a_row] = va.x;
        As[a_col + 1][a_row] = va.y;
        As[a_col + 2][a_row] = va.z;
        As[a_col + 3][a_row] = va.w;
        *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = *reinterpret_cast<const float4*>(&B[b_row * N + b_col]);
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) lds4(&a[i], &As[k][thread_row * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4) lds4(&b[j], &Bs[k][thread_col * TN + j]);
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
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&C[(thread_row * TM + i) * N + thread_col * TN + j]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}
