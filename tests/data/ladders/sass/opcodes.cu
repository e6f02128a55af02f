// Four small kernels whose SASS shows the opcodes the ladder evidence counts: FFMA with shared-memory
// loads and a barrier; an mma.sync (HMMA); a cp.async copy (LDGSTS); a warpgroup MMA (HGMMA).
extern "C" __global__ void ffma_smem(const float* a, float* c) {
    __shared__ float tile[256];
    tile[threadIdx.x] = a[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    float acc = 0.0f;
    for (int k = 0; k < 256; ++k) acc = fmaf(tile[k], tile[threadIdx.x], acc);
    c[blockIdx.x * 256 + threadIdx.x] = acc;
}

extern "C" __global__ void mma_sync_bf16(const unsigned* a, const unsigned* b, float* c) {
    const unsigned t = threadIdx.x;
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a[4 * t]), "r"(a[4 * t + 1]), "r"(a[4 * t + 2]), "r"(a[4 * t + 3]), "r"(b[2 * t]), "r"(b[2 * t + 1]));
    c[4 * t] = d0; c[4 * t + 1] = d1; c[4 * t + 2] = d2; c[4 * t + 3] = d3;
}

extern "C" __global__ void cp_async_copy(const float* a, float* c) {
    __shared__ float s[128];
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&s[threadIdx.x]));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(a + threadIdx.x));
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    c[threadIdx.x] = s[127 - threadIdx.x];
}

extern "C" __global__ void wgmma_bf16(unsigned long long desc_a, unsigned long long desc_b, float* c) {
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(desc_a), "l"(desc_b), "r"(1));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    const unsigned t = threadIdx.x;
    c[4 * t] = d0; c[4 * t + 1] = d1; c[4 * t + 2] = d2; c[4 * t + 3] = d3;
}
