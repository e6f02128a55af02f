// Scenario 01: advance the x coordinate of every particle by one time step, x' = x + dt * vx.
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c`.
// No headers: NVRTC has no host include path.

// One particle, 8 floats = 32 bytes: the natural layout for code that handles one particle at a
// time, and the wrong one for a kernel that reads two fields of every particle.
struct Particle {
    float x, y, z;
    float vx, vy, vz;
    float mass, charge;
};
static_assert(sizeof(Particle) == 32, "a particle is 32 bytes");

// slow: array of structs. Thread i reads p[i].x and p[i].vx; neighbouring threads read addresses
// 32 bytes apart, so one warp-wide 4-byte load touches 32 different 32-byte sectors (1 KiB) to use
// 128 bytes of it. Every sector of the array crosses DRAM: 32 bytes moved per 8 bytes used.
extern "C" __global__ void drift_x_aos(const Particle* __restrict__ p, float* __restrict__ x_out,
                                       float dt, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x_out[i] = p[i].x + dt * p[i].vx;
    }
}

// fixed: structure of arrays. x[] and vx[] are contiguous, so a warp's 32 loads of 4 bytes fall in
// 4 consecutive sectors (one 128-byte line): every byte fetched is used.
extern "C" __global__ void drift_x_soa(const float* __restrict__ x, const float* __restrict__ vx,
                                       float* __restrict__ x_out, float dt, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x_out[i] = x[i] + dt * vx[i];
    }
}
