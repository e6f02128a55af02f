"""Rung 05: Q, K, V loaded and O stored by the Tensor Memory Accelerator (TMA).

Change against rung 04 (same loop, same causal split, same autotuned configurations): every tile
moves through a tensor descriptor instead of a block of pointers. The host builds one
``TensorDescriptor`` per tensor over its (B * H * S, D) view; in the kernel ``desc.load([row, 0])``
becomes one TMA bulk copy of a whole BLOCK_N x D tile from global to shared memory
(cp.async.bulk.tensor), signalled through an mbarrier, and ``desc.store`` the reverse.

Why: with pointers every thread computes 64-bit addresses for its share of each K and V tile and
issues its own cp.async, a few hundred integer instructions per tile on the same warps that run the
softmax; a TMA copy is issued once per tile by one thread and the copy engine generates the addresses,
so the warps keep to the matmuls and the exponentials, and the pipeline stages wait on mbarriers
rather than on cp.async groups.

Counters: UTMALDG/UTMASTG in the SASS in place of LDGSTS; executed integer instructions per tile
down; the tensor pipe's share up a few points.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

LOG2E = 1.4426950408889634


def _block_shapes(nargs):
    """Autotuning picks BLOCK_M and BLOCK_N; the descriptors' tile shapes follow them."""
    rows_q, rows_kv, head_dim = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["HEAD_DIM"]
    nargs["desc_q"].block_shape = [rows_q, head_dim]
    nargs["desc_o"].block_shape = [rows_q, head_dim]
    nargs["desc_k"].block_shape = [rows_kv, head_dim]
    nargs["desc_v"].block_shape = [rows_kv, head_dim]


#: Rung 04's four configurations (see 03_hopper_tiles.py), each setting its descriptors' tile shapes.
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3, pre_hook=_block_shapes),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=4, pre_hook=_block_shapes),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2, pre_hook=_block_shapes),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3, pre_hook=_block_shapes),
]


def _prune(configs, named_args, **kwargs):
    """Without a GPU (Triton's interpreter) there is nothing to time: keep the first configuration."""
    return configs if named_args["desc_q"].base.is_cuda else configs[:1]


@triton.jit
def _attend05(acc, l, m, q, desc_k, desc_v, row0, offs_m, lo, hi, qk_scale,
              BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """Stream keys [lo, hi) of the head whose first row is row0 into (acc, l, m), as in rung 04."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([row0 + start_n, 0])
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            s = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    return acc, l, m


@triton.autotune(configs=CONFIGS, key=["seq", "HEAD_DIM", "CAUSAL"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def attention05_tma(desc_q, desc_k, desc_v, desc_o, seq, qk_scale,
                    HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    block_m = tl.program_id(0)
    row0 = tl.program_id(1) * seq  # first row of this (batch, head) in the (B * H * S, D) views
    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = desc_q.load([row0 + block_m * BLOCK_M, 0])
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        diagonal = block_m * BLOCK_M
        acc, l, m = _attend05(acc, l, m, q, desc_k, desc_v, row0, offs_m, 0, diagonal, qk_scale, BLOCK_N, False)
        acc, l, m = _attend05(acc, l, m, q, desc_k, desc_v, row0, offs_m, diagonal, diagonal + BLOCK_M, qk_scale,
                              BLOCK_N, True)
    else:
        acc, l, m = _attend05(acc, l, m, q, desc_k, desc_v, row0, offs_m, 0, seq, qk_scale, BLOCK_N, False)
    acc = acc / l[:, None]
    desc_o.store([row0 + block_m * BLOCK_M, 0], acc.to(tl.bfloat16))


def launch(ctx, inp, out):
    q, k, v, o = inp["q"], inp["k"], inp["v"], out["o"]
    batch, heads, seq, head_dim = q.shape
    if seq % 128:
        raise ValueError(f"sequence length {seq} is not a multiple of the 128-query tile")
    # Placeholder tile shapes: the chosen configuration's pre_hook sets the real ones.
    desc_q, desc_k, desc_v, desc_o = (TensorDescriptor.from_tensor(t.view(-1, head_dim), [128, head_dim])
                                      for t in (q, k, v, o))
    grid = lambda meta: (seq // meta["BLOCK_M"], batch * heads)  # noqa: E731 - Triton's grid callback
    attention05_tma[grid](desc_q, desc_k, desc_v, desc_o, seq, LOG2E / math.sqrt(head_dim), HEAD_DIM=head_dim,
                          CAUSAL=bool(inp["causal"]))
