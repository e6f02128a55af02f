"""Scenario 10: an FP32 matrix product C = A @ B that leaves the tensor cores idle.

    python matmul.py --variant slow     # torch.matmul at PyTorch's default FP32 precision: CUDA-core FFMA
    python matmul.py --variant fixed    # the same call with TF32 allowed: cuBLAS runs it on the tensor cores

Both variants draw the same FP32 matrices from the same seed, poison the output (NaN), run the product
once and check every element against a float64 product, then time it with CUDA events (warm-up, then
the median of the repeats) and print one JSON line (coach.capture.harness.emit).

The only difference is one setting: torch.set_float32_matmul_precision("highest") (PyTorch's default,
the same as torch.backends.cuda.matmul.allow_tf32 = False) against "high" (TF32 allowed). The inputs,
the output and the storage stay FP32; with TF32 the tensor cores round each input to 10 mantissa bits
and accumulate in FP32.
"""

from __future__ import annotations

import torch

from coach.capture import harness

#: torch.set_float32_matmul_precision per variant.
PRECISION = {"slow": "highest", "fixed": "high"}
#: TF32 keeps 10 explicit mantissa bits: rounding each input costs up to 2^-11 (4.9e-4) relative,
#: 2^-10 if truncated; over a sum of K products of random sign the norm-wise error stays near that
#: per-product error (about 5e-4 to 1e-3). FP32 accumulation adds ~1e-6. 3e-3 leaves room while a
#: wrong product (a transposed operand, a skipped tile) is off by order 1.
TOLERANCE = 3e-3


def inputs(m: int, n: int, k: int, device: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(m, k, device=device, generator=gen), torch.randn(k, n, device=device, generator=gen))


def product(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    torch.matmul(a, b, out=out)


def check(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> float:
    """Poison ``out``, compute the product into it once, and return its error against float64."""
    out.fill_(float("nan"))
    product(a, b, out)
    return harness.relative_error(out, a.double() @ b.double())


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    m, n, k = size["m"], size["n"], size["k"]
    torch.set_float32_matmul_precision(PRECISION[args.variant])
    a, b = inputs(m, n, k, "cuda", args.seed)
    out = torch.empty(m, n, device="cuda")
    with harness.nvtx("check"):
        error = check(a, b, out)
    torch.cuda.empty_cache()  # Nsight Compute saves and restores device memory around each replay pass

    timing = harness.time_kernel(lambda: product(a, b, out), footprint_bytes=harness.footprint(a, b, out),
                                 warmup=args.warmup, repeat=args.repeat, label=f"matmul {args.variant}")
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, m=m, n=n, k=k, precision=PRECISION[args.variant],
                 allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32), device=torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
