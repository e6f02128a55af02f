// Scenario 23: gradients accumulated over micro-batches into a buffer that nothing set to zero
// first (found with compute-sanitizer --tool initcheck).
//
//     nvcc -arch=sm_90 -lineinfo -Xcompiler -rdynamic -o grad grad.cu
//     ./grad --variant buggy      # acc comes from cudaMalloc and the first micro-batch adds to it
//     ./grad --variant fixed      # cudaMemset(acc, 0, ...) first
//
// One training step, --repeat times: an earlier stage allocates a scratch buffer (activations),
// writes it and frees it; then the gradient buffer acc is allocated and MICRO_BATCHES kernels each
// add one micro-batch's gradient to it, acc[i] += g[i]. cudaMalloc does not clear memory, and a
// buffer of the same size freed a moment earlier usually comes back at the same address, holding
// the activations: the sum starts from them instead of from zero. (In a fresh process the memory
// is often zero, which is why the unit test passed.) The check compares acc with the float64 sum
// of the micro-batches and reports whether acc reused the scratch buffer's address.
#include "../correctness.cuh"

constexpr int N = 1 << 16;  // parameters: 256 KiB of gradient
constexpr int MICRO_BATCHES = 4;
constexpr int THREADS = 256;
// Four float additions of values in [-1, 1) against a float64 reference: a few units in the last
// place of float (2^-24 ~ 6e-8) each, relative to the norm of the sum.
constexpr double TOLERANCE = 1e-6;

__global__ void write_activations(float* __restrict__ a, int n, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = scale * (float)(i % 97) + 0.5f;  // the earlier stage's output
}

__global__ void accumulate(const float* __restrict__ g, float* __restrict__ acc, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] += g[i];
}

int main(int argc, char** argv)
{
    scenario::Args args = scenario::parse_args(argc, argv);
    const bool fixed_variant = args.variant == "fixed";
    const size_t bytes = (size_t)N * sizeof(float);
    const int blocks = (N + THREADS - 1) / THREADS;

    scenario::Rng rng(args.seed);
    std::vector<float> host_g((size_t)MICRO_BATCHES * N), host_acc(N);
    float* g = nullptr;
    CUDA_CHECK(cudaMalloc(&g, bytes * MICRO_BATCHES));

    std::vector<double> errors;
    std::vector<long long> reused;
    for (int run = 0; run < args.repeat; ++run) {
        for (float& v : host_g) v = rng.symmetric();
        CUDA_CHECK(cudaMemcpy(g, host_g.data(), bytes * MICRO_BATCHES, cudaMemcpyHostToDevice));

        // The earlier stage: its scratch buffer is written, then handed back to the allocator.
        float* scratch = nullptr;
        CUDA_CHECK(cudaMalloc(&scratch, bytes));
        write_activations<<<blocks, THREADS>>>(scratch, N, 0.25f + run);
        CHECK_LAUNCH("write_activations", args.check_launches);
        CUDA_CHECK(cudaFree(scratch));

        float* acc = nullptr;
        CUDA_CHECK(cudaMalloc(&acc, bytes));
        reused.push_back(acc == scratch);
        if (fixed_variant) CUDA_CHECK(cudaMemset(acc, 0, bytes));  // the sum starts from zero
        for (int m = 0; m < MICRO_BATCHES; ++m) {
            accumulate<<<blocks, THREADS>>>(g + (size_t)m * N, acc, N);
            CHECK_LAUNCH("accumulate", args.check_launches);
        }
        CUDA_CHECK(cudaMemcpy(host_acc.data(), acc, bytes, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaFree(acc));

        double diff = 0.0, norm = 0.0;
        for (int i = 0; i < N; ++i) {
            double want = 0.0;
            for (int m = 0; m < MICRO_BATCHES; ++m) want += (double)host_g[(size_t)m * N + i];
            double d = (double)host_acc[i] - want;
            diff += d * d;
            norm += want * want;
        }
        errors.push_back(std::sqrt(diff / norm));
    }
    CUDA_CHECK(cudaFree(g));

    double worst = 0.0;
    bool finite = true;
    for (double e : errors) {
        finite = finite && std::isfinite(e);
        worst = e > worst ? e : worst;
    }
    scenario::Result result(args);
    result.add("n", N);
    result.add("micro_batches", MICRO_BATCHES);
    result.add("reused_scratch_address", reused);  // 1 where acc came back at the scratch buffer's address
    std::vector<long long> ppm;
    for (double e : errors) ppm.push_back(std::isfinite(e) ? (long long)std::llround(e * 1e6) : -1);
    result.add("rel_error_per_run_ppm", ppm);
    result.add("rel_error", finite ? worst : NAN);
    result.add("tolerance", TOLERANCE);
    result.emit(finite && worst <= TOLERANCE);
}
