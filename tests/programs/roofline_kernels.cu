// Kernels with known floating-point work, for the roofline: each places a point at an intensity we
// can compute by hand, in every precision the roofline separates.
//
//     nvcc -arch=sm_90 -O3 -lineinfo -o roofline_kernels roofline_kernels.cu -lcublas
//     ./roofline_kernels          # checks every result; exits 1 on a mismatch
//
// Element-wise chains over n = 2^26 elements: each thread reads one element, starts 4 independent
// chains from it (3 adds), runs K fused multiply-adds on each (independent chains, so the FMA pipe is
// not waiting on its own latency), sums the chains (3 adds) and writes one element. Nsight Compute
// counts an FMA as 2 operations, an add as 1, and packed half2 instructions double (HFMA2 4, HADD2 2),
// so per element:
//   fp32   4K FFMA + 6 FADD   = 8K + 6 FLOP over 8 bytes (4 read, 4 written)
//   fp64   4K DFMA + 6 DADD   = 8K + 6 FLOP over 16 bytes
//   half2  4K HFMA2 + 6 HADD2 = 16K + 12 FLOP over 8 bytes (two halves per element)
// Each comes at a low K (below the H200's DRAM ridge, ~14 FP32 FLOP/byte: memory-bound) and a high
// K (far above it: compute-bound): fp32 2.75 and 129 FLOP/byte, fp64 1.4 and 32, half2 5.5 and 257.
//
// Matrix products: a naive and a shared-memory-tiled SGEMM (2048^3, 2 x 2048^3 FLOP each; the
// before/after pair of `coach roofline --compare`), a BF16 tensor-core GEMM with WMMA (mma.sync,
// Nsight Compute's hmma path) and cuBLAS's BF16 GEMM (8192^3; wgmma on Hopper, the hgmma path).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include <mma.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); std::exit(2); } } while (0)
#define CHECK_BLAS(x) do { cublasStatus_t s = (x); if (s != CUBLAS_STATUS_SUCCESS) { \
  std::fprintf(stderr, "%s:%d cuBLAS status %d\n", __FILE__, __LINE__, (int)s); std::exit(2); } } while (0)

constexpr int LOW_K = 2;
constexpr int HIGH_K_FP32 = 128;
constexpr int HIGH_K_FP64 = 64;
constexpr int HIGH_K_HALF2 = 128;

template <typename T, int K>
__device__ __forceinline__ T chains(T x, T m, T k) {
  T a = x, b = x + k, c = x + k + k, d = x + k + k + k;
#pragma unroll
  for (int j = 0; j < K; ++j) { a = a * m + k; b = b * m + k; c = c * m + k; d = d * m + k; }
  return (a + b) + (c + d);
}

template <int K>
__device__ __forceinline__ __half2 chains_half2(__half2 x, __half2 m, __half2 k) {
  __half2 a = x, b = __hadd2(x, k), c = __hadd2(b, k), d = __hadd2(c, k);
#pragma unroll
  for (int j = 0; j < K; ++j) { a = __hfma2(a, m, k); b = __hfma2(b, m, k); c = __hfma2(c, m, k); d = __hfma2(d, m, k); }
  return __hadd2(__hadd2(a, b), __hadd2(c, d));
}

#define ELEMENTWISE(name, T, body) \
  __global__ void name(const T* __restrict__ x, T* __restrict__ y, int n) { \
    int i = blockIdx.x * blockDim.x + threadIdx.x; \
    if (i < n) y[i] = body; \
  }

ELEMENTWISE(fp32_fma_low, float, (chains<float, LOW_K>(x[i], 0.999f, 0.001f)))
ELEMENTWISE(fp32_fma_high, float, (chains<float, HIGH_K_FP32>(x[i], 0.999f, 0.001f)))
ELEMENTWISE(fp64_fma_low, double, (chains<double, LOW_K>(x[i], 0.999, 0.001)))
ELEMENTWISE(fp64_fma_high, double, (chains<double, HIGH_K_FP64>(x[i], 0.999, 0.001)))
ELEMENTWISE(half2_fma_low, __half2, (chains_half2<LOW_K>(x[i], __float2half2_rn(0.999f), __float2half2_rn(0.001f))))
ELEMENTWISE(half2_fma_high, __half2, (chains_half2<HIGH_K_HALF2>(x[i], __float2half2_rn(0.999f), __float2half2_rn(0.001f))))

// C = A B, row-major N x N, one thread per element of C.
__global__ void sgemm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
  C[row * N + col] = acc;
}

// The same product through 32 x 32 tiles in shared memory: each element of A and B is read from
// DRAM/L2 N/32 times instead of N times.
constexpr int TILE = 32;
__global__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int N) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE + 1];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < N; t += TILE) {
    As[threadIdx.y][threadIdx.x] = A[row * N + t + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * N + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[row * N + col] = acc;
}

// BF16 in, FP32 accumulate, one warp per 16 x 16 tile of C, operands straight from global memory.
__global__ void wmma_bf16_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, float* __restrict__ C, int N) {
  using namespace nvcuda;
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int tiles = N / 16, tr = warp / tiles, tc = warp % tiles;
  if (tr >= tiles) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.f);
  for (int k = 0; k < N; k += 16) {
    wmma::load_matrix_sync(a, A + tr * 16 * N + k, N);
    wmma::load_matrix_sync(b, B + k * N + tc * 16, N);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(C + tr * 16 * N + tc * 16, c, N, wmma::mem_row_major);
}

