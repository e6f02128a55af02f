"""Rung 04: asynchronous loads, pipelined: the next key blocks in flight while this one is used.

Change against rung 03: the same paged split-KV kernels, launched with num_stages >= 2 instead of 1,
so Triton's software pipeliner turns the K and V loads of the key loop into asynchronous copies
into shared memory (cp.async, LDGSTS in the SASS: 16-byte copies, as the rows are 256 contiguous
bytes) issued num_stages - 1 blocks ahead, waited for only when the block is used; and the key
block, the warps and the depth chosen by triton.autotune on the first call among CONFIGS (blocks of
32-128 keys, 2-4 stages, 4 or 8 warps; the split length, a multiple of 128 keys, is fixed by the
launcher so that every configuration writes the same partial results for the same combine).

One detail makes the pipelining reach the paged loads: the block-table entries of the next key block
are loaded one iteration ahead (a loop-carried value), not in the iteration that uses them. With the
lookup in the same iteration, as in rung 03, the chain table load -> K load -> product spends one
of the stages on the table, and the pipeliner keeps only one block of K and V in shared memory
whatever num_stages says (compiled for sm_90 with Triton 3.9: 38-39 KB of shared memory at 64 keys
and 2, 3 or 4 stages; with the lookup ahead, 38, 70 and 102 KB, as for the contiguous cache).

Why: in rungs 00-03 a program issues the loads of one block and waits ~1 us for them before its
math; the only bytes in flight are those of the programs that happen to be waiting. Little's law at
4.2 TB/s and ~0.7-1 us of loaded DRAM latency asks for 3-4 MB in flight, 23-32 KB per SM; with
stages in flight, each resident program keeps (stages - 1) x 2 x BLOCK_N x 256 bytes outstanding (32 KB
at 64 keys and 2 stages, 64 KB at 3) whatever it is computing. The cost is shared memory: those
buffers and a few KB more (70 KB at 64 keys and 3 stages), which limits the programs per SM.

The 16-byte loads themselves are not new: Triton vectorised every rung's K and V loads already
(each row is 128 contiguous bf16 starting at a multiple of 256 bytes), so this rung changes when the
bytes are asked for, not how.

Counters: LDGSTS in the SASS (none in rung 03); dram__throughput up, to 85-90% of peak; long
scoreboard stalls down; shared memory per block up and blocks per SM possibly down.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

#: The configurations tried: one warpgroup over 32-128 keys, 2-4 stages (64 keys x 4 stages and
#: 128 x 3 hold 96 and 128 KB of K and V buffers, of the 227 KB of shared memory a block may have), and
#: 8 warps over 128.
CONFIGS = [
    triton.Config({"BLOCK_N": 32}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_N": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_N": 128}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK_N": 128}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_N": 128}, num_warps=8, num_stages=3),
]
SPLIT_BLOCK = 128  # a split is a whole number of the largest key block
PROGRAMS_PER_SM = 16  # the split count is chosen for at least this many programs per SM
MIN_ROWS = 16
LOG2E = 1.4426950408889634


@triton.autotune(configs=CONFIGS, key=["ctx", "split_len", "GROUP", "QUERIES", "HEAD_DIM", "PAGE"])
@triton.jit
def decode04_split(q_ptr, k_ptr, v_ptr, table_ptr, acc_ptr, ml_ptr, ctx, split_len, pages_per_seq, kv_heads,
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
    table = table_ptr + b * pages_per_seq
    # The pages of the first block; each iteration then looks up the next block's (below), so the
    # K and V addresses of an iteration never wait on a load of the same iteration.
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
        # A row may see no key of a split (T > 1: a split past its token): m stays -inf, l and acc 0.
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
def decode04_combine(acc_ptr, ml_ptr, o_ptr, splits,
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
    (B x H_kv) x splits at least PROGRAMS_PER_SM per SM, each split a whole number of the largest key block."""
    splits = triton.next_power_of_2(triton.cdiv(PROGRAMS_PER_SM * sm_count, programs))
    return max(SPLIT_BLOCK, triton.cdiv(triton.cdiv(context, splits), SPLIT_BLOCK) * SPLIT_BLOCK)


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
    decode04_split[(batch * kv_heads, splits)](
        q, k_pages, inp["v_pages"], table, acc, ml, context, length, table.shape[1], kv_heads,
        LOG2E / math.sqrt(head_dim), GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
        ROWS=max(MIN_ROWS, triton.next_power_of_2(group * queries)), PAGE=page)
    decode04_combine[(rows,)](acc, ml, o, splits, GROUP=group, QUERIES=queries, HEAD_DIM=head_dim,
                              SPLITS=triton.next_power_of_2(splits), num_warps=4)
