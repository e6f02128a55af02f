"""Rung 08: softmax of block j overlapped with P V of block j - 1 inside each consumer warp group.

Change against rung 07 (same Gluon kernel: a TMA producer warp, two consumer warp groups of 64 query
rows, ping-pong between them): each consumer's loop is software-pipelined by one block, the third
step of FlashAttention-3. Iteration j

1. issues S_j = Q K_j^T (asynchronous wgmma),
2. rescales the accumulator by the previous block's alpha and issues O += P_{j-1} V_{j-1},
3. waits only for S_j (``warpgroup_mma_wait(1)``: the P V product may still run),
4. runs the online softmax of S_j: max, exponentials, sum - while P_{j-1} V_{j-1} is in the tensor cores,
5. waits for the P V product and converts P_j to bf16 for the next iteration.

Block 0's scores and softmax come before the loop and the last P V after it. In rung 07 a consumer's
exponentials and its own products strictly alternate, so each warp group leaves the tensor cores
idle while it does its softmax unless the other group fills them; here a group has a product in
flight during its own softmax too.

Why: with one group's softmax hidden under the other's products (rung 07) the tensor cores still wait
whenever both groups are in their softmax at once; the overlap within a group removes most of those
moments, at the cost of one more 64 x 128 block of scores in registers per thread (S_j while P_{j-1}
is still an operand).

Where it may not pay: ptxas schedules the instructions after the two waits itself; if it moves the
second wait above the exponentials (to interleave the bf16 conversion or the rescale with them), the
overlap is lost in the SASS even though the PTX has it. The rescale is placed before the P V issue
for that reason.

Counters: HGMMA and WARPGROUP.DEPBAR.LE gsb0, 0x1 in the SASS; the tensor pipe's share above rung 07's.
"""

from __future__ import annotations

import math

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

LOG2E = 1.4426950408889634
_ROWS, _CONSUMERS = 64, 2
ROWS = gl.constexpr(_ROWS)  # query rows per consumer warp group: wgmma's M
CONSUMERS = gl.constexpr(_CONSUMERS)
#: Per head dimension: (BLOCK_N, K/V ring stages).
CONFIG = {128: (128, 2), 64: (128, 3)}


