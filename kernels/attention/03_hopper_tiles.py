"""Rung 03: Hopper-sized tiles and software pipelining, chosen by autotuning.

Change against rung 02: the kernel is the same FlashAttention-2 loop, but its launch parameters are
no longer fixed small values - the tile is 128 queries by 64 or 128 keys, the K and V loads are
pipelined num_stages deep (Triton issues the loads of key block j+1, j+2 while block j is in the
tensor cores: cp.async into shared memory on the H200), and triton.autotune picks one of four
configurations per (sequence length, head dimension, causal) on the first call.

Why: rung 02 reads K and V for every 64 queries and waits for each load before its matmuls. A
128-query tile halves the K/V traffic per FLOP (each K/V block now feeds 128 rows: 2 x 128 x BLOCK_N x D
FLOPs per 2 x BLOCK_N x D x 2 bytes loaded), two warpgroups (8 warps) or one warpgroup with 128 rows
keep wgmma's 64 x N x 16 instructions fed, and the pipeline hides the load latency behind the
previous block's matmuls.

Causal attention still visits every key block with the mask (rung 04 removes that).

Counters: HGMMA in the SASS, sm__pipe_tensor_op_hmma_cycles_active up (tensor pipe busy most of the
time), warp stalls on long scoreboard down, L2 -> SM traffic per FLOP halved.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634

#: Four configurations, pruned for the H200 from the space Triton's fused-attention tutorial searches
#: (BLOCK_M 64/128, BLOCK_N 32/64/128, 2-4 stages, 4/8 warps): 128-query tiles only (64 halves the
#: reuse of K and V), 8 warps only for the 128 x 128 tile (the tutorial's rule: fewer than 128 x 128
#: scores per program do not keep two warpgroups busy), 2-4 stages within the 228 KB of shared memory
#: (a 128 x 128 bf16 K or V block is 32 KB at D = 128).
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3),
]


def _prune(configs, named_args, **kwargs):
    """Without a GPU (Triton's interpreter) there is nothing to time: keep the first configuration."""
    return configs if named_args["q_ptr"].is_cuda else configs[:1]


@triton.autotune(configs=CONFIGS, key=["seq", "HEAD_DIM", "CAUSAL"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def attention03_hopper(q_ptr, k_ptr, v_ptr, o_ptr, seq, qk_scale,
                       HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, seq, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        keys = start_n + offs_n
        k = tl.load(k_ptr + base + keys[:, None] * HEAD_DIM + offs_d[None, :])
        s = tl.dot(q, tl.trans(k))
        if CAUSAL:
            s = tl.where(offs_m[:, None] >= keys[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    acc = acc / l[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.bfloat16))


def launch(ctx, inp, out):
    q, k, v, o = inp["q"], inp["k"], inp["v"], out["o"]
    batch, heads, seq, head_dim = q.shape
    if seq % 128:
        raise ValueError(f"sequence length {seq} is not a multiple of the 128-query tile")
    grid = lambda meta: (seq // meta["BLOCK_M"], batch * heads)  # noqa: E731 - Triton's grid callback
    attention03_hopper[grid](q, k, v, o, seq, LOG2E / math.sqrt(head_dim), HEAD_DIM=head_dim,
                             CAUSAL=bool(inp["causal"]))
