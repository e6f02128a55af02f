// Allocation at set-up only, or in the loop: the allocator rule must tell the two apart.
//
//     nvcc -arch=sm_90 -O2 -o setup_allocs setup_allocs.cu
//     ./setup_allocs            # 5 cudaMalloc, 2 kernel launches, 5 cudaFree: no loop
//     ./setup_allocs 50         # 50 iterations, each allocating and freeing its 5 temporaries
//
// Known bottleneck: without an argument there is none worth naming (a short program that allocates
// its buffers once): coach must not report allocator churn for it. With N iterations every one pays
// five cudaMalloc/cudaFree pairs (each cudaFree synchronises the device), and coach should name the
// allocator churn. The kernels' results are checked on the host.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { \
    std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); std::exit(1); } } while (0)

constexpr int N = 1 << 22;
constexpr int BUFFERS = 5;

__global__ void fill(float* a, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = v + i % 7;
}

__global__ void sum5(float* const* bufs, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float s = 0; for (int b = 0; b < BUFFERS; ++b) s += bufs[b][i]; out[i] = s; }
}

static float run_once(float** d_list) {
    float* bufs[BUFFERS];
    for (int b = 0; b < BUFFERS; ++b) CHECK(cudaMalloc(&bufs[b], N * sizeof(float)));
    CHECK(cudaMemcpy(d_list, bufs, sizeof(bufs), cudaMemcpyHostToDevice));
    for (int b = 0; b < BUFFERS; ++b) fill<<<(N + 255) / 256, 256>>>(bufs[b], (float)b, N);
    sum5<<<(N + 255) / 256, 256>>>(d_list, bufs[0], N);
    float probe;
    CHECK(cudaMemcpy(&probe, bufs[0] + 3, sizeof(float), cudaMemcpyDeviceToHost));
    for (int b = 0; b < BUFFERS; ++b) CHECK(cudaFree(bufs[b]));
    return probe;
}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? std::atoi(argv[1]) : 0;
    float** d_list;
    CHECK(cudaMalloc(&d_list, BUFFERS * sizeof(float*)));
    const float expected = 0 + 1 + 2 + 3 + 4 + 5 * 3.0f;  // sum over b of (b + 3 % 7)
    if (iterations == 0) {
        // set-up only: allocate, two launches, free (the program the old rule flagged)
        float *a, *b, *c, *d, *e;
        CHECK(cudaMalloc(&a, N * sizeof(float))); CHECK(cudaMalloc(&b, N * sizeof(float)));
        CHECK(cudaMalloc(&c, N * sizeof(float))); CHECK(cudaMalloc(&d, N * sizeof(float)));
        CHECK(cudaMalloc(&e, N * sizeof(float)));
        fill<<<(N + 255) / 256, 256>>>(a, 1.f, N);
        fill<<<(N + 255) / 256, 256>>>(b, 2.f, N);
        float probe;
        CHECK(cudaMemcpy(&probe, b + 3, sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c)); CHECK(cudaFree(d)); CHECK(cudaFree(e));
        if (probe != 2.f + 3) { std::fprintf(stderr, "wrong result %f\n", probe); return 1; }
    } else {
        for (int it = 0; it < iterations; ++it) {
            float probe = run_once(d_list);
            if (probe != expected) { std::fprintf(stderr, "iteration %d: %f != %f\n", it, probe, expected); return 1; }
        }
    }
    CHECK(cudaFree(d_list));
    std::printf("ok setup_allocs iterations=%d\n", iterations);
    return 0;
}
