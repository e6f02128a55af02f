// Rung 07: reduce-then-scan done well: three passes, both big ones at the tile code's best speed.
//
// Change: back to rung 02's three passes (tile sums, one block scanning the sums, the tiles scanned
// with their offsets), with what the single-pass rungs learned: 16-byte loads and stores in both big
// passes (rung 05), a middle pass of one 1024-thread block (16 sums a thread, two barriers), and the
// third pass taking the tiles last to first, so its first reads find the end of the input that the
// first pass left in the L2 (up to ~50 MB of 256 MB) instead of going to DRAM.
// No block waits for another block: the passes are ordered by the stream.
// Bytes: 12 per value (the input is read twice) less what the L2 keeps, so the ceiling is 2/3 of
// the copy rate counted on 8 bytes a value, a little more with the L2's help.
// Counters: each pass's dram__throughput near a copy's; the middle pass a few microseconds.
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

// Full tiles move through 16-byte accesses: thread t loads float4 number t, t + BLOCK, ... (coalesced,
// one LDG.E.128 each) and spreads its four floats into the padded shared tile; the last, partial
// tile takes the scalar path.
__device__ __forceinline__ void load_blocked_vec4(const float* __restrict__ x, unsigned base, unsigned n, float* smem,
                                                  float (&v)[ITEMS]) {
    if (base + TILE > n) {
        load_blocked(x, base, n, smem, v);
        return;
    }
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x + base);
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const unsigned e4 = k * BLOCK + threadIdx.x;
        const float4 q = x4[e4];
        float* s = smem + pad(4 * e4);  // four consecutive floats never straddle a pad word
        s[0] = q.x; s[1] = q.y; s[2] = q.z; s[3] = q.w;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = smem[pad(threadIdx.x * ITEMS + i)];
    __syncthreads();
}

__device__ __forceinline__ void store_blocked_vec4(float* __restrict__ out, unsigned base, unsigned n, float* smem,
                                                   const float (&v)[ITEMS]) {
    if (base + TILE > n) {
        store_blocked(out, base, n, smem, v);
        return;
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) smem[pad(threadIdx.x * ITEMS + i)] = v[i];
    __syncthreads();
    float4* __restrict__ out4 = reinterpret_cast<float4*>(out + base);
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const unsigned e4 = k * BLOCK + threadIdx.x;
        const float* s = smem + pad(4 * e4);
        out4[e4] = make_float4(s[0], s[1], s[2], s[3]);
    }
    __syncthreads();
}


// Pass 1: the sum of each tile, from four coalesced float4 per thread.
extern "C" __global__ void __launch_bounds__(BLOCK)
scan07_tile_sums(const float* __restrict__ x, float* __restrict__ sums, unsigned n) {
    __shared__ float warp_sums[WARPS];
    const unsigned tile = blockIdx.x, base = tile * TILE;
    float s = 0.0f;
    if (base + TILE <= n) {
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x + base);
        float4 q[ITEMS / 4];
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) q[k] = x4[k * BLOCK + threadIdx.x];
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) s += (q[k].x + q[k].y) + (q[k].z + q[k].w);
    } else {
        for (unsigned e = base + threadIdx.x; e < n && e < base + TILE; e += BLOCK) s += x[e];
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(FULL, s, offset);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < WARPS ? warp_sums[threadIdx.x] : 0.0f;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) w += __shfl_xor_sync(FULL, w, offset);
        if (threadIdx.x == 0) sums[tile] = w;
    }
}

// Pass 2: one block of 1024 threads turns the tile sums into exclusive prefixes, in place: 16
// consecutive sums a thread, scanned serially, then across the 32 warps with shuffles. More than
// 16,384 sums are taken in chunks with a running carry.
#define MID_BLOCK 1024
#define MID_ITEMS 16
#define MID_WARPS (MID_BLOCK / 32)

extern "C" __global__ void __launch_bounds__(MID_BLOCK) scan07_sums(float* sums, unsigned tiles) {
    __shared__ float warp_totals[MID_WARPS];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float carry = 0.0f;
    for (unsigned chunk = 0; chunk < tiles; chunk += MID_BLOCK * MID_ITEMS) {
        const unsigned first = chunk + threadIdx.x * MID_ITEMS;
        float t = 0.0f;  // two sweeps over this thread's 16 sums (L2 hits), not 16 registers each
#pragma unroll
        for (int i = 0; i < MID_ITEMS; ++i) t += first + i < tiles ? sums[first + i] : 0.0f;
        const float inclusive = warp_inclusive_scan(t);
        if (lane == 31) warp_totals[warp] = inclusive;
        __syncthreads();
        if (warp == 0) warp_totals[lane] = warp_inclusive_scan(warp_totals[lane]);  // MID_WARPS == 32
        __syncthreads();
        float run = carry + (warp > 0 ? warp_totals[warp - 1] : 0.0f) + inclusive - t;  // exclusive
#pragma unroll
        for (int i = 0; i < MID_ITEMS; ++i) {
            if (first + i < tiles) {
                const float v = sums[first + i];
                sums[first + i] = run;
                run += v;
            }
        }
        carry += warp_totals[MID_WARPS - 1];
        __syncthreads();  // warp_totals is rewritten by the next chunk
    }
}

// Pass 3: rung 05's tile code with the prefix read from pass 2, tiles taken last to first.
extern "C" __global__ void __launch_bounds__(BLOCK, 8)  // 32 registers as rung 05: 8 blocks per SM
scan07_tiles(const float* __restrict__ x, const float* __restrict__ sums, float* __restrict__ out, unsigned n) {
    __shared__ float smem[TILE + TILE / 32];
    const unsigned tile = gridDim.x - 1 - blockIdx.x, base = tile * TILE;
    float v[ITEMS];
    load_blocked_vec4(x, base, n, smem, v);
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) v[i] += v[i - 1];
    float total;
    const float add = block_exclusive_scan(v[ITEMS - 1], &total) + sums[tile];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] += add;
    store_blocked_vec4(out, base, n, smem, v);
}
