// Rung 03: a single pass, tiles chained one after another.
//
// Change: one kernel instead of three. Each block takes the next tile number, scans its tile as in
// rung 02, then waits until the previous tile has published its inclusive prefix (sum of all values
// up to its end), publishes its own (that prefix plus its total) and adds the prefix to its values.
// The input is read once: 8 bytes per value instead of 12.
// But the prefixes travel down a chain: tile t cannot publish before tile t - 1 has, so the whole
// pass waits for 16,384 publications in a row, each an L2 write seen by a spinning reader on another
// SM (hundreds of ns). Counters: dram__throughput low, most warps stalled on the spin
// (smsp__pcsamp_warps_issue_stalled_long_scoreboard on the status load) - the lesson of the rung.
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

// Tiles are numbered in the order blocks start (a ticket from tile_counter), so a block only ever
// waits for a tile whose block is already running: no deadlock whatever order blocks are scheduled in.
extern "C" __global__ void __launch_bounds__(BLOCK)
scan03_chained(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
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
    if (threadIdx.x == 0) {
        float prefix = 0.0f;
        if (tile > 0) {
            unsigned long long w;
            do {
                w = peek(status, tile - 1);  // one L2 round trip per tile, one tile after another
            } while ((w >> 32) != PREFIX);
            prefix = __uint_as_float(static_cast<unsigned>(w));
        }
        publish(status, tile, PREFIX, prefix + total);
        prefix_s = prefix;
    }
    __syncthreads();
    const float add = exclusive + prefix_s;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] += add;
    store_blocked(out, base, n, smem, v);
}
