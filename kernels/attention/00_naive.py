"""Rung 00: attention as the formula reads - three kernels, the S x S scores in memory.

1. ``attention00_scores``: scores = Q K^T / sqrt(D) for every (batch, head), a tiled tensor-core
   matmul (tl.dot) that writes the S x S matrix of fp32 scores to DRAM.
2. ``attention00_softmax``: one program per row of scores reads the row back, masks the keys after the
   query when causal, and writes P = softmax(row) as bf16 (what the next matmul consumes).
3. ``attention00_pv``: O = P V, a second tiled matmul that reads P back.

The matmuls are already on the tensor cores, so what this rung shows is the cost of materialising:
at B4 H32 S4096 the scores are 2^31 elements, 8.6 GB in fp32 written and read again, then 4.3 GB of
bf16 P written and read again - 26 GB of DRAM traffic where the inputs and output are 0.54 GB. The
causal mask saves nothing here: every score is computed, stored and loaded.

Counters: dram__bytes (about 26 GB against the 0.54 GB of rung 01), the three kernels' share of the
time (the softmax kernel is a pure stream at DRAM speed).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

TILE = 64  # the matmul tiles: 64 x 64 outputs per program, the whole head dimension at once
NUM_WARPS = 4


@triton.jit
def attention00_scores(q_ptr, k_ptr, s_ptr, seq, sm_scale,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    bh = tl.program_id(2).to(tl.int64)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + bh * seq * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    k = tl.load(k_ptr + bh * seq * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    s = tl.dot(q, tl.trans(k)) * sm_scale
    tl.store(s_ptr + bh * seq * seq + offs_m[:, None] * seq + offs_n[None, :], s)


@triton.jit
def attention00_softmax(s_ptr, p_ptr, seq, CAUSAL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # over batch * heads * seq rows
    cols = tl.arange(0, BLOCK)
    keep = cols < seq
    if CAUSAL:
        keep = keep & (cols <= row % seq)
    x = tl.load(s_ptr + row * seq + cols, mask=keep, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    p = e / tl.sum(e, axis=0)
    tl.store(p_ptr + row * seq + cols, p.to(tl.bfloat16), mask=cols < seq)


@triton.jit
def attention00_pv(p_ptr, v_ptr, o_ptr, seq,
                   HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, seq, BLOCK_N):
        p = tl.load(p_ptr + bh * seq * seq + offs_m[:, None] * seq + (start_n + offs_n)[None, :])
        v = tl.load(v_ptr + bh * seq * HEAD_DIM + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p, v, acc)
    tl.store(o_ptr + bh * seq * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.bfloat16))


def launch(ctx, inp, out):
    q, k, v, o = inp["q"], inp["k"], inp["v"], out["o"]
    batch, heads, seq, head_dim = q.shape
    if seq % TILE:
        raise ValueError(f"sequence length {seq} is not a multiple of the {TILE}-row tile")
    bh = batch * heads
    scores = ctx.scratch("scores", bh * seq * seq, torch.float32)
    probs = ctx.scratch("probs", bh * seq * seq, torch.bfloat16)
    attention00_scores[(seq // TILE, seq // TILE, bh)](
        q, k, scores, seq, 1.0 / math.sqrt(head_dim), HEAD_DIM=head_dim, BLOCK_M=TILE, BLOCK_N=TILE,
        num_warps=NUM_WARPS)
    attention00_softmax[(bh * seq,)](scores, probs, seq, CAUSAL=bool(inp["causal"]),
                                     BLOCK=triton.next_power_of_2(seq), num_warps=8)
    attention00_pv[(seq // TILE, bh)](probs, v, o, seq, HEAD_DIM=head_dim, BLOCK_M=TILE, BLOCK_N=TILE,
                                      num_warps=NUM_WARPS)
