// Rung 10: a look-back warp that no barrier waits on (warp specialisation).
//
// What sets rung 09's pace (its Nsight Compute report, recording of 2026-12-03): 65% of the cycles
// between issued instructions are barrier stalls. Its seven other warps wait at __syncthreads while
// warp 0 polls the predecessors' status words, one L2 round trip per poll on each round's critical
// path (a round 4.5 us; the uncoalesced first version, with slower polls, took 9.0 us a round).
// Looking back later or wider did not take the poll off that path. Rung 07's tile pass, the same
// float4 tile code with nothing to wait for, moves its bytes at 3.90 TB/s.
//
// Change: each block has 8 data warps and one look-back warp (288 threads). The data warps load
// their tiles into a ring of shared-memory stages (cp.async, AHEAD tiles in flight), scan each in
// place, publish its aggregate, and go on to the next; they synchronise among themselves only, with
// named barrier 1 (bar.sync 1, 256), never with the look-back warp. They need tile u[r]'s exclusive
// prefix only when they store it, LAG rounds later. The look-back warp takes each aggregate from a
// shared-memory slot (tile id and value in one 64-bit word), walks back over the predecessors' status
// words LOOK rows of 32 at a time (coalesced rows, independent loads: one L2 round trip a poll),
// publishes the tile's inclusive prefix, and leaves the exclusive prefix in a second slot that the
// data warps read just before the store. The only barrier all 288 threads share is the first.
// No memset: a status word's high half is epoch << 2 | flag, so a word left by an earlier call (an
// older epoch) reads as not ready; the call's tile counter is counters[epoch & 1], and block 0 clears
// the other one for the next call (calls on one stream run in order). The launcher zeroes the
// buffer once, when it is made, and counts epochs from 1.
// Deadlock-free as rung 09: tiles are taken from the counter in order and only by running blocks;
// a look-back waits only for smaller tiles, whose aggregates their data warps publish without
// waiting for anything but their own loads.
// Handoff slots (8 per direction, by round): the look-back warp is at most LAG + 1 rounds behind the
// data warps' aggregates (they wait for the prefix of round r - LAG in round r), and the data warps
// read a prefix before they write any later aggregate, so 8 slots are never overwritten unread.
// A spin that lasts 2^22 polls (seconds) traps instead of hanging the GPU.
// Candidates (problem.py times them on the first call for each n and keeps the fastest): 8 or 16
// values a thread, AHEAD 1 or 2, LAG 1 or 2, as many blocks per SM as the registers (launch bounds)
// and shared memory allow.
// Counters: smsp__warp_issue_stalled_barrier share down from rung 09's 65%, dram__throughput toward
// rung 07's tile pass (81%).
#define DATA_THREADS 256
#define DATA_WARPS (DATA_THREADS / 32)
#define FULL 0xffffffffu
#ifdef __CUDA_ARCH__
#define SPIN_LIMIT (1u << 22)
#else
#define SPIN_LIMIT (1u << 10)  // the CPU emulator: a wait that no other thread ends fails the launch soon
#endif
#define SLOTS8 8u

#ifndef __CUDA_ARCH__
#include <cstring>
#endif

// Tile status words: (epoch << 2 | flag) in the high 32 bits, the value (a float's bits) in the low.
#define AGGREGATE 1u  // the tile's own sum
#define PREFIX 2u     // the sum of everything up to and including the tile

__device__ __forceinline__ void publish(unsigned long long* status, unsigned tile, unsigned epoch, unsigned flag,
                                        float value) {
    *reinterpret_cast<volatile unsigned long long*>(status + tile) =
        (static_cast<unsigned long long>(epoch << 2 | flag) << 32) | __float_as_uint(value);
}

__device__ __forceinline__ unsigned long long peek(const unsigned long long* status, unsigned tile) {
    return *reinterpret_cast<const volatile unsigned long long*>(status + tile);
}

// Shared-memory handoff words: (tile + 1) << 32 | a float's bits; 0 before the first.
__device__ __forceinline__ void put_slot(unsigned long long* slot, unsigned tile, float value) {
    *reinterpret_cast<volatile unsigned long long*>(slot) =
        (static_cast<unsigned long long>(tile + 1) << 32) | __float_as_uint(value);
}

__device__ __forceinline__ unsigned long long get_slot(const unsigned long long* slot) {
    return *reinterpret_cast<const volatile unsigned long long*>(slot);
}

