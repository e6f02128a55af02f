"""Rung 05: the grid one wave of resident programs: the split count chosen from the SM count and the
blocks per SM each configuration fits, and only configurations that fit two to four blocks per SM.

Change against rung 04: the same paged, pipelined split kernel (the block-table entries one key block
ahead, cp.async stages), but the split count is no longer fixed at 16 per (b, KV head) for every
configuration. Each configuration of CONFIGS names the blocks per SM its shared memory and registers
allow (RESIDENT), and the launcher cuts each (b, KV head)'s context into
``RESIDENT x SMs // (B x H_kv)`` splits (at least one), so the grid is at most one wave of resident
programs: 2 splits of 4,096 keys (512 programs) where 4 blocks fit, 1 split of 8,192 keys (256
programs) where 2 fit, on the H200's 132 SMs. The grid is a function of the configuration
(``grid(meta)``), so triton.autotune times each configuration with its own grid, and the combine kernel
reads the split count of the configuration it chose. The configurations that keep one block per SM
(rung 04's 128 keys x 3 stages: 139 KB of shared memory, the one Nsight Compute saw) are left out.

Why: rung 04's split kernel, as profiled, ran one 4-warp block per SM for 31 waves: each of its 4,096
programs streamed only 512 keys (4 iterations of 128), so each paid its pipeline's fill (the first
stages' loads, ~1-2 us with nothing else on the SM to hide it) and its drain, 31 times per SM, and
the SM's 2 x 32 KB in flight were too few (DRAM 75.9% of peak). Here each SM holds two to four
programs from the first to the last microsecond, each with (stages - 1) x 2 x BLOCK_N x 256 bytes in
flight (32 KB at 64 keys and 2 stages: 128 KB per SM with 4 resident; 96 KB per program at 64 keys
and 4 stages: 192 KB per SM with 2), and the fill is paid once per program, not once per 512 keys.
The partial results shrink 8x (2 splits, not 16), so the combine kernel reads 2 partials per row.

Counters: blocks 512 or 256 (1 wave or less, not 31), achieved occupancy 12-25% of the warp slots
(not 6.2%), dram__throughput up from 75.9% of peak toward rung 02's 85.9% and above; the combine kernel
shorter (an eighth of the partials).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

#: The configurations tried, each with the blocks per SM it fits (RESIDENT). Compiled for sm_90 with
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
def decode05_split(q_ptr, k_ptr, v_ptr, table_ptr, acc_ptr, ml_ptr, ctx, programs, pages_per_seq, kv_heads,
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


@triton.jit
def decode05_combine(acc_ptr, ml_ptr, o_ptr, splits,
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

    decode05_split[grid](
        q, k_pages, inp["v_pages"], table, acc, ml, context, programs, table.shape[1], kv_heads,
        LOG2E / math.sqrt(head_dim), GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
        ROWS=max(MIN_ROWS, triton.next_power_of_2(group * queries)), PAGE=page)
    splits = splits_for(decode05_split.best_config.kwargs["RESIDENT"], programs, ctx.sm_count, context)
    decode05_combine[(rows,)](acc, ml, o, splits, GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
                              SPLITS=triton.next_power_of_2(splits), num_warps=4)
