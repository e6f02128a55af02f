"""Scenario 07: a batch of 265 oscillatory integrals by the midpoint rule, one block per integral.

    python quadrature.py --variant slow     # 265 blocks: one full wave of 264 and one block alone
    python quadrature.py --variant fixed    # each integral split over 32 blocks: 32.1 short waves

Both variants draw the same frequencies from the same seed (uniform in [1, 100]), run once on a
poisoned (NaN) output and compare every integral with its closed form, (1 - cos w) / w, in float64,
then time the kernels with CUDA events (warm-up, then the median of the repeats) and print one JSON
line (coach.capture.harness.emit). The kernels live in quadrature.cu and are compiled at run time
through NVRTC. The fixed variant's time includes the small kernel that adds the 32 partial sums.

The work: one hardware sine per point, `points` points per integral. Two 1024-thread blocks fill an
SM, so 264 blocks make a wave; the 265th block runs alone on one SM after the wave, and the other
131 SMs wait for it.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
THREADS = 1024                   # as in quadrature.cu
COMBINE_THREADS = 256            # 8 warps, one integral each
W_MIN, W_MAX = 1.0, 100.0        # frequencies: integrals of order 1 / w, none near 0 for long
#: Two float32 effects bound each integral's error: the argument w x_j rounded to float32 (about
#: |w x| x 6e-8, 6e-6 at w = 100) and the hardware sine (2^-21.41 absolute in [-pi, pi], CUDA C++
#: Programming Guide; for larger arguments dominated by the same rounding of the argument). A
#: float32 emulation of this kernel with exact sines is off by 6e-8 to 1.3e-5 relative per integral
#: (w from 1 to 99.9); 1e-4 over the batch leaves room, and a wrong integral is off by O(1).
TOLERANCE = 1e-4


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    items, points, parts = size["items"], size["points"], size["parts"]
    if points > 2**24 or points % (2 * THREADS * parts):
        raise SystemExit("points must be at most 2^24 (exact as float32) and split evenly over the parts")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    omega = torch.rand(items, device="cuda", generator=gen) * (W_MAX - W_MIN) + W_MIN
    out = torch.empty(items, device="cuda")
    module = cupy.RawModule(code=harness.cuda_source(HERE / "quadrature.cu"), options=harness.NVRTC_OPTIONS)

    if args.variant == "slow":
        kernel = module.get_function("quadrature_per_item")
        slow_args = (cupy.asarray(omega), cupy.asarray(out), np.int32(points))

        def launch() -> None:
            kernel((items,), (THREADS,), slow_args)
    else:
        kernel = module.get_function("quadrature_split")
        combine = module.get_function("combine_partials")
        partial = torch.empty(items, parts, device="cuda")
        split_args = (cupy.asarray(omega), cupy.asarray(partial), np.int32(points))
        combine_args = (cupy.asarray(partial), cupy.asarray(out), np.int32(items), np.int32(parts))
        combine_grid = ((items + COMBINE_THREADS // 32 - 1) // (COMBINE_THREADS // 32),)

        def launch() -> None:
            kernel((parts, items), (THREADS,), split_args)
            combine(combine_grid, (COMBINE_THREADS,), combine_args)

    out.fill_(float("nan"))  # poison: an integral the kernels do not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    w = omega.double()
    error = harness.relative_error(out, (1 - torch.cos(w)) / w)

    touched = harness.footprint(omega, out, *(() if args.variant == "slow" else (partial,)))
    timing = harness.time_kernel(launch, footprint_bytes=touched, warmup=args.warmup, repeat=args.repeat,
                                 label=f"quadrature {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, items=items, points=points, registers=kernel.num_regs,
                 blocks=items if args.variant == "slow" else items * parts,
                 device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
