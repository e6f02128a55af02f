// Rung 13: rung 11's segment carry with the tiles in registers: no shared-memory ring, no cp.async.
//
// What sets rung 11's pace (its why in ladder.toml): neither the waits nor the window. In its trial
// probes the same kernel with no status loads took 144.3 us and a copy through the same ring, barriers
// and stores with no scan and no window 142.2 us, against 142.1 us for the real kernel, while torch's
// copy_ of the same tensors took 130.7 us: rung 11 runs at its own pipeline's copy rate. That pipeline
// moves every byte twice more than a copy does (cp.async into a shared-memory stage, out of it into
// registers for the scan, back in place, out again for the store) and waits on cp.async groups and
// four or five barriers a round.
//
// Change: rung 11's schedule (a co-resident grid of G blocks, block c scanning tiles c, c + G, ...,
// each tile's exclusive prefix the block's previous prefix plus a window of the G aggregates before
// it, status words tag << 32 | aggregate kept for KEPT segments) with the tile held in registers from
// its load to its store. Warp w of a block owns the w-th eighth of the tile, and lane l loads its
// float4s k = 0 .. ITEMS / 4 - 1 at float4 k * 32 + l of it (warp-striped: every load instruction
// of a warp reads 512 contiguous bytes, as a copy does). The scan is done in that layout: each float4
// scanned in the thread, then across the warp's lanes by shuffles (a carry from one float4 row to the
// next), then across the 8 warps through 8 words of shared memory (one barrier; every thread adds
// the 8 warp totals in the same order). Each round a block issues the plain 16-byte loads of its tile
// AHEAD rounds on, scans this round's tile (waiting for its loads only there), publishes its
// aggregate, adds up the window of the tile of LAG rounds before and stores that tile (st.global.cs).
// Two barriers a round: the warp totals', the window's (each double-buffered by round parity, so no
// barrier at the end of a round).
// Registers per thread: AHEAD + 1 + LAG tiles of ITEMS floats, one set per round modulo that: the
// rounds are unrolled that many at a time so that no tile is copied from register to register (the
// first version, commit d0a6b25, moved each tile down a stage at the end of every round, which waits
// for the next tile's loads there, before any later load is issued: one tile in flight per block
// where rung 11 has two; on an H100 it ran at 188.3 us against rung 11's 186.4 us).
// Status words, tags, KEPT, the trap on a rewritten word and the deadlock argument are rung 11's.
// Candidates (problem.py times them on the first call for each n and keeps the fastest): 16 values a
// thread with (AHEAD, LAG) = (1, 1) at 3 blocks per SM, (2, 1) or (1, 2) at 2; 12 values (1, 1) at 3;
// 8 values (1, 1) or (2, 1) at 4, (2, 2) at 3 (80, 105, 105, 72, 64 or fewer, 62 and 80 registers,
// no spills, by ptxas for sm_90).
// WINDOW: status words a thread reads per round (G <= 256 WINDOW).
// Counters: DRAM throughput past rung 11's 73-79% of peak toward a copy's; issue and barrier stalls
// below rung 11's; no shared-memory wavefronts beyond the warp and window totals.
#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu
#define KEPT 16u  // segments of status words kept for each block
#ifdef __CUDA_ARCH__
#define SPIN_LIMIT (1u << 22)
#else
#define SPIN_LIMIT (1u << 16)  // the CPU emulator: a wait that no other block ends fails the launch
#endif