@gluon.jit
def _producer(desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty,
              q_row, kv_first, n_blocks, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """One warp: both consumers' Q rows once, then K and V block by block into a ring of STAGES buffers;
    a buffer is refilled once both consumers have released it (its empty barrier counts two arrivals)."""
    mbarrier.expect(q_bar, CONSUMERS * desc_q.block_type.nbytes)
    for c in gl.static_range(CONSUMERS):
        tma.async_copy_global_to_shared(desc_q, [q_row + c * ROWS, 0], q_bar, q_smem.index(c))
    for j in range(n_blocks):
        stage = j % STAGES
        phase = (j // STAGES) & 1
        mbarrier.wait(k_empty.index(stage), phase ^ 1)  # the first pass through the ring does not wait
        mbarrier.expect(k_ready.index(stage), desc_k.block_type.nbytes)
        tma.async_copy_global_to_shared(desc_k, [kv_first + j * BLOCK_N, 0], k_ready.index(stage),
                                        k_smem.index(stage))
        mbarrier.wait(v_empty.index(stage), phase ^ 1)
        mbarrier.expect(v_ready.index(stage), desc_v.block_type.nbytes)
        tma.async_copy_global_to_shared(desc_v, [kv_first + j * BLOCK_N, 0], v_ready.index(stage),
                                        v_smem.index(stage))


@gluon.jit
def _scores(q, k_tile, s_layout: gl.constexpr, BLOCK_N: gl.constexpr):
    """S = Q K^T on the tensor cores, asynchronously: returns the pending accumulator."""
    zero = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    return warpgroup_mma(q, k_tile.permute((1, 0)), zero, use_acc=False, is_async=True)


@gluon.jit
def _softmax(s, m, l, qk_scale, first_key, first_row, diagonal, CAUSAL: gl.constexpr, s_layout: gl.constexpr,
             BLOCK_N: gl.constexpr):
    """Online softmax of one block of scores (FlashAttention-2's arithmetic, exp2 with the scale folded
    in): P in fp32, the new running max and sum, and alpha, the rescale of what came before. The
    causal mask only on the diagonal block."""
    if CAUSAL and diagonal:
        rows = first_row + gl.arange(0, ROWS, gl.SliceLayout(1, s_layout))
        keys = first_key + gl.arange(0, BLOCK_N, gl.SliceLayout(0, s_layout))
        s = gl.where(gl.expand_dims(rows, 1) >= gl.expand_dims(keys, 0), s, float("-inf"))
    m_new = gl.maximum(m, gl.max(s, axis=1) * qk_scale)
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
    alpha = gl.exp2(m - m_new)
    l = l * alpha + gl.sum(p, axis=1)
    return p, m_new, l, alpha


@gluon.jit
def _consumer(me, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn,
              q_row, kv_first, n_blocks, qk_scale,
              HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
              PINGPONG: gl.constexpr, OVERLAP: gl.constexpr):
    """Consumer warp group ``me``: its 64 query rows against every key block. With PINGPONG it issues
    its products only when holding the turn (turn[me] completed), and passes the turn on right after
    issuing them, so the two groups' products reach the tensor cores alternately."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
    nxt: gl.constexpr = (me + 1) % CONSUMERS
    first_row = q_row + me * ROWS - kv_first  # this group's first query, counted within the head
    q = q_smem.index(me)
    m = gl.full([ROWS], float("-inf"), gl.float32, row_layout)
    l = gl.zeros([ROWS], gl.float32, row_layout)
    acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, o_layout)
    mbarrier.wait(q_bar, 0)
    if OVERLAP:
        if PINGPONG:
            mbarrier.wait(turn.index(me), 0)
        mbarrier.wait(k_ready.index(0), 0)
        s = _scores(q, k_smem.index(0), s_layout, BLOCK_N)
        if PINGPONG:
            mbarrier.arrive(turn.index(nxt), count=1)
        s = warpgroup_mma_wait(0, deps=[s])
        mbarrier.arrive(k_empty.index(0), count=1)
        p, m, l, alpha = _softmax(s, m, l, qk_scale, 0, first_row, n_blocks == 1, CAUSAL, s_layout, BLOCK_N)
        p = gl.convert_layout(p.to(gl.bfloat16), p_layout)
        for j in range(1, n_blocks):
            stage = j % STAGES
            prev = (j - 1) % STAGES
            if PINGPONG:
                mbarrier.wait(turn.index(me), j & 1)
            mbarrier.wait(k_ready.index(stage), (j // STAGES) & 1)
            s = _scores(q, k_smem.index(stage), s_layout, BLOCK_N)
            # The rescale by the previous block's alpha goes here, before the P V issue: placed after
            # the wait below, the compiler pulls that wait up to interleave it with the exponentials.
            acc = acc * gl.expand_dims(gl.convert_layout(alpha, o_rows), 1)
            mbarrier.wait(v_ready.index(prev), ((j - 1) // STAGES) & 1)
            acc = warpgroup_mma(p, v_smem.index(prev), acc, is_async=True)
            if PINGPONG:
                mbarrier.arrive(turn.index(nxt), count=1)
            s = warpgroup_mma_wait(1, deps=[s])  # S_j done; P_{j-1} V_{j-1} may still run
            mbarrier.arrive(k_empty.index(stage), count=1)
            p_next, m, l, alpha = _softmax(s, m, l, qk_scale, j * BLOCK_N, first_row, j == n_blocks - 1, CAUSAL,
                                           s_layout, BLOCK_N)
            acc, p = warpgroup_mma_wait(0, deps=[acc, p])
            mbarrier.arrive(v_empty.index(prev), count=1)
            p = gl.convert_layout(p_next.to(gl.bfloat16), p_layout)
        acc = acc * gl.expand_dims(gl.convert_layout(alpha, o_rows), 1)
        last = (n_blocks - 1) % STAGES
        mbarrier.wait(v_ready.index(last), ((n_blocks - 1) // STAGES) & 1)
        acc = warpgroup_mma(p, v_smem.index(last), acc, is_async=True)
        acc, p = warpgroup_mma_wait(0, deps=[acc, p])
        mbarrier.arrive(v_empty.index(last), count=1)
    else:  # rung 07's loop
        for j in range(n_blocks):
            stage = j % STAGES
            phase = (j // STAGES) & 1
            if PINGPONG:
                mbarrier.wait(turn.index(me), 0)
            mbarrier.wait(k_ready.index(stage), phase)
            s = _scores(q, k_smem.index(stage), s_layout, BLOCK_N)
            if PINGPONG:
                mbarrier.arrive(turn.index(nxt), count=1)
            s = warpgroup_mma_wait(0, deps=[s])
            mbarrier.arrive(k_empty.index(stage), count=1)
            p, m, l, alpha = _softmax(s, m, l, qk_scale, j * BLOCK_N, first_row, j == n_blocks - 1, CAUSAL,
                                      s_layout, BLOCK_N)
            acc = acc * gl.expand_dims(gl.convert_layout(alpha, o_rows), 1)
            p = gl.convert_layout(p.to(gl.bfloat16), p_layout)
            if PINGPONG:
                mbarrier.wait(turn.index(me), 1)
            mbarrier.wait(v_ready.index(stage), phase)
            acc = warpgroup_mma(p, v_smem.index(stage), acc, is_async=True)
            if PINGPONG:
                mbarrier.arrive(turn.index(nxt), count=1)
            acc, p = warpgroup_mma_wait(0, deps=[acc, p])
            mbarrier.arrive(v_empty.index(stage), count=1)
    o = (acc / gl.expand_dims(gl.convert_layout(l, o_rows), 1)).to(gl.bfloat16)
    q.store(o)  # this group's Q buffer is free now: it stages O for the TMA store
    fence_async_shared()
    tma.async_copy_shared_to_global(desc_o, [q_row + me * ROWS, 0], q)
    tma.store_wait(0)


@gluon.jit
def _consumer0(desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row, kv_first,
               n_blocks, qk_scale, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
               CAUSAL: gl.constexpr, PINGPONG: gl.constexpr, OVERLAP: gl.constexpr):
    _consumer(0, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row, kv_first,
              n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG, OVERLAP)


@gluon.jit
def _consumer1(desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row, kv_first,
               n_blocks, qk_scale, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
               CAUSAL: gl.constexpr, PINGPONG: gl.constexpr, OVERLAP: gl.constexpr):
    _consumer(1, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row, kv_first,
              n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG, OVERLAP)


@gluon.jit
def attention08_overlap(desc_q, desc_k, desc_v, desc_o, seq, qk_scale, HEAD_DIM: gl.constexpr,
                        BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                        PINGPONG: gl.constexpr = True, OVERLAP: gl.constexpr = True, REVERSE: gl.constexpr = False):
    BLOCK_M: gl.constexpr = CONSUMERS * ROWS
    gl.static_assert(not CAUSAL or BLOCK_N == BLOCK_M, "causal: only the last key block may be masked")
    block_m = gl.program_id(0)
    if REVERSE:  # the longest causal query tiles first, the short ones in the last wave
        block_m = gl.num_programs(0) - 1 - block_m
    kv_first = gl.program_id(1) * seq  # first row of this (batch, head) in the (B * H * S, D) views
    q_row = kv_first + block_m * BLOCK_M
    if CAUSAL:
        n_blocks = block_m + 1  # rung 04's skipping: key blocks up to the diagonal one
    else:
        n_blocks = seq // BLOCK_N

    q_smem = gl.allocate_shared_memory(gl.bfloat16, [CONSUMERS, ROWS, HEAD_DIM], desc_q.layout)
    k_smem = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, HEAD_DIM], desc_k.layout)
    v_smem = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, HEAD_DIM], desc_v.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=CONSUMERS)
        mbarrier.init(v_empty.index(i), count=CONSUMERS)
    for i in gl.static_range(CONSUMERS):
        mbarrier.init(turn.index(i), count=1)
    if PINGPONG:
        mbarrier.arrive(turn.index(0), count=1)  # group 0 holds the first turn

    # The default partition (this kernel's 4 warps) is consumer 0; the workers are consumer 1 (4 warps,
    # 240 registers) and the producer (1 warp, 24 registers).
    gl.warp_specialize([
        (_consumer0, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row,
                      kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG, OVERLAP)),
        (_consumer1, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row,
                      kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG, OVERLAP)),
        (_producer, (desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty,
                     q_row, kv_first, n_blocks, BLOCK_N, STAGES)),
    ], [4, 1], [240, 24])


def descriptors(inp, out, block_n):
    """Host-built TMA descriptors over the (B * H * S, D) views: 64-row tiles of Q and O, BLOCK_N-row
    tiles of K and V, each in the NVMMA shared layout wgmma reads."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    head_dim = inp["q"].shape[-1]
    q_layout = gl.NVMMASharedLayout.get_default_for([_ROWS, head_dim], gl.bfloat16)
    kv_layout = gl.NVMMASharedLayout.get_default_for([block_n, head_dim], gl.bfloat16)
    q, k, v, o = (t.view(-1, head_dim) for t in (inp["q"], inp["k"], inp["v"], out["o"]))
    return (TensorDescriptor.from_tensor(q, [_ROWS, head_dim], q_layout),
            TensorDescriptor.from_tensor(k, [block_n, head_dim], kv_layout),
            TensorDescriptor.from_tensor(v, [block_n, head_dim], kv_layout),
            TensorDescriptor.from_tensor(o, [_ROWS, head_dim], q_layout))


def launch(ctx, inp, out, **flags):
    batch, heads, seq, head_dim = inp["q"].shape
    block_n, stages = flags.pop("config", CONFIG[head_dim])
    block_m = _CONSUMERS * _ROWS
    if seq % block_m or seq % block_n:
        raise ValueError(f"sequence length {seq} is not a multiple of the {block_m}-query and {block_n}-key tiles")
    grid = (seq // block_m, batch * heads)
    attention08_overlap[grid](*descriptors(inp, out, block_n), seq, LOG2E / math.sqrt(head_dim), HEAD_DIM=head_dim,
                              BLOCK_N=block_n, STAGES=stages, CAUSAL=bool(inp["causal"]), num_warps=4, **flags)
