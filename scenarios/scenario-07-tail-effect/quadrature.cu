// Scenario 07: a batch of oscillatory integrals, I(w) = integral over [0, 1] of sin(w x) dx, each by
// the midpoint rule with `points` points (a brute-force Fourier transform of a box, one frequency per
// batch item).
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c`.
// No headers: NVRTC has no host include path.
//
// Blocks of 1024 threads with at most 32 registers each (__launch_bounds__(1024, 2)): two blocks fill
// an SM's 64 warp slots, so a wave of blocks is 2 x 132 = 264. Each point costs one hardware sine
// (the special-function units, 16 per clock per SM) and a few adds and multiplies: the blocks are
// compute-bound, and all blocks of one size take the same time.

constexpr int THREADS = 1024;
constexpr int WARP = 32;
constexpr unsigned FULL = 0xffffffffu;

// Sum over the block of f(x_j) = sin(w x_j), x_j = (j + 0.5) h, for j in [first, first + count).
// j is carried as a float, exact while below 2^24; the argument is w h (j + 0.5) in one FMA.
__device__ __forceinline__ float integrate(float w, float h, int first, int count)
{
    __shared__ float partial[THREADS / WARP];
    const float wh = w * h;
    float acc0 = 0.0f, acc1 = 0.0f;          // two accumulators: shorter float32 sums
    float j = (float)(first + threadIdx.x);
    for (int i = threadIdx.x; i < count; i += 2 * THREADS) {
        acc0 += __sinf(fmaf(j, wh, 0.5f * wh));
        if (i + THREADS < count) acc1 += __sinf(fmaf(j + (float)THREADS, wh, 0.5f * wh));
        j += 2.0f * THREADS;
    }
    float v = acc0 + acc1;
#pragma unroll
    for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(FULL, v, o);
    if (threadIdx.x % WARP == 0) partial[threadIdx.x / WARP] = v;
    __syncthreads();
    v = 0.0f;
    if (threadIdx.x < WARP) {
        v = partial[threadIdx.x];
#pragma unroll
        for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(FULL, v, o);
    }
    return v * h;                              // the block's sum times the step (thread 0's value)
}

// slow: one block per integral. 265 integrals are one full wave of 264 blocks and one block more,
// which runs alone on one SM while the other 131 SMs have nothing left to do.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
quadrature_per_item(const float* __restrict__ omega, float* __restrict__ out, int points)
{
    const float v = integrate(omega[blockIdx.x], 1.0f / points, 0, points);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// fixed: each integral split into gridDim.x parts of points / gridDim.x points (blockIdx.y = item):
// 265 x 32 blocks are 32.1 waves, and the last, partial wave is short. combine_partials adds the parts.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
quadrature_split(const float* __restrict__ omega, float* __restrict__ partial, int points)
{
    const int part = blockIdx.x, parts = gridDim.x, item = blockIdx.y;
    const int count = points / parts;
    const float v = integrate(omega[item], 1.0f / points, part * count, count);
    if (threadIdx.x == 0) partial[item * parts + part] = v;
}

// One warp per integral: out[item] = sum of its `parts` partial sums (parts <= 32).
extern "C" __global__ void combine_partials(const float* __restrict__ partial, float* __restrict__ out, int items,
                                           int parts)
{
    const int item = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (item >= items) return;
    float v = lane < parts ? partial[item * parts + lane] : 0.0f;
#pragma unroll
    for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(FULL, v, o);
    if (lane == 0) out[item] = v;
}
