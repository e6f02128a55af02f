// Synthetic fixture rung: the naive product behind a wgmma fence, an instruction only sm_90a has.
#include "tile.cuh"

extern "C" __global__ void mm_fenced(const float* a, const float* b, float* c, int n) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    const int row = blockIdx.y * SYNTHETIC_TILE + threadIdx.y;
    const int col = blockIdx.x * SYNTHETIC_TILE + threadIdx.x;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
    c[row * n + col] = acc;
}
