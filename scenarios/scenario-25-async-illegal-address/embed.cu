// Scenario 25: an embedding lookup that reads far past its table for padding tokens; the error
// surfaces later, at a cudaMemcpy that has nothing wrong with it (found with CUDA_LAUNCH_BLOCKING=1
// and a check after every launch, then compute-sanitizer --tool memcheck for the line).
//
//     nvcc -arch=sm_90 -lineinfo -Xcompiler -rdynamic -o embed embed.cu
//     ./embed --variant buggy                      # fails at the copy back, far from the cause
//     CUDA_LAUNCH_BLOCKING=1 ./embed --variant buggy --check-launches   # fails at the kernel
//     ./embed --variant fixed                      # padding tokens get a zero vector
//
// A batch of SEQUENCES token sequences, each padded to LENGTH with PAD = 0xFFFFFFFF (the largest
// uint32, which the tokenizer uses for "no token"). embed() gathers one table row per token and
// add_positions() adds a position vector; the host then builds the next batch's reference on the
// CPU and copies the result back. The buggy embed() looks up table[PAD], 4.4 TB past the end of the
// table: the load faults, the kernel dies, and the CUDA context is unusable from then on. Kernel
// launches return before the kernel runs, so neither launch reports anything; the first call that
// waits for the GPU, the cudaMemcpy, returns the error, and the program's message names that line.
#include "../correctness.cuh"

constexpr int SEQUENCES = 32;
constexpr int LENGTH = 128;  // tokens per sequence, padding included
constexpr int TOKENS = SEQUENCES * LENGTH;
constexpr int DIM = 256;     // floats per embedding row; one thread per float
constexpr int VOCAB = 32000;
constexpr unsigned PAD = 0xffffffffu;
// One float addition per element, compared with the same addition in float64.
constexpr double TOLERANCE = 1e-6;

namespace buggy {
__global__ void embed(const unsigned* __restrict__ ids, const float* __restrict__ table, float* __restrict__ out,
                      int tokens, int dim)
{
    int t = blockIdx.x, d = threadIdx.x;
    if (t >= tokens || d >= dim) return;
    out[(size_t)t * dim + d] = table[(size_t)ids[t] * dim + d];
}
}  // namespace buggy

namespace fixed {
__global__ void embed(const unsigned* __restrict__ ids, const float* __restrict__ table, float* __restrict__ out,
                      int tokens, int dim)
{
    int t = blockIdx.x, d = threadIdx.x;
    if (t >= tokens || d >= dim) return;
    const unsigned id = ids[t];
    out[(size_t)t * dim + d] = id == PAD ? 0.0f : table[(size_t)id * dim + d];  // padding: a zero vector
}
}  // namespace fixed

__global__ void add_positions(float* __restrict__ out, const float* __restrict__ positions, int tokens, int length,
                              int dim)
{
    int t = blockIdx.x, d = threadIdx.x;
    if (t >= tokens || d >= dim) return;
    out[(size_t)t * dim + d] += positions[(size_t)(t % length) * dim + d];
}

int main(int argc, char** argv)
{
    scenario::Args args = scenario::parse_args(argc, argv);
    const bool fixed_variant = args.variant == "fixed";
    scenario::Rng rng(args.seed);

    std::vector<unsigned> host_ids(TOKENS);
    std::vector<float> host_table((size_t)VOCAB * DIM), host_pos((size_t)LENGTH * DIM), host_out((size_t)TOKENS * DIM);
    for (float& v : host_table) v = rng.symmetric();
    for (float& v : host_pos) v = rng.symmetric();

    unsigned* ids = nullptr;
    float *table = nullptr, *positions = nullptr, *out = nullptr;
    const size_t out_bytes = host_out.size() * sizeof(float);
    CUDA_CHECK(cudaMalloc(&ids, TOKENS * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&table, host_table.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&positions, host_pos.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&out, out_bytes));
    CUDA_CHECK(cudaMemcpy(table, host_table.data(), host_table.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(positions, host_pos.data(), host_pos.size() * sizeof(float), cudaMemcpyHostToDevice));

    std::vector<double> errors;
    std::vector<long long> padding;
    for (int run = 0; run < args.repeat; ++run) {
        long long pads = 0;
        for (int s = 0; s < SEQUENCES; ++s) {
            int used = LENGTH - (int)(rng.next() % 8);  // 121..128 real tokens, then padding
            for (int i = 0; i < LENGTH; ++i) {
                bool real = i < used;
                host_ids[(size_t)s * LENGTH + i] = real ? (unsigned)(rng.next() % VOCAB) : PAD;
                pads += !real;
            }
        }
        padding.push_back(pads);
        CUDA_CHECK(cudaMemcpy(ids, host_ids.data(), TOKENS * sizeof(unsigned), cudaMemcpyHostToDevice));

        if (fixed_variant)
            fixed::embed<<<TOKENS, DIM>>>(ids, table, out, TOKENS, DIM);
        else
            buggy::embed<<<TOKENS, DIM>>>(ids, table, out, TOKENS, DIM);
        CHECK_LAUNCH("embed", args.check_launches);
        add_positions<<<TOKENS, DIM>>>(out, positions, TOKENS, LENGTH, DIM);
        CHECK_LAUNCH("add_positions", args.check_launches);

        // Host work while the GPU runs: the expected answer, in float64.
        std::vector<double> want((size_t)TOKENS * DIM);
        for (int t = 0; t < TOKENS; ++t) {
            for (int d = 0; d < DIM; ++d) {
                unsigned id = host_ids[t];
                double e = id == PAD ? 0.0 : (double)host_table[(size_t)id * DIM + d];
                want[(size_t)t * DIM + d] = e + (double)host_pos[(size_t)(t % LENGTH) * DIM + d];
            }
        }
        CUDA_CHECK(cudaMemcpy(host_out.data(), out, out_bytes, cudaMemcpyDeviceToHost));
        double diff = 0.0, norm = 0.0;
        for (size_t i = 0; i < want.size(); ++i) {
            double dd = (double)host_out[i] - want[i];
            diff += dd * dd;
            norm += want[i] * want[i];
        }
        errors.push_back(std::sqrt(diff / norm));
    }
    CUDA_CHECK(cudaFree(ids));
    CUDA_CHECK(cudaFree(table));
    CUDA_CHECK(cudaFree(positions));
    CUDA_CHECK(cudaFree(out));

    double worst = 0.0;
    bool finite = true;
    for (double e : errors) {
        finite = finite && std::isfinite(e);
        worst = e > worst ? e : worst;
    }
    scenario::Result result(args);
    result.add("tokens", TOKENS);
    result.add("dim", DIM);
    result.add("padding_tokens", padding);
    result.add("rel_error", finite ? worst : NAN);
    result.add("tolerance", TOLERANCE);
    result.emit(finite && worst <= TOLERANCE);
}
