// Rung 00: one thread per element of C, the formula as written.
//
// Thread (x, y) of block (bx, by) computes C[row][col] with row = bx*32 + x and col = by*32 + y: a dot
// product of a row of A and a column of B, read straight from global memory, K multiply-adds into one
// register. The mapping is the natural-looking one (x is the first index, the row), and it is the
// wrong one: the 32 lanes of a warp have consecutive x, so they hold 32 different rows. Each load of
// A touches 32 cache lines K floats apart (one 4-byte word used of each), each store of C 32 lines N
// floats apart; only the loads of B, the same address for the whole warp, are a broadcast.
// Counters: l1tex__t_requests vs sectors ~1:32 for A; L1 throughput at its limit while the FMA pipe
// idles (pipe fma a few % of peak); about 2 FLOP per SM per clock.
#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm00_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    const int row = blockIdx.x * TILE + threadIdx.x;
    const int col = blockIdx.y * TILE + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