__device__ __forceinline__ void publish(unsigned long long* status, unsigned slot, unsigned tag, float value) {
    *reinterpret_cast<volatile unsigned long long*>(status + slot) =
        (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(value);
}

__device__ __forceinline__ unsigned long long peek(const unsigned long long* status, unsigned slot) {
    return *reinterpret_cast<const volatile unsigned long long*>(status + slot);
}

__device__ __forceinline__ float* dynamic_smem() {
#if defined(__CUDA_ARCH__)
    extern __shared__ float scan13_smem[];
    return scan13_smem;
#elif !defined(__CUDACC__)  // the CPU emulator: this block's own buffer
    return static_cast<float*>(emu::dynamic_shared());
#else  // nvcc's host pass, which never runs device code
    return nullptr;
#endif
}

__device__ __forceinline__ void store_streaming(float4* p, float4 v) {
#ifdef __CUDA_ARCH__
    __stcs(p, v);  // st.global.cs: evict-first, the output is not read again
#else
    *p = v;
#endif
}

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

// First value of lane l's float4 k in tile `tile`: warp w owns values [w 32 ITEMS, (w + 1) 32 ITEMS).
template <int ITEMS>
__device__ __forceinline__ unsigned element(unsigned tile, unsigned k) {
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    return tile * (BLOCK * ITEMS) + warp * (32 * ITEMS) + 4 * (k * 32 + lane);
}

template <int ITEMS>
__device__ __forceinline__ void load_tile(const float* __restrict__ x, unsigned tile, unsigned n, float4 (&q)[ITEMS / 4]) {
#pragma unroll
    for (unsigned k = 0; k < ITEMS / 4; ++k) {
        const unsigned e = element<ITEMS>(tile, k);
        if (e + 4 <= n) {
            q[k] = *reinterpret_cast<const float4*>(x + e);
        } else {
            float f[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (unsigned c = 0; c < 4 && e + c < n; ++c) f[c] = x[e + c];
            q[k] = make_float4(f[0], f[1], f[2], f[3]);
        }
    }
}

// The warp's inclusive scan of its part of the tile, in place; returns the warp's total (every lane).
template <int ITEMS>
__device__ __forceinline__ float warp_scan_tile(float4 (&q)[ITEMS / 4]) {
    const unsigned lane = threadIdx.x % 32;
    float carry = 0.0f;  // the sum of the warp's earlier float4 rows
#pragma unroll
    for (unsigned k = 0; k < ITEMS / 4; ++k) {
        q[k].y += q[k].x; q[k].z += q[k].y; q[k].w += q[k].z;
        const float inclusive = warp_inclusive_scan(q[k].w);
        float exclusive = __shfl_up_sync(FULL, inclusive, 1);
        if (lane == 0) exclusive = 0.0f;
        const float add = carry + exclusive;
        q[k].x += add; q[k].y += add; q[k].z += add; q[k].w += add;
        carry += __shfl_sync(FULL, inclusive, 31);
    }
    return carry;
}

template <int ITEMS>
__device__ __forceinline__ void store_tile(float* __restrict__ out, unsigned tile, unsigned n, const float4 (&q)[ITEMS / 4],
                                           float add) {
#pragma unroll
    for (unsigned k = 0; k < ITEMS / 4; ++k) {
        const unsigned e = element<ITEMS>(tile, k);
        const float4 v = q[k];
        if (e + 4 <= n) {
            store_streaming(reinterpret_cast<float4*>(out + e), make_float4(v.x + add, v.y + add, v.z + add, v.w + add));
        } else {
            const float f[4] = {v.x, v.y, v.z, v.w};
            for (unsigned c = 0; e + c < n && c < 4; ++c) out[e + c] = f[c] + add;
        }
    }
}

// Window word k (0 <= k < G) of the tile of round j of block c: tile (j - 1) G + c + k, which is block
// c + k's tile of segment j - 1 when c + k < G, else block c + k - G's of segment j (rung 11's).
__device__ __forceinline__ unsigned window_slot(unsigned j, unsigned c, unsigned k, unsigned G) {
    return c + k < G ? ((j - 1) % KEPT) * G + c + k : (j % KEPT) * G + c + k - G;
}

template <int ITEMS, int AHEAD, int LAG, int WINDOW>
__device__ __forceinline__ void segment_scan(const float* __restrict__ x, float* __restrict__ out,
                                             unsigned long long* __restrict__ status, unsigned n, unsigned base) {
    constexpr unsigned TILE = BLOCK * ITEMS, V = ITEMS / 4, STAGES = AHEAD + 1 + LAG;
    static_assert(ITEMS % 4 == 0, "tiles are loaded as float4s");
    static_assert(2 * LAG + 3 <= KEPT, "a status word is rewritten KEPT segments later: readers may lag 2 LAG + 2");
    float* warp_totals = dynamic_smem();           // 2 x WARPS floats, by round parity
    float* window_totals = warp_totals + 2 * WARPS;  // 2 x WARPS floats, by round parity
    const unsigned G = gridDim.x, c = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (G > WINDOW * BLOCK) __trap();  // the launcher keeps G within the window's registers
    const unsigned tiles = (n + TILE - 1) / TILE;
    const unsigned count = c < tiles ? (tiles - 1 - c) / G + 1 : 0;  // this block's tiles c, c + G, ...
    if (count == 0) return;
    // The tile of round i lives in registers r[i % STAGES] from its load (round i - AHEAD) to its store
    // (round i + LAG); before[i % STAGES]: the total of the warps before this one in it. The rounds are
    // unrolled STAGES at a time so that every index is a constant: no register is copied, and a load
    // is waited for only where its tile is scanned, with the AHEAD later tiles' loads in flight.
    float4 r[STAGES][V];
    float before[STAGES];
#pragma unroll
    for (unsigned a = 0; a < AHEAD; ++a)
        if (a < count) load_tile<ITEMS>(x, a * G + c, n, r[a]);
    float prefix = 0.0f;  // the exclusive prefix of the block's last stored tile
    for (unsigned i0 = 0;; i0 += STAGES) {
#pragma unroll
        for (unsigned s = 0; s < STAGES; ++s) {
            const unsigned i = i0 + s;
            if (i + AHEAD < count) load_tile<ITEMS>(x, (i + AHEAD) * G + c, n, r[(s + AHEAD) % STAGES]);
            const bool storing = i >= LAG;  // round j = i - LAG < count: the loop ends after the last
            const unsigned j = i - LAG, tile = j * G + c, old = (s + STAGES - LAG) % STAGES;
            unsigned long long w[WINDOW];  // the window's words, loaded now, added after the scan
#pragma unroll
            for (int m = 0; m < WINDOW; ++m) {
                const unsigned k = m * BLOCK + threadIdx.x;
                w[m] = storing && k < G && tile + k >= G ? peek(status, window_slot(j, c, k, G)) : 0ull;
            }
            if (i < count) {
                float* totals = warp_totals + (i & 1) * WARPS;
                const float mine = warp_scan_tile<ITEMS>(r[s]);
                if (lane == 0) totals[warp] = mine;
                __syncthreads();
                float total = 0.0f, earlier = 0.0f;
#pragma unroll
                for (unsigned k = 0; k < WARPS; ++k) {  // the same order in every thread
                    if (k == warp) earlier = total;
                    total += totals[k];
                }
                before[s] = earlier;
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
                float* totals = window_totals + (i & 1) * WARPS;
                if (lane == 0) totals[warp] = part;
                __syncthreads();
                float window = 0.0f;
#pragma unroll
                for (int k = 0; k < WARPS; ++k) window += totals[k];  // the same order in every thread
                prefix += window;
                store_tile<ITEMS>(out, tile, n, r[old], prefix + before[old]);
            }
            if (i + 1 == count + LAG) return;  // round count - 1 stored
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan13_items16_ahead1_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 1, 1, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 2)
scan13_items16_ahead2_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 2, 1, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 2)
scan13_items16_ahead1_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<16, 1, 2, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan13_items12_ahead1_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                           unsigned n, unsigned base) {
    segment_scan<12, 1, 1, 2>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 4)
scan13_items8_ahead1_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned n, unsigned base) {
    segment_scan<8, 1, 1, 3>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 4)
scan13_items8_ahead2_lag1(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned n, unsigned base) {
    segment_scan<8, 2, 1, 3>(x, out, status, n, base);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 3)
scan13_items8_ahead2_lag2(const float* __restrict__ x, float* __restrict__ out, unsigned long long* __restrict__ status,
                          unsigned n, unsigned base) {
    segment_scan<8, 2, 2, 3>(x, out, status, n, base);
}
