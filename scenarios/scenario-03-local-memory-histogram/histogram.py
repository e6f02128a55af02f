"""Scenario 03: a 16-bin histogram of the high nibbles of every 256-byte record.

    python histogram.py --variant slow     # counters in a per-thread array indexed by data (local memory)
    python histogram.py --variant fixed    # the same counters in shared memory, one column per thread

Both variants draw the same random records from the same seed, run the kernel once on a poisoned
output (-1 everywhere) and compare every count with torch's (counts are integers: they must match
exactly), then time the kernel with CUDA events (warm-up, then the median of the repeats) and print
one JSON line (coach.capture.harness.emit), with the registers and the per-thread local memory the
compiler gave the kernel. The kernels live in histogram.cu and are compiled at run time through NVRTC.

The work: read every byte once and write 16 counts per record, 320 bytes per record. The slow
kernel adds a local-memory load and store per byte: 8 bytes of L1 traffic per byte of input, scattered
over up to 32 sectors per warp access.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
BINS, WORDS, THREADS = 16, 64, 256  # as in histogram.cu
KERNELS = {"slow": "nibble_hist_local", "fixed": "nibble_hist_shared"}
#: Integer counts: exact or wrong.
TOLERANCE = 0.0


def reference_counts(words: torch.Tensor) -> torch.Tensor:
    """counts[b, r]: how many bytes of record r have high nibble b (words: WORDS x records int32)."""
    nibbles = words.view(torch.uint8).view(WORDS, -1, 4) >> 4  # little-endian: byte k of a word at 4w + k
    return torch.stack([(nibbles == b).sum(dim=(0, 2), dtype=torch.int32) for b in range(BINS)])


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    records = size["records"]
    if size["record_bytes"] != 4 * WORDS or records % THREADS:
        raise SystemExit(f"records must be {4 * WORDS} bytes and a multiple of {THREADS} in number")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    # Random bytes: uniform high nibbles, about 16 bytes per bin per record.
    words = torch.randint(-2**31, 2**31, (WORDS, records), dtype=torch.int32, device="cuda", generator=gen)
    counts = torch.empty(BINS, records, dtype=torch.int32, device="cuda")
    module = cupy.RawModule(code=harness.cuda_source(HERE / "histogram.cu"), options=harness.NVRTC_OPTIONS)
    kernel = module.get_function(KERNELS[args.variant])
    grid = (records // THREADS,)
    kernel_args = (cupy.asarray(words), cupy.asarray(counts), np.int32(records))

    def launch() -> None:
        kernel(grid, (THREADS,), kernel_args)

    counts.fill_(-1)  # poison: a count the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = reference_counts(words)
    error = harness.relative_error(counts, reference)
    del reference
    torch.cuda.empty_cache()

    timing = harness.time_kernel(launch, footprint_bytes=harness.footprint(words, counts), warmup=args.warmup,
                                 repeat=args.repeat, label=f"histogram {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, records=records, kernel=KERNELS[args.variant], registers=kernel.num_regs,
                 local_bytes_per_thread=kernel.local_size_bytes, shared_bytes=kernel.shared_size_bytes,
                 device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
