"""Rung 01: one program per KV head, serving its G query heads: the cache read once.

Change against rung 00: program (b, KV head) loads the G x T query rows that use this KV head (4 x 1
at the main size) as one tile, and every K and V block it loads serves all of them. The tile is
padded to 16 rows with zeros (the smallest M of a tensor-core mma.sync; the 12 padding rows are
computed and thrown away), so the two products are tl.dot: S = Q K^T (16 x BLOCK_N) and acc += P V
(16 x D), fp32 accumulation, P rounded to bf16 for the second product as FlashAttention does. The
softmax is rung 00's, one running maximum and sum per row.

Why: K and V now leave L2 once per KV head instead of once per query head: 1 GiB of L2 -> SM traffic
instead of 4, and the tensor cores do the arithmetic (16 x 128 x 2 FLOPs per key and product: 75%
of it on padding, which costs nothing visible in a kernel bound by memory).

What it does not fix: the grid is B x H_kv = 256 programs of 4 warps for 132 SMs, two per SM at
most, 8 of 64 warp slots, each waiting for its load before its math (num_stages = 1). Too few bytes
in flight for the DRAM: about 2 x 32 KB per SM at best, and none while a program computes.

Counters: L2 -> SM bytes down to about dram__bytes_read; achieved occupancy about 12% of the warp
slots; 1.94 blocks per SM in "waves"; HMMA in the SASS.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

BLOCK_N = 64
NUM_WARPS = 4
MIN_ROWS = 16  # mma.sync's M: the G x T query rows padded to at least this
LOG2E = 1.4426950408889634


@triton.jit
def decode01_kv_head(q_ptr, k_ptr, v_ptr, o_ptr, ctx, qk_scale,
                     GROUP: tl.constexpr, QUERIES: tl.constexpr, HEAD_DIM: tl.constexpr,
                     ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)  # b * H_kv + KV head
    offs_r = tl.arange(0, ROWS)  # row r: query head bh * G + r // T, token r % T
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    real = offs_r < GROUP * QUERIES
    last = ctx - QUERIES + offs_r % QUERIES  # the last key each row's token sees
    q_rows = (bh * GROUP * QUERIES + offs_r)[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_ptr + q_rows, mask=real[:, None], other=0.0)
    base = bh * ctx * HEAD_DIM
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, HEAD_DIM], tl.float32)
    for start in range(0, ctx, BLOCK_N):
        keys = start + offs_n
        inside = keys < ctx
        kv_rows = base + keys[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv_rows, mask=inside[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(keys[None, :] <= last[:, None], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))  # finite: block 0 holds key 0, seen by every row
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_rows, mask=inside[:, None], other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    tl.store(o_ptr + q_rows, (acc / l[:, None]).to(tl.bfloat16), mask=real[:, None])


def launch(ctx, inp, out):
    q, k, o = inp["q"], inp["k"], out["o"]
    batch, heads, queries, head_dim = q.shape
    kv_heads = k.shape[1]
    group = heads // kv_heads
    decode01_kv_head[(batch * kv_heads,)](
        q, k, inp["v"], o, k.shape[2], LOG2E / math.sqrt(head_dim), GROUP=group, QUERIES=queries,
        HEAD_DIM=head_dim, ROWS=max(MIN_ROWS, triton.next_power_of_2(group * queries)), BLOCK_N=BLOCK_N,
        num_warps=NUM_WARPS, num_stages=1)
