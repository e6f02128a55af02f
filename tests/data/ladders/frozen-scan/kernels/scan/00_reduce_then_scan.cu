// Rung 00: reduce-then-scan in three passes, Hillis-Steele inside each block (the naive version).
//
// Pass 1 sums each tile of BLOCK values (one value per thread, a shared-memory tree). Pass 2 scans
// those tile sums (the launcher applies the whole algorithm to them recursively). Pass 3 reads the
// input again and scans each tile with Hillis-Steele: log2(BLOCK) = 10 steps in which every thread
// adds the value `offset` places to its left, double-buffered in shared memory with a barrier per
// step, then adds the scanned sum of the tiles before it.
//
// Two costs the next rungs remove: the input is read twice (12 bytes moved per value instead of 8),
// and Hillis-Steele does n log n additions and ten barriers per tile instead of n additions.
// Counters: dram__bytes_read.sum = 2x the input; smsp__pcsamp_warps_issue_stalled_barrier high.
#define BLOCK 1024

extern "C" __global__ void __launch_bounds__(BLOCK)
scan00_tile_sums(const float* __restrict__ x, float* __restrict__ sums, unsigned n) {
    __shared__ float s[BLOCK];
    const unsigned tid = threadIdx.x, i = blockIdx.x * BLOCK + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = BLOCK / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) sums[blockIdx.x] = s[0];
}

// out = inclusive scan of x, where tile b starts from scanned_sums[b - 1] (0 when scanned_sums is
// the only tile). Pass scanned_sums = x itself with has_offsets = 0 for a single tile.
extern "C" __global__ void __launch_bounds__(BLOCK)
scan00_tiles(const float* __restrict__ x, const float* __restrict__ scanned_sums, float* __restrict__ out,
             unsigned n, unsigned has_offsets) {
    __shared__ float buf[2][BLOCK];
    const unsigned tid = threadIdx.x, i = blockIdx.x * BLOCK + tid;
    unsigned cur = 0;
    buf[0][tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned offset = 1; offset < BLOCK; offset *= 2) {
        float v = buf[cur][tid];
        if (tid >= offset) v += buf[cur][tid - offset];
        buf[cur ^ 1][tid] = v;
        cur ^= 1;
        __syncthreads();
    }
    const float offset = (has_offsets && blockIdx.x > 0) ? scanned_sums[blockIdx.x - 1] : 0.0f;
    if (i < n) out[i] = buf[cur][tid] + offset;
}
