"""Attention at decode time: a few new query tokens per sequence against a long KV cache, with GQA.

For each sequence b and query head h (KV head h // G, G = heads / kv_heads query heads per KV head),
and each of the T new query tokens t:

    O[b, h, t] = softmax(Q[b, h, t] K[b, h // G]^T / sqrt(D) [+ mask]) V[b, h // G]

Layouts (bf16): Q and O (B, H, T, D); the KV cache K and V (B, H_kv, ctx, D) contiguous, the layout
the peers (PyTorch SDPA) and rungs 00-02 read. The same cache is also given paged, as a serving
engine keeps it (rungs 03-04): ``k_pages`` and ``v_pages`` of shape (pages, H_kv, page, D), a pool of
fixed-size pages in a shuffled order, and ``block_table`` (B, ctx / page) int32, whose entry [b, i]
is the page holding tokens i * page ... (i + 1) * page - 1 of sequence b. Both copies hold the same
values; the bytes model counts one.

With T > 1 the new tokens are the last T positions of the sequence, so token t sees the keys up to
ctx - T + t (a causal mask aligned to the lower right, as in speculative decoding's verification
step); with T = 1 it sees all of them. The main size has T = 1; the CPU test size T = 2, so the mask
is exercised there.

fp32 scores, softmax and accumulation; O rounded to bf16.
"""

from __future__ import annotations

import math

import torch

SIZES = {
    # A decode step of a 70B-class model (Llama-3-70B shape: 64 query heads per layer over 8 KV heads,
    # here 32 over 8 for a group of 4), 32 sequences of 8192 tokens: the KV cache is 1 GiB.
    "h200": {"batch": 32, "heads": 32, "kv_heads": 8, "ctx": 8192, "queries": 1, "head_dim": 128, "page": 16},
    # The CPU tests: a context that is not a multiple of any key block (200 = 12.5 pages of 16, 3.1
    # blocks of 64), two query tokens so the causal mask of the last keys matters, a group of 4.
    "small": {"batch": 2, "heads": 8, "kv_heads": 2, "ctx": 200, "queries": 2, "head_dim": 64, "page": 16},
}
#: "large_logits": Q and K ~ N(0, 4^2), scores q.k / sqrt(D) with a standard deviation of 16: rows
#: reach +-70, so exp() of an unshifted score overflows fp32 (exp(89) does) and a kernel or a combine
#: step that forgets the running maximum returns inf/NaN. "normal": Q, K, V ~ N(0, 1), scores of
#: standard deviation 1, a softmax spread over the whole context (timed).
INPUTS = ("large_logits", "normal")
EXACT = frozenset()
_SCALE = {"large_logits": 4.0, "normal": 1.0}
#: What the paged copy holds past the end of a sequence (its last page's tail, when ctx is not a
#: multiple of the page): values a kernel that reads them unmasked cannot hide.
_TAIL = 100.0


def inputs(kind: str, *, batch: int, heads: int, kv_heads: int, ctx: int, queries: int, head_dim: int,
           page: int, device: str, generator: torch.Generator) -> dict:
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads are not a multiple of {kv_heads} KV heads")
    s = _SCALE[kind]

    def draw(shape, scale: float) -> torch.Tensor:
        return (scale * torch.randn(shape, device=device, generator=generator)).to(torch.bfloat16)

    q = draw((batch, heads, queries, head_dim), s)
    k = draw((batch, kv_heads, ctx, head_dim), s)
    v = draw((batch, kv_heads, ctx, head_dim), 1.0)
    per_seq = math.ceil(ctx / page)
    # Pages in a random order: page j of the pool holds some (sequence, i) chosen by a permutation,
    # so neighbouring pages of one sequence are nowhere near each other in memory.
    order = torch.randperm(batch * per_seq, device=device, generator=generator)
    table = order.to(torch.int32).reshape(batch, per_seq)

    def paged(x: torch.Tensor) -> torch.Tensor:
        padded = torch.full((batch, kv_heads, per_seq * page, head_dim), _TAIL, dtype=x.dtype, device=device)
        padded[:, :, :ctx] = x
        pages = padded.reshape(batch, kv_heads, per_seq, page, head_dim).permute(0, 2, 1, 3, 4)
        pool = torch.empty(batch * per_seq, kv_heads, page, head_dim, dtype=x.dtype, device=device)
        pool[order] = pages.reshape(batch * per_seq, kv_heads, page, head_dim)
        return pool

    return {"q": q, "k": k, "v": v, "k_pages": paged(k), "v_pages": paged(v), "block_table": table}


def outputs(*, batch: int, heads: int, kv_heads: int, ctx: int, queries: int, head_dim: int, page: int,
            device: str) -> dict[str, torch.Tensor]:
    return {"o": torch.empty(batch, heads, queries, head_dim, device=device, dtype=torch.bfloat16)}


def visible(queries: int, ctx: int, device) -> torch.Tensor:
    """(T, ctx) bool: token t (the last T positions) sees key j when j <= ctx - T + t."""
    t = torch.arange(queries, device=device)[:, None]
    return torch.arange(ctx, device=device)[None, :] <= ctx - queries + t


