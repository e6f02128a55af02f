// Rung 04: decoupled look-back (Merrill and Garland, 2016).
//
// Change: a tile publishes its own sum (its aggregate) as soon as its local scan is done, before it
// knows its prefix. Its prefix is then found by looking back: warp 0 reads the status words of the
// 32 previous tiles at once and adds their aggregates until it reaches one that already holds an
// inclusive prefix. No tile waits for the whole chain before it; it waits at most for its
// predecessors' local scans, which run concurrently. Still one pass, 8 bytes per value.
// Counters: dram__throughput near its peak; the status traffic (16,384 words of 8 bytes, a few
// reads each) is noise beside 512 MiB.
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

// Tile status words: the state in the high 32 bits, the value (a float's bits) in the low 32, so one
// 8-byte store publishes both and no reader can see a state without its value.
#define NOT_READY 0u
#define AGGREGATE 1u  // the tile's own sum
#define PREFIX 2u     // the sum of everything up to and including the tile

__device__ __forceinline__ void publish(unsigned long long* status, unsigned tile, unsigned state, float value) {
    *reinterpret_cast<volatile unsigned long long*>(status + tile) =
        (static_cast<unsigned long long>(state) << 32) | __float_as_uint(value);
}

__device__ __forceinline__ unsigned long long peek(const unsigned long long* status, unsigned tile) {
    return *reinterpret_cast<const volatile unsigned long long*>(status + tile);
}

__device__ __forceinline__ float warp_sum_all(float v) {  // every lane gets the sum
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(FULL, v, offset);
    return v;
}

// The exclusive prefix of `tile`, found by warp 0 looking back 32 predecessors at a time: it adds
// their aggregates until it meets a tile that holds its inclusive prefix. Before looking, the tile
// publishes its own aggregate so that its successors need not wait for this look-back to end.
__device__ __forceinline__ float look_back(unsigned long long* status, unsigned tile, float total) {
    const unsigned lane = threadIdx.x % 32;
    if (tile == 0) {
        if (lane == 0) publish(status, 0, PREFIX, total);
        return 0.0f;
    }
    if (lane == 0) publish(status, tile, AGGREGATE, total);
    float prefix = 0.0f;
    int look = static_cast<int>(tile) - 1;
    for (;;) {
        const int idx = look - static_cast<int>(lane);
        const unsigned long long w =
            idx >= 0 ? peek(status, static_cast<unsigned>(idx)) : static_cast<unsigned long long>(PREFIX) << 32;
        const unsigned state = static_cast<unsigned>(w >> 32);
        if (__any_sync(FULL, state == NOT_READY)) continue;  // a predecessor has not published: read again
        const unsigned prefixes = __ballot_sync(FULL, state == PREFIX);
        const unsigned stop = prefixes ? __ffs(static_cast<int>(prefixes)) - 1 : 31;  // nearest inclusive prefix
        prefix += warp_sum_all(lane <= stop ? __uint_as_float(static_cast<unsigned>(w)) : 0.0f);
        if (prefixes) break;
        look -= 32;
    }
    if (lane == 0) publish(status, tile, PREFIX, prefix + total);
    return prefix;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
scan04_decoupled_lookback(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
            unsigned* __restrict__ tile_counter, unsigned n) {
    __shared__ float smem[TILE + TILE / 32];
    __shared__ unsigned tile_s;
    __shared__ float prefix_s;
    if (threadIdx.x == 0) tile_s = atomicAdd(tile_counter, 1u);
    __syncthreads();
    const unsigned tile = tile_s, base = tile * TILE;
    float v[ITEMS];
    load_blocked(x, base, n, smem, v);
#pragma unroll
    for (int i = 1; i < ITEMS; ++i) v[i] += v[i - 1];
    float total;
    const float exclusive = block_exclusive_scan(v[ITEMS - 1], &total);
    if (threadIdx.x < 32) {
        const float prefix = look_back(status, tile, total);
        if (threadIdx.x == 0) prefix_s = prefix;
    }
    __syncthreads();
    const float add = exclusive + prefix_s;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] += add;
    store_blocked(out, base, n, smem, v);
}
