"""Rung 09: rung 08's kernel with a third consumer warp group, the configuration chosen per shape by timing.

Change against rung 08 (a TMA producer warp, consumer warp groups of 64 query rows in ping-pong, each
with its softmax overlapped with its own P V product): the number of consumer groups is a parameter,
2 or 3, so a block holds 128 or 192 query rows; and the launcher chooses among a few candidate
configurations (consumer groups, key block, K/V ring depth, causal tile order, and whether a quarter
of the exponentials is computed by a polynomial on the FMA pipe instead of the special-function unit,
FlashAttention-4's emulation) by timing each on the first call for a shape, as ``triton.autotune``
does, and keeps the fastest for that shape.

Why: at head dimension 64 a block of keys costs each group half the tensor-core time it costs at 128,
and the same softmax (one exponential per score on the 16-per-clock special-function unit, plus the
max, the sum and the bf16 conversion). With two groups the tensor cores idle whenever a group's
softmax outlasts the other group's two products; with three, two groups' softmaxes run under the
third one's products. FlashAttention-3 uses 192-row blocks (three consumer warp groups) at head
dimension 64 for the same reason: hopper/tile_size.h, tile_size_fwd_sm90, 192 x 128 causal and
192 x 192 non-causal (P through shared memory there; 192 keys do not divide 4096 and would not fit
in 160 registers as a register operand). Registers set the limit: four warp groups of
128 threads share the SM's 64 K registers, so the consumers get 160 each (producer 24) instead of
240; at D64 one group's scores (64 x 128 fp32), P (bf16) and accumulator (64 x 64 fp32) fit in that.
At D128 the accumulator alone doubles, so D128 keeps rung 08's two groups.

A sequence of 4096 is not a multiple of 192: the last block of a head has one group's rows; the
others find their rows past the end, compute nothing, and only take part in the barriers (they
release each K/V buffer after it arrives and pass the ping-pong turn on). Causal, a 192-row block's
three groups reach the diagonal in different key blocks: each stops at its own, masks only that one,
and releases the buffers of the blocks it skips in the same way.

The choice (stderr, one line per shape): each candidate is launched once (a candidate that fails to
compile or launch is dropped), its output compared with the first candidate's (rung 08's own
configuration, the reference: a candidate differing by more than 1e-2 relative is dropped), then all
are timed in 7 interleaved rounds of 5 launches with CUDA events; the lowest median wins.
"""

from __future__ import annotations

import math
import os
import sys

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

LOG2E = 1.4426950408889634
_ROWS = 64
ROWS = gl.constexpr(_ROWS)  # query rows per consumer warp group: wgmma's M
#: Registers per thread (setmaxnreg) of a consumer group and of the producer warp's group, by the
#: number of consumer groups: all groups' threads share 65,536 registers.
REGISTERS = {2: (240, 24), 3: (160, 24)}
#: Candidates per (head dim, causal): (consumer groups, BLOCK_N, K/V stages, reversed causal order,
#: a quarter of the exponentials by polynomial). The first is rung 08's configuration; it is also the
#: reference the others are compared with.
CANDIDATES = {
    (128, False): [(2, 128, 2, False, False)],
    (128, True): [(2, 128, 2, False, False)],
    (64, False): [(2, 128, 3, False, False), (3, 128, 2, False, False), (3, 128, 3, False, False),
                  (3, 128, 2, False, True)],
    (64, True): [(2, 128, 3, True, False), (3, 128, 2, True, False), (3, 128, 2, True, True)],
}
#: exp2 of four fp32 values (pack=4): three on the special-function unit (MUFU.EX2), the fourth on the
#: FMA pipe (FlashAttention-4's emulation): x clamped to -125 (so -inf gives 2^-125, nothing next to
#: a row sum >= 1), split as j + f with j = round(x) by adding and subtracting 1.5 * 2^23 and f in
#: [-0.5, 0.5], 2^f by a cubic fitted with 2^0 = 1 exactly (relative error 1.1e-4, under bf16's 3.9e-3
#: rounding of P), and j added to the exponent bits (the low bits of x + 1.5 * 2^23, shifted by 23).
_EXP2_MIXED = gl.constexpr("""{
.reg .f32 x, t, j, f, p;
.reg .b32 tb, pb;
ex2.approx.ftz.f32 $0, $4;
ex2.approx.ftz.f32 $1, $5;
ex2.approx.ftz.f32 $2, $6;
max.f32 x, $7, 0fC2FA0000;
add.rn.f32 t, x, 0f4B400000;
sub.rn.f32 j, t, 0f4B400000;
sub.rn.f32 f, x, j;
fma.rn.f32 p, f, 0f3D5F9CBA, 0f3E7807F4;
fma.rn.f32 p, p, f, 0f3F31809B;
fma.rn.f32 p, p, f, 0f3F800000;
mov.b32 tb, t;
mov.b32 pb, p;
shl.b32 tb, tb, 23;
add.s32 pb, pb, tb;
mov.b32 $3, pb;
}""")
ROUNDS, LAUNCHES = 7, 5
#: An environment variable that limits the candidates to those with the given numbers of consumer
#: groups (e.g. "2": rung 08's schedule only), for a GPU where the three-group kernel misbehaves.
GROUPS_VARIABLE = "ATTENTION09_GROUPS"


