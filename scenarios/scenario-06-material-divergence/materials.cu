// Scenario 06: evaluate each cell's material model: out[i] = model[material[i]](x[i]).
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c`.
// No headers: NVRTC has no host include path.
//
// Eight materials, eight different response models, each a weighted series of TERMS terms built on
// a special function (sine, cosine, exponential, logarithm, reciprocal square root, reciprocal,
// base-2 exponential): y = sum_{k=1..TERMS} q^k f_m(k, x). The special functions run on the SM's
// special-function units (the fast intrinsics: one MUFU instruction each), 16 results per cycle per
// SM, which sets the kernel's pace.
//
// One thread per cell. The branch on the material is taken per thread; a warp whose 32 cells hold
// several materials runs each model in turn with the other threads masked off. The same kernel is
// used by both variants: the fix is in the order of the cells, not in the code.

constexpr int TERMS = 112;
constexpr float Q = 0.97f;   // weight ratio: the k-th term is weighted by Q^k

// The series for one material, with the term f(k * x, x2) summed in float32 (k as a float: exact).
template <class Term>
__device__ __forceinline__ float series(float x, Term term)
{
    const float x2 = x * x;
    float w = 1.0f, k = 0.0f, y = 0.0f;
#pragma unroll 4
    for (int t = 0; t < TERMS; ++t) {
        w *= Q;
        k += 1.0f;
        y += w * term(k, x, x2);
    }
    return y;
}

__device__ __forceinline__ float model(int material, float x)
{
    switch (material) {
    case 0: return series(x, [](float k, float x, float) { return __sinf(k * x); });
    case 1: return series(x, [](float k, float x, float) { return __cosf(k * x); });
    case 2: return series(x, [](float k, float, float x2) { return __expf(-k * x2); });
    case 3: return series(x, [](float k, float, float x2) { return __logf(1.0f + k * x2); });
    case 4: return series(x, [](float k, float, float x2) { return rsqrtf(1.0f + k * x2); });
    case 5: return series(x, [](float k, float x, float) { return __sinf(k * x) * __cosf(k * x); });
    case 6: return series(x, [](float k, float, float x2) { return __fdividef(1.0f, 1.0f + k * x2); });
    default: return series(x, [](float k, float x, float) { return exp2f(-k * fabsf(x)); });
    }
}

extern "C" __global__ void __launch_bounds__(256)
material_response(const float* __restrict__ x, const unsigned char* __restrict__ material,
                  float* __restrict__ out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = model(material[i], x[i]);
}
