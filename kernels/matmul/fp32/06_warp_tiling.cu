// Rung 06: warp tiling: each warp owns a compact 32 x 64 tile of C, each thread four 4 x 4 blocks.
//
// Change: the 128 x 128 block tile (BK = 8, 256 threads, 64 accumulators per thread) as in rung 05,
// but the work is split in three levels. The 8 warps form a 4 x 2 grid of 32 x 64 warp tiles; in its
// warp tile a lane (4 x 8 lanes) owns 2 x 2 sub-blocks of 4 x 4, 16 rows and 32 columns apart:
// rows wm + {0, 16} + 4*lane_m + 0..3, columns wn + {0, 32} + 4*lane_n + 0..3.
// Why: in rung 05 a thread's 8 values of A (or B) for one k are 8 contiguous floats, so the 16 lanes
// of a warp reading B take 32 bytes each, 512 bytes per LDS.128 pair with lanes 8 floats apart: each
// LDS.128 needs more than the minimum 4 shared-memory wavefronts. Here the 8 lanes along N read 8
// adjacent float4 (128 contiguous bytes) and the 4 lanes along M read 4 adjacent float4 that the
// others share: every LDS.128 is conflict-free. A warp also touches only a 32 x 8 strip of As and an
// 8 x 64 strip of Bs per k (not 16 x 128 of Bs), and its stores of C are 4 rows of 128 contiguous bytes.
// Counters: shared wavefronts per LDS.128 at the minimum, l1tex__data_bank_conflicts_pipe_lsu_mem_shared
// ~0 for loads; pipe fma ~60-70% of peak; FFMA share of issued instructions ~80%.
#define BM 128
#define BN 128
#define BK 8
#define PAD 4
#define WM 32        // warp tile
#define WN 64
#define LANES_M 4    // a warp's lanes: 4 along M x 8 along N
#define LANES_N 8
#define SUB_M 2      // sub-blocks of 4 x 4 per thread
#define SUB_N 2
#define THREADS 256  // (BM / WM) * (BN / WN) = 8 warps

__device__ __forceinline__ void lds4(float* dst, const float* src) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm06_warp_tiling(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                    int K) {
    __shared__ __align__(16) float As[BK][BM + PAD];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = warp / (BN / WN) * WM, wn = warp % (BN / WN) * WN;  // the warp tile's corner in the block tile
    const int tm = wm + lane / LANES_N * 4, tn = wn + lane % LANES_N * 4;  // the thread's first 4 x 4 block
    const int a_row = t / (BK / 4), a_col = t % (BK / 4) * 4;
    const int b_row = t / (BN / 4), b_col = t % (BN / 4) * 4;
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[SUB_M * 4][SUB_N * 4] = {};
    float a[SUB_M * 4], b[SUB_N * 4];
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
            for (int i = 0; i < SUB_M; ++i) lds4(&a[i * 4], &As[k][tm + i * LANES_M * 4]);
#pragma unroll
            for (int j = 0; j < SUB_N; ++j) lds4(&b[j * 4], &Bs[k][tn + j * LANES_N * 4]);
#pragma unroll
            for (int i = 0; i < SUB_M * 4; ++i)
#pragma unroll
                for (int j = 0; j < SUB_N * 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < SUB_M * 4; ++i)
#pragma unroll
        for (int j = 0; j < SUB_N; ++j) {
            const int row = tm + i / 4 * LANES_M * 4 + i % 4, col = tn + j * LANES_N * 4;
            *reinterpret_cast<float4*>(&C[row * N + col]) =
                make_float4(acc[i][j * 4], acc[i][j * 4 + 1], acc[i][j * 4 + 2], acc[i][j * 4 + 3]);
        }
}
