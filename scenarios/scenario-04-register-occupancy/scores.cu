// Scenario 04: total each user's metrics along a chain of chunks, then score the user with a small
// linear model.
//
// Compiled at run time through NVRTC (cupy.RawModule, --std=c++17 -lineinfo; CuPy adds
// -arch=sm_<device>, sm_90 on an H200). The tests compile it with `nvcc -arch=sm_90 -c -Xptxas -v`.
// No headers: NVRTC has no host include path.
//
// The records live in a pool of 128-byte chunks, as an append-only store keeps them: a chunk holds 31
// metric words (counts for one time window) and, in its last word, the index of the user's next chunk
// (-1 after the last). One warp walks one user's chain: lane i reads word i of the chunk (32 lanes,
// 128 contiguous bytes: one coalesced request) and adds it to its total; lane 31's word says where the
// next chunk is. That next load cannot start before this one returns, so each warp has one load in
// flight and waits a full memory round trip per chunk: the kernel is latency-bound, and an SM goes as
// fast as the number of warps it holds.
//
// After the walk the warp scores the user: 64 scores, score[o] = sum_j W[j][o] * total[j], lane l
// computing scores l and l + 32 from its two columns of W (31 x 64 floats, stored row by row so that a
// warp's 32 reads of one row are one coalesced request).
//
// The two kernels execute the same instructions (the same walk, the same 62 weight loads, 31 shuffles
// and 62 FMAs per user); they differ only in where the weight loads stand, and so in how long their
// values live, which sets the registers per thread and with them the warps per SM.

constexpr int LANES = 32;           // one warp per user; lane 31 carries the link
constexpr int METRICS = LANES - 1;  // metric words per chunk
constexpr int SCORES = 2 * LANES;   // two per lane
constexpr int THREADS = 256;        // 8 users per block
constexpr unsigned FULL = 0xffffffffu;

// The walk: the sum of this lane's word over the user's chunks (lane 31 sums links; never used).
__device__ __forceinline__ int walk(const int* __restrict__ pool, int chunk, int lane)
{
    int total = 0;
    while (chunk >= 0) {
        const int word = pool[(long long)chunk * LANES + lane];
        chunk = __shfl_sync(FULL, word, LANES - 1);  // the link: the same for every lane
        total += word;
    }
    return total;
}

__device__ __forceinline__ void store(float* __restrict__ scores, int user, int lane, float a, float b)
{
    scores[(long long)user * SCORES + lane] = a;          // two coalesced 128-byte rows per user
    scores[(long long)user * SCORES + LANES + lane] = b;
}

// slow: the lane's 62 weights are loaded into registers first, "so that their latency hides behind the
// walk". They stay live through all 64 round trips of the walk: ptxas (nvcc 13.0, sm_90) gives the
// kernel 74 registers per thread, and 3 blocks of 256 threads fill the SM's 65,536: 24 of its 64 warp
// slots.
extern "C" __global__ void __launch_bounds__(THREADS)
score_users_hoisted(const int* __restrict__ pool, const int* __restrict__ heads, const float* __restrict__ w,
                    float* __restrict__ scores, int users)
{
    const int lane = threadIdx.x % LANES;
    const int user = blockIdx.x * (THREADS / LANES) + threadIdx.x / LANES;
    if (user >= users) return;  // whole warps: THREADS is a multiple of LANES
    float w0[METRICS], w1[METRICS];
#pragma unroll
    for (int j = 0; j < METRICS; ++j) {
        w0[j] = w[j * SCORES + lane];
        w1[j] = w[j * SCORES + LANES + lane];
    }
    const int total = walk(pool, heads[user], lane);
    float a = 0.0f, b = 0.0f;
#pragma unroll
    for (int j = 0; j < METRICS; ++j) {
        const float t = (float)__shfl_sync(FULL, total, j);  // the user's total of metric j
        a = fmaf(w0[j], t, a);
        b = fmaf(w1[j], t, b);
    }
    store(scores, user, lane, a, b);
}

// fixed: each weight is loaded where it is used, after the walk, so that during the walk a thread
// holds only its address, chunk index and total. The same instructions; ptxas fits the kernel in 31
// registers without spilling, and __launch_bounds__(256, 8) states the target (8 blocks, all 64 warp
// slots of an SM, 2.7x the chains in flight) so that a later edit cannot silently take it back.
extern "C" __global__ void __launch_bounds__(THREADS, 8)
score_users(const int* __restrict__ pool, const int* __restrict__ heads, const float* __restrict__ w,
            float* __restrict__ scores, int users)
{
    const int lane = threadIdx.x % LANES;
    const int user = blockIdx.x * (THREADS / LANES) + threadIdx.x / LANES;
    if (user >= users) return;
    const int total = walk(pool, heads[user], lane);
    float a = 0.0f, b = 0.0f;
#pragma unroll
    for (int j = 0; j < METRICS; ++j) {
        const float t = (float)__shfl_sync(FULL, total, j);
        a = fmaf(w[j * SCORES + lane], t, a);
        b = fmaf(w[j * SCORES + LANES + lane], t, b);
    }
    store(scores, user, lane, a, b);
}
