"""Rung 05: TMA descriptors and a persistent grid.

Change: blocks of A and B are fetched by the Tensor Memory Accelerator instead of per-thread loads,
and the grid is persistent - one program per SM, each looping over tiles 132 apart in rung 02's
grouped order (128 x 256 x 64, 3 stages, 8 warps, as rung 03).

TMA: the host builds a descriptor of each matrix (base, shape, strides, block shape:
triton.tools.tensor_descriptor.TensorDescriptor); in the kernel, `desc.load([row, col])` becomes
one cp.async.bulk.tensor instruction per block, issued by one thread, which writes the block into
shared memory in the swizzled layout wgmma reads and signals an mbarrier when it lands. Rung 03's
cp.async needs every thread to compute 16-byte addresses and issue 8-16 copies per block; TMA frees
those registers and issue slots for the math. C leaves the same way (`c_desc.store`: registers ->
shared memory -> one bulk tensor store).

Persistent: 2048 tiles over 132 programs is 15.5 waves in rungs 01-04, each wave ending in a tail
where SMs idle until the slowest block of the wave finishes and then refill the pipeline from
empty. With one program per SM looping, the software pipeline runs across tile boundaries (flatten
= True: the tile loop and the K loop become one loop), so the next tile's first blocks load while
the last tile's epilogue runs.

Counters: SASS shows UTMALDG / UTMASTG (TMA) and no LDGSTS (cp.async); executed instructions per
FLOP fall; grid = 132 blocks; the tensor pipe's active cycles should rise past rung 04's.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 64, 8
NUM_WARPS, NUM_STAGES = 8, 3  # 3 x 48 KiB of A and B blocks + 64 KiB for C's TMA store = 208 KiB


@triton.jit
def mmbf16_05_tma_persistent(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        first_pid_m = (tile // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m
        pid_n = (tile % num_pid_in_group) // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])  # out-of-bounds rows and columns read as 0
            b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.bfloat16))  # clipped at the edges


def launch(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    b_desc = TensorDescriptor.from_tensor(b, [BLOCK_K, BLOCK_N])
    c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N])
    grid = (min(ctx.sm_count, triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N)),)
    mmbf16_05_tma_persistent[grid](a_desc, b_desc, c_desc, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                   GROUP_M=GROUP_M, NUM_SMS=grid[0], num_warps=NUM_WARPS, num_stages=NUM_STAGES)
