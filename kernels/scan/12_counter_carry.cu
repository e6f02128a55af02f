// Rung 12: rung 11's carry with the tiles taken from a counter, so that faster blocks take more.
//
// What sets rung 11's pace (its trial of 2026-12-04 20:55 UTC, kernels/scan/trial-2026-12-04-rung11/): each
// block has a fixed share of the tiles, so the kernel ends with its slowest block. The variant with no
// window at all (no status loads, no waits: wrong sums, the same bytes) took 144.3 us, no faster than the
// real kernel (142.6 us), yet Nsight Compute counts 150,000 warp executions of the window's __nanosleep for
// 16,384 tiles with two rounds of lag: the blocks wait for a few late ones every round, and without the
// waits the late ones are as late. Rung 07's tile pass, whose 16,384 blocks the hardware hands out as SMs
// free up, moves the same bytes in 133.6 us under Nsight Compute against rung 11's 134.6.
//
// Change: a persistent grid (no more blocks than fit, launched cooperatively as rung 11's) whose blocks
// take tile numbers from a counter, AHEAD + 1 rounds ahead (rung 09's ring of ids). A block's tiles
// t_0 < t_1 < ... are no longer G apart, so the exclusive prefix of t_j is the block's own inclusive
// prefix of t_(j-1) plus the aggregates of the tiles between them, t_(j-1) + 1 .. t_j - 1 (for t_0,
// of tiles 0 .. t_0 - 1): a window of about G status words. Each thread's first WINDOW words of a
// window (256 WINDOW in all, more than G) are loaded a round before the round that stores t_j (LAG
// rounds after its scan), so that their L2 round trip is off that round's path (in the trial of
// 0e98dc9, which loaded the first 256 in the same round and the rest one by one after the scan, the
// window's loads and the barrier after the window held 42% of the warp samples); a word loaded before
// it was published is read again, and words past the first 256 WINDOW (a long window) are read then. Still no tile waits for another tile's prefix,
// only for aggregates. A block that falls behind takes fewer tiles instead of holding the others back.
// Status words: status[t % RING] = (base + t) << 32 | the aggregate, base per call as in rung 11; the
// call's counter is counters[call & 1], and block 0 clears the other for the next call (calls on one
// stream run in order), so there is no memset. A word is rewritten RING tiles later, far more than the
// tiles in flight (a grid of at most 1,024 blocks holds at most AHEAD + LAG + 3 ids each); a reader that
// finds a newer tag than it waits for traps.
// Deadlock-free as rung 09 (co-residency is not needed): tiles are taken in counter order by running
// blocks, and a block waits only for aggregates of smaller tiles, whose blocks publish them after
// waiting only for aggregates of still smaller ones.
// A spin that lasts 2^22 polls (seconds) traps instead of hanging the GPU.
// Candidates: 16 values a thread with (AHEAD, LAG) = (1, 2) at 3 blocks per SM, 12 values (1, 2) at 4,
// 8 values (1, 3) at 5 (rung 11's three fastest shapes with two or three rounds of lag).
// Counters: the window's __nanosleep executions down from rung 11's 150,000; duration toward rung 07's
// tile pass.
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu
#define RING (1u << 14)  // status words kept: tile t's at t % RING
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
    extern __shared__ float4 scan12_smem[];
    return scan12_smem;
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

// Tile tw's aggregate from its status word v (loaded earlier), read again until it carries tw's tag.
__device__ __forceinline__ float awaited(const unsigned long long* status, unsigned tw, unsigned long long v,
                                         unsigned base, unsigned tiles) {
    for (unsigned spins = 0; static_cast<unsigned>(v >> 32) != base + tw; ++spins) {
        const unsigned ahead = static_cast<unsigned>(v >> 32) - base;  // an older call's: wraps past tiles
        if (ahead > tw && ahead < tiles) __trap();  // rewritten before it was read
        if (spins == SPIN_LIMIT) __trap();
        __nanosleep(32);
        v = peek(status, tw % RING);
    }
    return __uint_as_float(static_cast<unsigned>(v));
}

