// Scenario 04: count the events of each type in every user's event log.
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c -Xptxas -v`.
// No headers: NVRTC has no host include path.
//
// The logs live in a pool of 128-byte chunks, as an append-only store keeps them: a chunk holds 31
// events (one 32-bit word each, its low 5 bits the event type) and, in its last word, the index of
// the user's next chunk (-1 after the last). One warp walks one user's chain: lane i reads word i of
// the chunk (32 lanes, 128 contiguous bytes: one coalesced request), and lane 31's word says where
// the next chunk is. That next load cannot start before this one returns, so each warp waits a full
// memory round trip per chunk: the kernel is latency-bound, and an SM goes as fast as the number of
// warps it holds. The two kernels walk identically and differ only in how a lane keeps its 32
// counters.

constexpr int TYPES = 32;           // event types, the low 5 bits of an event word
constexpr int LANES = 32;           // one warp per user; lane 31 carries the link
constexpr int THREADS = 256;        // 8 users per block
constexpr unsigned FULL = 0xffffffffu;

// 32 counters, one register each: 32 live values per thread (ptxas: about 78 registers). At that
// size 3 blocks of 256 threads fit in the SM's 64K registers: 24 of its 64 warp slots.
struct WideCounters {
    unsigned n[TYPES];

    __device__ __forceinline__ WideCounters()
    {
#pragma unroll
        for (int c = 0; c < TYPES; ++c) n[c] = 0;
    }

    __device__ __forceinline__ void add(unsigned type)
    {
#pragma unroll
        for (int c = 0; c < TYPES; ++c) n[c] += (type == (unsigned)c);
    }

    // The warp's total for type `lane`: every counter summed over the warp, then each lane keeps one.
    __device__ __forceinline__ unsigned total_for_lane(int lane) const
    {
        unsigned mine = 0;
#pragma unroll
        for (int c = 0; c < TYPES; ++c) {
            unsigned s = n[c];
#pragma unroll
            for (int o = LANES / 2; o > 0; o /= 2) s += __shfl_xor_sync(FULL, s, o);
            mine = (lane == c) ? s : mine;
        }
        return mine;
    }
};

// The same 32 counters as 8-bit fields, four per register: 8 live values. A lane sees at most one
// event per chunk, so a field overflows only past 255 chunks per user (the chains here have 64).
// Before the warp sum, fields are widened to 16 bits (31 lanes x 255 < 65536).
struct PackedCounters {
    unsigned n[TYPES / 4];

    __device__ __forceinline__ PackedCounters()
    {
#pragma unroll
        for (int j = 0; j < TYPES / 4; ++j) n[j] = 0;
    }

    __device__ __forceinline__ void add(unsigned type)
    {
        const unsigned one = 1u << (8 * (type % 4));
#pragma unroll
        for (int j = 0; j < TYPES / 4; ++j) n[j] += (type / 4 == (unsigned)j) ? one : 0u;
    }

    __device__ __forceinline__ unsigned total_for_lane(int lane) const
    {
        unsigned mine = 0;
#pragma unroll
        for (int j = 0; j < TYPES / 4; ++j) {
            unsigned even = n[j] & 0x00ff00ffu;          // types 4j and 4j + 2, 16 bits each
            unsigned odd = (n[j] >> 8) & 0x00ff00ffu;    // types 4j + 1 and 4j + 3
#pragma unroll
            for (int o = LANES / 2; o > 0; o /= 2) {
                even += __shfl_xor_sync(FULL, even, o);
                odd += __shfl_xor_sync(FULL, odd, o);
            }
            mine = (lane == 4 * j + 0) ? (even & 0xffffu) : mine;
            mine = (lane == 4 * j + 1) ? (odd & 0xffffu) : mine;
            mine = (lane == 4 * j + 2) ? (even >> 16) : mine;
            mine = (lane == 4 * j + 3) ? (odd >> 16) : mine;
        }
        return mine;
    }
};

// One warp per user: walk the chain, count, and write the user's 32 totals as one coalesced row.
template <class Counters>
__device__ __forceinline__ void count_events(const int* __restrict__ pool, const int* __restrict__ heads,
                                             unsigned* __restrict__ counts, int users)
{
    const int lane = threadIdx.x % LANES;
    const int user = blockIdx.x * (THREADS / LANES) + threadIdx.x / LANES;
    if (user >= users) return;  // whole warps: THREADS is a multiple of LANES
    Counters counters;
    for (int chunk = heads[user]; chunk >= 0;) {
        const int word = pool[(long long)chunk * LANES + lane];
        chunk = __shfl_sync(FULL, word, LANES - 1);     // the link: the same for every lane
        counters.add(lane < LANES - 1 ? ((unsigned)word % TYPES) : TYPES);  // lane 31 counts nothing
    }
    counts[(long long)user * TYPES + lane] = counters.total_for_lane(lane);
}

// slow: nothing tells the compiler how many blocks should fit; it keeps all 32 counters in registers.
extern "C" __global__ void __launch_bounds__(THREADS)
count_events_wide(const int* __restrict__ pool, const int* __restrict__ heads, unsigned* __restrict__ counts,
                  int users)
{
    count_events<WideCounters>(pool, heads, counts, users);
}

// fixed: 8 registers of counters, and a promise of 8 resident blocks (at most 32 registers per thread),
// which the compiler meets without spilling: all 64 warp slots of an SM can be filled.
extern "C" __global__ void __launch_bounds__(THREADS, 8)
count_events_packed(const int* __restrict__ pool, const int* __restrict__ heads, unsigned* __restrict__ counts,
                    int users)
{
    count_events<PackedCounters>(pool, heads, counts, users);
}
