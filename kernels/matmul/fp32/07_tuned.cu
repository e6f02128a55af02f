// Rung 07: rung 06's warp tiling with double-buffered tiles, in five tile shapes; the launcher times
// them on the first call at each size and keeps the fastest.
//
// Change 1, double buffering: two stages of shared memory. While the block computes on stage s, each
// thread's global loads of the next k-tile are already in flight into registers (issued before the
// FFMAs, so their latency hides behind them); after the FFMAs it stores them into stage s ^ 1. One
// __syncthreads per k-tile instead of two: the barrier that ends tile t both publishes stage s ^ 1
// and tells every thread that stage s, written again during tile t + 1, has been read by all.
// Change 2, tile shapes: the kernel is a template over the block tile (BM x BN x BK), the warp grid
// and the sub-blocks per thread; five extern "C" instantiations cover 8 x 8 and 16 x 8 blocks per
// thread, BK = 8 and 16, 128 and 256 threads (problem.TUNED). Which wins depends on the SM's register
// file (64K registers: 2 blocks of 256 threads at <= 128 registers for 8 x 8; 1 block for 16 x 8), on
// the waves (132 SMs) and on L2 traffic per FLOP, which is easier to measure than to model.
// Why: in rung 06 every k-tile begins with a global load that all warps wait for at the barrier, and
// ends with a second barrier; with 2 blocks per SM the other block covers part of that, not all.
// Counters: stall_barrier and stall_long_scoreboard shares of warp states down; pipe fma 70-80% of
// peak; FFMA share of issued instructions ~85%; no spills (ptxas -v).

__device__ __forceinline__ void lds4(float* dst, const float* src) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
}

// THREADS threads compute the BM x BN tile of C at (blockIdx.y, blockIdx.x). Warps form a grid of
// (BM / WM) x (BN / WN), WM = LANES_M * 4 * SUB_M and WN = LANES_N * 4 * SUB_N; a lane owns SUB_M x SUB_N
// blocks of 4 x 4, 4 * LANES_M rows and 4 * LANES_N columns apart.
template <int BM, int BN, int BK, int LANES_M, int SUB_M, int SUB_N, int THREADS>
__device__ __forceinline__ void sgemm_tile(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int N, int K) {
    constexpr int LANES_N = 32 / LANES_M;
    constexpr int WM = LANES_M * 4 * SUB_M, WN = LANES_N * 4 * SUB_N;
    static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "the warp grid must cover the block tile");
    constexpr int PAD = 4;  // As rows of BM + 4 floats: the transposing stores avoid bank conflicts
    constexpr int A_LOADS = BM * BK / 4 / THREADS, B_LOADS = BK * BN / 4 / THREADS;  // float4 per thread per tile
    static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN, "whole float4 loads");
    __shared__ __align__(16) float As[2][BK][BM + PAD];  // transposed: As[stage][k][m]
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int tm = warp / (BN / WN) * WM + lane / LANES_N * 4;
    const int tn = warp % (BN / WN) * WN + lane % LANES_N * 4;
    // This thread's float4 of each tile: A's at rows a_row + l * A_ROWS, B's at rows b_row + l * B_ROWS.
    constexpr int A_ROWS = THREADS / (BK / 4), B_ROWS = THREADS / (BN / 4);
    const int a_row = t / (BK / 4), a_col = t % (BK / 4) * 4;
    const int b_row = t / (BN / 4), b_col = t % (BN / 4) * 4;
    const float* a_src = A + (blockIdx.y * BM + a_row) * K + a_col;  // advanced by BK per k-tile
    const float* b_src = B + b_row * N + blockIdx.x * BN + b_col;    // advanced by BK rows per k-tile
    C += blockIdx.y * BM * N + blockIdx.x * BN;

    float4 ra[A_LOADS], rb[B_LOADS];  // the next k-tile, in flight
    auto load_tile = [&]() {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) ra[l] = *reinterpret_cast<const float4*>(a_src + l * A_ROWS * K);
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) rb[l] = *reinterpret_cast<const float4*>(b_src + l * B_ROWS * N);
        a_src += BK;
        b_src += BK * N;
    };
    auto store_tile = [&](int s) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            As[s][a_col + 0][a_row + l * A_ROWS] = ra[l].x;
            As[s][a_col + 1][a_row + l * A_ROWS] = ra[l].y;
            As[s][a_col + 2][a_row + l * A_ROWS] = ra[l].z;
            As[s][a_col + 3][a_row + l * A_ROWS] = ra[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) *reinterpret_cast<float4*>(&Bs[s][b_row + l * B_ROWS][b_col]) = rb[l];
    };

    float acc[SUB_M * 4][SUB_N * 4] = {};
    float a[SUB_M * 4], b[SUB_N * 4];
    load_tile();
    store_tile(0);
    __syncthreads();
    const int tiles = K / BK;
    for (int kt = 0; kt < tiles; ++kt) {
        const int s = kt & 1;
        if (kt + 1 < tiles) load_tile();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < SUB_M; ++i) lds4(&a[i * 4], &As[s][k][tm + i * LANES_M * 4]);
#pragma unroll
            for (int j = 0; j < SUB_N; ++j) lds4(&b[j * 4], &Bs[s][k][tn + j * LANES_N * 4]);
#pragma unroll
            for (int i = 0; i < SUB_M * 4; ++i)
#pragma unroll
                for (int j = 0; j < SUB_N * 4; ++j) acc[i][j] += a[i] * b[j];
        }
        if (kt + 1 < tiles) store_tile(s ^ 1);
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

// <BM, BN, BK, LANES_M, SUB_M, SUB_N, THREADS>; the second __launch_bounds__ argument is the blocks per
// SM the registers must allow (64K / (THREADS * blocks) registers per thread at most).

// 8 x 8 per thread, warps 4 x 2 of 32 x 64: 2 blocks per SM at <= 128 registers.
extern "C" __global__ void __launch_bounds__(256, 2)
sgemm07_128x128x8(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
    sgemm_tile<128, 128, 8, 4, 2, 2, 256>(A, B, C, N, K);
}

// The same with BK = 16: half the barriers per FLOP, twice the loads in flight (8 floats per thread).
extern "C" __global__ void __launch_bounds__(256, 2)
sgemm07_128x128x16(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
    sgemm_tile<128, 128, 16, 4, 2, 2, 256>(A, B, C, N, K);
}

// 8 x 16 per thread (warps 4 x 2 of 32 x 128): 128 accumulators, 1 block per SM; 5.3 FFMA per value
// read from shared memory instead of 4.
extern "C" __global__ void __launch_bounds__(256, 1)
sgemm07_128x256x8(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
    sgemm_tile<128, 256, 8, 4, 2, 4, 256>(A, B, C, N, K);
}

// 16 x 8 per thread (warps 4 x 2 of 64 x 64): the same, taller.
extern "C" __global__ void __launch_bounds__(256, 1)
sgemm07_256x128x8(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
    sgemm_tile<256, 128, 8, 4, 4, 2, 256>(A, B, C, N, K);
}

// 8 x 8 per thread, 128 threads (warps 2 x 2 of 32 x 64): up to 4 blocks per SM, twice the blocks.
extern "C" __global__ void __launch_bounds__(128, 4)
sgemm07_64x128x8(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
    sgemm_tile<64, 128, 8, 4, 2, 2, 128>(A, B, C, N, K);
}