@gluon.jit
def _producer(desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty,
              first, seq, kv_first, n_blocks, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr):
    """One warp: every consumer's Q rows once, then K and V block by block into a ring of STAGES buffers;
    a buffer is refilled once every consumer has released it (its empty barrier counts CONSUMERS arrivals)."""
    mbarrier.expect(q_bar, CONSUMERS * desc_q.block_type.nbytes)
    for c in gl.static_range(CONSUMERS):
        tma.async_copy_global_to_shared(desc_q, [_q_row(first, seq, c, kv_first), 0], q_bar, q_smem.index(c))
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
def _q_row(first, seq, c, kv_first):
    """Row (in the (B * H * S, D) view) of group c's Q tile: its own rows, or for a group whose rows are
    past the end of the head (the last 192-row block) the head's last 64 rows, loaded and never used."""
    return kv_first + gl.minimum(first + c * ROWS, seq - ROWS)


@gluon.jit
def _scores(q, k_tile, s_layout: gl.constexpr, BLOCK_N: gl.constexpr):
    """S = Q K^T on the tensor cores, asynchronously: returns the pending accumulator."""
    zero = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    return warpgroup_mma(q, k_tile.permute((1, 0)), zero, use_acc=False, is_async=True)


@gluon.jit
def _exp2(x, EMULATE: gl.constexpr):
    """2^x: on the special-function unit, or with EMULATE a quarter of it by polynomial (_EXP2_MIXED)."""
    if EMULATE:
        return gl.inline_asm_elementwise(_EXP2_MIXED, "=f,=f,=f,=f,f,f,f,f", [x], dtype=gl.float32, is_pure=True,
                                         pack=4)
    else:
        return gl.exp2(x)


@gluon.jit
def _softmax(s, m, l, qk_scale, first_key, first_row, diagonal, CAUSAL: gl.constexpr, s_layout: gl.constexpr,
             BLOCK_N: gl.constexpr, EMULATE: gl.constexpr):
    """Online softmax of one block of scores (FlashAttention-2's arithmetic, exp2 with the scale folded
    in): P in fp32, the new running max and sum, and alpha, the rescale of what came before. The
    causal mask only on the diagonal block."""
    if CAUSAL and diagonal:
        rows = first_row + gl.arange(0, ROWS, gl.SliceLayout(1, s_layout))
        keys = first_key + gl.arange(0, BLOCK_N, gl.SliceLayout(0, s_layout))
        s = gl.where(gl.expand_dims(rows, 1) >= gl.expand_dims(keys, 0), s, float("-inf"))
    m_new = gl.maximum(m, gl.max(s, axis=1) * qk_scale)
    p = _exp2(s * qk_scale - gl.expand_dims(m_new, 1), EMULATE)
    alpha = gl.exp2(m - m_new)
    l = l * alpha + gl.sum(p, axis=1)
    return p, m_new, l, alpha


