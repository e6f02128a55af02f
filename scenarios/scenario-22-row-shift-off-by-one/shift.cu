// Scenario 22: shift every row of an image one pixel to the right, with a bounds check that lets
// the last pixel of each row write one element past the row's end (found with compute-sanitizer
// --tool memcheck).
//
//     nvcc -arch=sm_90 -lineinfo -Xcompiler -rdynamic -o shift shift.cu
//     ./shift --variant buggy      # out[r][c + 1] = in[r][c] for every c, the last one too
//     ./shift --variant fixed      # only where c + 1 < width
//
// The image is WIDTH x HEIGHT floats, row after row. out[r][0] takes the fill value and out[r][c + 1]
// takes in[r][c]. The buggy kernel checks c < width but writes c + 1, so the thread for the last
// column writes out[r][width], which is out[r + 1][0]: it races with the thread that writes the fill
// value there, and which one lands last depends on scheduling. For the last row that element lies
// past the end of the allocation: the only one of the HEIGHT overruns that memcheck can see, since
// the others land inside the image. The check compares every pixel with the host's answer.
#include "../correctness.cuh"

constexpr int WIDTH = 1000;   // not a multiple of the block: the last block of a row is partial
constexpr int HEIGHT = 1000;  // 4,000,000 bytes per image
constexpr int THREADS = 256;
constexpr float FILL = -1.0f;

namespace buggy {
__global__ void shift_right(const float* __restrict__ in, float* __restrict__ out, int width, int height,
                            float fill)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c >= width || r >= height) return;
    float* row = out + (size_t)r * width;
    if (c == 0) row[0] = fill;
    row[c + 1] = in[(size_t)r * width + c];
}
}  // namespace buggy

namespace fixed {
__global__ void shift_right(const float* __restrict__ in, float* __restrict__ out, int width, int height,
                            float fill)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c >= width || r >= height) return;
    float* row = out + (size_t)r * width;
    if (c == 0) row[0] = fill;
    if (c + 1 < width) row[c + 1] = in[(size_t)r * width + c];  // the last pixel falls off the row
}
}  // namespace fixed

int main(int argc, char** argv)
{
    scenario::Args args = scenario::parse_args(argc, argv);
    const bool fixed_variant = args.variant == "fixed";
    const size_t count = (size_t)WIDTH * HEIGHT;
    const size_t bytes = count * sizeof(float);

    std::vector<float> host_in(count), host_out(count);
    scenario::Rng rng(args.seed);
    float *in = nullptr, *out = nullptr;
    CUDA_CHECK(cudaMalloc(&in, bytes));
    CUDA_CHECK(cudaMalloc(&out, bytes));

    const dim3 grid((WIDTH + THREADS - 1) / THREADS, HEIGHT), block(THREADS);
    std::vector<long long> wrong, wrong_first_column;
    for (int run = 0; run < args.repeat; ++run) {
        for (float& v : host_in) v = rng.uniform();
        CUDA_CHECK(cudaMemcpy(in, host_in.data(), bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(out, 0xff, bytes));  // poison: a pixel nobody writes reads as NaN
        if (fixed_variant)
            fixed::shift_right<<<grid, block>>>(in, out, WIDTH, HEIGHT, FILL);
        else
            buggy::shift_right<<<grid, block>>>(in, out, WIDTH, HEIGHT, FILL);
        CHECK_LAUNCH("shift_right", args.check_launches);
        CUDA_CHECK(cudaMemcpy(host_out.data(), out, bytes, cudaMemcpyDeviceToHost));
        long long bad = 0, bad_first = 0;
        for (int r = 0; r < HEIGHT; ++r) {
            for (int c = 0; c < WIDTH; ++c) {
                float want = c == 0 ? FILL : host_in[(size_t)r * WIDTH + c - 1];
                bool ok = host_out[(size_t)r * WIDTH + c] == want;
                bad += !ok;
                bad_first += !ok && c == 0;
            }
        }
        wrong.push_back(bad);
        wrong_first_column.push_back(bad_first);
    }
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));

    long long worst = 0;
    for (long long w : wrong) worst = w > worst ? w : worst;
    scenario::Result result(args);
    result.add("width", WIDTH);
    result.add("height", HEIGHT);
    result.add("image_bytes", (long long)bytes);
    result.add("checked", (long long)count);
    result.add("mismatches", wrong);
    result.add("mismatches_in_first_column", wrong_first_column);
    result.add("max_mismatches", worst);
    result.add("tolerance", 0.0);  // a shift moves values: every pixel must match exactly
    result.emit(worst == 0);
}