__device__ __forceinline__ void data_sync() {  // the data warps' barrier; the look-back warp is not in it
#if defined(__CUDA_ARCH__)
    asm volatile("bar.sync 1, %0;\n" ::"n"(DATA_THREADS) : "memory");
#elif !defined(__CUDACC__)  // the CPU emulator (a host compiler); nvcc's host pass never runs device code
    emu::bar_sync(1, DATA_THREADS);
#endif
}

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
    __stcs(p, v);
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

// Exclusive scan of one value per data thread; *total gets the sum. Data warps only.
__device__ __forceinline__ float block_exclusive_scan(float t, float* total, float* warp_totals) {
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const float inclusive = warp_inclusive_scan(t);
    float exclusive = __shfl_up_sync(FULL, inclusive, 1);
    if (lane == 0) exclusive = 0.0f;
    if (lane == 31) warp_totals[warp] = inclusive;
    data_sync();
    if (warp == 0) {
        const float w = lane < DATA_WARPS ? warp_totals[lane] : 0.0f;
        const float scanned = warp_inclusive_scan(w);
        if (lane < DATA_WARPS) warp_totals[lane] = scanned;
    }
    data_sync();
    const float warp_prefix = warp > 0 ? warp_totals[warp - 1] : 0.0f;
    *total = warp_totals[DATA_WARPS - 1];
    return warp_prefix + exclusive;  // warp_totals is next written after at least one more barrier
}

// The exclusive prefix of `tile` (> 0), by the look-back warp: rung 09's walk (LOOK coalesced rows of
// 32 status words a poll, nearest first; it waits only for words nearer than the nearest inclusive
// prefix), with a word of another epoch read as not ready.
template <int LOOK>
__device__ __forceinline__ float look_back(const unsigned long long* status, unsigned tile, unsigned epoch) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const unsigned long long mine = static_cast<unsigned long long>(epoch << 2) << 32;
    float prefix = 0.0f;
    int hi = static_cast<int>(tile) - 1;
    for (unsigned polls = 0;; ++polls) {
        if (polls == SPIN_LIMIT) __trap();
        unsigned long long w[LOOK];
#pragma unroll
        for (int j = 0; j < LOOK; ++j) {
            const int idx = hi - 32 * j - lane;
            w[j] = idx >= 0 ? peek(status, static_cast<unsigned>(idx)) : (mine | (static_cast<unsigned long long>(PREFIX) << 32));
        }
        int row = LOOK;
        unsigned upto = 0;
        bool waiting = false;
#pragma unroll
        for (int j = 0; j < LOOK; ++j) {
            const unsigned hi32 = static_cast<unsigned>(w[j] >> 32);
            const bool current = (hi32 >> 2) == epoch;
            const unsigned prefixes = __ballot_sync(FULL, current && (hi32 & 3u) == PREFIX);
            const unsigned unpublished = __ballot_sync(FULL, !current);
            if (row == LOOK && !waiting) {
                if (prefixes) {
                    const unsigned stop = static_cast<unsigned>(__ffs(static_cast<int>(prefixes)) - 1);
                    upto = stop == 31 ? FULL : (2u << stop) - 1u;
                    row = j;
                    waiting = (unpublished & upto) != 0;
                } else {
                    waiting = unpublished != 0;
                }
            }
        }
        if (waiting) {
            __nanosleep(64);
            continue;
        }
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < LOOK; ++j)
            if (j < row || (j == row && (upto >> lane & 1u))) s += __uint_as_float(static_cast<unsigned>(w[j]));
        prefix += warp_sum_all(s);
        if (row < LOOK) return prefix;
        hi -= 32 * LOOK;
    }
}

template <int ITEMS>
__device__ __forceinline__ void load_tile(const float* __restrict__ x, unsigned tile, unsigned n, float4* buf) {
    constexpr unsigned TILE = DATA_THREADS * ITEMS, V = ITEMS / 4;
    const unsigned base = tile * TILE;
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
        const unsigned s = k * DATA_THREADS + threadIdx.x, e = base + 4 * s;
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
    constexpr unsigned TILE = DATA_THREADS * ITEMS, V = ITEMS / 4;
    const unsigned base = tile * TILE;
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
        const unsigned s = k * DATA_THREADS + threadIdx.x, e = base + 4 * s;
        const float4 v = buf[swz(s)];
        if (e + 4 <= n) {
            store_streaming(reinterpret_cast<float4*>(out + e), make_float4(v.x + add, v.y + add, v.z + add, v.w + add));
        } else {
            const float f[4] = {v.x, v.y, v.z, v.w};
            for (unsigned c = 0; e + c < n && c < 4; ++c) out[e + c] = f[c] + add;
        }
    }
}

