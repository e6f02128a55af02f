"""Attention written out (scores materialised, softmax, then the product) against the fused kernel.

    python sdpa_attention.py --impl math [--kineto trace.json.gz]
    python sdpa_attention.py --impl fused ...

B 8, H 16, S 2048, D 64 in bf16. --impl math computes softmax(Q K^T / sqrt(D)) V as three kernels
(two batched GEMMs and a softmax) with the S x S scores written to and read back from DRAM
(8 x 16 x 2048^2 x 2 bytes = 1 GiB each way); --impl fused calls
torch.nn.functional.scaled_dot_product_attention, which on an H100/H200 runs a flash-attention
kernel that keeps the scores on chip.

Known bottleneck (math): the score matrix's round trip through DRAM; the softmax kernel is
DRAM-bound and the chain of kernels is what a fused kernel removes. The fused version should be
several times faster: a before/after pair for coach diff. Both are checked against each other.
"""

from __future__ import annotations

import torch

from _common import device, emit, kineto, nvtx, parser, timed


def math_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores.softmax(dim=-1) @ v


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--impl", choices=("math", "fused"), default="math")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--head-dim", type=int, default=64)
    args = ap.parse_args()
    steps = args.steps or 10
    dev = device()
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    torch.manual_seed(0)
    q, k, v = (torch.randn(args.batch, args.heads, args.seq, args.head_dim, device=dev, dtype=dtype) for _ in range(3))
    attend = math_attention if args.impl == "math" else torch.nn.functional.scaled_dot_product_attention
    for _ in range(args.warmup):
        out = attend(q, k, v)
    with kineto(args.kineto, dev):
        stop = timed(dev)
        for i in range(steps):
            with nvtx(f"attention{i}"):
                out = attend(q, k, v)
        seconds = stop()
    other = torch.nn.functional.scaled_dot_product_attention(q, k, v) if args.impl == "math" else math_attention(q, k, v)
    err = (out.float() - other.float()).abs().max().item()
    assert err < (5e-2 if dtype == torch.bfloat16 else 1e-4), f"{args.impl} attention differs by {err}"
    flop = 4 * args.batch * args.heads * args.seq ** 2 * args.head_dim
    emit("sdpa_attention", impl=args.impl, steps=steps, ms=round(1e3 * seconds / steps, 3),
         tflop_per_s=round(flop * steps / seconds / 1e12, 1), max_abs_err=err)


if __name__ == "__main__":
    main()
