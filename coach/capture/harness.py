"""What every scenario program shares: its command line, its sizes, NVTX ranges, timing with CUDA
events, the correctness check and the one JSON line it prints.

A scenario program is run by ``coach record`` (plain, then under the profilers) and by hand::

    python scenarios/scenario-01-aos-particles/particles.py --variant slow

It prints exactly one JSON line on stdout (``emit``), and exits non-zero when its result is wrong.
The sizes come from the scenario's ``[model.sizes]``, so the program and the bytes model can never
disagree. torch is imported inside the functions that need it: this module is part of
``coach.capture``, which must import on a machine with only the standard library.

Timing follows scenario 20's lesson (``time_cuda`` says how and why): warm up first; never
synchronise between calls; CUDA events around batches of back-to-back calls, or around single
calls with a read-only L2 flush queued between them where the inputs would otherwise stay warm in
the L2; one synchronisation at the end; the median of the samples. Kernel scenarios time one
operation (``time_kernel``), host-side scenarios whole steps queued back to back (``time_steps``).
CUDA C++ kernels are compiled with ``NVRTC_OPTIONS`` from ``cuda_source``, so that their machine
code maps to the lines of the scenario's .cu file and Nsight Compute can import that file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

#: Timing defaults: a few warm-up runs keep module load, NVRTC compilation and allocator growth out
#: of the numbers; the median of 20 is stable to about a percent for millisecond kernels.
WARMUP = 3
REPEAT = 20
#: A batched sample lasts about this long: its two event records (under a microsecond of GPU time
#: each) are then under 0.01% of it, and a sample of ~10 ms is still short against the seconds a
#: program runs (20 samples: 0.2 s of GPU time).
TARGET_SAMPLE_MS = 10.0
#: Calls per batched sample at most: a call of a few microseconds is launch-bound anyway, and a
#: profiled timeline should not hold tens of thousands of them.
MAX_CALLS_PER_SAMPLE = 100
#: Flush the L2 between calls where it could hold more than this share of a call's footprint from
#: the call before (L2 size / footprint): above 5% a warm L2 could flatter the time by more than the
#: run-to-run spread of a millisecond kernel (about 1%) several times over. Footprints over 20x the
#: L2 (1.2 GiB on the H200) stream past it and are timed in batches.
WARM_L2_SHARE = 0.05
#: The flush reads a buffer this many times the L2 (240 MiB on the H200's 60 MiB): every line of
#: the call before is evicted whatever the replacement policy, and the read lasts longer than the
#: host needs to queue the next call (see time_cuda).
FLUSH_L2_MULTIPLE = 4
#: Flushes timed back to back to measure one (reported, and used by the idle check).
FLUSH_PROBES = 5
#: Before the flushed samples the GPU is held in a spin while the host queues them all: this long
#: per sample (queueing a flush, two events and a launch takes the host well under 0.1 ms), and at
#: least MIN_SPIN_MS. The GPU time this costs (5 ms for 20 samples) is outside every sample.
SPIN_MS_PER_SAMPLE = 0.25
MIN_SPIN_MS = 1.0
#: Clock cycles of the spin that measures how many cycles a millisecond holds (~1 ms at 1-2 GHz).
CALIBRATION_CYCLES = 2_000_000
#: Where the device does not report its L2 size: larger than any current NVIDIA GPU's (H200 60 MiB,
#: B200 126 MB), so the decision errs towards flushing.
FALLBACK_L2_BYTES = 128 * 2**20
#: NVRTC options of every CUDA C++ scenario kernel: ``-lineinfo`` maps the machine code to source
#: lines (no effect on the code generated), which Nsight Compute's source page and
#: ``--import-source yes`` need; with ``cuda_source`` the line table names the scenario's own file.
NVRTC_OPTIONS = ("--std=c++17", "-lineinfo")
#: Set by ``coach record`` for scenarios profiled with the PyTorch profiler: where to write the trace.
KINETO_ENV = "COACH_KINETO_OUT"
#: Set by ``coach record`` when Nsight Systems records only the timed repetitions (a scenario's
#: ``nsys_timed_only``): ``time_cuda`` then brackets them with cudaProfilerStart/Stop, which nsys,
#: run with ``--capture-range=cudaProfilerApi``, takes as the start and end of its capture.
TIMED_CAPTURE_ENV = "COACH_NSYS_TIMED_ONLY"
RESULT_KEY = "coach_result"


@dataclass(frozen=True)
class Timing:
    """What ``time_cuda`` measured: milliseconds per call, one value per sample, and how."""

    times_ms: list[float]
    method: dict[str, Any] = field(default_factory=dict)

    def per(self, n: float, what: str) -> Timing:
        """The same samples per ``what`` (a token, a step), when one call serves ``n`` of them."""
        if n <= 0:
            raise ValueError("n must be positive")
        return replace(self, times_ms=[t / n for t in self.times_ms],
                       method={**self.method, "per": what, "per_call": n})


class Event(Protocol):
    def record(self) -> None: ...

    def elapsed_time(self, end: Any) -> float: ...


class Device(Protocol):
    """What ``time_cuda`` needs of a GPU (the CUDA device through torch, or a simulated one)."""

    def event(self) -> Event: ...

    def synchronize(self) -> None: ...

    def now(self) -> float: ...

    def l2_bytes(self) -> int: ...

    def flusher(self, nbytes: int) -> Callable[[], None]: ...

    def spin(self, ms: float) -> None: ...


class _TorchDevice:
    """The current CUDA device and stream, through torch."""

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self._cycles_per_ms: float | None = None

    def event(self) -> Event:
        return self._torch.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()

    def now(self) -> float:
        return time.perf_counter()

    def l2_bytes(self) -> int:
        props = self._torch.cuda.get_device_properties(self._torch.cuda.current_device())
        return int(getattr(props, "L2_cache_size", 0) or FALLBACK_L2_BYTES)

    def flusher(self, nbytes: int) -> Callable[[], None]:
        """A read of ``nbytes`` (a sum into one float): it evicts the L2 and leaves it clean."""
        torch = self._torch
        buf = torch.zeros(max(1, nbytes // 4), dtype=torch.float32, device="cuda")
        out = torch.empty((), dtype=torch.float32, device="cuda")
        return lambda: torch.sum(buf, dim=0, out=out)

    def spin(self, ms: float) -> None:
        """Keep the stream busy for about ``ms`` (torch.cuda._sleep spins a kernel for a number of
        clock cycles, measured here once against CUDA events)."""
        torch = self._torch
        if self._cycles_per_ms is None:
            start, end = self.event(), self.event()
            start.record()
            torch.cuda._sleep(CALIBRATION_CYCLES)
            end.record()
            end.synchronize()
            self._cycles_per_ms = CALIBRATION_CYCLES / max(start.elapsed_time(end), 1e-3)
        torch.cuda._sleep(int(ms * self._cycles_per_ms))


def footprint(*arrays: Any) -> int:
    """Bytes of the arrays one call reads and writes (torch tensors, CuPy or NumPy arrays)."""
    return int(sum(int(a.nbytes) for a in arrays))


def cuda_source(path: str | Path) -> str:
    """The CUDA C++ file at ``path`` as NVRTC should compile it: behind a ``#line 1 "<path>"``
    directive, so that the line table (``-lineinfo``) names this file rather than the temporary
    file CuPy hands NVRTC, and Nsight Compute (``--import-source yes``) can read it at profile time."""
    p = Path(path).resolve()
    quoted = str(p).replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{quoted}"\n' + p.read_text(encoding="utf-8")


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


def time_kernel(fn: Callable[[], Any], *, footprint_bytes: int, warmup: int, repeat: int,
                label: str = "timed", device: Device | None = None) -> Timing:
    """Time one operation of a kernel scenario (a launch, or the few launches of one result):
    ``footprint_bytes`` is what one call reads and writes, from which ``time_cuda`` decides whether
    the L2 must be flushed between calls."""
    return time_cuda(fn, warmup=warmup, repeat=repeat, label=label, footprint_bytes=footprint_bytes, device=device)


def time_steps(step: Callable[[], Any], *, warmup: int, repeat: int, label: str, calls_per_sample: int = 1,
               device: Device | None = None) -> Timing:
    """Time whole steps (an optimizer step, an epoch, a pass) queued back to back, as a training or
    serving loop runs them, with no L2 flush: what a step leaves in the caches is what the next one
    finds in the real loop too, and host-side effects (launches, synchronisations, allocations,
    pageable copies, input preparation) land in the time because nothing else hides them. One NVTX
    range ``label`` per sample; ``calls_per_sample`` steps per sample (default 1, so that the profiled
    timeline holds ``repeat`` steps, as the scenarios' evidence counts assume)."""
    return time_cuda(step, warmup=warmup, repeat=repeat, label=label, calls_per_sample=calls_per_sample,
                     flush_l2=False, device=device)


def time_cuda(fn: Callable[[], Any], *, warmup: int, repeat: int, label: str = "timed",
              calls_per_sample: int | None = None, footprint_bytes: int | None = None,
              flush_l2: bool | None = None, device: Device | None = None) -> Timing:
    """Milliseconds per call of ``fn``: ``repeat`` samples, measured as scenario 20 teaches.

    Warm-up: ``warmup`` calls first, each waited for (compilation, autotuning, module loading and
    allocator growth stay out of the samples; the fastest of them sizes the samples).

    Then one of two methods, never synchronising between calls (a synchronisation empties the queue,
    and the next sample would hold the host's launch latency: 36 us on a 258 us kernel in scenario
    20's first recording):

    - **batched** (the inputs cannot stay warm in the L2, or ``flush_l2=False``): each sample is
      ``calls_per_sample`` back-to-back calls between two CUDA events, the time per call their
      elapsed time over the count. By default the count makes a sample last about
      ``TARGET_SAMPLE_MS``, so the two event records (well under a microsecond each on the GPU) are
      under 0.01% of it; only the first sample can hold a launch latency (the queue is empty after
      the warm-up), and the median sets it aside.
    - **flushed** (``footprint_bytes`` small enough that the L2 could hold more than
      ``WARM_L2_SHARE`` of it from the call before, or ``flush_l2=True``): each sample is one call
      between two events, with a read of a buffer ``FLUSH_L2_MULTIPLE`` times the L2 queued before
      it, outside the events. The flush's own time is therefore not in the sample, and it is not
      subtracted either (a difference of two noisy medians is noisier than either). Cost: ~60 us
      of GPU time per call for the flush (240 MiB at ~4 TB/s) and, per sample, the start event
      between the flush and the call (well under a microsecond). The flush reads and does
      not write: it leaves clean lines, so a sample never pays for writing back the flush's data
      (a write-based flush, as do_bench's, leaves up to an L2 of dirty lines that the next call's
      misses evict: 60 MiB at 4.2 TB/s, ~15 us). What the call itself writes stays in the L2 past
      its end event and is written back during the next flush: the same convention as do_bench.
      So that no sample can wait for the host even where a launch is slow, the GPU is first held
      in a spin (``SPIN_MS_PER_SAMPLE`` per sample) while the host queues every sample; the result
      says whether the host did finish queueing before the GPU left the spin (``pre_queued``).

    All samples are queued before the one synchronisation at the end. Each sample sits in an NVTX
    range ``label`` (each flush in one named "l2 flush"); under ``$COACH_NSYS_TIMED_ONLY`` the samples
    are bracketed by cudaProfilerStart/Stop (``timed_capture``). ``device`` replaces the CUDA
    device (tests drive a simulated one).
    """
    dev = device if device is not None else _TorchDevice()
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    l2 = dev.l2_bytes()
    flush = flush_l2 if flush_l2 is not None else (
        footprint_bytes is not None and l2 > WARM_L2_SHARE * max(footprint_bytes, 1))
    if flush and calls_per_sample not in (None, 1):
        raise ValueError("a flushed sample is one call: flush_l2 and calls_per_sample > 1 exclude each other")
    fastest = _warm_up(fn, warmup, dev)
    method: dict[str, Any] = {"warmup": warmup, "samples": repeat, "range": label, "l2_bytes": l2,
                              "footprint_bytes": footprint_bytes}
    if flush:
        times = _flushed(fn, repeat, label, dev, FLUSH_L2_MULTIPLE * l2, method)
    else:
        n = calls_per_sample or _calls_per_sample(fastest)
        times = _batched(fn, repeat, n, label, dev)
        method.update(method="batched", calls_per_sample=n, l2_flush=False)
    return Timing(times, method)


def _warm_up(fn: Callable[[], Any], warmup: int, dev: Device) -> float | None:
    """Run the warm-up calls, each waited for; the fastest one's wall time in ms (None without any)."""
    fastest = None
    for _ in range(warmup):
        t0 = dev.now()
        with nvtx("warmup"):
            fn()
        dev.synchronize()
        ms = (dev.now() - t0) * 1e3
        fastest = ms if fastest is None else min(fastest, ms)
    return fastest


def _calls_per_sample(fastest_ms: float | None) -> int:
    if fastest_ms is None or fastest_ms <= 0:
        return 1
    return max(1, min(MAX_CALLS_PER_SAMPLE, math.ceil(TARGET_SAMPLE_MS / fastest_ms)))


def _batched(fn: Callable[[], Any], repeat: int, n: int, label: str, dev: Device) -> list[float]:
    events = [(dev.event(), dev.event()) for _ in range(repeat)]
    with timed_capture():
        for start, end in events:
            with nvtx(label):
                start.record()
                for _ in range(n):
                    fn()
                end.record()
        dev.synchronize()  # once, after every sample is queued
    return [start.elapsed_time(end) / n for start, end in events]


def _flushed(fn: Callable[[], Any], repeat: int, label: str, dev: Device, flush_bytes: int,
             method: dict[str, Any]) -> list[float]:
    flush = dev.flusher(flush_bytes)
    dev.spin(0.0)  # the spin's first use measures the clock: here, outside what is checked below
    # The flush's own time, for the record: a few flushes back to back.
    f0, f1 = dev.event(), dev.event()
    flush()
    f0.record()
    for _ in range(FLUSH_PROBES):
        flush()
    f1.record()
    dev.synchronize()
    flush_ms = f0.elapsed_time(f1) / FLUSH_PROBES
    # Hold the GPU while the host queues every sample: then no sample can wait for a launch, however
    # slow the host. Checked below: the host must have finished queueing before the GPU left the spin.
    spin_ms = max(MIN_SPIN_MS, repeat * SPIN_MS_PER_SAMPLE)
    s0, s1 = dev.event(), dev.event()
    events = [(dev.event(), dev.event()) for _ in range(repeat)]
    with timed_capture():
        s0.record()
        before = dev.now()
        dev.spin(spin_ms)
        s1.record()
        for start, end in events:
            with nvtx("l2 flush"):
                flush()
            with nvtx(label):
                start.record()
                fn()
                end.record()
        queued_ms = (dev.now() - before) * 1e3
        dev.synchronize()  # once, after every sample is queued
    spun_ms = s0.elapsed_time(s1)
    pre_queued = queued_ms <= spun_ms
    method.update(method="flushed", calls_per_sample=1, l2_flush=True, flush_bytes=flush_bytes,
                  flush_ms=round(flush_ms, 6), queued_ms=round(queued_ms, 4), spin_ms=round(spun_ms, 4),
                  pre_queued=pre_queued)
    if not pre_queued:
        sys.stderr.write(f"harness: the host took {queued_ms:.2f} ms to queue the samples, longer than the "
                         f"{spun_ms:.2f} ms the GPU was held: a sample may hold launch latency\n")
    return [start.elapsed_time(end) for start, end in events]


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


def emit(*, variant: str, times_ms: list[float] | None = None, unit: str, rel_error: float, tolerance: float,
         seed: int, timing: Timing | None = None, **extra: Any) -> None:
    """Print the program's one JSON line and exit 1 if the check failed.

    Give the samples either as ``times_ms`` or as a ``Timing`` (``timing``), whose method is kept
    beside them: ``timing`` (how the samples were taken) and, for ``coach check``, ``timer``,
    ``l2_flush``, ``working_set_bytes``, ``range`` and ``gpu`` (the ``device`` a program names)."""
    if (times_ms is None) == (timing is None):
        raise TypeError("emit takes the samples as times_ms or as timing, not both or neither")
    if timing is not None:
        times_ms = timing.times_ms
        m = timing.method
        extra = {"timing": m, "timer": m.get("timer", "cuda-events"), "l2_flush": bool(m.get("l2_flush")),
                 "range": m.get("range"),
                 **({"working_set_bytes": m["footprint_bytes"]} if m.get("footprint_bytes") else {}), **extra}
    assert times_ms is not None
    if "device" in extra and "gpu" not in extra:
        extra["gpu"] = extra["device"]  # the name coach check reads
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
