// Synthetic fixture rung: one thread per element of C.
#include "tile.cuh"

extern "C" __global__ void mm_naive(const float* a, const float* b, float* c, int n) {
    const int row = blockIdx.y * SYNTHETIC_TILE + threadIdx.y;
    const int col = blockIdx.x * SYNTHETIC_TILE + threadIdx.x;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
    c[row * n + col] = acc;
}
