// Run the ladders' CUDA kernels on the CPU, for tests on machines without a GPU.
//
// A launch runs its blocks one after another; the threads of a block are fibers (ucontext) that run
// until they reach a barrier (__syncthreads, __syncwarp, a shuffle or a vote) and are resumed when
// every live thread it concerns has arrived. Shared memory is `static` storage, which is right
// because blocks never overlap. Atomics are plain read-modify-writes (one OS thread). This checks a
// kernel's arithmetic, indexing, barrier placement and warp exchanges, not its memory ordering
// between blocks (blocks run in launch order, so a block never waits for a later one).
//
// A named barrier (bar.sync id, count in PTX; emu::bar_sync here) releases its threads once `count`
// of them have arrived, whatever the others do, so warps that synchronise among themselves can run
// beside a warp that never joins them. __nanosleep yields to the block's other threads, so a thread
// may spin on a shared-memory flag another thread of its block sets; __trap() fails the launch.
//
// A cooperative launch (all blocks resident at once on a GPU) runs its blocks side by side instead:
// every thread of the grid is a fiber, barriers and warp exchanges act within a block, and a block
// may spin (with __nanosleep) on a global word another block sets. Its kernel must keep its shared
// memory in the dynamic buffer (emu::dynamic_shared(), one per block), since `static` storage would
// be shared by all blocks. With a nonzero schedule seed each block is given a speed, one sweep in 1,
// 2, 3 or 8, and sweeps visit the blocks in a shuffled order, so that blocks drift apart.
//
// Only what the ladders use is provided. A deadlock (some threads at a barrier that the others
// never reach) or a shuffle whose mask names an exited lane is reported as an error.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))  // GNU form: allowed after __shared__ (static)

struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3() = default;
    dim3(unsigned a, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

namespace emu {

inline uint3 thread_idx, block_idx;
inline dim3 block_dim, grid_dim;

enum State { READY, AT_BLOCK_BARRIER, AT_WARP_BARRIER, AT_NAMED_BARRIER, DONE };
enum Op { SYNCWARP, SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR, BALLOT };

struct Fiber {
    ucontext_t ctx;
    uint3 tid, bid;
    unsigned linear = 0;  // the thread's index in its block
    unsigned block = 0;   // its block's index among those running side by side
    State state = READY;
    // A warp-level request and its answer.
    Op op = SYNCWARP;
    unsigned mask = 0, width = 32;
    int arg = 0;
    uint64_t value = 0, result = 0;
};

inline std::vector<Fiber> fibers;
inline std::vector<std::unique_ptr<char[]>> stacks;  // left uninitialised: untouched pages cost nothing
inline ucontext_t scheduler;
inline size_t current = 0;
inline std::string error;
inline void (*body)(void*) = nullptr;
inline void* body_arg = nullptr;
constexpr size_t STACK_BYTES = 256 * 1024;
inline size_t dynamic_bytes = 0;                      // the launch's dynamic shared memory per block
inline std::vector<std::unique_ptr<float4[]>> dynamic;  // one buffer per block running
inline bool coresident = false;                       // the next launch is cooperative
inline unsigned schedule_seed = 0;                    // 0: every ready fiber each sweep, blocks in order

inline void fail(const std::string& what) {
    if (error.empty()) error = what;
}

inline void park(State s) {
    Fiber& f = fibers[current];
    f.state = s;
    swapcontext(&f.ctx, &scheduler);
}

inline void entry() {
    body(body_arg);
    fibers[current].state = DONE;
    swapcontext(&fibers[current].ctx, &scheduler);
}

inline unsigned lane_of(const Fiber& f) { return f.linear % 32; }

// Answer the warp-level request of every lane of `warp` once all lanes its mask names have arrived.
inline bool release_warp(size_t first, size_t count) {
    unsigned arrived = 0, live = 0, mask = 0;
    bool any = false;
    for (size_t i = first; i < first + count; ++i) {
        const Fiber& f = fibers[i];
        if (f.state != DONE) live |= 1u << lane_of(f);
        if (f.state == AT_WARP_BARRIER) {
            arrived |= 1u << lane_of(f);
            mask = any ? mask : f.mask;
            if (any && f.mask != mask) { fail("lanes of one warp passed different masks to a warp-level call"); return false; }
            any = true;
        }
    }
    if (!any) return false;
    if (mask & ~live) { fail("a warp-level call names lanes that have exited"); return false; }
    if ((arrived & mask) != mask) return false;  // wait for the rest
    Fiber* lane[32] = {};
    for (size_t i = first; i < first + count; ++i) lane[lane_of(fibers[i])] = &fibers[i];
    unsigned ballot = 0;
    for (unsigned l = 0; l < 32; ++l)
        if ((mask >> l & 1u) && lane[l]->op == BALLOT && lane[l]->value) ballot |= 1u << l;
    for (unsigned l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        Fiber& f = *lane[l];
        const unsigned w = f.width, base = l & ~(w - 1);
        int src = static_cast<int>(l);
        switch (f.op) {
            case SHFL_IDX: src = static_cast<int>(base + (static_cast<unsigned>(f.arg) & (w - 1))); break;
            case SHFL_UP: src = static_cast<int>(l) - f.arg; if (src < static_cast<int>(base)) src = static_cast<int>(l); break;
            case SHFL_DOWN: src = static_cast<int>(l) + f.arg; if (src >= static_cast<int>(base + w)) src = static_cast<int>(l); break;
            case SHFL_XOR: src = static_cast<int>(l ^ static_cast<unsigned>(f.arg)); if (src < static_cast<int>(base) || src >= static_cast<int>(base + w)) src = static_cast<int>(l); break;
            default: break;
        }
        if (f.op == BALLOT) f.result = ballot;
        else if (f.op != SYNCWARP) {
            if (!(mask >> src & 1u)) { fail("a shuffle reads a lane outside its mask"); return false; }
            f.result = lane[src]->value;
        }
    }
    for (unsigned l = 0; l < 32; ++l)
        if (mask >> l & 1u) lane[l]->state = READY;
    return true;
}

inline uint32_t next_random(uint32_t& state) {  // xorshift32
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

// Run `blocks` blocks (linear indices first, first + 1, ...) of `threads` threads side by side.
inline void run_blocks(unsigned first, unsigned blocks, size_t threads) {
    const size_t total = threads * blocks;
    fibers.assign(total, Fiber{});
    while (stacks.size() < total) stacks.emplace_back(new char[STACK_BYTES]);
    dynamic.clear();
    for (unsigned b = 0; b < blocks; ++b) {
        dynamic.emplace_back(new float4[(dynamic_bytes + sizeof(float4) - 1) / sizeof(float4) + 1]);
        std::memset(static_cast<void*>(dynamic.back().get()), 0xFF, dynamic_bytes);  // NaN: unset shared memory
    }
    for (size_t i = 0; i < total; ++i) {
        Fiber& f = fibers[i];
        const unsigned b = static_cast<unsigned>(i / threads), t = static_cast<unsigned>(i % threads);
        const unsigned lb = first + b;
        f.linear = t;
        f.block = b;
        f.tid = {t % block_dim.x, t / block_dim.x % block_dim.y, t / (block_dim.x * block_dim.y)};
        f.bid = {lb % grid_dim.x, lb / grid_dim.x % grid_dim.y, lb / (grid_dim.x * grid_dim.y)};
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks[i].get();
        f.ctx.uc_stack.ss_size = STACK_BYTES;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, entry, 0);
    }
    uint32_t rng = schedule_seed * 2654435761u + 1u;
    std::vector<unsigned> period(blocks, 1), order(blocks);
    for (unsigned b = 0; b < blocks; ++b) order[b] = b;
    if (schedule_seed) {
        static const unsigned speeds[4] = {1, 2, 3, 8};
        for (unsigned b = 0; b < blocks; ++b) period[b] = speeds[next_random(rng) % 4];
    }
    for (;;) {
        bool ran = false, skipped = false;
        if (schedule_seed)
            for (unsigned b = blocks; b > 1; --b) std::swap(order[b - 1], order[next_random(rng) % b]);
        for (unsigned ob = 0; ob < blocks && error.empty(); ++ob) {
            const unsigned b = order[ob];
            const bool turn = period[b] == 1 || next_random(rng) % period[b] == 0;
            for (size_t i = b * threads; i < (b + 1) * threads && error.empty(); ++i) {
                if (fibers[i].state != READY) continue;
                if (!turn) { skipped = true; continue; }
                current = i;
                thread_idx = fibers[i].tid;
                block_idx = fibers[i].bid;
                swapcontext(&scheduler, &fibers[i].ctx);
                ran = true;
            }
        }
        if (!error.empty()) return;
        bool released = false, all_done = true;
        for (size_t w = 0; w < total; w += 32) released |= release_warp(w, std::min<size_t>(32, total - w));
        if (!error.empty()) return;
        for (unsigned b = 0; b < blocks; ++b) {
            const size_t lo = b * threads, hi = lo + threads;
            size_t done = 0, at_barrier = 0, waiting[16] = {}, count[16] = {};
            for (size_t i = lo; i < hi; ++i) {
                const Fiber& f = fibers[i];
                done += f.state == DONE;
                at_barrier += f.state == AT_BLOCK_BARRIER;
                if (f.state == AT_NAMED_BARRIER) {  // named barriers: released when `count` threads wait at one
                    ++waiting[f.arg];
                    count[f.arg] = f.mask;
                }
            }
            all_done &= done == threads;
            for (int id = 0; id < 16; ++id) {
                if (waiting[id] && waiting[id] == count[id]) {
                    for (size_t i = lo; i < hi; ++i)
                        if (fibers[i].state == AT_NAMED_BARRIER && fibers[i].arg == id) fibers[i].state = READY;
                    released = true;
                } else if (waiting[id] > count[id]) {
                    fail("more threads wait at a named barrier than its count");
                    return;
                }
            }
            bool named = false;
            for (int id = 0; id < 16; ++id) named |= waiting[id] > 0;
            if (!named && at_barrier > 0 && at_barrier == threads - done) {
                for (size_t i = lo; i < hi; ++i)
                    if (fibers[i].state == AT_BLOCK_BARRIER) fibers[i].state = READY;
                released = true;
            }
        }
        if (all_done) return;
        if (!released && !ran && !skipped) {
            fail("deadlock: threads wait at barriers that the others never reach");
            return;
        }
    }
}

inline void run_grid(dim3 grid, dim3 block, void (*fn)(void*), void* arg) {
    const size_t threads = static_cast<size_t>(block.x) * block.y * block.z;
    if (threads == 0 || threads > 1024) throw std::runtime_error("bad block size");
    if (threads % 32) throw std::runtime_error("the emulator needs whole warps (block size a multiple of 32)");
    error.clear();
    grid_dim = grid;
    block_dim = block;
    body = fn;
    body_arg = arg;
    const unsigned blocks = grid.x * grid.y * grid.z;
    if (coresident) {
        run_blocks(0, blocks, threads);
        if (!error.empty()) {
            const Fiber& f = fibers[current];
            throw std::runtime_error(error + " (block " + std::to_string(f.bid.x) + "," + std::to_string(f.bid.y) + "," +
                                     std::to_string(f.bid.z) + ", blocks side by side)");
        }
        return;
    }
    for (unsigned b = 0; b < blocks; ++b) {
        run_blocks(b, 1, threads);
        if (!error.empty())
            throw std::runtime_error(error + " (block " + std::to_string(block_idx.x) + "," + std::to_string(block_idx.y) +
                                     "," + std::to_string(block_idx.z) + ")");
    }
}

// The calling thread's block's dynamic shared memory (extern __shared__ on the GPU).
inline void* dynamic_shared() { return dynamic[fibers[current].block].get(); }

// bar.sync id, count: wait until `count` threads (a multiple of 32) of the block have arrived at
// barrier `id` (1-15; 0 is __syncthreads').
inline void bar_sync(unsigned id, unsigned count) {
    if (id == 0 || id > 15 || count == 0 || count % 32) { fail("bad named barrier"); return; }
    Fiber& f = fibers[current];
    f.arg = static_cast<int>(id);
    f.mask = count;
    park(AT_NAMED_BARRIER);
}

template <class T>
uint64_t bits(T v) {
    static_assert(sizeof(T) <= 8, "warp exchange of a value wider than 8 bytes");
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof(T));
    return u;
}

template <class T>
T from_bits(uint64_t u) {
    T v;
    std::memcpy(&v, &u, sizeof(T));
    return v;
}

template <class T>
T warp_call(Op op, unsigned mask, T v, int arg, unsigned width) {
    Fiber& f = fibers[current];
    f.op = op;
    f.mask = mask;
    f.value = bits(v);
    f.arg = arg;
    f.width = width;
    park(AT_WARP_BARRIER);
    return from_bits<T>(fibers[current].result);
}

template <class... A, size_t... I>
void call_with(void (*f)(A...), void** args, std::index_sequence<I...>) {
    f(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(args[I])...);
}

template <class... A>
void launch(void (*f)(A...), dim3 grid, dim3 block, void** args) {
    struct Call { void (*f)(A...); void** args; } call{f, args};
    run_grid(grid, block, [](void* p) {
        auto* c = static_cast<Call*>(p);
        call_with(c->f, c->args, std::index_sequence_for<A...>{});
    }, &call);
}

}  // namespace emu

