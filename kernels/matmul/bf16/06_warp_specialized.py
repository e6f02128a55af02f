"""Rung 06: warp specialisation (Triton's automatic warp specialisation on Hopper).

Change: rung 05's kernel with warp_specialize=True on its tile loop (and flatten=False: Triton's
Hopper warp specialisation does not take a flattened loop). The compiler splits the program into a
producer partition - a warp that only issues TMA loads into the ring of shared-memory stages and
waits on "empty" mbarriers - and consumer warpgroups that only wait on "full" barriers, issue wgmma
and run the epilogue; the producer gives up registers (setmaxnreg) that the consumers take. In
rung 05 the same warps do both in one software-pipelined instruction stream, so a late TMA issue or
an epilogue delays the next wgmma; here the two run independently, as in CUTLASS's Hopper
"warp-specialized" GEMMs and cuBLAS's.

Automatic warp specialisation on Hopper came to Triton in 3.5 and is marked experimental; if the
compiler rejects this loop, the rung records the build error and the others are unaffected.

Counters: the SASS gains setmaxnreg (USETMAXREG) and mbarrier waits (SYNCS); warp states show the
producer warp stalled on barriers while the consumers issue HGMMA; the tensor pipe's active cycles
should edge up from rung 05's.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 64, 8
NUM_WARPS, NUM_STAGES = 8, 3  # 3 x 48 KiB of A and B blocks + 64 KiB for C's TMA store = 208 KiB


@triton.jit
def mmbf16_06_warp_specialized(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=False, warp_specialize=True):
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
    mmbf16_06_warp_specialized[grid](a_desc, b_desc, c_desc, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                     BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, NUM_SMS=grid[0], num_warps=NUM_WARPS,
                                     num_stages=NUM_STAGES)
