"""Scenario 05: softmax of every row of a rows x cols float32 matrix, the row cached in shared memory.

    python softmax.py --variant slow     # 128 threads per row: 64 KB of shared memory feeds 4 warps
    python softmax.py --variant fixed    # 1024 threads per row: the same 64 KB feeds 32 warps

Both variants draw the same matrix from the same seed, run the kernel once on a poisoned (NaN)
output and compare it with torch's softmax in float64, then time the kernel with CUDA events
(warm-up, then the median of the repeats) and print one JSON line (coach.capture.harness.emit). The
kernels live in softmax.cu and are compiled at run time through NVRTC; both get the same dynamic
shared memory (the row, cols x 4 bytes) and the largest shared-memory carve-out, so that shared
memory, not the carve-out the driver would pick, decides how many blocks fit on an SM.

The work: read the matrix once and write it once. With the row in shared memory each block needs
64 KB; only three blocks fit on an SM, and with 128 threads per block that is 12 warps to hide the
DRAM latency of the loads.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
THREADS = {"slow": 128, "fixed": 1024}
KERNELS = {"slow": "softmax_rows_128", "fixed": "softmax_rows_1024"}
#: Largest shared-memory carve-out, in percent: 228 KB per SM on the H200.
CARVEOUT_PCT = 100
#: fp32 with the fast exponential (__expf, a few ulp for arguments in [-20, 0]) and sums of 16-128
#: terms per thread before a tree: about 1e-6 relative error; 1e-5 leaves room without hiding a bug.
TOLERANCE = 1e-5


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    rows, cols = size["rows"], size["cols"]
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    x = torch.randn(rows, cols, device="cuda", generator=gen)
    out = torch.empty_like(x)
    module = cupy.RawModule(code=(HERE / "softmax.cu").read_text(), options=("--std=c++17", "-lineinfo"))
    kernel = module.get_function(KERNELS[args.variant])
    row_bytes = cols * size["float_bytes"]
    kernel.max_dynamic_shared_size_bytes = row_bytes  # above the 48 KB a kernel gets without asking
    kernel.preferred_shared_memory_carveout = CARVEOUT_PCT
    threads = THREADS[args.variant]
    kernel_args = (cupy.asarray(x), cupy.asarray(out), np.int32(cols))

    def launch() -> None:
        kernel((rows,), (threads,), kernel_args, shared_mem=row_bytes)

    out.fill_(float("nan"))  # poison: an element the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = torch.softmax(x.double(), dim=1)
    error = harness.relative_error(out, reference)
    del reference
    torch.cuda.empty_cache()

    times = harness.time_cuda(launch, warmup=args.warmup, repeat=args.repeat, label=f"softmax {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, times_ms=times, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, rows=rows, cols=cols, threads_per_block=threads, kernel=KERNELS[args.variant],
                 registers=kernel.num_regs, shared_bytes=kernel.shared_size_bytes + row_bytes,
                 device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
