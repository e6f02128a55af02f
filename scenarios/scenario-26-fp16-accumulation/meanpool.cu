// Scenario 26: mean pooling over a long sequence with the running sum kept in FP16; the sum stops
// growing once it reaches 2048 (found by comparing with a float64 reference: compute-sanitizer has
// nothing to say about it).
//
//     nvcc -arch=sm_90 -lineinfo -Xcompiler -rdynamic -o meanpool meanpool.cu
//     ./meanpool --variant buggy      # __half acc; acc = __hadd(acc, x)
//     ./meanpool --variant fixed      # float acc; acc += __half2float(x); one rounding at the end
//
// The activations are LENGTH x FEATURES halves, values uniform in [0, 1). Thread d averages feature
// d over all LENGTH positions. FP16 has 11 significant bits: between 2048 and 4096 its values are 2
// apart, so adding anything below 1 to a sum of 2048 rounds back to 2048. The true sum of 8192
// values with mean 0.5 is about 4096; the FP16 sum stalls at 2048 and the mean comes out near 0.25.
// Nothing is out of bounds, uninitialised or racing: every sanitizer tool passes it. The check
// compares each mean with the float64 mean of the same halves.
#include "../correctness.cuh"

#include <cuda_fp16.h>

constexpr int LENGTH = 8192;    // positions averaged over
constexpr int FEATURES = 1024;  // one thread per feature
constexpr int THREADS = 256;
// The output is one half: rounding it costs at most 2^-11 ~ 4.9e-4 relative; 1e-3 allows that and
// a float sum's error, and nothing like a stalled sum.
constexpr double TOLERANCE = 1e-3;

namespace buggy {
__global__ void mean_pool(const __half* __restrict__ x, __half* __restrict__ mean, int length, int features)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= features) return;
    __half acc = __float2half(0.0f);
    for (int l = 0; l < length; ++l) acc = __hadd(acc, x[(size_t)l * features + d]);
    mean[d] = __hdiv(acc, __int2half_rn(length));
}
}  // namespace buggy

namespace fixed {
__global__ void mean_pool(const __half* __restrict__ x, __half* __restrict__ mean, int length, int features)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= features) return;
    float acc = 0.0f;  // FP32 accumulator: 24 significant bits
    for (int l = 0; l < length; ++l) acc += __half2float(x[(size_t)l * features + d]);
    mean[d] = __float2half(acc / (float)length);  // round to FP16 once, at the end
}
}  // namespace fixed

int main(int argc, char** argv)
{
    scenario::Args args = scenario::parse_args(argc, argv);
    const bool fixed_variant = args.variant == "fixed";
    const size_t count = (size_t)LENGTH * FEATURES;

    scenario::Rng rng(args.seed);
    std::vector<__half> host_x(count), host_mean(FEATURES);
    __half *x = nullptr, *mean = nullptr;
    CUDA_CHECK(cudaMalloc(&x, count * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&mean, FEATURES * sizeof(__half)));

    std::vector<double> errors, computed_mean, true_mean;
    for (int run = 0; run < args.repeat; ++run) {
        for (__half& v : host_x) v = __float2half(rng.uniform());
        CUDA_CHECK(cudaMemcpy(x, host_x.data(), count * sizeof(__half), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(mean, 0xff, FEATURES * sizeof(__half)));  // poison: 0xffff is a NaN
        const int blocks = (FEATURES + THREADS - 1) / THREADS;
        if (fixed_variant)
            fixed::mean_pool<<<blocks, THREADS>>>(x, mean, LENGTH, FEATURES);
        else
            buggy::mean_pool<<<blocks, THREADS>>>(x, mean, LENGTH, FEATURES);
        CHECK_LAUNCH("mean_pool", args.check_launches);
        CUDA_CHECK(cudaMemcpy(host_mean.data(), mean, FEATURES * sizeof(__half), cudaMemcpyDeviceToHost));

        double diff = 0.0, norm = 0.0, got_avg = 0.0, want_avg = 0.0;
        for (int d = 0; d < FEATURES; ++d) {
            double want = 0.0;
            for (int l = 0; l < LENGTH; ++l) want += (double)__half2float(host_x[(size_t)l * FEATURES + d]);
            want /= LENGTH;
            double got = (double)__half2float(host_mean[d]);
            diff += (got - want) * (got - want);
            norm += want * want;
            got_avg += got / FEATURES;
            want_avg += want / FEATURES;
        }
        errors.push_back(std::sqrt(diff / norm));
        computed_mean.push_back(got_avg);
        true_mean.push_back(want_avg);
    }
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(mean));

    double worst = 0.0;
    bool finite = true;
    for (double e : errors) {
        finite = finite && std::isfinite(e);
        worst = e > worst ? e : worst;
    }
    scenario::Result result(args);
    result.add("length", LENGTH);
    result.add("features", FEATURES);
    result.add("mean_of_means", computed_mean.back());        // what the kernel gave, averaged over features
    result.add("float64_mean_of_means", true_mean.back());    // what it should be (about 0.5)
    result.add("rel_error", finite ? worst : NAN);
    result.add("tolerance", TOLERANCE);
    result.emit(finite && worst <= TOLERANCE);
}