static int failures = 0;
// |got - want| within `rel` of `scale` (the sum of the magnitudes that made `want`, for dot products)
static void expect(const char* what, double got, double want, double rel, double scale) {
  if (!(std::fabs(got - want) <= rel * scale)) {
    std::fprintf(stderr, "MISMATCH %s: got %.9g, want %.9g\n", what, got, want);
    ++failures;
  }
}

template <typename T, int K>
static T host_chains(T x, T m, T k) {
  T a = x, b = x + k, c = x + k + k, d = x + k + k + k;
  for (int j = 0; j < K; ++j) { a = std::fma(a, m, k); b = std::fma(b, m, k); c = std::fma(c, m, k); d = std::fma(d, m, k); }
  return (a + b) + (c + d);
}

// The half2 chain on the host: each operation in float, rounded to half as the device rounds it.
template <int K>
static float host_chains_half(float x) {
  auto h = [](float v) { return __half2float(__float2half_rn(v)); };
  const float m = h(0.999f), k = h(0.001f);
  float a = h(x), b = h(a + k), c = h(b + k), d = h(c + k);
  for (int j = 0; j < K; ++j) { a = h(std::fma(a, m, k)); b = h(std::fma(b, m, k)); c = h(std::fma(c, m, k)); d = h(std::fma(d, m, k)); }
  return h(h(a + b) + h(c + d));
}