def reference(inp: dict) -> dict[str, torch.Tensor]:
    """Float64 attention of the bf16 inputs (the contiguous copy of the cache), one sequence at a
    time (a sequence's K and V in float64 are 128 MB at the main size)."""
    q, k, v = inp["q"], inp["k"], inp["v"]
    b, h, t, d = q.shape
    hk, ctx = k.shape[1], k.shape[2]
    g = h // hk
    mask = visible(t, ctx, q.device)
    out = torch.empty(b, h, t, d, dtype=torch.float64, device=q.device)
    for i in range(b):
        qi = q[i].to(torch.float64).reshape(hk, g, t, d)
        ki, vi = k[i].to(torch.float64), v[i].to(torch.float64)
        scores = torch.einsum("kgtd,kjd->kgtj", qi, ki) / math.sqrt(d)
        scores = scores.masked_fill(~mask, float("-inf"))
        out[i] = torch.einsum("kgtj,kjd->kgtd", torch.softmax(scores, dim=-1), vi).reshape(h, t, d)
    return {"o": out}


def bytes_moved(*, batch: int, heads: int, kv_heads: int, ctx: int, queries: int, head_dim: int, page: int) -> int:
    """Compulsory DRAM traffic: the KV cache read once (K and V, 2 B H_kv ctx D bf16: 99.95% of it at
    the main size), Q read and O written once. The block table (64 KB) and a split kernel's partial
    results are not compulsory and not counted."""
    kv = 2 * batch * kv_heads * ctx * head_dim * 2
    return kv + 2 * batch * heads * queries * head_dim * 2


def flops(*, batch: int, heads: int, kv_heads: int, ctx: int, queries: int, head_dim: int, page: int) -> int:
    """Two products of 2 ctx D per query row (Q K^T and P V), masked keys counted: 4 B H T ctx D."""
    return 4 * batch * heads * queries * ctx * head_dim


def _mask(inp: dict):
    """None for one query token (it sees every key); else the lower-right causal mask, which only
    the math and memory-efficient backends of SDPA accept."""
    t, ctx = inp["q"].shape[2], inp["k"].shape[2]
    return None if t == 1 else visible(t, ctx, inp["q"].device)


def _sdpa(backend: str | None, expand: bool = False):
    """F.scaled_dot_product_attention on the contiguous cache: with ``enable_gqa`` (each KV head
    serves its G query heads inside the kernel), or with K and V first expanded to every query head
    (``repeat_interleave``, the copy inside the timed call, as a model without GQA support does it);
    PyTorch's own backend choice or one pinned backend (which raises if it cannot run the inputs,
    and the peer is recorded as an error)."""

    def factory():
        import torch.nn.functional as F

        def call(inp):
            q, k, v = inp["q"], inp["k"], inp["v"]
            g = q.shape[1] // k.shape[1]
            if expand:
                k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
            return {"o": F.scaled_dot_product_attention(q, k, v, attn_mask=_mask(inp), enable_gqa=not expand)}

        if backend is None:
            return call
        from torch.nn.attention import SDPBackend, sdpa_kernel

        chosen = getattr(SDPBackend, backend)

        def pinned(inp):
            with sdpa_kernel(chosen):
                return call(inp)

        return pinned

    return factory


def _flex():
    """FlexAttention (torch.nn.attention.flex_attention) compiled by torch.compile: Inductor generates
    a Triton kernel, and for a few query tokens its flex-decoding template, a split-KV kernel with a
    reduction over the splits (the FlashDecoding class of rungs 02-04), with GQA (``enable_gqa``).
    T > 1 gets the lower-right causal mask as a block mask, made once per shape."""

    def factory():
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        attend = torch.compile(flex_attention, dynamic=False)
        masks: dict = {}

        def block_mask(t: int, ctx: int, device):
            if t == 1:
                return None
            if (t, ctx) not in masks:
                offset = ctx - t
                masks[t, ctx] = create_block_mask(lambda b, h, q_idx, kv_idx: kv_idx <= q_idx + offset,
                                                  None, None, t, ctx, device=device)
            return masks[t, ctx]

        def call(inp):
            q, k, v = inp["q"], inp["k"], inp["v"]
            return {"o": attend(q, k, v, block_mask=block_mask(q.shape[2], k.shape[2], q.device), enable_gqa=True)}

        return call

    return factory


PEERS = {
    "torch.sdpa": _sdpa(None),  # enable_gqa=True: PyTorch's choice (GQA runs in its FlashAttention-2 kernels)
    "torch.sdpa.flash": _sdpa("FLASH_ATTENTION"),  # FlashAttention-2 with its split-KV decode path, pinned
    "torch.sdpa.expand_kv": _sdpa(None, expand=True),  # K, V repeated to 32 heads, then SDPA
    "torch.flex_attention": _flex(),  # Inductor's flex-decoding Triton kernel
}

LAUNCH: dict = {}  # every rung is Triton: each rung file has its own launch(ctx, inputs, outputs)
