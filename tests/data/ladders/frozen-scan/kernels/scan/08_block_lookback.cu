// Rung 08: rung 06 with a look-back that walks 256 predecessors per poll.
//
// Change: the look-back is done by the whole block. The nearest 32 predecessors are polled as in
// rungs 04-06 (warp 0; they are the ones likely to be still loading, and a spin on them costs 32
// status words a poll); once they have all published and none holds an inclusive prefix, all eight
// warps read the next 256 status words at once, one 8-byte load a thread, and step back 256 at a
// time until they meet an inclusive prefix.
// Why: in steady state some hundreds of tiles in flight hold only their aggregate, so the nearest
// inclusive prefix lies hundreds of tiles back, and a warp-wide walk pays one L2 round trip (about
// 0.3-0.6 us) per 32 of them; the block-wide walk pays one per 256.
// One barrier a poll: each warp leaves its ballots (which lanes hold a prefix, which have not
// published) and the sum of its lanes up to its nearest prefix in shared memory, double-buffered by
// poll parity, and every thread reads the eight warps' entries and takes the same decision.
// Memory model: as rungs 05-06 (state and value in one 8-byte volatile word; nothing else passes
// between blocks).
// Counters: fewer warp instructions and barrier stalls per tile in the look-back; dram__throughput up.
#define BLOCK 256
#define ITEMS 16
#define TILE (BLOCK * ITEMS)
#define VEC (ITEMS / 4)  // float4 loads per thread per tile

__device__ __forceinline__ unsigned pad(unsigned e) { return e + e / 32; }

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

// The exclusive prefix of `tile`, found by the whole block (every thread returns it). Positions
// before tile 0 read as an inclusive prefix of 0.
__device__ __forceinline__ float look_back_block(unsigned long long* status, unsigned tile, float total) {
    __shared__ unsigned prefix_mask[2][WARPS], waiting_mask[2][WARPS];
    __shared__ float partial[2][WARPS];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (tile == 0) {
        if (threadIdx.x == 0) publish(status, 0, PREFIX, total);
        return 0.0f;
    }
    if (threadIdx.x == 0) publish(status, tile, AGGREGATE, total);
    float prefix = 0.0f;
    int look = static_cast<int>(tile) - 1;
    unsigned width = 32, parity = 0;
    for (;;) {
        const int idx = look - static_cast<int>(threadIdx.x);
        unsigned long long w = static_cast<unsigned long long>(AGGREGATE) << 32;  // outside the window: adds 0
        if (threadIdx.x < width)
            w = idx >= 0 ? peek(status, static_cast<unsigned>(idx)) : static_cast<unsigned long long>(PREFIX) << 32;
        const unsigned state = static_cast<unsigned>(w >> 32);
        const unsigned prefixes = __ballot_sync(FULL, state == PREFIX);
        const unsigned waiting = __ballot_sync(FULL, state == NOT_READY);
        const unsigned stop = prefixes ? __ffs(static_cast<int>(prefixes)) - 1 : 31;
        const float part = warp_sum_all(lane <= stop ? __uint_as_float(static_cast<unsigned>(w)) : 0.0f);
        if (lane == 0) {
            prefix_mask[parity][warp] = prefixes;
            waiting_mask[parity][warp] = waiting;
            partial[parity][warp] = part;
        }
        __syncthreads();
        // Walk the warps nearest first: every lane before the nearest prefix must have published.
        bool ready = true, found = false;
        float sum = 0.0f;
#pragma unroll
        for (int k = 0; k < WARPS; ++k) {
            const unsigned p = prefix_mask[parity][k];
            const unsigned before = p ? (p & (0u - p)) - 1u : FULL;  // lanes nearer than its nearest prefix
            if (waiting_mask[parity][k] & before) { ready = false; break; }
            sum += partial[parity][k];
            if (p) { found = true; break; }
        }
        parity ^= 1u;  // the next poll writes the other buffer: no second barrier
        if (!ready) continue;  // a predecessor has not published: read the same window again
        prefix += sum;
        if (found) break;
        look -= static_cast<int>(width);
        width = BLOCK;
    }
    if (threadIdx.x == 0) publish(status, tile, PREFIX, prefix + total);
    return prefix;
}

// Thread t's four float4 of tile `tile`: float4 numbers t, t + BLOCK, ... (coalesced LDG.E.128); the
// last, partial tile is read a float at a time with zeros past n.
__device__ __forceinline__ void load_tile(const float* __restrict__ x, unsigned tile, unsigned n, float4 (&q)[VEC]) {
    const unsigned base = tile * TILE;
    if (base + TILE <= n) {
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x + base);
#pragma unroll
        for (int k = 0; k < VEC; ++k) q[k] = x4[k * BLOCK + threadIdx.x];
        return;
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
        const unsigned e = base + 4 * (k * BLOCK + threadIdx.x);
        q[k] = make_float4(e < n ? x[e] : 0.0f, e + 1 < n ? x[e + 1] : 0.0f, e + 2 < n ? x[e + 2] : 0.0f,
                           e + 3 < n ? x[e + 3] : 0.0f);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, 8)  // at most 32 registers: 8 blocks per SM
scan08_block_lookback(const float* __restrict__ x, float* __restrict__ out,
                           unsigned long long* __restrict__ status, unsigned* __restrict__ tile_counter, unsigned n) {
    __shared__ float smem[TILE + TILE / 32];
    __shared__ unsigned tile_s, next_s;
    const unsigned tiles = (n + TILE - 1) / TILE;
    if (threadIdx.x == 0) tile_s = atomicAdd(tile_counter, 1u);
    __syncthreads();
    unsigned tile = tile_s;
    if (tile >= tiles) return;
    float4 q[VEC];
    load_tile(x, tile, n, q);
    for (;;) {
        // q (tile `tile`) into the padded shared tile; each thread takes its 16 consecutive values.
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
            float* s = smem + pad(4 * (k * BLOCK + threadIdx.x));  // four floats never straddle a pad word
            s[0] = q[k].x; s[1] = q[k].y; s[2] = q[k].z; s[3] = q[k].w;
        }
        if (threadIdx.x == 0) next_s = atomicAdd(tile_counter, 1u);  // read after the block scan's barriers
        __syncthreads();
        // Two sweeps over this thread's 16 consecutive words, so that no 16 values stay in registers
        // beside the prefetch: their sum, then (after the block scan) their running sum, written back.
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) sum += smem[pad(threadIdx.x * ITEMS + i)];
        float total;
        float run = block_exclusive_scan(sum, &total);
        // The scanned tile, short of its prefix, back where it came from (only this thread's words).
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            float* s = smem + pad(threadIdx.x * ITEMS + i);
            run += *s;
            *s = run;
        }
        const unsigned next = next_s;
        if (next < tiles) load_tile(x, next, n, q);  // in flight during the look-back and the stores
        const float add = look_back_block(status, tile, total);
        __syncthreads();  // the scanned tile in shared memory is complete (tile 0 passes no barrier above)
        const unsigned base = tile * TILE;
        if (base + TILE <= n) {
            float4* __restrict__ out4 = reinterpret_cast<float4*>(out + base);
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const unsigned e4 = k * BLOCK + threadIdx.x;
                const float* s = smem + pad(4 * e4);
                out4[e4] = make_float4(s[0] + add, s[1] + add, s[2] + add, s[3] + add);
            }
        } else {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const unsigned e = k * BLOCK + threadIdx.x;
                if (base + e < n) out[base + e] = smem[pad(e)] + add;
            }
        }
        __syncthreads();  // the shared tile is rewritten by the next tile
        if (next >= tiles) return;
        tile = next;
    }
}
