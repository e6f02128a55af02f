"""Rung 02: split-KV (FlashDecoding): each KV head's context cut into splits, then a combine kernel.

Change against rung 01: the context of each (b, KV head) is cut into splits of ``split_len`` keys, and
program (b, KV head, split) runs rung 01's loop over its split only, writing its unnormalised
partial result - the running maximum m, the sum l and the accumulator acc of each of the G x T
rows, fp32 - to a scratch buffer. A second kernel, one program per query row, combines the splits:
M = max_s m_s, w_s = 2^(m_s - M), O = sum_s w_s acc_s / sum_s w_s l_s (the same rescaling the
online softmax does between blocks, done once between splits).

Why: rung 01 had 256 programs for 132 SMs. The split count is the power of two that gives at least
PROGRAMS_PER_SM = 16 programs per SM (``split_len``): 16 splits of 512 keys at the main size, a grid
of 256 x 16 = 4096 programs, enough to give every SM several resident programs (as many as registers
and shared memory allow) for several waves, and so many loads in flight at once. Each program reads 256 KB of
K and V; the partial results add 2 x 4096 x 4 x (128 + 2) x 4 bytes = 17 MB of traffic (1.6% of the
cache) and one more launch of a few microseconds.

Still no pipelining inside a program (num_stages = 1): its loads wait while it computes, and only
other programs' loads fill the gap.

Counters: blocks per SM and achieved occupancy up from rung 01 (warps 12% -> most of what registers
allow), dram__throughput toward peak; a second kernel decode02_combine of a few microseconds.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

BLOCK_N = 64
PROGRAMS_PER_SM = 16  # the split count is chosen for at least this many programs per SM
NUM_WARPS = 4
MIN_ROWS = 16
LOG2E = 1.4426950408889634


@triton.jit
def decode02_split(q_ptr, k_ptr, v_ptr, acc_ptr, ml_ptr, ctx, split_len, qk_scale,
                   GROUP: tl.constexpr, QUERIES: tl.constexpr, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    splits = tl.num_programs(1)
    offs_r = tl.arange(0, ROWS)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    real = offs_r < GROUP * QUERIES
    last = ctx - QUERIES + offs_r % QUERIES
    q = tl.load(q_ptr + (bh * GROUP * QUERIES + offs_r)[:, None] * HEAD_DIM + offs_d[None, :],
                mask=real[:, None], other=0.0)
    base = bh * ctx * HEAD_DIM
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, HEAD_DIM], tl.float32)
    start = split * split_len
    end = tl.minimum(start + split_len, ctx)
    for first in range(start, end, BLOCK_N):
        keys = first + offs_n
        inside = keys < end
        kv_rows = base + keys[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv_rows, mask=inside[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(inside[None, :] & (keys[None, :] <= last[:, None]), s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        # A row may see no key of a split (T > 1: a split past its token): m stays -inf, l and acc 0.
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.math.exp2(s - shift[:, None])
        alpha = tl.math.exp2(m - shift)
        l = l * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_rows, mask=inside[:, None], other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    part = (bh * splits + split) * GROUP * QUERIES + offs_r  # partial row index, (bh, split, row) order
    tl.store(acc_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=real[:, None])
    tl.store(ml_ptr + 2 * part, m, mask=real)
    tl.store(ml_ptr + 2 * part + 1, l, mask=real)


@triton.jit
def decode02_combine(acc_ptr, ml_ptr, o_ptr, splits,
                     GROUP: tl.constexpr, QUERIES: tl.constexpr, HEAD_DIM: tl.constexpr, SPLITS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # O's row: (b * H_kv + KV head) * G * T + r
    bh = row // (GROUP * QUERIES)
    r = row % (GROUP * QUERIES)
    offs_s = tl.arange(0, SPLITS)
    offs_d = tl.arange(0, HEAD_DIM)
    here = offs_s < splits
    part = (bh * splits + offs_s) * GROUP * QUERIES + r
    m = tl.load(ml_ptr + 2 * part, mask=here, other=float("-inf"))
    l = tl.load(ml_ptr + 2 * part + 1, mask=here, other=0.0)
    top = tl.max(m, axis=0)  # finite: the split holding key 0 is seen by every row
    w = tl.math.exp2(m - top)  # 0 for a split the row does not see (m = -inf)
    acc = tl.load(acc_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], mask=here[:, None], other=0.0)
    o = tl.sum(w[:, None] * acc, axis=0) / tl.sum(w * l, axis=0)
    tl.store(o_ptr + row * HEAD_DIM + offs_d, o.to(tl.bfloat16))


def split_len(context: int, programs: int, sm_count: int) -> int:
    """Keys per split: the context cut into the power of two of splits that makes ``programs``
    (B x H_kv) x splits at least PROGRAMS_PER_SM per SM, each split a whole number of key blocks."""
    splits = triton.next_power_of_2(triton.cdiv(PROGRAMS_PER_SM * sm_count, programs))
    return max(BLOCK_N, triton.cdiv(triton.cdiv(context, splits), BLOCK_N) * BLOCK_N)


def launch(ctx, inp, out):
    q, k, o = inp["q"], inp["k"], out["o"]
    batch, heads, queries, head_dim = q.shape
    kv_heads, context = k.shape[1], k.shape[2]
    group = heads // kv_heads
    length = split_len(context, batch * kv_heads, ctx.sm_count)
    splits = triton.cdiv(context, length)
    rows = batch * heads * queries
    acc = ctx.scratch("acc", rows * splits * head_dim, torch.float32)
    ml = ctx.scratch("ml", rows * splits * 2, torch.float32)
    decode02_split[(batch * kv_heads, splits)](
        q, k, inp["v"], acc, ml, context, length, LOG2E / math.sqrt(head_dim), GROUP=group, QUERIES=queries,
        HEAD_DIM=head_dim, ROWS=max(MIN_ROWS, triton.next_power_of_2(group * queries)), BLOCK_N=BLOCK_N,
        num_warps=NUM_WARPS, num_stages=1)
    decode02_combine[(rows,)](acc, ml, o, splits, GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
                              SPLITS=triton.next_power_of_2(splits), num_warps=4)
