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
    uint3 tid;
    unsigned linear = 0;
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

inline void run_block(size_t threads) {
    for (size_t i = 0; i < threads; ++i) {
        Fiber& f = fibers[i];
        f = Fiber{};
        f.linear = static_cast<unsigned>(i);
        f.tid = {static_cast<unsigned>(i % block_dim.x), static_cast<unsigned>(i / block_dim.x % block_dim.y),
                 static_cast<unsigned>(i / (block_dim.x * block_dim.y))};
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks[i].get();
        f.ctx.uc_stack.ss_size = STACK_BYTES;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, entry, 0);
    }
    for (;;) {
        bool ran = false;
        for (size_t i = 0; i < threads && error.empty(); ++i) {
            if (fibers[i].state != READY) continue;
            current = i;
            thread_idx = fibers[i].tid;
            swapcontext(&scheduler, &fibers[i].ctx);
            ran = true;
        }
        if (!error.empty()) return;
        size_t done = 0, at_barrier = 0;
        for (size_t i = 0; i < threads; ++i) {
            done += fibers[i].state == DONE;
            at_barrier += fibers[i].state == AT_BLOCK_BARRIER;
        }
        if (done == threads) return;
        bool released = false;
        for (size_t w = 0; w < threads; w += 32) released |= release_warp(w, std::min<size_t>(32, threads - w));
        if (!error.empty()) return;
        for (int id = 0; id < 16; ++id) {  // named barriers: released when `count` threads wait at one
            size_t waiting = 0, count = 0;
            for (size_t i = 0; i < threads; ++i)
                if (fibers[i].state == AT_NAMED_BARRIER && fibers[i].arg == id) {
                    ++waiting;
                    count = fibers[i].mask;
                }
            if (waiting && waiting == count) {
                for (size_t i = 0; i < threads; ++i)
                    if (fibers[i].state == AT_NAMED_BARRIER && fibers[i].arg == id) fibers[i].state = READY;
                released = true;
            } else if (waiting > count) {
                fail("more threads wait at a named barrier than its count");
                return;
            }
        }
        if (!released && at_barrier > 0 && at_barrier == threads - done) {
            for (size_t i = 0; i < threads; ++i)
                if (fibers[i].state == AT_BLOCK_BARRIER) fibers[i].state = READY;
            released = true;
        }
        if (!released && !ran) {
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
    fibers.assign(threads, Fiber{});
    while (stacks.size() < threads) stacks.emplace_back(new char[STACK_BYTES]);
    grid_dim = grid;
    block_dim = block;
    body = fn;
    body_arg = arg;
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                block_idx = {x, y, z};
                run_block(threads);
                if (!error.empty())
                    throw std::runtime_error(error + " (block " + std::to_string(x) + "," + std::to_string(y) + "," +
                                             std::to_string(z) + ")");
            }
}

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