template <typename T>
static T at(const T* d, size_t i) {
  T v;
  CHECK(cudaMemcpy(&v, d + i, sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

template <typename A, typename B>
static void dot(const A* a, size_t a_stride, const B* b, size_t b_stride, int n, double* sum, double* magnitude) {
  *sum = *magnitude = 0;
  for (int k = 0; k < n; ++k) {
    double p = (double)a[k * a_stride] * (double)b[k * b_stride];
    *sum += p; *magnitude += std::fabs(p);
  }
}

int main() {
  const int n = 1 << 26, threads = 256, blocks = (n + threads - 1) / threads;
  const int probe[] = {0, 1, 777, n / 2 + 3, n - 1};
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = (float)(i % 1000) / 1000.f;

  // FP32, FP64 and half2 chains
  float *xf, *yf; double *xd, *yd; __half2 *xh, *yh;
  CHECK(cudaMalloc(&xf, n * sizeof(float))); CHECK(cudaMalloc(&yf, n * sizeof(float)));
  CHECK(cudaMalloc(&xd, n * sizeof(double))); CHECK(cudaMalloc(&yd, n * sizeof(double)));
  CHECK(cudaMalloc(&xh, n * sizeof(__half2))); CHECK(cudaMalloc(&yh, n * sizeof(__half2)));
  CHECK(cudaMemcpy(xf, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  {
    std::vector<double> hxd(hx.begin(), hx.end());
    CHECK(cudaMemcpy(xd, hxd.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    std::vector<__half2> hxh(n);
    for (int i = 0; i < n; ++i) hxh[i] = __floats2half2_rn(hx[i], hx[i]);
    CHECK(cudaMemcpy(xh, hxh.data(), n * sizeof(__half2), cudaMemcpyHostToDevice));
  }
  fp32_fma_low<<<blocks, threads>>>(xf, yf, n);
  for (int i : probe) expect("fp32_fma_low", at(yf, i), host_chains<float, LOW_K>(hx[i], 0.999f, 0.001f), 1e-6, 4);
  fp32_fma_high<<<blocks, threads>>>(xf, yf, n);
  for (int i : probe) expect("fp32_fma_high", at(yf, i), host_chains<float, HIGH_K_FP32>(hx[i], 0.999f, 0.001f), 1e-6, 4);
  fp64_fma_low<<<blocks, threads>>>(xd, yd, n);
  for (int i : probe) expect("fp64_fma_low", at(yd, i), host_chains<double, LOW_K>(hx[i], 0.999, 0.001), 1e-14, 4);
  fp64_fma_high<<<blocks, threads>>>(xd, yd, n);
  for (int i : probe) expect("fp64_fma_high", at(yd, i), host_chains<double, HIGH_K_FP64>(hx[i], 0.999, 0.001), 1e-14, 4);
  half2_fma_low<<<blocks, threads>>>(xh, yh, n);
  for (int i : probe) expect("half2_fma_low", __low2float(at(yh, i)), host_chains_half<LOW_K>(hx[i]), 1e-2, 4);
  half2_fma_high<<<blocks, threads>>>(xh, yh, n);
  for (int i : probe) expect("half2_fma_high", __high2float(at(yh, i)), host_chains_half<HIGH_K_HALF2>(hx[i]), 1e-2, 4);
  CHECK(cudaGetLastError());

  // SGEMM, naive then tiled, each checked against a host dot product
  const int N = 2048;
  std::vector<float> hA((size_t)N * N), hB((size_t)N * N);
  for (size_t i = 0; i < hA.size(); ++i) { hA[i] = (float)((i * 7) % 13) / 13.f - 0.5f; hB[i] = (float)((i * 5) % 11) / 11.f - 0.5f; }
  float *A, *B, *C1, *C2;
  CHECK(cudaMalloc(&A, hA.size() * 4)); CHECK(cudaMalloc(&B, hB.size() * 4));
  CHECK(cudaMalloc(&C1, hA.size() * 4)); CHECK(cudaMalloc(&C2, hA.size() * 4));
  CHECK(cudaMemcpy(A, hA.data(), hA.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(B, hB.data(), hB.size() * 4, cudaMemcpyHostToDevice));
  sgemm_naive<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(A, B, C1, N);
  sgemm_tiled<<<dim3(N / TILE, N / TILE), dim3(TILE, TILE)>>>(A, B, C2, N);
  CHECK(cudaGetLastError());
  for (int r : {0, 5, 1000, N - 1}) {
    int col = (r * 31) % N;
    double want, scale;
    dot(&hA[(size_t)r * N], 1, &hB[col], N, N, &want, &scale);
    expect("sgemm_naive", at(C1, (size_t)r * N + col), want, 1e-5, scale);
    expect("sgemm_tiled", at(C2, (size_t)r * N + col), want, 1e-5, scale);
  }

  // BF16 tensor-core GEMMs: WMMA at 4096^3 and cuBLAS at 8192^3, each checked against a host dot product
  const int M = 8192, W = 4096;
  std::vector<__nv_bfloat16> hAb((size_t)M * M), hBb((size_t)M * M), hAw((size_t)W * W), hBw((size_t)W * W);
  for (size_t i = 0; i < hAb.size(); ++i) { hAb[i] = __float2bfloat16(hA[i % hA.size()]); hBb[i] = __float2bfloat16(hB[i % hB.size()]); }
  for (size_t i = 0; i < hAw.size(); ++i) { hAw[i] = hAb[i]; hBw[i] = hBb[i]; }
  std::vector<float> fAb(hAb.size()), fBb(hBb.size()), fAw(hAw.size()), fBw(hBw.size());
  for (size_t i = 0; i < hAb.size(); ++i) { fAb[i] = __bfloat162float(hAb[i]); fBb[i] = __bfloat162float(hBb[i]); }
  for (size_t i = 0; i < hAw.size(); ++i) { fAw[i] = __bfloat162float(hAw[i]); fBw[i] = __bfloat162float(hBw[i]); }
  __nv_bfloat16 *Ab, *Bb, *Aw, *Bw, *Cbf; float* Cw;
  CHECK(cudaMalloc(&Ab, hAb.size() * 2)); CHECK(cudaMalloc(&Bb, hBb.size() * 2)); CHECK(cudaMalloc(&Cbf, hAb.size() * 2));
  CHECK(cudaMalloc(&Aw, hAw.size() * 2)); CHECK(cudaMalloc(&Bw, hBw.size() * 2)); CHECK(cudaMalloc(&Cw, hAw.size() * 4));
  CHECK(cudaMemcpy(Ab, hAb.data(), hAb.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(Bb, hBb.data(), hBb.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(Aw, hAw.data(), hAw.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(Bw, hBw.data(), hBw.size() * 2, cudaMemcpyHostToDevice));
  wmma_bf16_gemm<<<(W / 16) * (W / 16) * 32 / 128, 128>>>(Aw, Bw, Cw, W);
  CHECK(cudaGetLastError());
  for (int r : {0, 17, W - 1}) {
    int col = (r * 13) % W;
    double want, scale;
    dot(&fAw[(size_t)r * W], 1, &fBw[col], W, W, &want, &scale);
    expect("wmma_bf16_gemm", at(Cw, (size_t)r * W + col), want, 1e-5, scale);
  }
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  const float one = 1.f, zero = 0.f;
  // row-major C = A B is column-major C^T = B^T A^T: swap the operands
  CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, M, M, M, &one, Bb, CUDA_R_16BF, M, Ab, CUDA_R_16BF, M, &zero,
                          Cbf, CUDA_R_16BF, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  for (int r : {0, 4099, M - 1}) {
    int col = (r * 29) % M;
    double want, scale;
    dot(&fAb[(size_t)r * M], 1, &fBb[col], M, M, &want, &scale);
    expect("cublas_bf16_gemm", __bfloat162float(at(Cbf, (size_t)r * M + col)), want, 1e-2, scale);  // BF16 output
  }
  CHECK_BLAS(cublasDestroy(h));
  CHECK(cudaDeviceSynchronize());
  std::printf(failures ? "%d mismatches\n" : "all results match\n", failures);
  return failures ? 1 : 0;
}
