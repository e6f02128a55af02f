// Rung 03: four rows per warp, their loads issued together.
//
// Change: each warp computes ROWS = 4 outputs. In each step a lane loads one uint4 of x and the
// matching uint4 of all four rows before any multiply: four independent 16-byte loads of W in flight
// per lane instead of one, x unpacked once and used four times, four accumulators, four shuffle
// reductions at the end. A quarter as many warps cover the matrix.
// Counters: bytes in flight per lane 16 -> 64 (smsp__pcsamp_warps_issue_stalled_long_scoreboard
// down); x's L1 traffic per byte of W down 4x; dram__throughput toward the read ceiling.
#include "bf16.cuh"
#define FULL 0xffffffffu
#define ROWS 4

extern "C" __global__ void __launch_bounds__(256)
gemv03_rows_per_warp(const bf16* __restrict__ w, const bf16* __restrict__ x, bf16* __restrict__ y, unsigned n,
                     unsigned k) {
    const unsigned lane = threadIdx.x % 32;
    const unsigned r0 = (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * ROWS;
    if (r0 >= n) return;
    const unsigned vecs = k / 8;
    const uint4* __restrict__ x8 = reinterpret_cast<const uint4*>(x);
    const uint4* __restrict__ rows[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; ++i)  // rows past the end repeat the last row; their results are not stored
        rows[i] = reinterpret_cast<const uint4*>(w) + static_cast<size_t>(min(r0 + i, n - 1)) * vecs;
    float acc[ROWS] = {};
    for (unsigned j = lane; j < vecs; j += 32) {
        uint4 raw[ROWS];
#pragma unroll
        for (int i = 0; i < ROWS; ++i) raw[i] = rows[i][j];  // all loads issued before the first use
        float b[8];
        unpack8(x8[j], b);
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            float a[8];
            unpack8(raw[i], a);
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[i] = fmaf(a[e], b[e], acc[i]);
        }
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) acc[i] += __shfl_xor_sync(FULL, acc[i], offset);
    }
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < ROWS; ++i)
            if (r0 + i < n) y[r0 + i] = float_to_bf16(acc[i]);
    }
}
