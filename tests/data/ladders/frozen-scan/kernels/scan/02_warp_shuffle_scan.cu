// Rung 02: warp shuffles for the block-level scan and sum.
//
// Change: the scan of the 256 thread totals uses __shfl_up_sync inside each warp (5 steps in
// registers), then one warp scans the 8 warp totals the same way: 2 barriers instead of 9, and no
// shared-memory round trip per step. The tile sums of pass 1 use __shfl_down_sync likewise.
// Everything else is rung 01: three passes, 16 values per thread, blocked through shared memory.
// Counters: barrier stalls and shared-memory instructions down; DRAM bytes unchanged (12 per value),
// so the gain is bounded by how far rung 01 was from its own bandwidth limit.
#define BLOCK 256
#define ITEMS 16
#define TILE (BLOCK * ITEMS)

__device__ __forceinline__ unsigned pad(unsigned e) { return e + e / 32; }

__device__ __forceinline__ void load_blocked(const float* __restrict__ x, unsigned base, unsigned n, float* smem,
                                             float (&v)[ITEMS]) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned e = k * BLOCK + threadIdx.x;
        smem[pad(e)] = base + e < n ? x[base + e] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = smem[pad(threadIdx.x * ITEMS + i)];
    __syncthreads();
}

__device__ __forceinline__ void store_blocked(float* __restrict__ out, unsigned base, unsigned n, float* smem,
                                              const float (&v)[ITEMS]) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) smem[pad(threadIdx.x * ITEMS + i)] = v[i];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned e = k * BLOCK + threadIdx.x;
        if (base + e < n) out[base + e] = smem[pad(e)];
    }
    __syncthreads();
}

#define FULL 0xffffffffu
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_inclusive_scan(float v) {
    const unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
        const float up = __shfl_up_sync(FULL, v, offset);
        if (lane >= offset) v += up;
    }
    return v;
}

// Exclusive scan of one value per thread over the block; *total gets the block's sum.
__device__ __forceinline__ float block_exclusive_scan(float t, float* total) {
    __shared__ float warp_totals[WARPS];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const float inclusive = warp_inclusive_scan(t);
    float exclusive = __shfl_up_sync(FULL, inclusive, 1);
    if (lane == 0) exclusive = 0.0f;
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        const float w = lane < WARPS ? warp_totals[lane] : 0.0f;
        const float scanned = warp_inclusive_scan(w);
        if (lane < WARPS) warp_totals[lane] = scanned;  // inclusive scan of the warp totals
    }
    __syncthreads();
    const float warp_prefix = warp > 0 ? warp_totals[warp - 1] : 0.0f;
    *total = warp_totals[WARPS - 1];
    __syncthreads();  // warp_totals is reused by the next call
    return warp_prefix + exclusive;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    return v;
}

__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warp_sums[WARPS];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += warp_sums[w];
    return s;
}

// Scan ITEMS values in registers, then across the block; returns the block total.
__device__ __forceinline__ float scan_tile(float (&v)[ITEMS], float carry) {
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) v[i] += v[i - 1];
    float total;
    const float prefix = block_exclusive_scan(v[ITEMS - 1], &total) + carry;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] += prefix;
    return total;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
scan02_tile_sums(const float* __restrict__ x, float* __restrict__ sums, unsigned n) {
    const unsigned base = blockIdx.x * TILE;
    float v = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned e = base + k * BLOCK + threadIdx.x;
        if (e < n) v += x[e];
    }
    v = block_sum(v);
    if (threadIdx.x == 0) sums[blockIdx.x] = v;
}

// One block scans all tile sums in place, TILE at a time, carrying the running total.
extern "C" __global__ void __launch_bounds__(BLOCK)
scan02_sums(float* __restrict__ sums, unsigned count) {
    __shared__ float smem[TILE + TILE / 32];
    float carry = 0.0f;
    for (unsigned base = 0; base < count; base += TILE) {
        float v[ITEMS];
        load_blocked(sums, base, count, smem, v);
        carry += scan_tile(v, carry);
        store_blocked(sums, base, count, smem, v);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
scan02_tiles(const float* __restrict__ x, const float* __restrict__ scanned_sums, float* __restrict__ out, unsigned n) {
    __shared__ float smem[TILE + TILE / 32];
    const unsigned base = blockIdx.x * TILE;
    float v[ITEMS];
    load_blocked(x, base, n, smem, v);
    scan_tile(v, blockIdx.x > 0 ? scanned_sums[blockIdx.x - 1] : 0.0f);
    store_blocked(out, base, n, smem, v);
}
