// Scenario 24: normalise each row by its sum, with the block reduction's __syncthreads() written
// inside the branch that only some threads take (found with compute-sanitizer --tool synccheck).
//
//     nvcc -arch=sm_90 -lineinfo -Xcompiler -rdynamic -o normalize normalize.cu
//     ./normalize --variant buggy      # if (tid < s) { add; __syncthreads(); }
//     ./normalize --variant fixed      # if (tid < s) add; __syncthreads();
//
// One block of 256 threads per row: each thread sums a strided slice of the row, the block adds
// the 256 partial sums in shared memory by halving (s = 128, 64, ..., 1), and every thread divides
// its slice by the total. __syncthreads() must be reached by every thread of the block. Inside
// `if (tid < s)` half the threads skip it in the first round, more in each later one, and within
// warp 0 the branch splits the warp itself. Threads that skip the barrier run on and read
// partial[0] before the additions are done. The check compares every output with the float64
// answer, --repeat times.
#include "../correctness.cuh"

constexpr int ROWS = 512;
constexpr int COLS = 3000;
constexpr int THREADS = 256;  // a power of two: the halving reduction needs it
// A float sum of 3000 values in (0, 1], then one division: relative error well under 1e-6 per
// element; 1e-5 leaves room for the order of the additions.
constexpr double TOLERANCE = 1e-5;

namespace buggy {
__global__ void normalize_rows(const float* __restrict__ x, float* __restrict__ y, int cols)
{
    __shared__ float partial[THREADS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += row[c];
    partial[threadIdx.x] = sum;
    __syncthreads();  // every partial sum stored
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            partial[threadIdx.x] += partial[threadIdx.x + s];
            __syncthreads();
        }
    }
    const float total = partial[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c] / total;
}
}  // namespace buggy

namespace fixed {
__global__ void normalize_rows(const float* __restrict__ x, float* __restrict__ y, int cols)
{
    __shared__ float partial[THREADS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += row[c];
    partial[threadIdx.x] = sum;
    __syncthreads();  // every partial sum stored
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();  // every thread, every round: the condition guards the work, not the barrier
    }
    const float total = partial[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c] / total;
}
}  // namespace fixed

int main(int argc, char** argv)
{
    scenario::Args args = scenario::parse_args(argc, argv);
    const bool fixed_variant = args.variant == "fixed";
    const size_t count = (size_t)ROWS * COLS;
    const size_t bytes = count * sizeof(float);

    scenario::Rng rng(args.seed);
    std::vector<float> host_x(count), host_y(count);
    float *x = nullptr, *y = nullptr;
    CUDA_CHECK(cudaMalloc(&x, bytes));
    CUDA_CHECK(cudaMalloc(&y, bytes));

    std::vector<double> errors;
    std::vector<long long> bad_rows;
    for (int run = 0; run < args.repeat; ++run) {
        for (float& v : host_x) v = 1.0f - rng.uniform();  // (0, 1]: every row sum is positive
        CUDA_CHECK(cudaMemcpy(x, host_x.data(), bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(y, 0xff, bytes));  // poison
        if (fixed_variant)
            fixed::normalize_rows<<<ROWS, THREADS>>>(x, y, COLS);
        else
            buggy::normalize_rows<<<ROWS, THREADS>>>(x, y, COLS);
        CHECK_LAUNCH("normalize_rows", args.check_launches);
        CUDA_CHECK(cudaMemcpy(host_y.data(), y, bytes, cudaMemcpyDeviceToHost));
        double diff = 0.0, norm = 0.0;
        long long rows_wrong = 0;
        for (int r = 0; r < ROWS; ++r) {
            double total = 0.0, row_diff = 0.0, row_norm = 0.0;
            for (int c = 0; c < COLS; ++c) total += (double)host_x[(size_t)r * COLS + c];
            for (int c = 0; c < COLS; ++c) {
                double want = (double)host_x[(size_t)r * COLS + c] / total;
                double d = (double)host_y[(size_t)r * COLS + c] - want;
                row_diff += d * d;
                row_norm += want * want;
            }
            diff += row_diff;
            norm += row_norm;
            rows_wrong += !(std::sqrt(row_diff / row_norm) <= TOLERANCE);
        }
        errors.push_back(std::sqrt(diff / norm));
        bad_rows.push_back(rows_wrong);
    }
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));

    double worst = 0.0;
    bool finite = true;
    for (double e : errors) {
        finite = finite && std::isfinite(e);
        worst = e > worst ? e : worst;
    }
    scenario::Result result(args);
    result.add("rows", ROWS);
    result.add("cols", COLS);
    result.add("rows_wrong", bad_rows);  // per run: rows whose relative error exceeds the tolerance
    result.add("rel_error", finite ? worst : NAN);
    result.add("tolerance", TOLERANCE);
    result.emit(finite && worst <= TOLERANCE);
}
