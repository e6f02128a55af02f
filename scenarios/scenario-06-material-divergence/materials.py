"""Scenario 06: evaluate each cell's material model, with the cells' materials mixed at random.

    python materials.py --variant slow     # cells in their natural order: 8 materials in every warp
    python materials.py --variant fixed    # cells sorted by material once: each warp has one material

Both variants draw the same cells (a value in [-1, 1] and a material in 0..7) from the same seed.
The fixed variant sorts them by material (a stable argsort; the cells keep that order from then on,
as a simulation keeps its particles sorted by species) and reports the time of that sort separately.
Each runs the same kernel once on a poisoned (NaN) output and compares it with a float64 reference
of its inputs, then times the kernel with CUDA events (warm-up, then the median of the repeats) and
prints one JSON line (coach.capture.harness.emit). The kernel lives in materials.cu and is compiled
at run time through NVRTC.

The work: a weighted series of `terms` special-function terms per cell, different for each
material. In the slow order every warp holds cells of all eight materials and runs all eight models
in turn, each with about a quarter of its threads.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
KERNEL = "material_response"
THREADS = 256
WARP = 32
Q = np.float32(0.97)  # as in materials.cu
#: fp32 series of 112 terms with fp32 arguments k x (rounded to about |k x| x 6e-8) and the hardware's
#: approximate special functions (__sinf: 2^-21.41 absolute in [-pi, pi], CUDA C++ Programming Guide;
#: a few ulp for the others). A float32 emulation of the kernel with exact functions differs from
#: this reference by 2e-7 (relative, all cells); 1e-4 leaves room for the approximations without
#: letting a wrong model through (a wrong term is off by O(1)).
TOLERANCE = 1e-4


def term(material: int, k: float, x: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """The k-th term of each material's series, as materials.cu defines it, in float64."""
    return [
        lambda: torch.sin(k * x),
        lambda: torch.cos(k * x),
        lambda: torch.exp(-k * x2),
        lambda: torch.log1p(k * x2),
        lambda: torch.rsqrt(1 + k * x2),
        lambda: torch.sin(k * x) * torch.cos(k * x),
        lambda: 1 / (1 + k * x2),
        lambda: torch.exp2(-k * x.abs()),
    ][material]()


def reference(x: torch.Tensor, material: torch.Tensor, terms: int, materials: int) -> torch.Tensor:
    """sum_k w_k f_m(k, x) in float64, with the kernel's float32 weights w_k = fl(Q^k)."""
    weights = np.cumprod(np.full(terms, Q, dtype=np.float32), dtype=np.float32).astype(np.float64)
    out = torch.empty_like(x, dtype=torch.float64)
    for m in range(materials):
        idx = torch.nonzero(material == m).squeeze(1)
        xm = x[idx].double()
        x2 = xm * xm
        y = torch.zeros_like(xm)
        for k in range(1, terms + 1):
            y += weights[k - 1] * term(m, float(k), xm, x2)
        out[idx] = y
    return out


def uniform_warp_share(material: torch.Tensor) -> float:
    """The share of warps (32 consecutive cells) whose cells all have one material."""
    warps = material[: material.numel() // WARP * WARP].view(-1, WARP)
    return float((warps == warps[:, :1]).all(dim=1).float().mean())


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    n, terms, materials = size["n"], size["terms"], size["materials"]
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    x = torch.rand(n, device="cuda", generator=gen) * 2 - 1
    material = torch.randint(0, materials, (n,), dtype=torch.uint8, device="cuda", generator=gen)
    extra: dict[str, float] = {}
    if args.variant == "fixed":
        def partition() -> tuple[torch.Tensor, torch.Tensor]:
            order = torch.argsort(material, stable=True)
            return x[order], material[order]

        sorted_ = harness.time_kernel(partition, footprint_bytes=harness.footprint(x, material) * 2, warmup=1,
                                      repeat=5, label="partition")
        extra["partition_ms"] = float(np.median(sorted_.times_ms))
        x, material = partition()
    out = torch.empty_like(x)
    module = cupy.RawModule(code=harness.cuda_source(HERE / "materials.cu"), options=harness.NVRTC_OPTIONS)
    kernel = module.get_function(KERNEL)
    grid = ((n + THREADS - 1) // THREADS,)
    kernel_args = (cupy.asarray(x), cupy.asarray(material), cupy.asarray(out), np.int32(n))

    def launch() -> None:
        kernel(grid, (THREADS,), kernel_args)

    out.fill_(float("nan"))  # poison: an element the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    error = harness.relative_error(out, reference(x, material, terms, materials))
    torch.cuda.empty_cache()

    timing = harness.time_kernel(launch, footprint_bytes=harness.footprint(x, material, out), warmup=args.warmup,
                                 repeat=args.repeat, label=f"materials {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, n=n, uniform_warp_share=uniform_warp_share(material), registers=kernel.num_regs,
                 device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}", **extra)


if __name__ == "__main__":
    main()