@gluon.jit
def _step(j, acc, p, m, l, alpha, q, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, turn, me, nxt, first_row,
          qk_scale, diagonal, MASK: gl.constexpr, s_layout: gl.constexpr, o_rows: gl.constexpr, p_layout: gl.constexpr,
          BLOCK_N: gl.constexpr, STAGES: gl.constexpr, EMULATE: gl.constexpr):
    """One pipelined block (rung 08's loop body): issue S_j, rescale the accumulator and issue
    P_{j-1} V_{j-1}, pass the turn, run the softmax of S_j (masked if MASK and diagonal) while P_{j-1} V_{j-1} runs."""
    stage = j % STAGES
    prev = (j - 1) % STAGES
    mbarrier.wait(turn.index(me), j & 1)
    mbarrier.wait(k_ready.index(stage), (j // STAGES) & 1)
    s = _scores(q, k_smem.index(stage), s_layout, BLOCK_N)
    # The rescale by the previous block's alpha goes here, before the P V issue: placed after the wait
    # below, the compiler pulls that wait up to interleave it with the exponentials.
    acc = acc * gl.expand_dims(gl.convert_layout(alpha, o_rows), 1)
    mbarrier.wait(v_ready.index(prev), ((j - 1) // STAGES) & 1)
    acc = warpgroup_mma(p, v_smem.index(prev), acc, is_async=True)
    mbarrier.arrive(turn.index(nxt), count=1)
    s = warpgroup_mma_wait(1, deps=[s])  # S_j done; P_{j-1} V_{j-1} may still run
    mbarrier.arrive(k_empty.index(stage), count=1)
    p_next, m, l, alpha = _softmax(s, m, l, qk_scale, j * BLOCK_N, first_row, diagonal, MASK, s_layout, BLOCK_N,
                                   EMULATE)
    acc, p = warpgroup_mma_wait(0, deps=[acc, p])
    mbarrier.arrive(v_empty.index(prev), count=1)
    p = gl.convert_layout(p_next.to(gl.bfloat16), p_layout)
    return acc, p, m, l, alpha


@gluon.jit
def _consumer(me, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn,
              first, seq, kv_first, n_blocks, qk_scale,
              HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
              CONSUMERS: gl.constexpr, EMULATE: gl.constexpr):
    """Consumer warp group ``me``: its 64 query rows against the key blocks they need (rung 08's
    pipelined loop), its products issued only while it holds the turn (turn[me] completed), the turn
    passed to the next group right after issuing. Then, for the key blocks the producer loads for
    other groups only (causal: past this group's diagonal; or every block, for a group whose rows are
    past the end), the same turn and buffer handshakes without the work."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
    nxt: gl.constexpr = (me + 1) % CONSUMERS
    first_row = first + me * ROWS  # this group's first query, counted within the head
    if CAUSAL:
        n_need = first_row // BLOCK_N + 1  # up to the key block holding this group's diagonal
    else:
        n_need = n_blocks
    n_mine = gl.where(first_row < seq, n_need, 0)  # none for a group whose rows are past the end
    q = q_smem.index(me)
    mbarrier.wait(q_bar, 0)
    if n_mine > 0:
        m = gl.full([ROWS], float("-inf"), gl.float32, row_layout)
        l = gl.zeros([ROWS], gl.float32, row_layout)
        acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, o_layout)
        mbarrier.wait(turn.index(me), 0)
        mbarrier.wait(k_ready.index(0), 0)
        s = _scores(q, k_smem.index(0), s_layout, BLOCK_N)
        mbarrier.arrive(turn.index(nxt), count=1)
        s = warpgroup_mma_wait(0, deps=[s])
        mbarrier.arrive(k_empty.index(0), count=1)
        p, m, l, alpha = _softmax(s, m, l, qk_scale, 0, first_row, n_mine == 1, CAUSAL, s_layout, BLOCK_N, EMULATE)
        p = gl.convert_layout(p.to(gl.bfloat16), p_layout)
        # With three groups (160 registers a thread) and causal, the loop runs unmasked and the diagonal
        # block (the last) comes after it, peeled: with the mask inside, the loop spilled. With two
        # groups the loop is rung 08's, the mask applied in it to the last block.
        PEEL: gl.constexpr = CAUSAL and CONSUMERS == 3
        for j in range(1, n_mine - 1 if PEEL else n_mine):
            acc, p, m, l, alpha = _step(j, acc, p, m, l, alpha, q, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty,
                                        turn, me, nxt, first_row, qk_scale, j == n_mine - 1, CAUSAL and not PEEL,
                                        s_layout, o_rows, p_layout, BLOCK_N, STAGES, EMULATE)
        if PEEL and n_mine > 1:
            acc, p, m, l, alpha = _step(n_mine - 1, acc, p, m, l, alpha, q, k_smem, v_smem, k_ready, v_ready, k_empty,
                                        v_empty, turn, me, nxt, first_row, qk_scale, True, True, s_layout, o_rows,
                                        p_layout, BLOCK_N, STAGES, EMULATE)
        acc = acc * gl.expand_dims(gl.convert_layout(alpha, o_rows), 1)
        last = (n_mine - 1) % STAGES
        mbarrier.wait(v_ready.index(last), ((n_mine - 1) // STAGES) & 1)
        acc = warpgroup_mma(p, v_smem.index(last), acc, is_async=True)
        acc, p = warpgroup_mma_wait(0, deps=[acc, p])
        mbarrier.arrive(v_empty.index(last), count=1)
        o = (acc / gl.expand_dims(gl.convert_layout(l, o_rows), 1)).to(gl.bfloat16)
        q.store(o)  # this group's Q buffer is free now: it stages O for the TMA store
        fence_async_shared()
        tma.async_copy_shared_to_global(desc_o, [kv_first + first_row, 0], q)
        tma.store_wait(0)
    # Blocks loaded for the other groups only: take and pass the turn as a working group would, and
    # release each buffer once it has arrived (not before: an early arrival would count towards the
    # buffer's previous use).
    for j in range(n_mine, n_blocks):
        stage = j % STAGES
        phase = (j // STAGES) & 1
        mbarrier.wait(turn.index(me), j & 1)
        mbarrier.arrive(turn.index(nxt), count=1)
        mbarrier.wait(k_ready.index(stage), phase)
        mbarrier.arrive(k_empty.index(stage), count=1)
        mbarrier.wait(v_ready.index(stage), phase)
        mbarrier.arrive(v_empty.index(stage), count=1)


@gluon.jit
def _consumer0(desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq, kv_first,
               n_blocks, qk_scale, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
               CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr, EMULATE: gl.constexpr):
    _consumer(0, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq, kv_first,
              n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)


@gluon.jit
def _consumer1(desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq, kv_first,
               n_blocks, qk_scale, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
               CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr, EMULATE: gl.constexpr):
    _consumer(1, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq, kv_first,
              n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)


@gluon.jit
def _consumer2(desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq, kv_first,
               n_blocks, qk_scale, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
               CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr, EMULATE: gl.constexpr):
    _consumer(2, desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq, kv_first,
              n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)


@gluon.jit
def attention09_tuned(desc_q, desc_k, desc_v, desc_o, seq, qk_scale, HEAD_DIM: gl.constexpr,
                      BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr,
                      REVERSE: gl.constexpr, EMULATE: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                      PRODUCER_REGS: gl.constexpr):
    BLOCK_M: gl.constexpr = CONSUMERS * ROWS
    gl.static_assert(BLOCK_N % ROWS == 0, "each group's diagonal must lie in one key block")
    gl.static_assert(CONSUMERS == 2 or CONSUMERS == 3, "two or three consumer groups")
    block_m = gl.program_id(0)
    if REVERSE:  # the longest causal query tiles first, the short ones in the last wave
        block_m = gl.num_programs(0) - 1 - block_m
    kv_first = gl.program_id(1) * seq  # first row of this (batch, head) in the (B * H * S, D) views
    first = block_m * BLOCK_M  # this block's first query within the head
    if CAUSAL:  # key blocks up to the one holding the last (in-range) group's diagonal
        n_blocks = (gl.minimum(first + BLOCK_M, seq) - 1) // BLOCK_N + 1
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
    mbarrier.arrive(turn.index(0), count=1)  # group 0 holds the first turn

    # The default partition (this kernel's 4 warps) is consumer 0; the workers are the other consumers
    # (4 warps each) and the producer (1 warp).
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_consumer0, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq,
                          kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)),
            (_consumer1, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq,
                          kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)),
            (_producer, (desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty,
                         first, seq, kv_first, n_blocks, BLOCK_N, STAGES, CONSUMERS)),
        ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])
    else:
        gl.warp_specialize([
            (_consumer0, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq,
                          kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)),
            (_consumer1, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq,
                          kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)),
            (_consumer2, (desc_o, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty, turn, first, seq,
                          kv_first, n_blocks, qk_scale, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, CONSUMERS, EMULATE)),
            (_producer, (desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_bar, k_ready, v_ready, k_empty, v_empty,
                         first, seq, kv_first, n_blocks, BLOCK_N, STAGES, CONSUMERS)),
        ], [4, 4, 1], [CONSUMER_REGS, CONSUMER_REGS, PRODUCER_REGS])


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


def constexprs(inp, config) -> dict:
    """The kernel's compile-time arguments for ``config`` at these inputs."""
    consumers, block_n, stages, reverse, emulate = config
    consumer_regs, producer_regs = REGISTERS[consumers]
    return dict(HEAD_DIM=inp["q"].shape[-1], BLOCK_N=block_n, STAGES=stages, CAUSAL=bool(inp["causal"]),
                CONSUMERS=consumers, REVERSE=reverse, EMULATE=emulate, CONSUMER_REGS=consumer_regs,
                PRODUCER_REGS=producer_regs)


def kernel_args(inp, out, config):
    """(grid, positional arguments, constexprs) of one launch with ``config``."""
    consumers, block_n = config[0], config[1]
    batch, heads, seq, head_dim = inp["q"].shape
    if seq % _ROWS or seq % block_n:
        raise ValueError(f"sequence length {seq} is not a multiple of the {_ROWS}-query and {block_n}-key tiles")
    block_m = consumers * _ROWS
    grid = ((seq + block_m - 1) // block_m, batch * heads)
    return grid, (*descriptors(inp, out, block_n), seq, LOG2E / math.sqrt(head_dim)), constexprs(inp, config)


def run(inp, out, config):
    grid, args, consts = kernel_args(inp, out, config)
    return _kernel[grid](*args, num_warps=4, **consts)


def describe(config) -> str:
    consumers, block_n, stages, reverse, emulate = config
    return (f"{consumers * _ROWS}x{block_n} tiles, {consumers} consumer groups, {stages} stages"
            + (", reversed" if reverse else "") + (", 1/4 exp2 by polynomial" if emulate else ""))


class _Tuned:
    """The kernel with the configuration chosen per shape. ``fn`` and ``best_config`` are what the
    ladder's SASS reader looks for (as on a ``triton.autotune`` wrapper): the variant compiled for the
    configuration last chosen."""

    def __init__(self, fn):
        self.fn = fn
        self.configs = [c for cs in CANDIDATES.values() for c in cs]
        self.best_config = None
        self.chosen: dict[tuple, tuple] = {}


def _choose(inp, out) -> tuple:
    """The fastest candidate for this shape: see the module's docstring."""
    import torch

    batch, heads, seq, head_dim = inp["q"].shape
    key = (batch, heads, seq, head_dim, bool(inp["causal"]))
    if key in attention09_tuned.chosen:
        return attention09_tuned.chosen[key]
    candidates = CANDIDATES.get((head_dim, bool(inp["causal"])), CANDIDATES[(64, bool(inp["causal"]))])
    alive, reference, notes = [], None, []
    if os.environ.get(GROUPS_VARIABLE):
        groups = {int(g) for g in os.environ[GROUPS_VARIABLE].split(",") if g.strip().isdigit()}
        candidates = [c for c in candidates if c[0] in groups] or candidates[:1]
        notes.append(f"{GROUPS_VARIABLE}={os.environ[GROUPS_VARIABLE]}: {len(candidates)} candidates")
    for config in candidates:
        try:
            run(inp, out, config)
            torch.cuda.synchronize()
        except Exception as err:  # noqa: BLE001 - a candidate that cannot run is dropped, with its reason
            notes.append(f"{describe(config)}: dropped, {type(err).__name__}: {str(err).splitlines()[0][:160]}")
            continue
        o = out["o"].float()
        if reference is None:
            reference = o.clone()
        else:
            rel = float((o - reference).norm() / reference.norm())
            if not math.isfinite(rel) or rel > 1e-2:
                notes.append(f"{describe(config)}: dropped, differs from the first candidate by {rel:.3g}")
                continue
        alive.append(config)
    if not alive:
        raise RuntimeError("no candidate configuration ran: " + "; ".join(notes))
    times = {c: [] for c in alive}
    if len(alive) > 1:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(ROUNDS):
            for config in alive:
                start.record()
                for _ in range(LAUNCHES):
                    run(inp, out, config)
                end.record()
                end.synchronize()
                times[config].append(start.elapsed_time(end) / LAUNCHES)
    median = {c: sorted(t)[len(t) // 2] if t else 0.0 for c, t in times.items()}
    best = min(alive, key=lambda c: median[c])  # ties: the earlier candidate (min keeps the first)
    shape = f"B{batch} H{heads} S{seq} D{head_dim}{' causal' if inp['causal'] else ''}"
    timed = ", ".join(f"{describe(c)} {median[c] * 1e3:.1f} us" for c in alive) if len(alive) > 1 else "the only one"
    print(f"[attention 09] {shape}: chose {describe(best)} ({timed}{'; ' if notes else ''}{'; '.join(notes)})",
          file=sys.stderr, flush=True)
    attention09_tuned.chosen[key] = best
    return best


_kernel = attention09_tuned
attention09_tuned = _Tuned(_kernel)


def launch(ctx, inp, out, **flags):
    config = flags.pop("config", None) or _choose(inp, out)
    compiled = run(inp, out, config)
    consts = constexprs(inp, config)
    if getattr(attention09_tuned.best_config, "kwargs", None) != consts:
        # The compiled kernel's warps (12 or 16 with the workers), not the launch's num_warps=4.
        attention09_tuned.best_config = _Config(consts, compiled.metadata.num_warps, compiled.metadata.num_stages)


class _Config:
    """The chosen variant as the SASS reader matches it: constexprs, warps, stages."""

    def __init__(self, kwargs, num_warps, num_stages):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    def __repr__(self):
        return f"Config({self.kwargs}, num_warps={self.num_warps}, num_stages={self.num_stages})"
