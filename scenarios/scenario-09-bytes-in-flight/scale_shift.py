"""Scenario 09: y = a * x + b over N floats, a memory-bound kernel that keeps too few bytes in flight.

    python scale_shift.py --variant slow     # one 4-byte load at a time per thread (no __restrict__)
    python scale_shift.py --variant fixed    # four independent 16-byte loads per thread, same grid

Both variants launch the same grid-stride loop on the same grid (BLOCKS_PER_SM blocks of THREADS
threads per SM), draw the same inputs from the same seed, run the kernel once on a poisoned (NaN)
output and check every element against a float64 reference, then time it with CUDA events (warm-up,
then the median of the repeats) and print one JSON line (coach.capture.harness.emit). The kernels live
in scale_shift.cu and are compiled at run time through NVRTC.

The work: read 4 bytes and write 4 bytes per element, 4.3 GB in all. Both variants move exactly those
bytes; they differ only in how many of them each thread keeps in flight.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
THREADS = 256
#: A grid-stride loop on a small persistent grid: 2 blocks of 256 threads per SM, 512 resident threads
#: of the SM's 2048. The same grid in both variants: the fix changes the bytes per thread, not occupancy.
BLOCKS_PER_SM = 2
A, B = 1.5, -0.25
#: One fp32 fused multiply-add per element against float64: rounding error below 2^-24 ~ 6e-8.
TOLERANCE = 1e-6


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    n = harness.sizes(__file__)["n"]
    if n % 4:
        raise SystemExit(f"n ({n}) must be a multiple of 4 (16-byte loads)")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.empty(n, device="cuda")
    module = cupy.RawModule(code=harness.cuda_source(HERE / "scale_shift.cu"), options=harness.NVRTC_OPTIONS)
    grid = (BLOCKS_PER_SM * torch.cuda.get_device_properties(0).multi_processor_count,)
    if args.variant == "slow":
        kernel = module.get_function("scale_shift_scalar")
        kernel_args = (cupy.asarray(x), cupy.asarray(y), np.float32(A), np.float32(B), np.int64(n))
    else:
        kernel = module.get_function("scale_shift_vec4")
        kernel_args = (cupy.asarray(x), cupy.asarray(y), np.float32(A), np.float32(B), np.int64(n // 4))

    def launch() -> None:
        kernel(grid, (THREADS,), kernel_args)

    y.fill_(float("nan"))  # poison: an element the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = A * x.double() + B
    error = harness.relative_error(y, reference)
    del reference
    torch.cuda.empty_cache()  # Nsight Compute saves and restores device memory around each replay pass

    timing = harness.time_kernel(launch, footprint_bytes=harness.footprint(x, y), warmup=args.warmup,
                                 repeat=args.repeat, label=f"scale_shift {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, n=n, grid=grid[0], threads=THREADS, device=torch.cuda.get_device_name(),
                 arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
