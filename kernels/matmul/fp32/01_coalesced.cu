// Rung 01: the same kernel, with the thread-to-element mapping swapped so that warps are coalesced.
//
// Change: col = bx*32 + x, row = by*32 + y. The 32 lanes of a warp now share one row of C and hold 32
// consecutive columns: each load of B reads 128 contiguous bytes (one line, four sectors, fully
// used), each load of A is one address broadcast to the warp, and each store of C writes one line.
// Nothing else changes: every FMA still needs two global loads, now served by L1 at one request each.
// Counters: sectors per request of A's loads from 32 to 1 and of B's to 4; L1 wavefronts per FMA down
// ~16x; the kernel becomes limited by L1/LSU instruction throughput (two LDG per FFMA).
#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm01_coalesced(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                  int K) {
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int row = blockIdx.y * TILE + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
