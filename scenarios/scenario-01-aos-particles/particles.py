"""Scenario 01: advance the x coordinate of N particles by one time step, x' = x + dt * vx.

    python particles.py --variant slow     # particles as an array of structs (32 bytes each)
    python particles.py --variant fixed    # the same particles as a structure of arrays

Both variants draw the same particles from the same seed, run the kernel once on a poisoned (NaN)
output and check every element against a float64 reference, then time the kernel with CUDA events
(warm-up, then the median of the repeats) and print one JSON line (coach.capture.harness.emit).
The kernels live in particles.cu and are compiled at run time through NVRTC.

The work: read x and vx (8 bytes) and write x' (4 bytes) per particle, 12 bytes in all. The slow
layout makes the GPU move 36 bytes per particle instead (every 32-byte struct crosses DRAM whole),
so expect the slow kernel to take about 3x as long as the fixed one.
"""

from __future__ import annotations

import math
from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
FIELDS = 8  # x y z vx vy vz mass charge: struct Particle in particles.cu
X, VX = 0, 3
THREADS_PER_BLOCK = 256
DT = 1e-3
#: One fp32 fused multiply-add per element against float64: rounding error below 2^-24 ~ 6e-8.
TOLERANCE = 1e-6


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    n = harness.sizes(__file__)["n"]
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    particles = torch.randn(n, FIELDS, device="cuda", generator=gen)  # row i: particle i, as in the struct
    module = cupy.RawModule(code=harness.cuda_source(HERE / "particles.cu"), options=harness.NVRTC_OPTIONS)
    out = torch.empty(n, device="cuda")

    if args.variant == "slow":
        x, vx = particles[:, X], particles[:, VX]  # strided views, for the reference only
        kernel = module.get_function("drift_x_aos")
        kernel_args = (cupy.asarray(particles), cupy.asarray(out), np.float32(DT), np.int64(n))
    else:
        soa = particles.t().contiguous()  # FIELDS rows of n: soa[X] holds every particle's x
        del particles
        x, vx = soa[X], soa[VX]
        kernel = module.get_function("drift_x_soa")
        kernel_args = (cupy.asarray(x), cupy.asarray(vx), cupy.asarray(out), np.float32(DT), np.int64(n))

    grid = (math.ceil(n / THREADS_PER_BLOCK),)

    def launch() -> None:
        kernel(grid, (THREADS_PER_BLOCK,), kernel_args)

    out.fill_(float("nan"))  # poison: an element the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = x.double() + DT * vx.double()
    error = harness.relative_error(out, reference)
    del reference
    torch.cuda.empty_cache()  # Nsight Compute saves and restores device memory around each replay pass

    touched = harness.footprint(particles, out) if args.variant == "slow" else harness.footprint(x, vx, out)
    timing = harness.time_kernel(launch, footprint_bytes=touched, warmup=args.warmup, repeat=args.repeat,
                                 label=f"drift_x {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, n=n, device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