#ifdef __CUDA_ARCH__
extern __shared__ float4 scan10_ring[];  // STAGES tile buffers (the launcher sizes it)
#endif

template <int ITEMS, int AHEAD, int LAG, int LOOK, int LBW, bool DEFER>
__device__ __forceinline__ void specialised_scan(const float* __restrict__ x, float* __restrict__ out,
                                                 unsigned long long* __restrict__ status,
                                                 unsigned* __restrict__ counters, unsigned n, unsigned epoch) {
    constexpr unsigned TILE = DATA_THREADS * ITEMS, SLOTS = TILE / 4, STAGES = AHEAD + 1 + LAG;
    static_assert(AHEAD + LAG + 2 <= 8, "the ring of tile ids holds u[r - LAG] .. u[r + AHEAD + 1]");
    static_assert(LAG + LBW + 1 < SLOTS8, "handoff slots outstanding (and the end marks)");
    static_assert(!DEFER || LAG >= 2, "a deferred look-back starts a round late: the store must be later still");
    __shared__ unsigned ids[8];                      // tile ids u[r - LAG] .. u[r + AHEAD + 1], by r % 8
    __shared__ unsigned long long aggregate_slot[SLOTS8];  // data warps -> look-back warp, by r % 8
    __shared__ unsigned long long prefix_slot[SLOTS8];     // look-back warp -> data warps, by r % 8
    __shared__ float warp_totals[DATA_WARPS];
    __shared__ float prefix_s;  // the exclusive prefix of the tile being stored
#ifdef __CUDA_ARCH__
    float4* ring = scan10_ring;
#else
    static float4 ring_emu[STAGES * SLOTS];
    float4* ring = ring_emu;
#endif
    const unsigned tiles = (n + TILE - 1) / TILE;
    unsigned* counter = counters + (epoch & 1u);
    if (threadIdx.x < SLOTS8) {
        aggregate_slot[threadIdx.x] = 0;
        prefix_slot[threadIdx.x] = 0;
    }
    if (threadIdx.x == 32) {
        unsigned id = atomicAdd(counter, 1u);
        ids[0] = id;
        for (unsigned k = 1; k <= AHEAD; ++k) {
            id = id < tiles ? atomicAdd(counter, 1u) : tiles;
            ids[k] = id;
        }
        if (blockIdx.x == 0) counters[(epoch + 1u) & 1u] = 0;  // the next call's counter
    }
    __syncthreads();  // the one barrier the look-back warp shares
    if (ids[0] >= tiles) return;

    if (threadIdx.x >= DATA_THREADS) {  // a look-back warp: rounds w, w + LBW, w + 2 LBW, ...
        const unsigned w = (threadIdx.x - DATA_THREADS) / 32;
        const bool leader = threadIdx.x % 32 == 0;
        unsigned last = 0;  // the handoff word's tag (tile + 1) of this warp's previous round
        for (unsigned r = w;; r += LBW) {
            unsigned long long a = get_slot(&aggregate_slot[r % SLOTS8]);
            for (unsigned spins = 0; static_cast<unsigned>(a >> 32) <= last; ++spins) {
                if (spins == SPIN_LIMIT) __trap();
                __nanosleep(32);
                a = get_slot(&aggregate_slot[r % SLOTS8]);
            }
            last = static_cast<unsigned>(a >> 32);
            const unsigned tile = last - 1;
            if (tile >= tiles) return;  // the data warps' end mark
            if (DEFER) {  // wait for the next round's aggregate (or the end mark): the neighbours have published
                for (unsigned spins = 0; static_cast<unsigned>(get_slot(&aggregate_slot[(r + 1) % SLOTS8]) >> 32) <= last;
                     ++spins) {
                    if (spins == SPIN_LIMIT) __trap();
                    __nanosleep(64);
                }
            }
            float prefix = 0.0f;
            if (tile > 0) {
                prefix = look_back<LOOK>(status, tile, epoch);
                if (leader) publish(status, tile, epoch, PREFIX, prefix + __uint_as_float(static_cast<unsigned>(a)));
            }
            if (leader) put_slot(&prefix_slot[r % SLOTS8], tile, prefix);
        }
    }

    for (unsigned k = 0; k < AHEAD; ++k) {  // u[0] .. u[AHEAD - 1], one group each
        if (ids[k] < tiles) load_tile<ITEMS>(x, ids[k], n, ring + (k % STAGES) * SLOTS);
        copy_commit();
    }
    for (unsigned r = 0;; ++r) {
        const unsigned cur = ids[r % 8], next = ids[(r + AHEAD) % 8];
        if (next < tiles) load_tile<ITEMS>(x, next, n, ring + ((r + AHEAD) % STAGES) * SLOTS);
        copy_commit();  // an empty group when there is no next tile: the wait counts groups
        copy_wait<AHEAD>();
        data_sync();  // every data thread's copies of tile cur have landed
        if (cur < tiles) {
            const float total = scan_tile<ITEMS>(ring + (r % STAGES) * SLOTS, warp_totals);
            if (threadIdx.x == 0) {
                publish(status, cur, epoch, cur == 0 ? PREFIX : AGGREGATE, total);
                put_slot(&aggregate_slot[r % SLOTS8], cur, total);
            }
        } else if (threadIdx.x == 0 && ids[(r - 1) % 8] < tiles) {  // the first round past the last tile
            for (unsigned k = 0; k < LBW; ++k)  // an end mark for each look-back warp (r > 0: ids[0] < tiles)
                put_slot(&aggregate_slot[(r + k) % SLOTS8], tiles, 0.0f);
        }
        if (threadIdx.x == 32) ids[(r + AHEAD + 1) % 8] = next < tiles ? atomicAdd(counter, 1u) : tiles;
        const unsigned late = r >= LAG ? ids[(r - LAG) % 8] : tiles;  // the tile to store
        if (late < tiles) {
            if (threadIdx.x == 0) {  // one thread waits for the prefix; the others wait at the barrier, issuing nothing
                unsigned long long p = get_slot(&prefix_slot[(r - LAG) % SLOTS8]);
                for (unsigned spins = 0; static_cast<unsigned>(p >> 32) != late + 1; ++spins) {
                    if (spins == SPIN_LIMIT) __trap();
                    __nanosleep(64);
                    p = get_slot(&prefix_slot[(r - LAG) % SLOTS8]);
                }
                prefix_s = __uint_as_float(static_cast<unsigned>(p));
            }
            data_sync();
            store_tile<ITEMS>(out, late, n, ring + ((r - LAG) % STAGES) * SLOTS, prefix_s);
        }
        data_sync();  // the stored buffer is refilled next round; ids[(r + AHEAD + 1) % 8] is written
        if (r >= LAG && ids[(r - LAG + 1) % 8] >= tiles) return;  // ids only grow: nothing left to store
    }
}

