// bf16 helpers shared by the bf16 ladders (softmax, layernorm, gemv).
//
// A bf16 value is the top 16 bits of an fp32, so widening is a shift and narrowing is a rounding of
// the low 16 bits. Rungs hold bf16 data as raw 16-bit patterns (`bf16`) and move it in 16-byte
// vectors (`uint4` = 8 bf16), which keeps every rung free of <cuda_bf16.h> and so buildable by NVRTC
// without CUDA's include folder. On the GPU, narrowing uses Hopper's paired conversion
// (cvt.rn.bf16x2.f32: two floats to two bf16 in one instruction, round to nearest even); elsewhere
// (host-side compilation in tests) the same rounding is done with integer operations.
#pragma once

typedef unsigned short bf16;

__device__ __forceinline__ float bf16_lo(unsigned pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float bf16_hi(unsigned pair) { return __uint_as_float(pair & 0xffff0000u); }
__device__ __forceinline__ float bf16_to_float(bf16 h) { return __uint_as_float(static_cast<unsigned>(h) << 16); }

__device__ __forceinline__ unsigned bf16_round_bits(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;  // NaN stays a (quiet) NaN
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                  // round to nearest, ties to even
}

// Two floats -> one 32-bit word holding two bf16: `lo` in the low half (the lower address).
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
#ifdef __CUDA_ARCH__
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return bf16_round_bits(lo) | (bf16_round_bits(hi) << 16);
#endif
}

__device__ __forceinline__ bf16 float_to_bf16(float f) { return static_cast<bf16>(pack_bf16x2(f, 0.0f) & 0xffffu); }

// Eight bf16 in one 16-byte vector <-> eight floats.
__device__ __forceinline__ void unpack8(uint4 v, float (&f)[8]) {
    f[0] = bf16_lo(v.x); f[1] = bf16_hi(v.x); f[2] = bf16_lo(v.y); f[3] = bf16_hi(v.y);
    f[4] = bf16_lo(v.z); f[5] = bf16_hi(v.z); f[6] = bf16_lo(v.w); f[7] = bf16_hi(v.w);
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
    return make_uint4(pack_bf16x2(f[0], f[1]), pack_bf16x2(f[2], f[3]), pack_bf16x2(f[4], f[5]),
                      pack_bf16x2(f[6], f[7]));
}
