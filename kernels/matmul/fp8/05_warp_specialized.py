"""Rung 05: warp specialisation (a producer TMA warp, consumer wgmma warpgroups).

Change: rung 04's kernel with warp_specialize=True on its tile loop (and flatten=False: Triton's
Hopper warp specialisation does not take a flattened loop). The compiler splits the program into
a producer partition - a warp that only issues the TMA loads into the ring of shared-memory stages
and waits on "empty" mbarriers - and consumer warpgroups that only wait on "full" barriers, issue
FP8 wgmma and run the epilogue (scale, bf16, TMA store); the producer gives up registers
(setmaxnreg) that the consumers take. This is the structure of CUTLASS's and cuBLASLt's Hopper
FP8 GEMMs.

Why it may help FP8 more than BF16 (where it bought 0.3%): a 128 x 256 x 128 K step is ~0.5 us
of tensor work at the FP8 rate, so a TMA issue or an epilogue that delays the next wgmma costs a
larger share of it. Without the flattened loop the epilogue no longer overlaps the next tile's
first loads, so a loss against rung 04 is possible; Triton marks Hopper warp specialisation
experimental, and a compiler refusal is recorded as this rung's error without touching the others.

Counters: SASS gains USETMAXREG and SYNCS (mbarrier) instructions, HGMMA count unchanged; executed
instructions fall; the tensor pipe's active cycles against rung 04's.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 128, 8
NUM_WARPS, NUM_STAGES = 8, 3  # 3 x 48 KiB of A and B blocks + 64 KiB for C's TMA store = 208 KiB


@triton.jit
def mmfp8_05_warp_specialized(a_desc, bt_desc, c_desc, sa_ptr, sb_ptr, M, N, K, BLOCK_M: tl.constexpr,
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
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], (acc * scale).to(tl.bfloat16))


def launch(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    bt_desc = TensorDescriptor.from_tensor(b.t(), [BLOCK_N, BLOCK_K])
    c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N])
    grid = (min(ctx.sm_count, triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N)),)
    mmfp8_05_warp_specialized[grid](a_desc, bt_desc, c_desc, inp["scale_a"], inp["scale_b"], m, n, k,
                                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                                    NUM_SMS=grid[0], num_warps=NUM_WARPS, num_stages=NUM_STAGES)
