"""Scenario 11: y = gelu(x * a + b) * c on a bf16 activation, as four PyTorch ops or as one kernel.

The GELU is the tanh form (F.gelu(t, approximate="tanh"), as in GPT-2 and many models since).

    python chain.py --variant slow     # four element-wise ops: four kernels, four DRAM round trips
    python chain.py --variant fixed    # one Triton kernel (fused.py): x read once, y written once

Both variants draw the same activation from the same seed, poison the output (NaN bytes, written by a
memset so that no element-wise kernel runs before the checked one), compute y once and compare every
element with a float64 reference, then time the computation with CUDA events (warm-up, then the median
of the repeats) and print one JSON line (coach.capture.harness.emit).

The work: read x and write y, 2 bytes each per element. The slow version also writes and reads back
three intermediates of the same size: four times the DRAM traffic.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import fused
from coach.capture import harness

#: The scalars: a scale, a shift and a gain.
A, B, C = 1.25, -0.5, 0.75
#: bf16 keeps 8 significant bits: each rounding costs up to 2^-9 (2e-3) relative. The four ops round
#: after each op, the fused kernel once; norm-wise errors stay near 2e-3 and 1e-3. 1e-2 leaves room
#: while a wrong result (a missing op, an unwritten block) is off by order 1.
TOLERANCE = 1e-2


def activation(rows: int, features: int, device: str, seed: int) -> torch.Tensor:
    """A bf16 activation drawn directly in bf16 (a cast would be one more element-wise kernel)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.empty(rows, features, device=device, dtype=torch.bfloat16).normal_(0.0, 1.0, generator=gen)


def unfused(x: torch.Tensor, y: torch.Tensor) -> None:
    """Four ops, four kernels: each reads a full tensor from DRAM and writes one back."""
    t = x * A
    t = t + B
    t = F.gelu(t, approximate="tanh")
    torch.mul(t, C, out=y)


def fused_step(x: torch.Tensor, y: torch.Tensor) -> None:
    fused.launch(x, A, B, C, y)


STEPS = {"slow": unfused, "fixed": fused_step}


def poison(t: torch.Tensor) -> None:
    """Fill ``t`` with 0xFF bytes (NaN in every float format). On the GPU a memset does it: a fill
    kernel would be an element-wise kernel, the first one Nsight Compute's filter would catch."""
    if t.is_cuda:
        import cupy

        cupy.cuda.runtime.memset(t.data_ptr(), 0xFF, t.numel() * t.element_size())
    else:
        t.view(torch.uint8).fill_(0xFF)


def reference(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x.double() * A + B, approximate="tanh") * C


def check(variant: str, x: torch.Tensor, y: torch.Tensor) -> float:
    """Poison ``y``, compute it once with the variant, and return its error against float64."""
    poison(y)
    STEPS[variant](x, y)
    return harness.relative_error(y, reference(x))


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    x = activation(size["rows"], size["features"], "cuda", args.seed)
    y = torch.empty_like(x)
    torch.cuda.synchronize()
    with harness.nvtx("check"):
        error = check(args.variant, x, y)
    torch.cuda.empty_cache()  # Nsight Compute saves and restores device memory around each replay pass

    step = STEPS[args.variant]
    # One call is the whole chain (four kernels in the slow version, one fused kernel in the fixed):
    # x read and y written, 1 GiB each, far past the L2, so the calls are timed in batches.
    timing = harness.time_kernel(lambda: step(x, y), footprint_bytes=harness.footprint(x, y), warmup=args.warmup,
                                 repeat=args.repeat, label=f"chain {args.variant}")
    harness.emit(variant=args.variant, timing=timing, unit="pass", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, rows=size["rows"], features=size["features"], device=torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
