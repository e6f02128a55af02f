"""Scenario 02: transpose a rows x cols float32 matrix through 32 x 32 tiles in shared memory.

    python transpose.py --variant slow     # tile[32][32]: each column read is a 32-way bank conflict
    python transpose.py --variant fixed    # tile[32][33]: one word of padding per row, no conflict

Both variants draw the same matrix from the same seed, run the kernel once on a poisoned (NaN)
output and compare every element with torch's transpose (a copy: the result must be exact), then
time the kernel with CUDA events (warm-up, then the median of the repeats) and print one JSON line
(coach.capture.harness.emit). The kernels live in transpose.cu and are compiled at run time through
NVRTC.

The work: read and write every element once, 8 bytes per element. Both kernels access global
memory coalesced and move the same DRAM bytes; the slow one reads each tile column from shared
memory in 32 passes instead of one, so shared memory, not DRAM, sets its time.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
TILE, BLOCK_ROWS = 32, 8  # as in transpose.cu
KERNELS = {"slow": "transpose_tile32", "fixed": "transpose_tile33"}
#: A transpose moves values without arithmetic: every element must come out bit for bit.
TOLERANCE = 0.0


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    rows, cols = size["rows"], size["cols"]
    if rows % TILE or cols % TILE:
        raise SystemExit(f"rows and cols must be multiples of {TILE}")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    matrix = torch.randn(rows, cols, device="cuda", generator=gen)
    out = torch.empty(cols, rows, device="cuda")
    module = cupy.RawModule(code=harness.cuda_source(HERE / "transpose.cu"), options=harness.NVRTC_OPTIONS)
    kernel = module.get_function(KERNELS[args.variant])
    grid, block = (cols // TILE, rows // TILE), (TILE, BLOCK_ROWS)
    kernel_args = (cupy.asarray(matrix), cupy.asarray(out), np.int32(rows), np.int32(cols))

    def launch() -> None:
        kernel(grid, block, kernel_args)

    out.fill_(float("nan"))  # poison: an element the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    error = harness.relative_error(out, matrix.t())

    timing = harness.time_kernel(launch, footprint_bytes=harness.footprint(matrix, out), warmup=args.warmup,
                                 repeat=args.repeat, label=f"transpose {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, rows=rows, cols=cols, kernel=KERNELS[args.variant], registers=kernel.num_regs,
                 shared_bytes=kernel.shared_size_bytes, device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
