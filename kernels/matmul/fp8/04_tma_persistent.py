"""Rung 04: TMA descriptors and a persistent grid, the scales in the epilogue.

Change: blocks of A and B^T are fetched by the Tensor Memory Accelerator instead of per-thread
cp.async loads, C leaves by a TMA store, and the grid is persistent - one program per SM, each
looping over tiles 132 apart in rung 02's grouped order (128 x 256 x 128, 3 stages, 8 warps: rung
02's configuration, so that the change is the data movement alone).

TMA: the host builds a descriptor of A (m x k) and of B^T (n x k, the contiguous side of the
column-major B) with their block shapes (triton.tools.tensor_descriptor.TensorDescriptor);
`desc.load([row, col])` is one cp.async.bulk.tensor per block, issued by one thread, landing in
shared memory in the swizzled K-major layout FP8 wgmma reads and signalling an mbarrier. tl.dot
takes B^T's block transposed (`b.T`), which is a change of view, not of data: wgmma reads it
K-major. Rungs 01-03 make every thread compute 16-byte addresses and issue copies; at the FP8 rate
a K step lasts half as long as in the BF16 ladder, so those instructions weigh twice as much.

Persistent: 2,048 tiles over 132 SMs is 15.5 waves, each wave ending in a tail; one program per SM
with the tile and K loops flattened (flatten=True) lets the next tile's first loads overlap the
previous tile's epilogue. The scales are loaded once per program and applied to the fp32
accumulator before the bf16 rounding, as in every rung.

Counters: SASS UTMALDG / UTMASTG and no LDGSTS; grid 132 blocks; executed instructions lower;
the tensor pipe's active cycles up from rung 03's.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 128, 8
NUM_WARPS, NUM_STAGES = 8, 3  # 3 x 48 KiB of A and B blocks + 64 KiB for C's TMA store = 208 KiB


@triton.jit
def mmfp8_04_tma_persistent(a_desc, bt_desc, c_desc, sa_ptr, sb_ptr, M, N, K, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                            NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    scale = tl.load(sa_ptr) * tl.load(sb_ptr)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        first_pid_m = (tile // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m
        pid_n = (tile % num_pid_in_group) // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])  # out-of-bounds rows and columns read as 0
            bt = bt_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])
            acc = tl.dot(a, bt.T, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], (acc * scale).to(tl.bfloat16))  # clipped at the edges


def launch(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    bt_desc = TensorDescriptor.from_tensor(b.t(), [BLOCK_N, BLOCK_K])  # B^T: n x k, contiguous
    c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N])
    grid = (min(ctx.sm_count, triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N)),)
    mmfp8_04_tma_persistent[grid](a_desc, bt_desc, c_desc, inp["scale_a"], inp["scale_b"], m, n, k,
                                  BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                                  NUM_SMS=grid[0], num_warps=NUM_WARPS, num_stages=NUM_STAGES)
