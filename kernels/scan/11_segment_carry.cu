// Rung 11: no look-back chain. Segments of G tiles over a co-resident grid of G blocks, each block
// carrying its own prefix from one segment to the next.
//
// What sets the pace of rungs 04-10 (NOTES.md): a tile's prefix is found by walking back to an
// inclusive prefix that another tile's look-back published, so prefixes arrive as a chain, at most
// one round per look-back latency. Rung 09 keeps the look-back on each round's critical path (67% of
// its cycles are barrier stalls behind warp 0's poll); rung 10 takes it off the path with look-back
// warps and the wait moves to the store (50.7% of the warp samples), the prefix arriving two rounds
// after its aggregate. Rung 07's tile pass, the same float4 tile code with no look-back, moves its
// bytes at 3.87 TB/s.
//
// Change: the grid is G blocks that are all resident at once (the launcher takes G from the driver's
// occupancy calculator and launches cooperatively, which fails rather than launch more). Block c
// scans tiles c, c + G, c + 2G, ...: tile i G + c, the block's i-th, lies in segment i. Its
// exclusive prefix is the block's previous tile's prefix plus the aggregates of the G tiles just
// before it (tiles (i - 1) G + c .. i G + c - 1: the tail of segment i - 1 from block c on and the
// head of segment i before block c), all of them aggregates that their blocks publish right after
// scanning a tile. No tile's prefix depends on another tile's prefix, only on aggregates, so there
// is no chain: a block waits at most for the slowest block's load and scan of a tile it needs.
// Each round, block c issues the cp.async copies of its tile AHEAD rounds on into a ring of
// shared-memory stages, issues the status loads of the window of the tile it stores this round
// (LAG rounds old, so its window was published a round or more ago), scans this round's tile in
// place and publishes its aggregate, then adds up the window (each thread its G / 256 words, one
// barrier for the block's sum) and stores the old tile with its prefix. The status loads fly while
// the tile is scanned; they are read after the scan's barriers.
// Status words: status[(segment % KEPT) * G + c] = tag << 32 | the aggregate's float bits, with tag =
// base + tile index; the launcher gives each call a base past the previous call's tags, so a word
// from an earlier call never matches and no memset clears the buffer between calls (a zeroed buffer,
// tag 0, base >= 1). A word is rewritten KEPT segments later: a block publishing segment s has
// seen (in its previous round's window) every other block's aggregate of segment s - 2 - LAG, so
// every reader of segment s - 3 - 2 LAG has finished with it, and KEPT = 16 >= 2 LAG + 3 segments
// are never rewritten unread (LAG <= 6). A word whose tag is newer than the one awaited (rewritten:
// the argument above broken) traps.
// Deadlock-free if all G blocks are resident: a tile waits only for aggregates of smaller tiles,
// whose blocks publish them after waiting only for aggregates of still smaller tiles (by induction
// from tile 0, which waits for nothing). The launch must not exceed the blocks that fit (cooperative
// launch checks it); a block that never started would stall every later window for ever.
// A spin that lasts 2^22 polls (seconds) traps instead of hanging the GPU.
// Memory model: as rungs 05-10, one 8-byte volatile word carries the tag and the value; no other
// data passes between blocks.
// Shared memory is all dynamic (the ring, then the warp totals), so that the CPU emulator, which runs
// a cooperative launch's blocks side by side, can give each block its own.
// Candidates (problem.py times them on the first call for each n and keeps the fastest): 16 values a
// thread with (AHEAD, LAG) = (2, 1) or (1, 2) at 3 blocks per SM, (1, 1) at 4, (3, 1) at 2; 8 values
// with (2, 1) at 6; 32 values (tiles of 8,192: 32 rounds of 256 blocks at 2^26) with (1, 1) at 2.
// After the first trial (LAG 2 fastest: 16 values (1, 2) at 3 per SM, 138.5 us in its tuning, against
// 147.0-163.6 us for LAG 1), LAG 2 and 3 with more warps an SM: 12 values (1, 2) at 4, 8 values (1, 2)
// at 6, 16 values (1, 3) at 2, 12 values (1, 3) at 3, 8 values (1, 3) at 5.
// WINDOW: status words a thread reads per round (G <= 256 WINDOW).
// Counters: dram__throughput toward rung 07's tile pass (80%); barrier stalls well under rung 09's.
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu
#define KEPT 16u  // segments of status words kept for each block
#ifdef __CUDA_ARCH__
#define SPIN_LIMIT (1u << 22)
#else
#define SPIN_LIMIT (1u << 16)  // the CPU emulator: a wait that no other block ends fails the launch
#endif

#ifndef __CUDA_ARCH__
#include <cstring>
#endif

