// Hopper (sm_90a) building blocks for hand-written tensor-core kernels, as inline PTX: the
// asynchronous warpgroup MMA (wgmma), the Tensor Memory Accelerator (TMA) and the shared-memory
// barriers (mbarrier) that hand TMA's bytes to wgmma. No CUDA headers: NVRTC builds it as it is.
//
// wgmma (SASS HGMMA): a warpgroup of 4 warps multiplies a 64 x N x 16 block, A and B read from shared
// memory through 64-bit matrix descriptors, the fp32 accumulators in registers (64 x N / 128 per
// thread). It is asynchronous: wgmma.fence before the first one (and after any other write of the
// accumulator registers), commit_group to close a batch, wait_group N to wait until at most N batches
// are in flight. Only then may other instructions read the accumulators (fence_accumulators keeps
// the compiler from moving those reads above the wait).
//
// TMA (SASS UTMALDG): one thread copies a box of a 2-D tensor from global to shared memory,
// described by a 128-byte tensor map that the host encodes (cuTensorMapEncodeTiled), and swizzled as
// the map says (128-byte swizzle here, the layout wgmma reads without bank conflicts). The copy
// completes on an mbarrier: the issuing thread arms it with the bytes to expect (expect_tx), and
// waiters spin on try_wait.parity for the phase that the bytes complete.
#pragma once

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned addr;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(addr) : "l"(p));
    return addr;
}

// ---- mbarrier (shared-memory barrier with a transaction count) ----------------------------------

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Make the initialised barriers visible to the async proxy (TMA) and the other threads' waits.
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// One arrival that also raises the phase's expected transaction bytes by `bytes`.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Wait until the phase of parity `parity` has completed (a fresh barrier is in phase 0, so waiting
// for parity 1 returns at once: the "previous" phase counts as complete).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// ---- TMA ----------------------------------------------------------------------------------------

// The tensor map may live in global memory (the host copies it there before the launch).
__device__ __forceinline__ void tma_prefetch_map(const void* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// Copy the box at element coordinates (c0 = innermost, c1) of `map` into shared memory at `dst`,
// completing `bytes` of the transaction on `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* map, unsigned bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        ::"r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}

// ---- wgmma --------------------------------------------------------------------------------------

// A shared-memory matrix descriptor with 128-byte swizzle. Bits 0-13: start address / 16; 16-29:
// leading-dimension byte offset / 16; 32-45: stride-dimension byte offset / 16; 62-63: swizzle mode
// (1 = 128 B). The 1024-byte swizzle atoms (8 rows of 128 B) must start 1024-aligned (base offset 0).
// K-major operand (A here: rows of 64 bf16 = 128 B along K): SBO = 1024 (the next 8 rows), LBO unused;
// one k16 step moves the start 32 bytes along the row, inside the swizzle atom.
// MN-major operand (B here: rows of 64 bf16 along N, one row per k): LBO = the byte distance to the
// next 64 columns of N (the next swizzle atom along N), SBO = 1024 (the next 8 rows of K).
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
           ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// An empty asm that "reads and writes" each accumulator: no read or write of them moves across it.
template <int R>
__device__ __forceinline__ void fence_accumulators(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Warpgroup register budgets (all 4 warps of a warpgroup execute it).
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R)); }
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R)); }

// d (64 x 256 fp32) (+)= A (64 x 16, K-major) * B (16 x 256, MN-major: imm-trans-b = 1), bf16 in.
// accumulate = 0 ignores d's old value (the first K step of a tile: no zeroing of 128 registers).
// Accumulator layout: warp w of the warpgroup owns rows 16w..16w+15; lane l holds, for each group i of
// 8 columns, d[4i + 0, 1] = row 16w + l/4, columns 8i + 2(l%4) + 0, 1, and d[4i + 2, 3] = row + 8.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long desc_a,
                                                 unsigned long long desc_b, unsigned accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
// ---- thread-block clusters (rungs that share TMA loads between the blocks of a cluster) ---------

__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// All threads of all blocks of the cluster (release / acquire: shared-memory writes before it, such as
// barrier initialisation, are seen by the other blocks after it).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// One arrival on the mbarrier at the same shared-memory offset in block `rank` of the cluster. The
// default semantics (release at CTA scope), as CUTLASS's ClusterBarrier::arrive: what the arrival
// must order is only that this block's wgmma have finished reading the stage (wait_group before
// it), not any memory write; .release.cluster would put a MEMBAR.ALL.GPU before every arrival.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}"
                 ::"r"(bar), "r"(rank) : "memory");
}

// tma_load_2d into every block of the cluster named in `mask` (bit i: rank i), at the same offsets:
// the box lands at `dst` in each, and completes its bytes on each one's barrier at `bar`.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const void* map, unsigned bar, int c0, int c1,
                                                      unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        ::"r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1), "h"(mask) : "memory");
}

// ---- TMA stores (shared -> global) and named barriers -------------------------------------------

// Generic-proxy writes to shared memory (st.shared) made visible to the async proxy (a TMA store that
// reads them): every writing thread, before the barrier after which one thread issues the store.
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// The box of `map` at (c0 = innermost, c1) written from shared memory at `src`, in the issuing
// thread's current bulk async-group.
__device__ __forceinline__ void tma_store_2d(const void* map, unsigned src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until at most N of this thread's bulk groups are still reading their shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"); }
// Until at most N of them are incomplete (their global writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ void st_shared_u32(unsigned addr, unsigned v) {
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// A barrier among `threads` threads (a multiple of 32) on hardware barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void named_barrier(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
