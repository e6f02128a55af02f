// Rung 09: a look-back one tile late, over 512 predecessors a poll, with the tiles in a ring of
// shared-memory buffers filled by cp.async.
//
// What sets rungs 05, 06 and 08's pace (their Nsight Compute reports): not DRAM (54-57% of peak),
// not issue, not occupancy (97-100% of warp slots), but the look-back coming right after the tile's
// own aggregate. Its nearest 32 predecessors were taken from the counter just before it and are
// still loading, or (rungs 06 and 08, persistent) still finishing their own blocks' previous
// look-backs, so a tile spins until the slowest of them publishes, and the next tile of its block
// publishes only after that: the grid advances in step at the pace of its slowest neighbours (rung
// 06: 54.8 of 71.6 cycles per issued instruction are barrier stalls, 77%; rung 08 widens the walk
// past the nearest 32 but still spins on them: 133.0 M warp instructions against rung 06's 38.8 M,
// and slower). Rung 07's tile pass, the same float4 tile code with its prefix read from an array,
// moves its bytes at 3.90 TB/s: the look-back, not the tile code, costs the difference.
//
// Change: each block (a persistent grid) keeps its tiles in a ring of shared-memory buffers. In
// round r it issues the loads of its tile u[r+A] (cp.async: 16-byte copies straight into shared
// memory, no registers held while they fly; A tiles in flight), scans tile u[r] in place and
// publishes its aggregate, then looks back on tile u[r-L], whose aggregate it published L rounds
// ago, and stores it. By then the tiles taken around u[r-L] have had L rounds to publish theirs, so the
// look-back rarely waits for an aggregate. It walks back to the nearest inclusive prefix, which now
// lies about one round's worth of tiles back (one per block: 400-1,100); warp 0 reads 512 status
// words a poll (16 coalesced rows of 32, independent loads; 256 in the kernels of 8 values a
// thread), so that walk is one to four L2 round trips where a 32-wide poll would take up to 35. A poll waits only for predecessors nearer than the
// nearest prefix it found. The tile id is taken from the counter two rounds ahead by a thread of
// warp 1, so the atomic's latency overlaps warp 0's look-back.
// Deadlock-free: a block takes tiles in counter order and only while it runs; a tile waits only for
// smaller tiles, and every tile a block waits on belongs to a running block whose own waits are for
// still smaller tiles (by induction from tile 0).
// Memory model: as rungs 05-08 (state and value in one 8-byte volatile word; no other data passes
// between blocks). The status words and the tile counter are cleared before each call.
// A spin that lasts 2^22 polls (seconds) traps instead of hanging the GPU.
// Candidates (problem.py times them on the first call for each n and keeps the fastest): 8 or 16
// values a thread (tiles of 2,048 or 4,096), and a ring of 3 (A = 1, L = 1) or 4 tiles (A = 2, L = 1:
// two tiles' loads in flight; or A = 1, L = 2: look back two rounds late), as many blocks per SM as
// the registers and the 99-227 KB of shared memory allow.
// Counters: smsp__warp_issue_stalled_barrier share down from rung 05's 62%, dram__throughput toward
// rung 07's tile pass (81%).
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu
#define SPIN_LIMIT (1u << 22)

#ifndef __CUDA_ARCH__
#include <cstring>
#endif

// Tile status words: the state in the high 32 bits, the value (a float's bits) in the low 32.
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

__device__ __forceinline__ void trap() {
#ifdef __CUDA_ARCH__
    __trap();
#endif
}

// 16 bytes from global to shared memory without passing through registers; bytes past `bytes` (0-16)
// are zero-filled. PTX ISA: cp.async (sm_80+), .cg: cached in L2 only.
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

// Wait until at most PENDING groups (the latest) of this thread's copies are still in flight.
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

// A tile's float4 slot s lives at s ^ ((s / 8) % 8) in its buffer: the striped copies (8
// consecutive slots per quarter-warp) and the blocked reads (thread t's ITEMS/4 consecutive slots)
// both touch 8 distinct 16-byte bank groups per quarter-warp.
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