template <int ITEMS, int AHEAD, int LAG, int WINDOW>
__device__ __forceinline__ void counter_scan(const float* __restrict__ x, float* __restrict__ out,
                                             unsigned long long* __restrict__ status,
                                             unsigned* __restrict__ counters, unsigned n, unsigned base,
                                             unsigned call) {
    constexpr unsigned TILE = BLOCK * ITEMS, SLOTS = TILE / 4, STAGES = AHEAD + 1 + LAG;
    static_assert(AHEAD + LAG + 3 <= 8, "the ring of tile ids holds u[r - LAG - 1] .. u[r + AHEAD + 1]");
    float4* ring = dynamic_smem();
    float* warp_totals = reinterpret_cast<float*>(ring + STAGES * SLOTS);  // WARPS floats
    float* window_totals = warp_totals + WARPS;                             // WARPS floats
    float* aggregates = window_totals + WARPS;                              // STAGES floats, by round
    unsigned* ids = reinterpret_cast<unsigned*>(aggregates + 8);            // 8: u[r] by r % 8
    const unsigned tiles = (n + TILE - 1) / TILE;
    unsigned* counter = counters + (call & 1u);
    if (threadIdx.x == 0) {
        unsigned id = atomicAdd(counter, 1u);
        ids[0] = id;
        for (unsigned k = 1; k <= AHEAD; ++k) {  // ids only grow: past the last tile, no more atomics
            id = id < tiles ? atomicAdd(counter, 1u) : tiles;
            ids[k] = id;
        }
        if (blockIdx.x == 0) counters[(call + 1u) & 1u] = 0;  // the next call's counter
    }
    __syncthreads();
    if (ids[0] >= tiles) return;
    for (unsigned k = 0; k < AHEAD; ++k) {  // u[0] .. u[AHEAD - 1], one group each
        if (ids[k] < tiles) load_tile<ITEMS>(x, ids[k], n, ring + (k % STAGES) * SLOTS);
        copy_commit();
    }
    float carry = 0.0f;  // the inclusive prefix of the block's last stored tile
    const unsigned k0 = threadIdx.x;
    unsigned long long w_next[WINDOW];  // this thread's first words of the next round's window, loaded a round early
#pragma unroll
    for (int m = 0; m < WINDOW; ++m) w_next[m] = 0ull;
    for (unsigned i = 0;; ++i) {
        const unsigned cur = ids[i % 8], next = ids[(i + AHEAD) % 8];
        if (next < tiles) load_tile<ITEMS>(x, next, n, ring + ((i + AHEAD) % STAGES) * SLOTS);
        copy_commit();  // an empty group when there is no next tile: the wait counts groups
        const unsigned late = i >= LAG ? ids[(i - LAG) % 8] : tiles;  // the tile to store this round
        const unsigned from = i > LAG ? ids[(i - LAG - 1) % 8] + 1 : 0;  // its window: tiles from .. late - 1
        const unsigned len = late < tiles ? late - from : 0;
        unsigned long long w[WINDOW];  // loaded last round; re-read below while a tag is not the awaited one
        {  // the next round's window (its tiles were scanned about a round ago): its first 256 WINDOW words now
            const unsigned late1 = i + 1 >= LAG ? ids[(i + 1 - LAG) % 8] : tiles;
            const unsigned from1 = i + 1 > LAG ? ids[(i - LAG) % 8] + 1 : 0;
            const unsigned len1 = late1 < tiles ? late1 - from1 : 0;
#pragma unroll
            for (int m = 0; m < WINDOW; ++m) {
                w[m] = w_next[m];
                const unsigned k = k0 + m * BLOCK;
                w_next[m] = k < len1 ? peek(status, (from1 + k) % RING) : 0ull;
            }
        }
        copy_wait<AHEAD>();
        __syncthreads();  // everyone's copies of tile cur have landed
        if (cur < tiles) {
            const float total = scan_tile<ITEMS>(ring + (i % STAGES) * SLOTS, warp_totals);
            if (threadIdx.x == 0) {
                publish(status, cur % RING, base + cur, total);
                aggregates[i % STAGES] = total;
            }
        }
        if (threadIdx.x == 32) ids[(i + AHEAD + 1) % 8] = next < tiles ? atomicAdd(counter, 1u) : tiles;
        if (late < tiles) {
            float part = 0.0f;
#pragma unroll
            for (int m = 0; m < WINDOW; ++m) {  // the words loaded a round early
                const unsigned k = k0 + m * BLOCK;
                if (k < len) part += awaited(status, from + k, w[m], base, tiles);
            }
            for (unsigned k = k0 + WINDOW * BLOCK; k < len; k += BLOCK)  // a window longer than 256 WINDOW (rare)
                part += awaited(status, from + k, peek(status, (from + k) % RING), base, tiles);
            part = warp_sum_all(part);
            if (threadIdx.x % 32 == 0) window_totals[threadIdx.x / 32] = part;
            __syncthreads();  // also: aggregates[] of this round is written
            float window = 0.0f;
#pragma unroll
            for (int k = 0; k < WARPS; ++k) window += window_totals[k];  // the same order in every thread
            const float prefix = carry + window;
            store_tile<ITEMS>(out, late, n, ring + ((i - LAG) % STAGES) * SLOTS, prefix);
            carry = prefix + aggregates[(i - LAG) % STAGES];
        }
        __syncthreads();  // the stored stage is refilled next round; ids[(i + AHEAD + 1) % 8] is written
        if (i >= LAG && ids[(i - LAG + 1) % 8] >= tiles) return;  // ids only grow: nothing left to store
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan12_items16_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned* __restrict__ counters, unsigned n, unsigned base, unsigned call) {
    counter_scan<16, 1, 2, 2>(x, out, status, counters, n, base, call);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 4)
scan12_items12_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned* __restrict__ counters, unsigned n, unsigned base, unsigned call) {
    counter_scan<12, 1, 2, 3>(x, out, status, counters, n, base, call);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 5)
scan12_items8_ahead1_lag3(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned* __restrict__ counters, unsigned n, unsigned base, unsigned call) {
    counter_scan<8, 1, 3, 3>(x, out, status, counters, n, base, call);
}
