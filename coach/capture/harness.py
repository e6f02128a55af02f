"""What every scenario program shares: its command line, its sizes, NVTX ranges, timing with CUDA
events, the correctness check and the one JSON line it prints.

A scenario program is run by ``coach record`` (plain, then under the profilers) and by hand::

    python scenarios/scenario-01-aos-particles/particles.py --variant slow

It prints exactly one JSON line on stdout (``emit``), and exits non-zero when its result is wrong.
The sizes come from the scenario's ``[model.sizes]``, so the program and the bytes model can never
disagree. torch is imported inside the functions that need it: this module is part of
``coach.capture``, which must import on a machine with only the standard library.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Timing defaults: a few warm-up runs keep module load, NVRTC compilation and allocator growth out
#: of the numbers; the median of 20 is stable to about a percent for millisecond kernels.
WARMUP = 3
REPEAT = 20
#: Set by ``coach record`` for scenarios profiled with the PyTorch profiler: where to write the trace.
KINETO_ENV = "COACH_KINETO_OUT"
#: Set by ``coach record`` when Nsight Systems records only the timed repetitions (a scenario's
#: ``nsys_timed_only``): ``time_cuda`` then brackets them with cudaProfilerStart/Stop, which nsys,
#: run with ``--capture-range=cudaProfilerApi``, takes as the start and end of its capture.
TIMED_CAPTURE_ENV = "COACH_NSYS_TIMED_ONLY"
RESULT_KEY = "coach_result"


def parse_args(description: str, argv: list[str] | None = None, *, warmup: int = WARMUP,
               repeat: int = REPEAT) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--variant", choices=("slow", "fixed"), required=True)
    parser.add_argument("--warmup", type=int, default=warmup, help="untimed runs first (default %(default)s)")
    parser.add_argument("--repeat", type=int, default=repeat, help="timed runs; the median is reported")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh from os.urandom)")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little")
    return args


def sizes(script: str | Path) -> dict[str, float]:
    """``[model.sizes]`` of the scenario.toml beside ``script``; whole numbers come back as int."""
    path = Path(script).resolve().parent / "scenario.toml"
    with path.open("rb") as fh:
        raw = tomllib.load(fh)["model"]["sizes"]
    return {k: int(v) if float(v).is_integer() else float(v) for k, v in raw.items()}


@contextmanager
def nvtx(name: str) -> Iterator[None]:
    """An NVTX push/pop range (shown on the Nsight Systems timeline, and used by ncu filters).

    Without CUDA (a CPU-only torch, where the NVTX functions are missing) the range is skipped, so
    that a program's correctness path can run on a machine without a GPU."""
    import torch

    if not torch.cuda.is_available():
        yield
        return
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


def time_cuda(fn: Callable[[], Any], *, warmup: int, repeat: int, label: str = "timed") -> list[float]:
    """Milliseconds of each of ``repeat`` calls of ``fn``, measured with CUDA events on the current
    stream, after ``warmup`` untimed calls. Each call sits in an NVTX range ``label``."""
    import torch

    for _ in range(warmup):
        with nvtx("warmup"):
            fn()
    torch.cuda.synchronize()
    times = []
    with timed_capture():
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with nvtx(label):
                start.record()
                fn()
                end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return times


@contextmanager
def timed_capture() -> Iterator[None]:
    """Bracket the block with cudaProfilerStart/Stop when ``coach record`` asks for a capture of the
    timed repetitions only (``$COACH_NSYS_TIMED_ONLY``): start-up, module loading, the check and the
    warm-up then stay out of the Nsight Systems timeline, which shows the steady state alone."""
    if os.environ.get(TIMED_CAPTURE_ENV) != "1":
        yield
        return
    import torch

    torch.cuda.profiler.start()
    try:
        yield
    finally:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def relative_error(out: Any, ref: Any) -> float:
    """||out - ref|| / ||ref|| in float64; infinite when ``out`` holds NaN or Inf (an unwritten,
    poisoned element must never pass)."""
    import torch

    o, r = out.double(), ref.double()
    if not bool(torch.isfinite(o).all()):
        return math.inf
    denom = float(torch.linalg.vector_norm(r))
    return float(torch.linalg.vector_norm(o - r)) / (denom if denom > 0 else 1.0)


@contextmanager
def kineto() -> Iterator[None]:
    """Trace the block with the PyTorch profiler when ``coach record`` asks for it (``$COACH_KINETO_OUT``)."""
    target = os.environ.get(KINETO_ENV)
    if not target:
        yield
        return
    import torch

    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        yield
    prof.export_chrome_trace(target)


def emit(*, variant: str, times_ms: list[float], unit: str, rel_error: float, tolerance: float, seed: int,
         **extra: Any) -> None:
    """Print the program's one JSON line and exit 1 if the check failed."""
    ok = math.isfinite(rel_error) and rel_error <= tolerance
    result = {
        RESULT_KEY: 1,
        "variant": variant,
        "ok": ok,
        "rel_error": rel_error if math.isfinite(rel_error) else None,
        "tolerance": tolerance,
        "unit": unit,  # what one timing covers: "launch", "step", ...
        "median_ms": statistics.median(times_ms) if times_ms else None,
        "min_ms": min(times_ms) if times_ms else None,
        "times_ms": [round(t, 6) for t in times_ms],
        "seed": seed,
        **extra,
    }
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    if not ok:
        sys.stderr.write(f"check failed: relative error {rel_error:.3g} > tolerance {tolerance:.3g}\n")
        sys.exit(1)


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The JSON line ``emit`` printed (the last one, if a program printed several), or None."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{") and f'"{RESULT_KEY}"' in line:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get(RESULT_KEY) == 1:
                return data
    return None
