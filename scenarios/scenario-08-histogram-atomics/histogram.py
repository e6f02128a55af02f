"""Scenario 08: a histogram of N scores in [0, 1) into a few equal-width bins.

    python histogram.py --variant slow     # one global atomicAdd per score
    python histogram.py --variant fixed    # per-warp histograms in shared memory, one global atomic per bin and block

Both variants draw the same uniform scores from the same seed, poison the counts, run the kernel once
and compare every count with torch.bincount (exact integers), then time it with CUDA events (warm-up,
then the median of the repeats) and print one JSON line (coach.capture.harness.emit). The kernels live
in histogram.cu and are compiled at run time through NVRTC.

The work: read 4 bytes per score and add one to a counter, 1.07 GB for 2^28 scores: a quarter of a
millisecond at the DRAM roof. The slow kernel sends every one of those additions to the same 64
counters in L2, where updates to one address are applied one at a time.
"""

from __future__ import annotations

import math
from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
THREADS = 256  # THREADS in histogram.cu
#: Persistent grid of the privatised kernel: 4 blocks of 256 threads per SM, each looping over its
#: share; few blocks keep the final global atomics (one per bin and block) few.
BLOCKS_PER_SM = 4
#: Counts are integers: any difference from torch.bincount is a wrong result.
TOLERANCE = 0.0
POISON = 0x7FFFFFFF


def main() -> None:
    # The slow kernel may take tens of milliseconds: fewer repeats keep the recording short.
    args = harness.parse_args(__doc__.splitlines()[0], warmup=2, repeat=10)
    size = harness.sizes(__file__)
    n, nbins = size["n"], size["bins"]
    if n % 4 or nbins & (nbins - 1):
        raise SystemExit(f"n ({n}) must be a multiple of 4 and bins ({nbins}) a power of two")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    scores = torch.rand(n, device="cuda", generator=gen)  # uniform in [0, 1): every bin equally hot
    counts = torch.empty(nbins, device="cuda", dtype=torch.int32)
    module = cupy.RawModule(code=harness.cuda_source(HERE / "histogram.cu"),
                            options=(*harness.NVRTC_OPTIONS, f"-DBINS={nbins}"))

    if args.variant == "slow":
        kernel = module.get_function("histogram_global_atomics")
        grid = (math.ceil(n / THREADS),)
        kernel_args = (cupy.asarray(scores), cupy.asarray(counts), np.int64(n))
    else:
        kernel = module.get_function("histogram_privatized")
        grid = (BLOCKS_PER_SM * torch.cuda.get_device_properties(0).multi_processor_count,)
        kernel_args = (cupy.asarray(scores), cupy.asarray(counts), np.int64(n // 4))

    def launch() -> None:
        counts.zero_()  # the histogram accumulates: every run starts from zero
        kernel(grid, (THREADS,), kernel_args)

    counts.fill_(POISON)
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = torch.bincount((scores * nbins).long().clamp_(0, nbins - 1), minlength=nbins)
    error = harness.relative_error(counts.long(), reference)
    del reference
    torch.cuda.empty_cache()  # Nsight Compute saves and restores device memory around each replay pass

    timing = harness.time_kernel(launch, footprint_bytes=harness.footprint(scores, counts), warmup=args.warmup,
                                 repeat=args.repeat, label=f"histogram {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, n=n, bins=nbins, grid=grid[0], device=torch.cuda.get_device_name(),
                 arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
