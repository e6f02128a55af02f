// Rung 02: shared-memory tiling, 32 x 32 tiles.
//
// Change: the block's 32 x 32 threads walk K in steps of 32. At each step every thread loads one
// element of A's 32 x 32 tile and one of B's into shared memory (coalesced: a warp loads one row of
// each), the block waits, and each thread then takes its 32 multiply-adds from shared memory.
// Why: in rung 01 every element of A and B is loaded from L1/L2 by 32 different threads of the block;
// here it is loaded from global memory once per block and reused 32 times from shared memory, so
// global load instructions fall 32x. The inner loop reads Bs[k][tx] (a conflict-free row) for every
// FFMA and As[ty][k] (a broadcast); ptxas merges four of the latter into one LDS.128 (the SASS has 32
// LDS.32 + 8 LDS.128 per 32 FFMA), so shared-memory instructions, 1.25 per FFMA, become the limit.
// Counters: LDG per FFMA from 2 to 1/16; LDS per FFMA 1.25; l1tex data-pipe (shared) wavefronts high;
// pipe fma still well under half of peak.
#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm02_smem_tiling(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                    int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = A[row * K + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * N + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // before the next step overwrites the tiles
    }
    C[row * N + col] = acc;
}
