"""Rung 06: warp specialisation asked of Triton (tl.range(..., warp_specialize=True)).

Change: rung 05's kernel with warp_specialize=True on its tile loop (and flatten=False, which the
option requires). Where the compiler applies it, it splits the program into a producer partition
- one warp that only issues the TMA loads into the ring of stages, waiting on "empty" mbarriers -
and consumer warpgroups that only wait on "full" barriers, issue FP8 wgmma and run the epilogue,
with registers moved from producer to consumers by setmaxnreg: the structure of cuBLASLt's and
CUTLASS's Hopper FP8 kernels, where loads never queue behind math or the epilogue.

Whether it applies on sm_90 is the question this rung asks. Compiled for sm_90 by Triton 3.9 on a
machine without a GPU, the loop keeps only a tt.warp_specialize attribute - no ttg.warp_specialize
op, so no partitions - and the SASS has no USETMAXREG; the BF16 ladder's rung 06, recorded with
Triton 3.6 on the H200, has no USETMAXREG either. If that holds on the H200, this rung is rung 05
with an unflattened loop (the epilogue no longer overlaps the next tile's first loads), and the
warp-specialised schedule needs Gluon or CUDA instead.

Counters: USETMAXREG in the SASS (present: partitioned; absent: not); executed instructions and
the tensor pipe's active cycles against rung 05's.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 128, 8
NUM_WARPS, NUM_STAGES = 8, 4  # as rung 05: 4 x 48 KiB + 32 KiB for one half of C = 224 KiB


@triton.jit
def mmfp8_06_warp_specialized(a_desc, bt_desc, c_desc, sa_ptr, sb_ptr, M, N, K, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                              NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    scale = tl.load(sa_ptr) * tl.load(sb_ptr)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=False, warp_specialize=True):
        first_pid_m = (tile // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m
        pid_n = (tile % num_pid_in_group) // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            bt = bt_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            acc = tl.dot(a, bt.T, acc)
        halves = tl.permute(tl.reshape(acc * scale, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        left, right = tl.split(halves)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(tl.bfloat16))
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(tl.bfloat16))


def launch(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    bt_desc = TensorDescriptor.from_tensor(b.t(), [BLOCK_N, BLOCK_K])
    c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N // 2])
    grid = (min(ctx.sm_count, triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N)),)
    mmfp8_06_warp_specialized[grid](a_desc, bt_desc, c_desc, inp["scale_a"], inp["scale_b"], m, n, k,
                                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                                    NUM_SMS=grid[0], num_warps=NUM_WARPS, num_stages=NUM_STAGES)
