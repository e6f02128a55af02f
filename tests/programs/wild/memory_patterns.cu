// Five memory access patterns, one kernel each, for Nsight Compute under every section set.
//
//     nvcc -arch=sm_90 -O3 -lineinfo -o memory_patterns memory_patterns.cu && ./memory_patterns
//
// Known bottlenecks (what coach should find in each kernel, from whatever metrics a report holds):
//   copy_coalesced     4-byte loads, consecutive threads on consecutive floats: 4 sectors per request,
//                      DRAM-bound near its roof (healthy).
//   copy_strided       each thread reads every 32nd float: 32 sectors per request where 4 would do,
//                      uncoalesced (found from L1's sector counts, or from L2's where L1's are absent).
//   copy_vec4          16-byte (float4) loads, coalesced: 16 sectors per request is ideal for that width.
//                      Without the bytes-per-sector metric the width is unknown and coach must say it
//                      cannot decide rather than call it uncoalesced or clean.
//   transpose_conflict a 32x32 shared-memory tile read down its columns, no padding: 32-way bank
//                      conflicts on the reads (shared-memory bound).
//   local_array        a per-thread array indexed by data: it lives in local memory (local-memory traffic).
// Every kernel's result is checked on the host; the program exits non-zero on a mismatch.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
    std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); std::exit(1); } } while (0)

constexpr int N = 1 << 26;        // floats per buffer (256 MiB)
constexpr int STRIDE = 32;        // floats between one thread's element and the next thread's
constexpr int TILE = 32;
constexpr int SIDE = 8192;        // transpose: SIDE x SIDE floats
constexpr int LOCAL = 64;         // elements of the per-thread array

__global__ void copy_coalesced(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

__global__ void copy_strided(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[(long long)i * STRIDE % n + (long long)i * STRIDE / n];  // a permutation of in
}

__global__ void copy_vec4(const float4* __restrict__ in, float4* __restrict__ out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) out[i] = in[i];
}

__global__ void transpose_conflict(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float tile[TILE][TILE];  // no padding column: a column read hits one bank 32 times
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[(long long)y * SIDE + x];
    __syncthreads();
    int tx = blockIdx.y * TILE + threadIdx.x, ty = blockIdx.x * TILE + threadIdx.y;
    out[(long long)ty * SIDE + tx] = tile[threadIdx.x][threadIdx.y];
}

__global__ void local_array(const int* __restrict__ idx, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[LOCAL];
    for (int k = 0; k < LOCAL; ++k) acc[k] = (float)(i + k);
    float s = 0.f;
    for (int k = 0; k < LOCAL; ++k) s += acc[idx[(i + k) % n] % LOCAL];  // data-dependent: not in registers
    out[i] = s;
}

static bool near(float a, float b) { return a == b; }

int main() {
    std::vector<float> h(N), r(N);
    for (int i = 0; i < N; ++i) h[i] = (float)(i % 1000003);
    std::vector<int> hidx(N);
    for (int i = 0; i < N; ++i) hidx[i] = (int)((i * 2654435761u) >> 7);
    float *in, *out; int* idx;
    CHECK(cudaMalloc(&in, N * sizeof(float)));
    CHECK(cudaMalloc(&out, N * sizeof(float)));
    CHECK(cudaMalloc(&idx, N * sizeof(int)));
    CHECK(cudaMemcpy(in, h.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(idx, hidx.data(), N * sizeof(int), cudaMemcpyHostToDevice));
    int bad = 0;
    const int block = 256, grid = (N + block - 1) / block;

    copy_coalesced<<<grid, block>>>(in, out, N);
    CHECK(cudaMemcpy(r.data(), out, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i += 9973) bad += !near(r[i], h[i]);

    copy_strided<<<grid, block>>>(in, out, N);
    CHECK(cudaMemcpy(r.data(), out, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i += 9973) {
        long long j = (long long)i * STRIDE % N + (long long)i * STRIDE / N;
        bad += !near(r[i], h[j]);
    }

    copy_vec4<<<(N / 4 + block - 1) / block, block>>>((const float4*)in, (float4*)out, N / 4);
    CHECK(cudaMemcpy(r.data(), out, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i += 9973) bad += !near(r[i], h[i]);

    transpose_conflict<<<dim3(SIDE / TILE, SIDE / TILE), dim3(TILE, TILE)>>>(in, out);
    CHECK(cudaMemcpy(r.data(), out, (size_t)SIDE * SIDE * sizeof(float), cudaMemcpyDeviceToHost));
    for (int y = 0; y < SIDE; y += 97) for (int x = 0; x < SIDE; x += 89)
        bad += !near(r[(size_t)x * SIDE + y], h[(size_t)y * SIDE + x]);

    local_array<<<grid, block>>>(idx, out, N);
    CHECK(cudaMemcpy(r.data(), out, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i += 9973) {
        float s = 0.f;
        for (int k = 0; k < LOCAL; ++k) s += (float)(i + hidx[(i + k) % N] % LOCAL);
        bad += !near(r[i], s);
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(in)); CHECK(cudaFree(out)); CHECK(cudaFree(idx));
    if (bad) { std::fprintf(stderr, "%d mismatches\n", bad); return 1; }
    std::printf("ok memory_patterns: 5 kernels checked\n");
    return 0;
}
