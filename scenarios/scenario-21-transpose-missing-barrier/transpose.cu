// Scenario 21: a tiled matrix transpose through shared memory, with the barrier between the tile's
// write and its read left out (found with compute-sanitizer --tool racecheck).
//
//     nvcc -arch=sm_90 -lineinfo -Xcompiler -rdynamic -o transpose transpose.cu
//     ./transpose --variant buggy      # no __syncthreads() between writing and reading the tile
//     ./transpose --variant fixed      # the barrier in place
//
// Each block of 32 x 8 threads copies a 32 x 32 tile into shared memory, four rows per thread, then
// writes it out transposed: thread (tx, ty) reads column tx of the tile, which eight different
// warps wrote. Without a barrier a warp can read tile slots before the warps that own them have
// stored them, and picks up whatever the previous block on that SM left there. The check compares
// every element with the transpose computed on the host, --repeat times: how many elements are wrong
// changes from run to run, because it depends on how the warps happen to be scheduled.
#include "../correctness.cuh"

constexpr int TILE = 32;  // a tile is TILE x TILE floats
constexpr int ROWS = 8;   // threadIdx.y runs over 8 rows; each thread copies TILE / ROWS = 4 elements
constexpr int N = 1024;   // the matrix is N x N floats (4 MB): 1024 blocks

namespace buggy {
__global__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float tile[TILE][TILE + 1];  // +1: no bank conflicts on the column read
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];

    x = blockIdx.y * TILE + threadIdx.x;  // the transposed tile's position
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
}  // namespace buggy

namespace fixed {
__global__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
    __syncthreads();  // every warp's rows are in the tile before any warp reads a column of it

    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
}  // namespace fixed

int main(int argc, char** argv)
{
    scenario::Args args = scenario::parse_args(argc, argv);
    const bool fixed_variant = args.variant == "fixed";
    const size_t count = (size_t)N * N;
    const size_t bytes = count * sizeof(float);

    std::vector<float> host_in(count), host_out(count);
    scenario::Rng rng(args.seed);

    float *in = nullptr, *out = nullptr;
    CUDA_CHECK(cudaMalloc(&in, bytes));
    CUDA_CHECK(cudaMalloc(&out, bytes));

    const dim3 grid(N / TILE, N / TILE), block(TILE, ROWS);
    std::vector<long long> wrong;
    for (int r = 0; r < args.repeat; ++r) {
        // Fresh values each run: a slot read before its owner stored it holds an older value, which
        // the check then sees as wrong (whether the stale value came from this kernel or another).
        for (float& v : host_in) v = rng.symmetric();
        CUDA_CHECK(cudaMemcpy(in, host_in.data(), bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(out, 0xff, bytes));  // poison: an element nobody writes reads as NaN
        if (fixed_variant)
            fixed::transpose_tile<<<grid, block>>>(in, out, N);
        else
            buggy::transpose_tile<<<grid, block>>>(in, out, N);
        CHECK_LAUNCH("transpose_tile", args.check_launches);
        CUDA_CHECK(cudaMemcpy(host_out.data(), out, bytes, cudaMemcpyDeviceToHost));
        long long bad = 0;
        for (int i = 0; i < N; ++i)
            for (int j = 0; j < N; ++j)
                bad += !(host_out[(size_t)j * N + i] == host_in[(size_t)i * N + j]);
        wrong.push_back(bad);
    }
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));

    long long worst = 0;
    for (long long w : wrong) worst = w > worst ? w : worst;
    scenario::Result result(args);
    result.add("n", N);
    result.add("checked", (long long)count);
    result.add("mismatches", wrong);  // per run: a race makes these differ from run to run
    result.add("max_mismatches", worst);
    result.add("tolerance", 0.0);     // a transpose moves values: every element must match exactly
    result.emit(worst == 0);
}