extern "C" __global__ void __launch_bounds__(288, 3)
scan10_items16_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned* __restrict__ counters, unsigned n, unsigned epoch) {
    specialised_scan<16, 1, 2, 16, 1, false>(x, out, status, counters, n, epoch);
}

extern "C" __global__ void __launch_bounds__(320, 3)
scan10_items16_ahead1_lag2_warps2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                                  unsigned* __restrict__ counters, unsigned n, unsigned epoch) {
    specialised_scan<16, 1, 2, 16, 2, false>(x, out, status, counters, n, epoch);
}

extern "C" __global__ void __launch_bounds__(320, 3)
scan10_items16_ahead1_lag2_warps2_defer(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                                        unsigned* __restrict__ counters, unsigned n, unsigned epoch) {
    specialised_scan<16, 1, 2, 16, 2, true>(x, out, status, counters, n, epoch);
}

extern "C" __global__ void __launch_bounds__(320, 3)
scan10_items16_ahead2_lag1_warps2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                                  unsigned* __restrict__ counters, unsigned n, unsigned epoch) {
    specialised_scan<16, 2, 1, 16, 2, false>(x, out, status, counters, n, epoch);
}

extern "C" __global__ void __launch_bounds__(320, 3)
scan10_items8_ahead2_lag2_warps2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                                 unsigned* __restrict__ counters, unsigned n, unsigned epoch) {
    specialised_scan<8, 2, 2, 16, 2, false>(x, out, status, counters, n, epoch);
}

extern "C" __global__ void __launch_bounds__(320, 3)
scan10_items8_ahead2_lag2_warps2_defer(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                                       unsigned* __restrict__ counters, unsigned n, unsigned epoch) {
    specialised_scan<8, 2, 2, 16, 2, true>(x, out, status, counters, n, epoch);
}
