"""Rung 07: Gluon, a TMA producer warp and two consumer warp groups in ping-pong.

Change against rung 06: the same FlashAttention-2 loop, written by hand in Gluon (Triton's
explicit-layout dialect: warpgroup_mma, mbarrier, tma, warp_specialize), with the schedule rung 06's
compiler pass does not make. A block of 128 queries has three partitions:

- a producer (1 warp, 24 registers): Q once, then K and V block by block by TMA into a ring of 2-3
  shared-memory buffers per tensor, each guarded by a "ready" mbarrier (the copy's bytes arrived) and
  an "empty" one (both consumers are done with it);
- two consumers (one warp group, 64 query rows, 240 registers each): S = Q K^T, the online softmax,
  O += P V on wgmma, then their 64 rows of O stored by TMA;
- ping-pong: a consumer issues a product only when it holds the turn (an mbarrier per consumer) and
  passes it to the other right after issuing, so the two groups' products reach the tensor cores
  alternately - while one group's product runs, the other does its softmax (FlashAttention-3's
  inter-warpgroup overlap).

Why: rung 06's two consumers run freely; whenever both are in their softmax at once the tensor cores
wait, and whenever both issue products at once one waits behind the other. Forcing alternation
makes one group's exponentials line up with the other's products. Rung 06's pass also cannot take
the causal split (two loops): here the causal mask is applied only to the diagonal block.

Counters: 12 warps a block (384 threads), HGMMA, UTMALDG, setmaxnreg (USETMAXREG) in the SASS, no
local memory; the tensor pipe's share above rung 06's 62%.
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
              PINGPONG: gl.constexpr):
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
               CAUSAL: gl.constexpr, PINGPONG: gl.constexpr):
    _consumer(0, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row, kv_first,
              n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG)


@gluon.jit
def _consumer1(desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row, kv_first,
               n_blocks, qk_scale, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
               CAUSAL: gl.constexpr, PINGPONG: gl.constexpr):
    _consumer(1, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row, kv_first,
              n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG)


@gluon.jit
def attention07_pingpong(desc_q, desc_k, desc_v, desc_o, seq, qk_scale, HEAD_DIM: gl.constexpr,
                        BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                        PINGPONG: gl.constexpr = True):
    BLOCK_M: gl.constexpr = CONSUMERS * ROWS
    gl.static_assert(not CAUSAL or BLOCK_N == BLOCK_M, "causal: only the last key block may be masked")
    block_m = gl.program_id(0)
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
                      kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG)),
        (_consumer1, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, q_row,
                      kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, PINGPONG)),
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
    attention07_pingpong[grid](*descriptors(inp, out, block_n), seq, LOG2E / math.sqrt(head_dim), HEAD_DIM=head_dim,
                              BLOCK_N=block_n, STAGES=stages, CAUSAL=bool(inp["causal"]), num_warps=4, **flags)