__device__ __forceinline__ void publish(unsigned long long* status, unsigned slot, unsigned tag, float value) {
    *reinterpret_cast<volatile unsigned long long*>(status + slot) =
        (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(value);
}

__device__ __forceinline__ unsigned long long peek(const unsigned long long* status, unsigned slot) {
    return *reinterpret_cast<const volatile unsigned long long*>(status + slot);
}

__device__ __forceinline__ float4* dynamic_smem() {
#if defined(__CUDA_ARCH__)
    extern __shared__ float4 scan11_smem[];
    return scan11_smem;
#elif !defined(__CUDACC__)  // the CPU emulator: this block's own buffer
    return static_cast<float4*>(emu::dynamic_shared());
#else  // nvcc's host pass, which never runs device code
    return nullptr;
#endif
}

// 16 bytes from global to shared memory without passing through registers; bytes past `bytes` are
// zero-filled (cp.async.cg: cached in L2 only).
__device__ __forceinline__ void copy16_async(float4* dst, const float* src, unsigned bytes) {
#ifdef __CUDA_ARCH__
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes) : "memory");
#else
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::memcpy(v, src, bytes);
    *dst = make_float4(v[0], v[1], v[2], v[3]);
#endif
}

__device__ __forceinline__ void copy_commit() {
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int PENDING>
__device__ __forceinline__ void copy_wait() {
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
#endif
}

__device__ __forceinline__ void store_streaming(float4* p, float4 v) {
#ifdef __CUDA_ARCH__
    __stcs(p, v);  // st.global.cs: evict-first, the output is not read again
#else
    *p = v;
#endif
}

// A tile's float4 slot s lives at s ^ ((s / 8) % 8) (rung 09: conflict-free striped and blocked access).
__device__ __forceinline__ unsigned swz(unsigned s) { return s ^ ((s >> 3) & 7u); }

__device__ __forceinline__ float warp_inclusive_scan(float v) {
    const unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
        const float up = __shfl_up_sync(FULL, v, offset);
        if (lane >= offset) v += up;
    }
    return v;
}

__device__ __forceinline__ float warp_sum_all(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(FULL, v, offset);
    return v;
}

// Exclusive scan of one value per thread over the block; *total gets the block's sum.
__device__ __forceinline__ float block_exclusive_scan(float t, float* total, float* warp_totals) {
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const float inclusive = warp_inclusive_scan(t);
    float exclusive = __shfl_up_sync(FULL, inclusive, 1);
    if (lane == 0) exclusive = 0.0f;
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        const float w = lane < WARPS ? warp_totals[lane] : 0.0f;
        const float scanned = warp_inclusive_scan(w);
        if (lane < WARPS) warp_totals[lane] = scanned;
    }
    __syncthreads();
    const float warp_prefix = warp > 0 ? warp_totals[warp - 1] : 0.0f;
    *total = warp_totals[WARPS - 1];
    return warp_prefix + exclusive;  // warp_totals is next written after at least one more barrier
}

template <int ITEMS>
__device__ __forceinline__ void load_tile(const float* __restrict__ x, unsigned tile, unsigned n, float4* buf) {
    constexpr unsigned TILE = BLOCK * ITEMS, V = ITEMS / 4;
    const unsigned base = tile * TILE;
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
        const unsigned s = k * BLOCK + threadIdx.x, e = base + 4 * s;
        const unsigned bytes = e + 4 <= n ? 16u : e < n ? 4 * (n - e) : 0u;
        copy16_async(buf + swz(s), bytes ? x + e : x, bytes);
    }
}

template <int ITEMS>
__device__ __forceinline__ float scan_tile(float4* buf, float* warp_totals) {
    constexpr unsigned V = ITEMS / 4;
    float4 q[V];
#pragma unroll
    for (unsigned m = 0; m < V; ++m) q[m] = buf[swz(threadIdx.x * V + m)];
    float run = 0.0f;
#pragma unroll
    for (unsigned m = 0; m < V; ++m) {
        q[m].x += run; q[m].y += q[m].x; q[m].z += q[m].y; q[m].w += q[m].z;
        run = q[m].w;
    }
    float total;
    const float add = block_exclusive_scan(run, &total, warp_totals);
#pragma unroll
    for (unsigned m = 0; m < V; ++m)
        buf[swz(threadIdx.x * V + m)] = make_float4(q[m].x + add, q[m].y + add, q[m].z + add, q[m].w + add);
    return total;
}

template <int ITEMS>
__device__ __forceinline__ void store_tile(float* __restrict__ out, unsigned tile, unsigned n, const float4* buf,
                                           float add) {
    constexpr unsigned TILE = BLOCK * ITEMS, V = ITEMS / 4;
    const unsigned base = tile * TILE;
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
        const unsigned s = k * BLOCK + threadIdx.x, e = base + 4 * s;
        const float4 v = buf[swz(s)];
        if (e + 4 <= n) {
            store_streaming(reinterpret_cast<float4*>(out + e), make_float4(v.x + add, v.y + add, v.z + add, v.w + add));
        } else {
            const float f[4] = {v.x, v.y, v.z, v.w};
            for (unsigned c = 0; e + c < n && c < 4; ++c) out[e + c] = f[c] + add;
        }
    }
}

// Window word k (0 <= k < G) of the tile of round j of block c: tile (j - 1) G + c + k, which is block
// c + k's tile of segment j - 1 when c + k < G, else block c + k - G's of segment j.
__device__ __forceinline__ unsigned window_slot(unsigned j, unsigned c, unsigned k, unsigned G) {
    return c + k < G ? ((j - 1) % KEPT) * G + c + k : (j % KEPT) * G + c + k - G;
}

