// Scenario 05: softmax of every row of a rows x cols float32 matrix, one block per row, the row kept
// in shared memory so that DRAM sees it once (read once, written once).
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c -Xptxas -v`.
// No headers: NVRTC has no host include path.
//
// The launch passes cols * 4 bytes of dynamic shared memory: 64 KB for 16384 columns. Three passes
// over the row: load it from global memory into shared memory while taking its maximum; replace each
// element by exp(x - max) while summing; write each element times 1 / sum. The two kernels are the
// same code; only the number of threads that share one row's 64 KB differs.

constexpr int WARP = 32;
constexpr unsigned FULL = 0xffffffffu;

struct Max {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// The block-wide reduction of v, returned to every thread. `scratch` holds one value per warp; the
// barrier at the end lets the caller reuse it for the next reduction.
template <int THREADS, class Op>
__device__ __forceinline__ float block_reduce(float v, float* scratch, Op op)
{
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
#pragma unroll
    for (int o = WARP / 2; o > 0; o /= 2) v = op(v, __shfl_xor_sync(FULL, v, o));
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
#pragma unroll
    for (int w = 1; w < THREADS / WARP; ++w) v = op(v, scratch[w]);
    __syncthreads();
    return v;
}

template <int THREADS>
__device__ __forceinline__ void softmax_row(const float* __restrict__ in, float* __restrict__ out, int cols)
{
    extern __shared__ float row[];                 // cols floats
    __shared__ float scratch[THREADS / WARP];
    const float* src = in + (long long)blockIdx.x * cols;
    float* dst = out + (long long)blockIdx.x * cols;

    float m = -__int_as_float(0x7f800000);         // -infinity
    for (int i = threadIdx.x; i < cols; i += THREADS) {
        const float x = src[i];                    // coalesced: a warp reads 32 consecutive floats
        row[i] = x;
        m = fmaxf(m, x);
    }
    m = block_reduce<THREADS>(m, scratch, Max());

    float s = 0.0f;
    for (int i = threadIdx.x; i < cols; i += THREADS) {
        const float e = __expf(row[i] - m);        // each thread rereads only the elements it wrote
        row[i] = e;
        s += e;
    }
    const float inv = 1.0f / block_reduce<THREADS>(s, scratch, Sum());

    for (int i = threadIdx.x; i < cols; i += THREADS) dst[i] = row[i] * inv;
}

// slow: 128 threads share a 64 KB row. Three such blocks fill the SM's shared memory (3 x 65 KB of
// 228 KB with the block's reserved 1 KB), so an SM holds 3 x 4 = 12 of its 64 warps.
extern "C" __global__ void __launch_bounds__(128)
softmax_rows_128(const float* __restrict__ in, float* __restrict__ out, int cols)
{
    softmax_row<128>(in, out, cols);
}

// fixed: 1024 threads share the same 64 KB. Two blocks fill the SM's 64 warp slots (and 130 of its
// 228 KB of shared memory): the same shared memory per row, 5.3x the warps.
extern "C" __global__ void __launch_bounds__(1024)
softmax_rows_1024(const float* __restrict__ in, float* __restrict__ out, int cols)
{
    softmax_row<1024>(in, out, cols);
}