#define threadIdx (emu::thread_idx)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)
constexpr int warpSize = 32;

inline void __syncthreads() { emu::park(emu::AT_BLOCK_BARRIER); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::warp_call(emu::SYNCWARP, mask, 0, 0, 32); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __nanosleep(unsigned) { emu::park(emu::READY); }  // yield: another thread may set what it waits for
inline void __trap() { emu::fail("__trap()"); emu::park(emu::DONE); }

template <class T> T __shfl_sync(unsigned m, T v, int src, int w = 32) { return emu::warp_call(emu::SHFL_IDX, m, v, src, w); }
template <class T> T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) { return emu::warp_call(emu::SHFL_UP, m, v, static_cast<int>(d), w); }
template <class T> T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) { return emu::warp_call(emu::SHFL_DOWN, m, v, static_cast<int>(d), w); }
template <class T> T __shfl_xor_sync(unsigned m, T v, int d, int w = 32) { return emu::warp_call(emu::SHFL_XOR, m, v, d, w); }
inline unsigned __ballot_sync(unsigned m, int p) { return static_cast<unsigned>(emu::warp_call(emu::BALLOT, m, p ? 1u : 0u, 0, 32)); }
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) { return __ballot_sync(m, p) == m; }

template <class T> T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
template <class T> T atomicMax(T* p, T v) { T old = *p; *p = std::max(old, v); return old; }
template <class T> T atomicExch(T* p, T v) { T old = *p; *p = v; return old; }
template <class T> T atomicCAS(T* p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }

template <class T> T __ldg(const T* p) { return *p; }
template <class T> T __ldcg(const T* p) { return *p; }
template <class T> T __ldcs(const T* p) { return *p; }
template <class T> T __ldlu(const T* p) { return *p; }
template <class T> void __stcg(T* p, T v) { *p = v; }
template <class T> void __stcs(T* p, T v) { *p = v; }
template <class T> void __stwt(T* p, T v) { *p = v; }

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __clz(int v) { return v ? __builtin_clz(static_cast<unsigned>(v)) : 32; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
inline float __expf(float x) { return std::exp(x); }
inline float __exp2f(float x) { return std::exp2(x); }
inline float exp2f(float x) { return std::exp2(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) { return std::min(1.0f, std::max(0.0f, x)); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
using std::max;
using std::min;