template <int ITEMS, int AHEAD, int LAG, int WINDOW>
__device__ __forceinline__ void segment_scan(const float* __restrict__ x, float* __restrict__ out,
                                             unsigned long long* __restrict__ status, unsigned n, unsigned base) {
    constexpr unsigned TILE = BLOCK * ITEMS, SLOTS = TILE / 4, STAGES = AHEAD + 1 + LAG;
    static_assert(2 * LAG + 3 <= KEPT, "a status word is rewritten KEPT segments later: readers may lag 2 LAG + 2");
    float4* ring = dynamic_smem();
    float* warp_totals = reinterpret_cast<float*>(ring + STAGES * SLOTS);  // WARPS floats
    float* window_totals = warp_totals + WARPS;                             // WARPS floats
    const unsigned G = gridDim.x, c = blockIdx.x;
    if (G > WINDOW * BLOCK) __trap();  // the launcher keeps G within the window's registers
    const unsigned tiles = (n + TILE - 1) / TILE;
    const unsigned count = c < tiles ? (tiles - 1 - c) / G + 1 : 0;  // this block's tiles c, c + G, ...
    if (count == 0) return;
    for (unsigned k = 0; k < AHEAD; ++k) {  // rounds 0 .. AHEAD - 1, one group each
        if (k < count) load_tile<ITEMS>(x, k * G + c, n, ring + (k % STAGES) * SLOTS);
        copy_commit();
    }
    float prefix = 0.0f;  // the exclusive prefix of the block's last stored tile
    for (unsigned i = 0;; ++i) {
        if (i + AHEAD < count) load_tile<ITEMS>(x, (i + AHEAD) * G + c, n, ring + ((i + AHEAD) % STAGES) * SLOTS);
        copy_commit();  // an empty group past the block's last tile: the wait below counts groups
        const bool storing = i >= LAG;  // round j = i - LAG < count: the loop ends after the last
        const unsigned j = i - LAG, tile = j * G + c;
        unsigned long long w[WINDOW];  // the window's words, loaded now, added after the scan
#pragma unroll
        for (int m = 0; m < WINDOW; ++m) {
            const unsigned k = m * BLOCK + threadIdx.x;
            w[m] = storing && k < G && tile + k >= G ? peek(status, window_slot(j, c, k, G)) : 0ull;
        }
        copy_wait<AHEAD>();
        __syncthreads();  // everyone's copies of round i's tile have landed
        if (i < count) {
            const float total = scan_tile<ITEMS>(ring + (i % STAGES) * SLOTS, warp_totals);
            if (threadIdx.x == 0) publish(status, (i % KEPT) * G + c, base + i * G + c, total);
        }
        if (storing) {
            float part = 0.0f;
#pragma unroll
            for (int m = 0; m < WINDOW; ++m) {
                const unsigned k = m * BLOCK + threadIdx.x;
                if (k < G && tile + k >= G) {
                    const unsigned tw = tile + k - G, slot = window_slot(j, c, k, G);
                    unsigned long long v = w[m];
                    for (unsigned spins = 0; static_cast<unsigned>(v >> 32) != base + tw; ++spins) {
                        const unsigned ahead = static_cast<unsigned>(v >> 32) - base;  // an older call's: wraps past tiles
                        if (ahead > tw && ahead < tiles) __trap();  // rewritten before it was read
                        if (spins == SPIN_LIMIT) __trap();
                        __nanosleep(32);
                        v = peek(status, slot);
                    }
                    part += __uint_as_float(static_cast<unsigned>(v));
                }
            }
            part = warp_sum_all(part);
            if (threadIdx.x % 32 == 0) window_totals[threadIdx.x / 32] = part;
            __syncthreads();
            float window = 0.0f;
#pragma unroll
            for (int k = 0; k < WARPS; ++k) window += window_totals[k];  // the same order in every thread
            prefix += window;
            store_tile<ITEMS>(out, tile, n, ring + (j % STAGES) * SLOTS, prefix);
        }
        if (i + 1 == count + LAG) return;  // round count - 1 stored
        __syncthreads();  // the stored stage is refilled next round; window_totals is rewritten
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan11_items16_ahead2_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 2, 1, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan11_items16_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 1, 2, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 4)
scan11_items16_ahead1_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 1, 1, 3>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 2)
scan11_items16_ahead3_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 3, 1, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 4)
scan11_items12_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<12, 1, 2, 3>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 6)
scan11_items8_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned n, unsigned base) {
    segment_scan<8, 1, 2, 4>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 2)
scan11_items16_ahead1_lag3(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 1, 3, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan11_items12_ahead1_lag3(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<12, 1, 3, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 5)
scan11_items8_ahead1_lag3(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned n, unsigned base) {
    segment_scan<8, 1, 3, 3>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 2)
scan11_items32_ahead1_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<32, 1, 1, 1>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 6)
scan11_items8_ahead2_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned n, unsigned base) {
    segment_scan<8, 2, 1, 4>(x, out, status, n, base);
}
