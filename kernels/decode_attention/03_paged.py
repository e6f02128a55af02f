"""Rung 03: the KV cache paged, as a serving engine keeps it: every key found through a block table.

Change against rung 02: the same split-KV kernels, but K and V are read from the paged copy of the
cache (``k_pages``, ``v_pages``: a pool of pages of PAGE = 16 tokens, shape (pages, H_kv, PAGE, D),
in shuffled order) through ``block_table[b, i]``, the page of tokens i * PAGE ... (i + 1) * PAGE - 1
of sequence b (vLLM's PagedAttention layout, with a page's tokens of one KV head together as
FlashInfer's "HND" layout keeps them). For each key block the kernel first loads the table entries
of its keys (BLOCK_N / PAGE = 4 distinct pages per block: 64 keys asking for 4 neighbouring int32, one
sector), then each key's
row at page * H_kv * PAGE * D + head * PAGE * D + (key % PAGE) * D. The split math and the combine
kernel are rung 02's.

Why this is the rung a server needs: a contiguous (B, H_kv, ctx, D) cache must reserve the longest
context for every sequence and copy it to grow; pages are allocated as tokens arrive and shared
between sequences with a common prefix. The price is an indirection: a dependent load (table, then
key) and scattered 4 KB pieces (a page of one head: 16 rows of 256 bytes) instead of one 2 MB run
per head.

Prediction in short: the same bytes from DRAM (4 KB pieces are still whole 128-byte lines and DRAM
pages are 1-2 KB), a little more latency per block (the table load before the first key load), so
within a few percent of rung 02. Counters: dram__bytes unchanged, L1 requests up by the table loads,
long-scoreboard stalls slightly up.
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
def decode03_split(q_ptr, k_ptr, v_ptr, table_ptr, acc_ptr, ml_ptr, ctx, split_len, pages_per_seq, kv_heads,
                   qk_scale,
                   GROUP: tl.constexpr, QUERIES: tl.constexpr, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr,
                   PAGE: tl.constexpr, BLOCK_N: tl.constexpr):
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
    b = bh // kv_heads
    head = (bh % kv_heads) * PAGE * HEAD_DIM  # this KV head's place in a page
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, HEAD_DIM], tl.float32)
    start = split * split_len
    end = tl.minimum(start + split_len, ctx)
    for first in range(start, end, BLOCK_N):
        keys = first + offs_n
        inside = keys < end
        page = tl.load(table_ptr + b * pages_per_seq + keys // PAGE, mask=inside, other=0).to(tl.int64)
        at = page * kv_heads * PAGE * HEAD_DIM + head + (keys % PAGE) * HEAD_DIM
        kv_rows = at[:, None] + offs_d[None, :]
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
def decode03_combine(acc_ptr, ml_ptr, o_ptr, splits,
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
    q, k_pages, table, o = inp["q"], inp["k_pages"], inp["block_table"], out["o"]
    batch, heads, queries, head_dim = q.shape
    kv_heads, page = k_pages.shape[1], k_pages.shape[2]
    context = inp["k"].shape[2]  # the sequences' length (the paged copy's last page may be partly empty)
    group = heads // kv_heads
    length = split_len(context, batch * kv_heads, ctx.sm_count)
    splits = triton.cdiv(context, length)
    rows = batch * heads * queries
    acc = ctx.scratch("acc", rows * splits * head_dim, torch.float32)
    ml = ctx.scratch("ml", rows * splits * 2, torch.float32)
    decode03_split[(batch * kv_heads, splits)](
        q, k_pages, inp["v_pages"], table, acc, ml, context, length, table.shape[1], kv_heads,
        LOG2E / math.sqrt(head_dim), GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
        ROWS=max(MIN_ROWS, triton.next_power_of_2(group * queries)), PAGE=page, BLOCK_N=BLOCK_N,
        num_warps=NUM_WARPS, num_stages=1)
    decode03_combine[(rows,)](acc, ml, o, splits, GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
                              SPLITS=triton.next_power_of_2(splits), num_warps=4)
