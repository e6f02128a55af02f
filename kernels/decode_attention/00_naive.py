"""Rung 00: one program per query row, reading its KV head's whole cache for itself.

The formula as it reads, fused already (FlashAttention's online softmax, so no score reaches
memory): program (b, h, t) loads its query row q (D values), then streams the K and V of KV head
h // G over the whole context in blocks of BLOCK_N keys, keeping a running maximum m, a running sum
l and an accumulator of D values; at the end O = acc / l. The products are elementwise multiplies
and row sums on the CUDA cores (one query row is too thin for a tensor-core tile), in log2 units
(exp2 with 1/sqrt(D) * log2(e) folded into the scores).

What makes it naive: with GQA the G = 4 query heads of a KV head are four programs, and each reads
that head's K and V itself, so the cache is requested 4 times: 4 GiB from L2 (or DRAM) for 1 GiB of
cache. Programs are numbered (b, h, t) with h fastest, so the four of a group are launched side by
side and may find each other's blocks in L2: the DRAM traffic may stay near 1 GiB while L2 -> SM
traffic is 4 GiB. And each program waits for every load before using it (num_stages = 1).

Counters: L2 -> SM bytes (lts__t_bytes / L1 traffic) about 4x dram__bytes_read; the L2 hit rate
says how much of the re-reading DRAM was spared; long-scoreboard stalls (loads waited on).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

BLOCK_N = 64
NUM_WARPS = 4
LOG2E = 1.4426950408889634  # exp(x) = exp2(x * log2(e))


@triton.jit
def decode00_naive(q_ptr, k_ptr, v_ptr, o_ptr, ctx, qk_scale,
                   GROUP: tl.constexpr, QUERIES: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)  # ((b * H + h) * T + t): Q's and O's row
    t = row % QUERIES
    base = (row // (QUERIES * GROUP)).to(tl.int64) * ctx * HEAD_DIM  # this row's (b, KV head) in K and V
    last = ctx - QUERIES + t  # the last key this token sees
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + row.to(tl.int64) * HEAD_DIM + offs_d).to(tl.float32)
    m = tl.full((), float("-inf"), tl.float32)  # running max of the scaled scores, log2 units
    l = tl.zeros((), tl.float32)
    acc = tl.zeros([HEAD_DIM], tl.float32)
    for start in range(0, ctx, BLOCK_N):
        keys = start + offs_n
        seen = keys <= last
        rows = base + keys[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + rows, mask=seen[:, None], other=0.0).to(tl.float32)
        s = tl.where(seen, tl.sum(k * q[None, :], axis=1) * qk_scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))  # finite: block 0 holds key 0, seen by every token
        p = tl.math.exp2(s - m_new)
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        v = tl.load(v_ptr + rows, mask=seen[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + row.to(tl.int64) * HEAD_DIM + offs_d, (acc / l).to(tl.bfloat16))


def launch(ctx, inp, out):
    q, k, o = inp["q"], inp["k"], out["o"]
    batch, heads, queries, head_dim = q.shape
    decode00_naive[(batch * heads * queries,)](
        q, k, inp["v"], o, k.shape[2], LOG2E / math.sqrt(head_dim), GROUP=heads // k.shape[1],
        QUERIES=queries, HEAD_DIM=head_dim, BLOCK_N=BLOCK_N, num_warps=NUM_WARPS, num_stages=1)
