"""Rung 04: causal block skipping - stop at the diagonal, mask only the diagonal block.

Change against rung 03 (same kernel, same autotuned configurations): with causal attention the key
loop is split in two. Query block i (rows i*BLOCK_M ... (i+1)*BLOCK_M - 1) needs keys 0 ... its last
row only, so

- keys [0, i*BLOCK_M): every key precedes every query of the block - the scores are used as they
  are, no mask, no comparison per score;
- keys [i*BLOCK_M, (i+1)*BLOCK_M): the diagonal block, the only one where some scores are masked;
- keys after (i+1)*BLOCK_M: never loaded, never multiplied.

Rungs 01-03 computed all S x S scores and threw half away, so counted at the causal convention
(half the FLOPs) they ran at half their non-causal rate. Non-causal attention runs exactly rung 03's
loop (one unmasked pass over all keys).

The loop body is written once (``_attend04``) and called for the two ranges; ``MASKED`` is a
compile-time constant, so the unmasked loop carries no mask code at all.

Counters, causal: time about halved against rung 03 (the tensor pipe executes half the HGMMAs),
instructions per score down (no compare and select off the diagonal). Non-causal: unchanged.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634

#: The four configurations of rung 03, for the same reasons (see 03_hopper_tiles.py).
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3),
]


def _prune(configs, named_args, **kwargs):
    """Without a GPU (Triton's interpreter) there is nothing to time: keep the first configuration."""
    return configs if named_args["q_ptr"].is_cuda else configs[:1]


@triton.jit
def _attend04(acc, l, m, q, k_ptr, v_ptr, base, offs_m, lo, hi, qk_scale,
              HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """Stream keys [lo, hi) into the running (acc, l, m) of one query block; mask keys after the query
    only when MASKED."""
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        keys = start_n + offs_n
        k = tl.load(k_ptr + base + keys[:, None] * HEAD_DIM + offs_d[None, :])
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            s = tl.where(offs_m[:, None] >= keys[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    return acc, l, m


@triton.autotune(configs=CONFIGS, key=["seq", "HEAD_DIM", "CAUSAL"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def attention04_causal_skip(q_ptr, k_ptr, v_ptr, o_ptr, seq, qk_scale,
                            HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0)  # the diagonal block is whole key blocks
    block_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        diagonal = block_m * BLOCK_M
        acc, l, m = _attend04(acc, l, m, q, k_ptr, v_ptr, base, offs_m, 0, diagonal, qk_scale,
                              HEAD_DIM, BLOCK_N, False)
        acc, l, m = _attend04(acc, l, m, q, k_ptr, v_ptr, base, offs_m, diagonal, diagonal + BLOCK_M, qk_scale,
                              HEAD_DIM, BLOCK_N, True)
    else:
        acc, l, m = _attend04(acc, l, m, q, k_ptr, v_ptr, base, offs_m, 0, seq, qk_scale, HEAD_DIM, BLOCK_N, False)
    acc = acc / l[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.bfloat16))


def launch(ctx, inp, out):
    q, k, v, o = inp["q"], inp["k"], inp["v"], out["o"]
    batch, heads, seq, head_dim = q.shape
    if seq % 128:
        raise ValueError(f"sequence length {seq} is not a multiple of the 128-query tile")
    grid = lambda meta: (seq // meta["BLOCK_M"], batch * heads)  # noqa: E731 - Triton's grid callback
    attention04_causal_skip[grid](q, k, v, o, seq, LOG2E / math.sqrt(head_dim), HEAD_DIM=head_dim,
                                  CAUSAL=bool(inp["causal"]))
