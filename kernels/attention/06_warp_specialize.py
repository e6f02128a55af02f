"""Rung 06: producer/consumer warp specialisation (Triton's automatic warp specialisation on Hopper).

Change against rung 05 (same loop body, same FlashAttention-2 arithmetic): the key loop is written
``tl.range(lo, hi, BLOCK_N, warp_specialize=True)`` and the K/V tensor descriptors are built on the
device (``tl.make_tensor_descriptor``, as Triton's fused-attention tutorial does for Hopper with warp
specialisation). Triton 3.6's Hopper warp-specialisation pass then splits the loop into partitions:
a producer warp group that only issues the TMA copies of K and V into a ring of shared-memory
buffers, and consumer warp groups that run the two wgmma products and the softmax, handing buffers
back through mbarriers; the producer gives up registers (setmaxnreg.dec) and the consumers take them
(setmaxnreg.inc).

Why: in rung 05 the same warps issue the TMA copies, wait on their mbarriers, run both products and
the exponentials; the copies of the next blocks can only be issued at fixed points of one
instruction stream. With a producer the loads run ahead on their own schedule, and the consumers'
register budget grows, so the pipeline can keep more K/V blocks in flight without spilling the
128 x 128 fp32 accumulator. This is FlashAttention-3's first step; its second (ping-pong between two
consumer groups) is not something this pass is asked for here.

Causal sizes run rung 05's loop unchanged (the tutorial enables warp specialisation on Hopper only
for the non-causal forward); this rung is about the non-causal size.

Counters: setmaxnreg and mbarrier try_wait in the SASS, cp.async.bulk.tensor issued by one warp
group, tensor pipe's share up a few points against rung 05.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634

#: Four configurations of 128-query tiles. num_warps is per partition here: 4 warps = one warp group for
#: each of the two consumer groups and the producer, 12 warps in all (the pass splits the 128 rows into two
#: 64-row halves, one per consumer, as FlashAttention-3 does). 128 x 128 with 3 stages needs 262 KB of
#: shared memory at D = 128, more than the 227 KB an H200 block may have: pruned there.
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=4),
]


def _prune(configs, named_args, **kwargs):
    """Without a GPU (Triton's interpreter) there is nothing to time: keep the first configuration. On the
    GPU, drop a configuration whose buffers do not fit in the 227 KB of shared memory of a block."""
    if not named_args["q_ptr"].is_cuda:
        return configs[:1]

    def shared_bytes(c):  # Q and O's staging tile once, K and V once per stage (as the compiler allocates)
        return 2 * kwargs["HEAD_DIM"] * (2 * c.kwargs["BLOCK_M"] + 2 * c.num_stages * c.kwargs["BLOCK_N"])

    return [c for c in configs if shared_bytes(c) <= 227 * 1024]


@triton.jit
def _attend06(acc, l, m, q, desc_k, desc_v, row0, offs_m, hi, qk_scale,
              BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """Stream keys [0, hi) of the head whose first row is row0 into (acc, l, m): rung 05's loop body in
    one warp-specialised loop (the pass takes one loop; a second loop after it fails to compile in
    Triton 3.6), so when causal every block carries the mask, a no-op off the diagonal."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(0, hi, BLOCK_N, warp_specialize=True):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([row0 + start_n, 0])
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            s = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m = m_new
    return acc, l, m


@triton.autotune(configs=CONFIGS, key=["seq", "HEAD_DIM", "CAUSAL"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def attention06_ws(q_ptr, k_ptr, v_ptr, o_ptr, rows, seq, qk_scale,
                   HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    desc_q = tl.make_tensor_descriptor(q_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(k_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(v_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(o_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    block_m = tl.program_id(0)
    row0 = tl.program_id(1) * seq  # first row of this (batch, head) in the (B * H * S, D) views
    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = desc_q.load([row0 + block_m * BLOCK_M, 0])
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:  # keys up to the end of the diagonal block, rung 04's skipping
        acc, l, m = _attend06(acc, l, m, q, desc_k, desc_v, row0, offs_m, (block_m + 1) * BLOCK_M, qk_scale, BLOCK_N,
                              True)
    else:
        acc, l, m = _attend06(acc, l, m, q, desc_k, desc_v, row0, offs_m, seq, qk_scale, BLOCK_N, False)
    acc = acc / l[:, None]
    desc_o.store([row0 + block_m * BLOCK_M, 0], acc.to(tl.bfloat16))


def _scratch(size: int, alignment: int, stream):
    """Global scratch for the descriptors the kernel builds (128 bytes each, per program)."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def launch(ctx, inp, out):
    q, k, v, o = inp["q"], inp["k"], inp["v"], out["o"]
    batch, heads, seq, head_dim = q.shape
    if seq % 128:
        raise ValueError(f"sequence length {seq} is not a multiple of the 128-query tile")
    triton.set_allocator(_scratch)
    grid = lambda meta: (seq // meta["BLOCK_M"], batch * heads)  # noqa: E731 - Triton's grid callback
    attention06_ws[grid](q, k, v, o, batch * heads * seq, seq, LOG2E / math.sqrt(head_dim), HEAD_DIM=head_dim,
                         CAUSAL=bool(inp["causal"]))
