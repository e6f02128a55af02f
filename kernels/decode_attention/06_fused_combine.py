"""Rung 06: the combine fused into the split kernel: the last program of each (b, KV head) combines.

Change against rung 05: no second kernel. Each split program stores its partial result (m, l, acc of
its G x T rows, fp32) as before, then adds 1 to a counter of its (b, KV head) (one atomic, acq_rel, GPU
scope); the program that reads splits - 1 is the last of its head, and it combines the head's splits
itself (M = max_s m_s, O = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s, the partials read with .cg
past L1) and writes O, then sets the counter back to 0 for the next call. Grid, configurations and
split rule are rung 05's.

Why: the combine kernel is a launch of its own that starts only when the last split program ends: in
rung 04 it took 6.6 us under Nsight Compute (1,024 programs that read 8.5 MB of partials) plus the gap
between the two kernels, 2-3% of the whole. With rung 05's 2 splits the partials are 1.1 MB; reading
them in the last program of each head costs a few hundred nanoseconds per head, overlapped with the
other heads' streaming, and the second launch is gone.

Counters: one kernel (decode06_split) instead of two; RED/ATOM in the SASS; the split kernel's time about
rung 05's, the total 2-3% less.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

#: Rung 05's configurations, each with the blocks per SM it fits (RESIDENT). Rung 05's kernel compiled for sm_90 with
#: Triton 3.9 (no GPU): 72-116 registers, 38-102 KB of shared memory (the figures after each); with
#: Triton 3.6's ~128 registers at 4 warps (rung 04 on the H200) registers allow 4 blocks of 4 warps and 2
#: of 8; shared memory (228 KB per SM, ~1 KB reserved per block) allows 4 blocks up to ~56 KB and 2 up
#: to ~113 KB. RESIDENT is the smaller of the two, or less where more would not change the split count.
CONFIGS = [
    triton.Config({"BLOCK_N": 32, "RESIDENT": 4}, num_warps=4, num_stages=4),   # 72 registers, 53 KB
    triton.Config({"BLOCK_N": 64, "RESIDENT": 4}, num_warps=4, num_stages=2),   # 80 registers, 38 KB
    triton.Config({"BLOCK_N": 64, "RESIDENT": 2}, num_warps=4, num_stages=4),   # 83 registers, 102 KB
    triton.Config({"BLOCK_N": 128, "RESIDENT": 2}, num_warps=4, num_stages=2),  # 116 registers, 72 KB (3 fit)
    triton.Config({"BLOCK_N": 128, "RESIDENT": 2}, num_warps=8, num_stages=2),  # 91 registers, 72 KB
]
MAX_RESIDENT = max(c.kwargs["RESIDENT"] for c in CONFIGS)
MIN_ROWS = 16
LOG2E = 1.4426950408889634


def splits_for(resident: int, programs: int, sm_count: int, context: int) -> int:
    """The split count of a configuration: as many splits per (b, KV head) as keep the grid within
    one wave of ``resident`` blocks on each of ``sm_count`` SMs, at least one, at most one per 16 keys."""
    return max(1, min(resident * sm_count // programs, triton.cdiv(context, 16)))


@triton.autotune(configs=CONFIGS, key=["ctx", "programs", "GROUP", "QUERIES", "HEAD_DIM", "PAGE"])
@triton.jit
def decode06_split(q_ptr, k_ptr, v_ptr, table_ptr, acc_ptr, ml_ptr, count_ptr, o_ptr, ctx, programs, pages_per_seq, kv_heads,
                   qk_scale,
                   GROUP: tl.constexpr, QUERIES: tl.constexpr, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr,
                   PAGE: tl.constexpr, BLOCK_N: tl.constexpr, RESIDENT: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    splits = tl.num_programs(1)
    # Keys per split: a whole number of key blocks (the last split may be shorter, or empty).
    split_len = tl.cdiv(tl.cdiv(ctx, splits), BLOCK_N) * BLOCK_N
    offs_r = tl.arange(0, ROWS)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    real = offs_r < GROUP * QUERIES
    last = ctx - QUERIES + offs_r % QUERIES
    q = tl.load(q_ptr + (bh * GROUP * QUERIES + offs_r)[:, None] * HEAD_DIM + offs_d[None, :],
                mask=real[:, None], other=0.0)
    b = bh // kv_heads
    head = (bh % kv_heads) * PAGE * HEAD_DIM  # this KV head's place in a page
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, HEAD_DIM], tl.float32)
    start = split * split_len
    end = tl.minimum(start + split_len, ctx)
    table = table_ptr + b * pages_per_seq
    # The pages of the first block; each iteration looks up the next block's, as in rung 04.
    page = tl.load(table + (start + offs_n) // PAGE, mask=start + offs_n < end, other=0)
    for first in range(start, end, BLOCK_N):
        keys = first + offs_n
        inside = keys < end
        at = page.to(tl.int64) * kv_heads * PAGE * HEAD_DIM + head + (keys % PAGE) * HEAD_DIM
        kv_rows = at[:, None] + offs_d[None, :]
        k = tl.load(k_ptr + kv_rows, mask=inside[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(inside[None, :] & (keys[None, :] <= last[:, None]), s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        # A row may see no key of a split (T > 1: a split past its token; or an empty last split):
        # m stays -inf, l and acc 0.
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.math.exp2(s - shift[:, None])
        alpha = tl.math.exp2(m - shift)
        l = l * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_rows, mask=inside[:, None], other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
        ahead = keys + BLOCK_N
        page = tl.load(table + ahead // PAGE, mask=ahead < end, other=0)
    part = (bh * splits + split) * GROUP * QUERIES + offs_r  # partial row index, (bh, split, row) order
    tl.store(acc_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=real[:, None])
    tl.store(ml_ptr + 2 * part, m, mask=real)
    tl.store(ml_ptr + 2 * part + 1, l, mask=real)
    tl.debug_barrier()  # every thread's partial stored before the release below
    arrived = tl.atomic_add(count_ptr + bh, 1, sem="acq_rel", scope="gpu")
    if arrived == splits - 1:  # the last program of this (b, KV head): combine its splits
        top = tl.full([ROWS], float("-inf"), tl.float32)
        den = tl.zeros([ROWS], tl.float32)
        num = tl.zeros([ROWS, HEAD_DIM], tl.float32)
        for s_ in range(0, splits):
            there = (bh * splits + s_) * GROUP * QUERIES + offs_r
            m_s = tl.load(ml_ptr + 2 * there, mask=real, other=float("-inf"), cache_modifier=".cg")
            l_s = tl.load(ml_ptr + 2 * there + 1, mask=real, other=0.0, cache_modifier=".cg")
            a_s = tl.load(acc_ptr + there[:, None] * HEAD_DIM + offs_d[None, :], mask=real[:, None], other=0.0,
                          cache_modifier=".cg")
            new_top = tl.maximum(top, m_s)
            base = tl.where(new_top == float("-inf"), 0.0, new_top)
            w_old = tl.math.exp2(top - base)  # 0 while no split seen yet (top = -inf)
            w_s = tl.math.exp2(m_s - base)  # 0 for a split the row does not see (m = -inf)
            den = den * w_old + l_s * w_s
            num = num * w_old[:, None] + a_s * w_s[:, None]
            top = new_top
        den = tl.where(real, den, 1.0)  # padding rows: not stored
        o = num / den[:, None]
        tl.store(o_ptr + (bh * GROUP * QUERIES + offs_r)[:, None] * HEAD_DIM + offs_d[None, :],
                 o.to(tl.bfloat16), mask=real[:, None])
        tl.atomic_xchg(count_ptr + bh, 0, sem="relaxed", scope="gpu")  # left at 0 for the next call


def launch(ctx, inp, out):
    q, k_pages, table, o = inp["q"], inp["k_pages"], inp["block_table"], out["o"]
    batch, heads, queries, head_dim = q.shape
    kv_heads, page = k_pages.shape[1], k_pages.shape[2]
    context = inp["k"].shape[2]  # the sequences' length (the paged copy's last page may be partly empty)
    group = heads // kv_heads
    programs = batch * kv_heads
    rows = batch * heads * queries
    most = splits_for(MAX_RESIDENT, programs, ctx.sm_count, context)
    acc = ctx.scratch("acc", rows * most * head_dim, torch.float32)
    ml = ctx.scratch("ml", rows * most * 2, torch.float32)

    def grid(meta):
        return (programs, splits_for(meta["RESIDENT"], programs, ctx.sm_count, context))

    count = ctx.scratch("count", programs, torch.int32, zero=True)  # each call leaves it zero
    decode06_split[grid](
        q, k_pages, inp["v_pages"], table, acc, ml, count, o, context, programs, table.shape[1], kv_heads,
        LOG2E / math.sqrt(head_dim), GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
        ROWS=max(MIN_ROWS, triton.next_power_of_2(group * queries)), PAGE=page)