__device__ __forceinline__ float warp_sum_all(float v) {  // every lane gets the sum
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

// The exclusive prefix of `tile` (> 0), by warp 0. A poll reads LOOK rows of 32 consecutive status
// words below hi, nearest row first: row j, lane l holds word hi - 32j - l, so each row is one
// coalesced 256-byte load (8 sectors; the first trial of this rung had lane l read LOOK consecutive
// words instead, 32 lines per warp load and 4 times the sectors, and its polls took microseconds).
// Ballots find the nearest inclusive prefix; the lanes add the words nearer than it and its own
// value, and the warp sums them. It polls again only while a word nearer than that prefix has not
// published; with no prefix among the 32 * LOOK words it steps back.
template <int LOOK>
__device__ __forceinline__ float look_back(const unsigned long long* status, unsigned tile) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    float prefix = 0.0f;
    int hi = static_cast<int>(tile) - 1;
    for (unsigned polls = 0;; ++polls) {
        if (polls == SPIN_LIMIT) trap();
        unsigned long long w[LOOK];
#pragma unroll
        for (int j = 0; j < LOOK; ++j) {
            const int idx = hi - 32 * j - lane;
            w[j] = idx >= 0 ? peek(status, static_cast<unsigned>(idx)) : static_cast<unsigned long long>(PREFIX) << 32;
        }
        int row = LOOK;         // the nearest row holding an inclusive prefix (LOOK: none)
        unsigned upto = 0;      // the lanes of that row up to and including its nearest prefix
        bool waiting = false;   // a word nearer than the nearest prefix has not published
#pragma unroll
        for (int j = 0; j < LOOK; ++j) {
            const unsigned state = static_cast<unsigned>(w[j] >> 32);
            const unsigned prefixes = __ballot_sync(FULL, state == PREFIX);
            const unsigned unpublished = __ballot_sync(FULL, state == NOT_READY);
            if (row == LOOK && !waiting) {  // warp-uniform: ballots
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

// Issue thread t's copies of tile `tile` (slots t, t + BLOCK, ...) into `buf`, zeros past n.
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

// Scan tile `buf` in place (each thread its ITEMS consecutive values, then the block over the
// thread totals); returns the tile's sum.
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

#ifdef __CUDA_ARCH__
extern __shared__ float4 scan09_ring[];  // STAGES tile buffers (the launcher sizes it)
#endif

// ITEMS values a thread; AHEAD tiles' copies in flight; the look-back LAG rounds after the
// aggregate, LOOK rows of 32 status words per poll: 16 in the kernels of 16 values a thread, 8 in
// those of 8 values, whose 40 registers would make ptxas split 16 loads into batches, one L2 round
// trip each. (The first trial's fastest-to-slowest spread had 8 values at 8 blocks per SM, 32
// registers, last; it is gone: its look-back would spill.) The ring holds AHEAD + 1 + LAG tiles: those loading, the one
// being scanned, and those waiting to be stored.
template <int ITEMS, int AHEAD, int LAG, int LOOK>
__device__ __forceinline__ void lagged_scan(const float* __restrict__ x, float* __restrict__ out,
                                            unsigned long long* __restrict__ status,
                                            unsigned* __restrict__ tile_counter, unsigned n) {
    constexpr unsigned TILE = BLOCK * ITEMS, SLOTS = TILE / 4, STAGES = AHEAD + 1 + LAG;
    static_assert(AHEAD + LAG + 2 <= 8, "the ring of tile ids holds u[r - LAG] .. u[r + AHEAD + 1]");
    __shared__ unsigned ids[8];           // tile ids u[r - LAG] .. u[r + AHEAD + 1], by r % 8
    __shared__ float aggregates[STAGES];  // u[r]'s aggregate, by r % STAGES
    __shared__ float warp_totals[WARPS];
    __shared__ float prefix_s;
#ifdef __CUDA_ARCH__
    float4* ring = scan09_ring;
#else
    static float4 ring_emu[STAGES * SLOTS];
    float4* ring = ring_emu;
#endif
    const unsigned tiles = (n + TILE - 1) / TILE;
    if (threadIdx.x == 0) {
        unsigned id = atomicAdd(tile_counter, 1u);
        ids[0] = id;
        for (unsigned k = 1; k <= AHEAD; ++k) {  // ids only grow: past the last tile, no more atomics
            id = id < tiles ? atomicAdd(tile_counter, 1u) : tiles;
            ids[k] = id;
        }
    }
    __syncthreads();
    if (ids[0] >= tiles) return;
    for (unsigned k = 0; k < AHEAD; ++k) {  // u[0] .. u[AHEAD - 1], one group each
        if (ids[k] < tiles) load_tile<ITEMS>(x, ids[k], n, ring + (k % STAGES) * SLOTS);
        copy_commit();
    }
    for (unsigned r = 0;; ++r) {
        const unsigned cur = ids[r % 8], next = ids[(r + AHEAD) % 8];
        if (next < tiles) load_tile<ITEMS>(x, next, n, ring + ((r + AHEAD) % STAGES) * SLOTS);
        copy_commit();  // an empty group when there is no next tile: the wait below counts groups
        copy_wait<AHEAD>();
        __syncthreads();  // everyone's copies of tile cur have landed
        if (cur < tiles) {
            const float total = scan_tile<ITEMS>(ring + (r % STAGES) * SLOTS, warp_totals);
            if (threadIdx.x == 0) {
                publish(status, cur, cur == 0 ? PREFIX : AGGREGATE, total);
                aggregates[r % STAGES] = total;
            }
        }
        if (threadIdx.x == 32) ids[(r + AHEAD + 1) % 8] = next < tiles ? atomicAdd(tile_counter, 1u) : tiles;
        const unsigned late = r >= LAG ? ids[(r - LAG) % 8] : tiles;  // the tile to look back on and store
        if (late < tiles) {
            if (threadIdx.x < 32) {
                float prefix = 0.0f;
                if (late > 0) {
                    prefix = look_back<LOOK>(status, late);
                    if (threadIdx.x == 0) publish(status, late, PREFIX, prefix + aggregates[(r - LAG) % STAGES]);
                }
                if (threadIdx.x == 0) prefix_s = prefix;
            }
            __syncthreads();
            store_tile<ITEMS>(out, late, n, ring + ((r - LAG) % STAGES) * SLOTS, prefix_s);
        }
        __syncthreads();  // the stored buffer is refilled next round; ids[(r + AHEAD + 1) % 8] is written
        if (r >= LAG && ids[(r - LAG + 1) % 8] >= tiles) return;  // ids only grow: nothing left to store
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, 6)
scan09_items8_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned* __restrict__ tile_counter, unsigned n) {
    lagged_scan<8, 1, 2, 8>(x, out, status, tile_counter, n);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 6)
scan09_items8_ahead2_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned* __restrict__ tile_counter, unsigned n) {
    lagged_scan<8, 2, 1, 8>(x, out, status, tile_counter, n);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 4)
scan09_items16_ahead1_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned* __restrict__ tile_counter, unsigned n) {
    lagged_scan<16, 1, 1, 16>(x, out, status, tile_counter, n);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan09_items16_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned* __restrict__ tile_counter, unsigned n) {
    lagged_scan<16, 1, 2, 16>(x, out, status, tile_counter, n);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan09_items16_ahead2_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned* __restrict__ tile_counter, unsigned n) {
    lagged_scan<16, 2, 1, 16>(x, out, status, tile_counter, n);
}
