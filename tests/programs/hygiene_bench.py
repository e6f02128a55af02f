"""A DRAM read-bandwidth benchmark written three ways, for `coach check` to judge.

    python hygiene_bench.py --case clean   --out clean.json
    python hygiene_bench.py --case warm-l2 --out warm-l2.json
    python hygiene_bench.py --case unsync  --out unsync.json

One Triton kernel reads ``bytes_per_rep`` bytes per launch: program ``pid`` of ``PROGRAMS`` reads
``PASSES`` blocks of ``BLOCK`` floats, block ``(pid * PASSES + p) % n_blocks`` on pass ``p``, with
``.cg`` loads (cached in L2 only), and writes one partial sum per lane. Every case reads 1 GiB per
launch; what differs is how the reads are arranged and timed:

``clean``    a 1 GiB buffer (17x the H200's 60 MiB L2), each block read once per launch; CUDA events
             around each run; warm-up (Triton compilation, module load) outside the timed runs; 30 runs.
             A read kernel over DRAM: it should report about the measured read ceiling, ~4.1-4.3 TB/s.
``warm-l2``  a 16 MiB buffer, each block read 64 times per launch, runs back to back without clearing
             the L2: the runs read L2, not DRAM, and report more than any DRAM can deliver.
``unsync``   the clean kernel, timed with a host timer around the launch alone: the launch returns
             before the kernel runs, so each "run" measures the launch (tens of microseconds for a
             ~250 us kernel) and the implied bandwidth is impossible.

Each timed run sits in an NVTX range ``timed`` (the warm-up in ``warmup``), so Nsight Systems shows
what was timed. The result is checked (the partial sums add up to the buffer's sum times the reads
per block) on fresh random inputs. The JSON (``--out`` and stdout) carries what ``coach check``
reads: times_ms, bytes_per_rep, working_set_bytes, timer, l2_flush, inputs, gpu, range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

BLOCK = 1024  # floats per block: 4 KiB
PROGRAMS = 2048  # ~15 per SM on the H200's 132 SMs: enough loads in flight to saturate DRAM
PASSES = 128  # blocks per program: PROGRAMS * PASSES * BLOCK * 4 B = 1 GiB per launch
CASES = {
    # case: (buffer floats, timer)
    "clean": (PROGRAMS * PASSES * BLOCK, "cuda-events"),
    "warm-l2": ((16 << 20) // 4, "cuda-events"),
    "unsync": (PROGRAMS * PASSES * BLOCK, "host"),
}
WARMUP = 3
REPEAT = 30
TOLERANCE = 1e-4  # fp32 partial sums of 128 uniform values, summed in fp64: ~1e-6 relative


@triton.jit
def read_blocks(x_ptr, out_ptr, n_blocks, passes, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for p in range(passes):
        blk = (pid * passes + p) % n_blocks
        offs = blk.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, cache_modifier=".cg")
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


def launch(x: torch.Tensor, out: torch.Tensor, programs: int, passes: int) -> None:
    read_blocks[(programs,)](x, out, x.numel() // BLOCK, passes, BLOCK=BLOCK)


def expected_total(x: torch.Tensor, programs: int, passes: int) -> float:
    """The sum of all partial sums: every block is read programs * passes / n_blocks times."""
    reads_per_block = programs * passes // (x.numel() // BLOCK)
    return float(x.double().sum()) * reads_per_block


def check(x: torch.Tensor, out: torch.Tensor, programs: int, passes: int) -> float:
    """Relative error of the result; infinite if anything is not finite."""
    got = float(out.double().sum())
    want = expected_total(x, programs, passes)
    return abs(got - want) / abs(want) if torch.isfinite(out).all() else float("inf")


def timed_runs(case: str, x: torch.Tensor, out: torch.Tensor) -> list[float]:
    nvtx = torch.cuda.nvtx
    for _ in range(WARMUP):
        nvtx.range_push("warmup")
        launch(x, out, PROGRAMS, PASSES)
        nvtx.range_pop()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEAT):
        if case == "unsync":  # the mistake this case plants: no synchronisation before reading the timer
            nvtx.range_push("timed")
            t0 = time.perf_counter()
            launch(x, out, PROGRAMS, PASSES)
            t1 = time.perf_counter()
            nvtx.range_pop()
            times.append((t1 - t0) * 1e3)
        else:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            nvtx.range_push("timed")
            start.record()
            launch(x, out, PROGRAMS, PASSES)
            end.record()
            nvtx.range_pop()
            end.synchronize()
            times.append(start.elapsed_time(end))
    torch.cuda.synchronize()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), required=True)
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON result")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh from os.urandom)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    n, timer = CASES[args.case]
    x = torch.rand(n, device="cuda")  # random inputs: never zeros
    out = torch.full((PROGRAMS * BLOCK,), float("nan"), device="cuda")  # poisoned: an unwritten lane fails the check
    times = timed_runs(args.case, x, out)
    err = check(x, out, PROGRAMS, PASSES)
    result = {
        "benchmark": "hygiene_bench",
        "case": args.case,
        "times_ms": [round(t, 6) for t in times],
        "median_ms": statistics.median(times),
        "bytes_per_rep": PROGRAMS * PASSES * BLOCK * 4,
        "working_set_bytes": n * 4,
        "timer": timer,
        "l2_flush": False,
        "inputs": "random",
        "range": "timed",
        "warmup": WARMUP,
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "seed": seed,
        "rel_error": err,
        "ok": err <= TOLERANCE,
    }
    text = json.dumps(result)
    args.out.write_text(text + "\n")
    print(text)
    if not result["ok"]:
        print(f"check failed: relative error {err:.3g} > {TOLERANCE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
