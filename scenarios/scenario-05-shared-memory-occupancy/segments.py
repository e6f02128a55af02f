"""Scenario 05: sum a dictionary-encoded column segment by segment, the dictionary in shared memory.

    python segments.py --variant slow     # 128 threads per block: 64 KB of shared memory feeds 4 warps
    python segments.py --variant fixed    # 1024 threads per block: the same 64 KB feeds 32 warps

Both variants build the same column from the same seed: 128-byte pages of 31 random 14-bit codes and
a link, each segment's 64 pages scattered at random over the pool, and a random dictionary of 16,384
floats in [0.5, 1.5). Each runs the kernel once on a poisoned output (NaN everywhere) and compares
every sum with a float64 reference, then times the kernel with CUDA events (warm-up, then the median
of the repeats) and prints one JSON line (coach.capture.harness.emit). The kernels live in
segments.cu and are compiled at run time through NVRTC; both get the same dynamic shared memory (the
dictionary, 64 KB) and the largest shared-memory carve-out, so that shared memory, not the carve-out
the driver would pick, decides how many blocks fit on an SM.

The work: read every page once, 128 bytes, and write one float per segment. Each warp reads its
segment's pages one after the other (the next address is in the page), so the kernel waits on memory
latency and its speed is the number of warps each SM holds: three blocks (shared memory), times the
warps per block.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
LANES, DICT, SEGMENTS_PER_WARP = 32, 16384, 8  # as in segments.cu
CODES = LANES - 1
THREADS = {"slow": 128, "fixed": 1024}
KERNELS = {"slow": "sum_segments_128", "fixed": "sum_segments_1024"}
#: Largest shared-memory carve-out, in percent: 228 KB per SM on the H200.
CARVEOUT_PCT = 100
#: fp32 sums of 64 positive terms per lane, then a tree of 32: at most about 70 roundings of 2^-24
#: (4e-6) and typically far fewer, on positive terms (no cancellation); 1e-5 leaves room without
#: hiding a bug (one page missed moves a segment's sum by about 1.5%).
TOLERANCE = 1e-5


def build_column(pages: int, chain: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The page pool (pages x 32 int32: 31 codes and the link), each segment's pages in chain order
    (segments x chain, int64), and the segments' first pages (int32)."""
    segments = pages // chain
    pool = torch.randint(0, DICT, (pages, LANES), dtype=torch.int32, device=gen.device, generator=gen)
    order = torch.randperm(pages, device=gen.device, generator=gen).view(segments, chain)  # scattered pages
    links = torch.full((segments, chain), -1, dtype=torch.int32, device=gen.device)
    links[:, :-1] = order[:, 1:].to(torch.int32)
    pool[order.flatten(), LANES - 1] = links.flatten()
    return pool, order, order[:, 0].to(torch.int32).contiguous()


def reference_sums(pool: torch.Tensor, order: torch.Tensor, dictionary: torch.Tensor) -> torch.Tensor:
    """sums[s]: the decoded values of segment s's codes, in float64."""
    page_sums = dictionary.double()[pool[:, :CODES].long()].sum(dim=1)
    return page_sums[order].sum(dim=1)


def main() -> None:
    import cupy  # here, so that the column and its reference can be built on a machine without a GPU

    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    pages, chain = size["pages"], size["chain_pages"]
    segments = pages // chain
    threads = THREADS[args.variant]
    per_block = threads // LANES * SEGMENTS_PER_WARP
    if (size["page_words"] != LANES or size["dict_entries"] != DICT or pages % chain
            or any(segments % (t // LANES * SEGMENTS_PER_WARP) for t in THREADS.values())):
        raise SystemExit("sizes do not match segments.cu: 32-word pages, 16,384 dictionary entries, whole "
                         "chains, whole blocks of segments for both block sizes")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    pool, order, heads = build_column(pages, chain, gen)
    dictionary = torch.rand(DICT, device="cuda", generator=gen) + 0.5
    sums = torch.empty(segments, device="cuda")
    module = cupy.RawModule(code=harness.cuda_source(HERE / "segments.cu"), options=harness.NVRTC_OPTIONS)
    kernel = module.get_function(KERNELS[args.variant])
    dict_bytes = DICT * size["float_bytes"]
    kernel.max_dynamic_shared_size_bytes = dict_bytes  # above the 48 KB a kernel gets without asking
    kernel.preferred_shared_memory_carveout = CARVEOUT_PCT
    kernel_args = (cupy.asarray(pool), cupy.asarray(heads), cupy.asarray(dictionary), cupy.asarray(sums),
                   np.int32(segments))

    def launch() -> None:
        kernel((segments // per_block,), (threads,), kernel_args, shared_mem=dict_bytes)

    sums.fill_(float("nan"))  # poison: a sum the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = reference_sums(pool, order, dictionary)
    error = harness.relative_error(sums, reference)
    del reference, order
    torch.cuda.empty_cache()

    timing = harness.time_kernel(launch, footprint_bytes=harness.footprint(pool, heads, dictionary, sums),
                                 warmup=args.warmup, repeat=args.repeat, label=f"sum_segments {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, segments=segments, chain_pages=chain, threads_per_block=threads,
                 kernel=KERNELS[args.variant], registers=kernel.num_regs,
                 shared_bytes=kernel.shared_size_bytes + dict_bytes,
                 device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
