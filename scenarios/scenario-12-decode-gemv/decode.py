"""Scenario 12: one decode-step layer, y = W x, for one token at a time or for a batch of tokens.

    python decode.py --variant slow     # batch 1: a matrix-vector product per token (GEMV)
    python decode.py --variant fixed    # the same weights serving a batch of tokens per call (GEMM)

W is an (n_out, k_in) bf16 weight, the down-projection of a 70B-class model's MLP (8192 x 28672,
470 MB). Both variants draw the same weights from the same seed, poison the output (NaN), compute
it once and check every element against float64, then time the product with CUDA events (warm-up,
then the median of the repeats) and print one JSON line (coach.capture.harness.emit) with the time
per token: the call's time divided by the tokens it serves, so the speed-up is one of tokens per second.

At batch 1 every token reads all of W once and does 2 FLOPs per weight: 1 FLOP per byte, far below
the ridge point, so the GPU's FLOP rate is irrelevant and the bandwidth sets a floor per token. A
batch of B tokens reads W once for all of them.
"""

from __future__ import annotations

import statistics

import torch

from coach.capture import harness

#: bf16 output of FP32-accumulated dot products: one rounding to 8 significant bits, 2^-9 (2e-3) at
#: most per element. 1e-2 leaves room; a wrong product is off by order 1.
TOLERANCE = 1e-2
#: The weights' spread, as a trained layer's (about 0.02); the tokens' activations are unit normal.
WEIGHT_STD = 0.02


def weights(n_out: int, k_in: int, device: str, seed: int) -> torch.Tensor:
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.empty(n_out, k_in, device=device, dtype=torch.bfloat16).normal_(0.0, WEIGHT_STD, generator=gen)


def tokens(batch: int, k_in: int, device: str, seed: int) -> torch.Tensor:
    gen = torch.Generator(device=device).manual_seed(seed + 1)
    return torch.empty(batch, k_in, device=device, dtype=torch.bfloat16).normal_(0.0, 1.0, generator=gen)


def layer(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    """out = x @ W^T, as nn.Linear computes it: a GEMV for one token, a GEMM for a batch."""
    torch.matmul(x, w.t(), out=out)


def check(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> float:
    """Poison ``out``, compute the layer into it once, and return its error against float64."""
    out.fill_(float("nan"))
    layer(x, w, out)
    return harness.relative_error(out, x.double() @ w.double().t())


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    n_out, k_in = size["n_out"], size["k_in"]
    batch = size["decode_batch"] if args.variant == "slow" else size["serve_batch"]
    w = weights(n_out, k_in, "cuda", args.seed)
    x = tokens(batch, k_in, "cuda", args.seed)
    out = torch.empty(batch, n_out, device="cuda", dtype=torch.bfloat16)
    with harness.nvtx("check"):
        error = check(x, w, out)
    torch.cuda.empty_cache()  # Nsight Compute saves and restores device memory around each replay pass

    # W (470 MB) streams past the 60 MiB L2, but the L2 could still hold a tenth of it from the call
    # before: the calls are flushed (as in a model, where the other layers' weights pass through in between).
    timing = harness.time_kernel(lambda: layer(x, w, out), footprint_bytes=harness.footprint(x, w, out),
                                 warmup=args.warmup, repeat=args.repeat, label=f"layer {args.variant} batch {batch}")
    per_token = timing.per(batch, "token")
    harness.emit(variant=args.variant, timing=per_token, unit="token", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, batch=batch, call_ms=timing.times_ms,
                 tokens_per_s=1e3 / statistics.median(per_token.times_ms),
                 n_out=n_out, k_in=k_in, device=torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
