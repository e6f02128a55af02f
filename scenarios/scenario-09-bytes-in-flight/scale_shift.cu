// Scenario 09: y = a * x + b over n floats, with a grid-stride loop on a grid of a few blocks per SM.
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>). The tests compile it with `nvcc -arch=sm_90 -c`. No headers.

// slow: one 4-byte load per loop iteration, and nothing else in flight. Without __restrict__ the
// compiler must assume that y may overlap x, so it cannot issue the load of the next iteration
// before the store of this one: each thread runs load -> wait ~0.5 us -> FMA -> store -> next load.
// With 512 threads per SM that is 2 KB in flight per SM, where streaming at the DRAM peak needs
// several times more (Little's law: bandwidth x latency).
extern "C" __global__ void scale_shift_scalar(const float* x, float* y, float a, float b, long long n)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i] + b;
    }
}

// fixed: the same grid and the same bytes, 16 times more of them in flight per thread. Each thread
// issues UNROLL independent 16-byte loads (float4) before it uses any of them: 64 bytes in flight
// per thread, 32 KB per SM at 512 threads. __restrict__ tells the compiler the arrays do not
// overlap; the loads-first order would be kept even without it, since the source asks for it.
constexpr int UNROLL = 4;

__device__ __forceinline__ float4 scale_shift4(float4 v, float a, float b)
{
    return make_float4(a * v.x + b, a * v.y + b, a * v.z + b, a * v.w + b);
}

extern "C" __global__ void scale_shift_vec4(const float4* __restrict__ x, float4* __restrict__ y, float a, float b,
                                            long long n4)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            v[u] = x[i + u * stride];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            y[i + u * stride] = scale_shift4(v[u], a, b);
        }
    }
    for (; i < n4; i += stride) {  // the last, partial round
        y[i] = scale_shift4(x[i], a, b);
    }
}
