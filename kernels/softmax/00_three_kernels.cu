// Rung 00: three kernels - row maxima, row sums of exponentials, then normalise (the naive version).
//
// softmax(x)_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k (subtracting m keeps exp from
// overflowing; it cancels in the ratio). Kernel 1 finds m per row, kernel 2 the sum per row, both
// one block per row with a shared-memory tree; kernel 3 has one thread per element. Each kernel
// reads the whole input: 3 reads and 1 write of 256 MiB, twice the bytes of a fused kernel, plus
// two launches. bf16 values are widened to fp32 for all arithmetic (kernels/common/bf16.cuh).
// Counters: dram__bytes_read.sum = 3x the input; three kernels in the launch list.
#include "bf16.cuh"
#define BLOCK 256
#define NEG_INF __uint_as_float(0xff800000u)  // -infinity (NVRTC has no <cmath> for INFINITY)

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax00_row_max(const bf16* __restrict__ x, float* __restrict__ row_max, unsigned cols) {
    __shared__ float s[BLOCK];
    const bf16* row = x + static_cast<size_t>(blockIdx.x) * cols;
    float m = NEG_INF;
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) m = fmaxf(m, bf16_to_float(row[j]));
    s[threadIdx.x] = m;
    __syncthreads();
    for (unsigned k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + k]);
        __syncthreads();
    }
    if (threadIdx.x == 0) row_max[blockIdx.x] = s[0];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax00_row_sum(const bf16* __restrict__ x, const float* __restrict__ row_max, float* __restrict__ row_sum,
                  unsigned cols) {
    __shared__ float s[BLOCK];
    const bf16* row = x + static_cast<size_t>(blockIdx.x) * cols;
    const float m = row_max[blockIdx.x];
    float sum = 0.0f;
    for (unsigned j = threadIdx.x; j < cols; j += BLOCK) sum += __expf(bf16_to_float(row[j]) - m);
    s[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) row_sum[blockIdx.x] = s[0];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax00_normalize(const bf16* __restrict__ x, const float* __restrict__ row_max, const float* __restrict__ row_sum,
                    bf16* __restrict__ out, unsigned cols, unsigned total) {
    const unsigned i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= total) return;
    const unsigned r = i / cols;
    out[i] = float_to_bf16(__expf(bf16_to_float(x[i]) - row_max[r]) / row_sum[r]);
}
