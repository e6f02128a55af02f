"""Measurement hygiene: what makes a number untrustworthy, found in a trace or a benchmark's output.

``check(profiles, benchmark)`` looks at Nsight Compute profiles, timelines (Nsight Systems, PyTorch
profiler) and the JSON a benchmark script wrote (``read_benchmark``), alone or together (a
benchmark run under Nsight Systems: its JSON and its trace), and answers, check by check:

``repetitions``      too few timed runs to know the spread (benchmark JSON; a repeated NVTX range)
``spread``           a large spread between runs, or a first run far slower than the rest
``warm-l2``          inputs that fit in L2 and repeat without a flush, so the runs after the first read
                     from L2 (bandwidth above the DRAM ceiling confirms it)
``unsynchronised``   timing that does not wait for the GPU: a rate no memory could deliver, an NVTX
                     timing range that closes before its GPU work ends (no CUDA event inside it), a
                     host time per run shorter than the GPU time of the run
``compile-in-timing`` module loading (JIT, Triton compilation, lazy loading) or library handle
                     creation inside a timed range, in some runs and not others
``zero-inputs``      inputs that flatter the hardware: declared zeros, a matmul faster than the
                     measured random-data ceiling, DRAM bytes far below the bytes model
``clocks``           the SM clock a Nsight Compute report ran at against the GPU's maximum
``persisting-l2``    a persisting-L2 set-aside in a Nsight Compute report

Each flag is a ``Finding`` (category ``measurement``) with its evidence and the fix;
``details["severity"]`` is "warning" (the number cannot be trusted as it is) or "info" (worth
knowing). ``Report`` also lists the checks that passed and those the inputs could not answer.
``compact(profile)`` gives one line per flag for ``coach load``.

The benchmark JSON (one object, or JSON lines whose last object has the times) carries
``times_ms`` (each timed run, in ms: required) and, where known: ``bytes_per_rep`` (bytes one run
reads and writes), ``working_set_bytes`` (distinct bytes the runs touch), ``flop_per_rep`` and
``precision`` (a ``coach.analyze.hardware.PRECISION_FIELDS`` key), ``gpu`` (the device name),
``timer`` ("cuda-events", "host", ...), ``l2_flush`` (true when the L2 is cleared between runs),
``inputs`` ("random", "zeros", ...), ``range`` (the NVTX range around each timed run), and
``sm_clock_mhz`` / ``sm_clock_max_mhz``. The scenario harness's output (``coach_result``) is one.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding
from coach.analyze.hardware import GPU, Ceilings, ceilings, match
from coach.analyze.kernel_rules._common import fmt_bytes, fmt_rate, fmt_time
from coach.analyze.timeline import TimelineAnalysis, interval_join
from coach.analyze.timeline_rules._shared import base_api_name
from coach.analyze.timeline_rules.warmup import LOADING_CALLS
from coach.errors import InputError
from coach.model import KernelProfile, Profile, Timeline

# Too few timed runs: the 10th and 90th percentiles, which bound the spread, are distinct order
# statistics only from 10 samples on.
MIN_REPETITIONS = 10
# Repeated timings of a millisecond-scale GPU workload on an idle GPU agree to about a percent (the
# scenario harness's median of 20, calibrate's p20-p80 band); a 10-90 percentile spread of 10% of
# the median is several times that: something besides the work varies (clocks, other work, warm-up).
SPREAD_PCT = 10.0
# A first timed run over twice the median of the rest paid for something the others did not: JIT
# compilation, autotuning, lazy module loading or allocator growth (the recorded H200 traces show
# first launches of 0.84-10.3 ms against ~10 us steady state: far beyond 2x).
FIRST_RUN_FACTOR = 2.0
# A rate above a measured ceiling by more than the measurement's own run-to-run spread is not DRAM:
# the H200's read-only bandwidth measured 4.13 and 4.28 TB/s in two earlier runs and 4.19 TB/s in the
# calibration kept in hardware/measured/h200.json: a 3.6% spread; 5% clears it.
CEILING_MARGIN = 0.05
# A timing that reads shorter than the GPU time of the work it times cannot have waited for it;
# the GPU time is the span of the run's own operations, so a synchronised host timer reads at least
# that. 10% allows for clock conversion and rounding between host and device timestamps.
HOST_UNDER_GPU = 0.9
# A kernel at boost runs within a few percent of its maximum clock (the recorded strided-copy report:
# 1.97-1.98 of 1.98 GHz); NVIDIA's base clocks sit about 20% below boost on data-centre parts (H100
# SXM5: 1.59 against 1.98 GHz), which is where Nsight Compute's default --clock-control base puts them.
BOOST_RATIO = 0.9
# DRAM bytes under half the bytes model: the model counts each input read once and each output
# written once, the least the work can move; a run that moves half of it read its data from
# somewhere else (L2 kept warm, compressed or zero pages).
BYTES_MODEL_FRACTION = 0.5

WARMUP_RANGE = r"(?i)warm"  # ranges named as warm-up are outside the measurement by intent
OPERATOR_DOMAIN = "cpu_op"  # PyTorch operator ranges: not timing regions
EVENT_RECORD = r"^cu(da)?EventRecord"
#: One-time set-up that must not sit in a timed region: module loading (lazy loading, JIT, Triton's
#: compiled kernels), run-time compilation, and library handle creation (cuBLAS, cuBLASLt, cuDNN).
ONE_TIME_CALLS = LOADING_CALLS + r"|^nvrtcCompileProgram$|^cublas(Lt)?Create|^cudnnCreate"
ZERO_INPUTS = ("zeros", "zero", "ones", "constant", "empty")

BENCHMARK = "benchmark"  # Evidence.source for numbers from the benchmark's own JSON
SYNC_FIX = ("Kernel launches return before the kernel runs: record CUDA events around the work and read "
            "elapsed_time after event.synchronize(), or call torch.cuda.synchronize() before reading a host timer.")

CHECKS: dict[str, str] = {
    "repetitions": "enough repetitions",
    "spread": "spread between runs",
    "warm-l2": "inputs warm in L2",
    "unsynchronised": "timing waits for the GPU",
    "compile-in-timing": "no compilation or module loading in the timed region",
    "zero-inputs": "inputs that flatter the hardware",
    "clocks": "clocks",
    "persisting-l2": "persisting-L2 window",
}


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Benchmark:
    """A benchmark script's own timings and what it says about them (see module doc)."""

    path: str
    times_ms: tuple[float, ...]
    raw: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        return self.raw.get(key)

    def number(self, key: str) -> float | None:
        v = self.raw.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_ms) * 1e-3


#: Bytes of a file's head that tell a benchmark's JSON from a PyTorch-profiler trace (both JSON).
_HEAD_BYTES = 1 << 16


def looks_like_benchmark(path: str | Path) -> bool:
    """Whether ``path`` holds a benchmark's JSON output (``times_ms``) rather than a profile."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return False
    # A benchmark's output is text (JSON, or JSON lines among other output). A binary file is never
    # one: an nsys SQLite export embeds the profiled program's source, times_ms and all.
    if b"\x00" in head:
        return False
    try:
        head[:-4].decode("utf-8")  # the last bytes may cut a character in two
    except UnicodeDecodeError:
        return False
    return b'"times_ms"' in head and b'"traceEvents"' not in head


def is_benchmark(data: Any) -> bool:
    return isinstance(data, dict) and "traceEvents" not in data and isinstance(data.get("times_ms"), list)


def read_benchmark(path: str | Path) -> Benchmark:
    """A benchmark's JSON output: one object, or JSON lines (the last object with ``times_ms``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(p, f"cannot be read ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise InputError(p, "is not a benchmark result: not UTF-8 text (expected a JSON object with times_ms)") from None
    candidates: list[Any] = []
    try:
        candidates = [json.loads(text)]
    except ValueError:
        for line in text.splitlines():
            if line.strip().startswith("{"):
                try:
                    candidates.append(json.loads(line))
                except ValueError:
                    continue
    found = [c for c in candidates if is_benchmark(c)]
    if not found:
        raise InputError(p, "is not a benchmark result: expected a JSON object with times_ms (each timed run, in ms)")
    data = found[-1]
    times = data["times_ms"]
    if not times or not all(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0 for t in times):
        raise InputError(p, "times_ms must be a non-empty list of positive numbers")
    return Benchmark(path=str(p), times_ms=tuple(float(t) for t in times), raw=data)


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


@dataclass
class Report:
    flags: list[Finding] = field(default_factory=list)
    passed: list[tuple[str, str]] = field(default_factory=list)  # (check, what was seen)
    not_checked: list[tuple[str, str]] = field(default_factory=list)  # (check, why)

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.flags if f.details.get("severity") == "warning"]

    @property
    def clean(self) -> bool:
        return not self.warnings

    def flagged(self, check_id: str) -> list[Finding]:
        return [f for f in self.flags if f.rule_id == check_id]

    def merge(self, other: Report) -> None:
        self.flags += other.flags
        self.passed += other.passed
        self.not_checked += other.not_checked

    def to_dict(self) -> dict[str, Any]:
        return {"clean": self.clean, "flags": [f.to_dict() for f in self.flags],
                "passed": [{"check": c, "seen": s} for c, s in self.passed],
                "not_checked": [{"check": c, "why": s} for c, s in self.not_checked]}


def _flag(check_id: str, severity: str, title: str, message: str, fix: str, evidence: Sequence[Evidence],
          scope: str = "", **details: Any) -> Finding:
    return Finding(rule_id=check_id, category=Bottleneck.MEASUREMENT, title=title, message=message, next_step=fix,
                   evidence=tuple(evidence), scope=scope, details={"severity": severity, "check": CHECKS[check_id],
                                                                   **details})


def check(profiles: Sequence[Profile] = (), benchmark: Benchmark | None = None, *,
          expected_bytes: float | None = None) -> Report:
    """Every check the inputs allow (see module doc). ``expected_bytes`` is the bytes model of one
    profiled kernel launch, for the zero-inputs check on Nsight Compute profiles."""
    report = Report()
    timelines = [p for p in profiles if isinstance(p, Timeline)]
    kernels = [p for p in profiles if isinstance(p, KernelProfile)]
    gpu = _gpu(profiles, benchmark)
    roofs = ceilings(gpu) if gpu is not None else None
    if benchmark is not None:
        report.merge(_benchmark_checks(benchmark, gpu, roofs))
    for tl in timelines:
        report.merge(_timeline_checks(tl, benchmark))
    for kp in kernels:
        report.merge(_kernel_checks(kp, roofs, expected_bytes))
    return report


def compact(profile: Profile) -> list[str]:
    """One line per flag on this profile alone, for ``coach load``'s summary."""
    return [f"{f.details['severity']}: {f.title}" for f in check([profile]).flags]


def _gpu(profiles: Sequence[Profile], benchmark: Benchmark | None) -> GPU | None:
    names = [str(benchmark.get("gpu"))] if benchmark is not None and benchmark.get("gpu") else []
    names += [n for p in profiles if p.devices.height for n in p.devices["name"].drop_nulls().to_list()]
    return next((g for g in (match(n) for n in names) if g is not None), None)


# --------------------------------------------------------------------------------------------
# Benchmark JSON
# --------------------------------------------------------------------------------------------


def _benchmark_checks(b: Benchmark, gpu: GPU | None, roofs: Ceilings | None) -> Report:
    r = Report()
    scope = Path(b.path).name
    r.merge(_repetitions(b, scope))
    r.merge(_zero_inputs_declared(b, scope))
    if roofs is None:
        why = "the GPU is unknown: name it in the JSON's 'gpu' field"
        r.not_checked += [("warm-l2", why), ("unsynchronised", why)]
        return r
    r.merge(_bandwidth(b, gpu, roofs, scope))
    r.merge(_flop_rate(b, roofs, scope))
    return r


def _repetitions(b: Benchmark, scope: str) -> Report:
    """repetitions, spread, and a first timed run that paid for one-time work."""
    r = Report()
    times = pl.Series("t", b.times_ms)
    n, median = len(times), float(times.median())
    runs = f"{n} timed run{'s' if n != 1 else ''}"
    if n < MIN_REPETITIONS:
        r.flags.append(_flag(
            "repetitions", "warning", f"Only {runs}",
            f"{scope} times {runs}: too few to know how much the number varies.",
            f"Time at least {MIN_REPETITIONS} runs after the warm-up and report the median with the 10th-90th "
            "percentile band (triton.testing.do_bench, torch.utils.benchmark).",
            [Evidence("repetitions", n, "runs", f">= {MIN_REPETITIONS}", MIN_REPETITIONS, BENCHMARK)], scope))
    else:
        r.passed.append(("repetitions", runs))
    if n < 2:
        r.not_checked.append(("spread", "one timed run has no spread"))
        return r
    p10, p90 = float(times.quantile(0.1, "linear")), float(times.quantile(0.9, "linear"))
    spread = (p90 - p10) / median * 100.0
    if spread > SPREAD_PCT:
        r.flags.append(_flag(
            "spread", "warning", f"Runs spread over {spread:.0f}% of the median",
            f"The 10th-90th percentile band of {scope}'s runs is {p10:.4g}-{p90:.4g} ms around a {median:.4g} ms "
            f"median: {spread:.0f}%, where an idle GPU repeats within a few percent.",
            "Find what varies: other work on the GPU, clocks (lock them, or let them settle with a longer "
            "warm-up), a first run doing one-time work, host-side jitter in a host timer.",
            [Evidence("spread_pct", spread, "%", f"<= {SPREAD_PCT:.0f}%", SPREAD_PCT, BENCHMARK),
             Evidence("min_ms", float(times.min()), "ms", source=BENCHMARK),
             Evidence("max_ms", float(times.max()), "ms", source=BENCHMARK)], scope))
    else:
        r.passed.append(("spread", f"10th-90th percentile band {spread:.1f}% of the {median:.4g} ms median"))
    first, rest = b.times_ms[0], statistics.median(b.times_ms[1:])
    if first > FIRST_RUN_FACTOR * rest:
        r.flags.append(_flag(
            "compile-in-timing", "warning", "The first timed run is the slowest by far",
            f"The first timed run took {first:.4g} ms against a median of {rest:.4g} ms for the others "
            f"({first / rest:.1f}x): it paid for one-time work (compilation, autotuning, module loading, allocation).",
            "Run the work a few times before timing it (torch.compile and Triton autotune on the first call; lazy "
            "loading loads each kernel's module on its first launch).",
            [Evidence("first_run_ms", first, "ms", f"near the median ({rest:.4g} ms)", FIRST_RUN_FACTOR * rest,
                      BENCHMARK)], scope))
    return r


def _zero_inputs_declared(b: Benchmark, scope: str) -> Report:
    r = Report()
    inputs = str(b.get("inputs") or "").lower()
    if inputs in ZERO_INPUTS:
        r.flags.append(_flag(
            "zero-inputs", "warning", f"Inputs are {inputs}",
            f"{scope} says its inputs are {inputs}. Tensor cores draw less power on zeros and hold higher clocks, "
            "compressible memory moves fewer bytes, and branches and NaN paths never trigger.",
            "Time on random inputs of the real distribution (torch.randn, then scale), as the calibrated ceilings "
            "are measured.", [], scope, inputs=inputs))
    elif inputs:
        r.passed.append(("zero-inputs", f"inputs declared {inputs}"))
    return r


def _bandwidth(b: Benchmark, gpu: GPU | None, roofs: Ceilings, scope: str) -> Report:
    """warm-l2 and unsynchronised from the bytes a run moves, the distinct bytes it touches, and the L2."""
    r = Report()
    nbytes, working = b.number("bytes_per_rep"), b.number("working_set_bytes")
    dram, l1 = roofs.bandwidth["dram"], roofs.bandwidth["shared"]
    l2_bytes = gpu.l2_bytes if gpu is not None else None
    rate = nbytes / b.median_s if nbytes else None
    fits = working is not None and l2_bytes is not None and working <= l2_bytes
    peak = dram.datasheet or dram.value  # no DRAM delivers more than its datasheet peak
    evidence = []
    if rate is not None:
        evidence.append(Evidence("bandwidth_bytes_per_s", rate, "byte/s",
                                 f"<= the DRAM ceiling {fmt_rate(dram.value)} ({dram.origin})", dram.value, BENCHMARK))
    if working is not None and l2_bytes is not None:
        evidence.append(Evidence("working_set_bytes", working, "byte", f"> the {fmt_bytes(l2_bytes)} L2 (or flushed)",
                                 l2_bytes, BENCHMARK))
    repeats = len(b.times_ms) > 1 and b.get("l2_flush") is not True
    if fits and repeats:
        above = rate is not None and rate > dram.value * (1 + CEILING_MARGIN)
        msg = (f"{scope}'s working set, {fmt_bytes(working)}, fits in the {fmt_bytes(l2_bytes)} L2 of the {gpu.name}, "
               f"and its {len(b.times_ms)} runs repeat without clearing it: every run after the first reads its "
               "inputs from L2, not DRAM.")
        if rate is not None:
            relation = "above" if above else "against"
            msg += f" It reports {fmt_rate(rate)}, {relation} the DRAM ceiling of {fmt_rate(dram.value)} ({dram.origin})"
            msg += ": only a cache delivers that." if above else "."
        fix = (f"Use inputs several times the L2 (over {fmt_bytes(4 * l2_bytes)}), rotate through buffers that "
               "together exceed it, or clear it between runs (triton.testing.do_bench writes a 256 MB buffer "
               "before each run).")
        r.flags.append(_flag("warm-l2", "warning", "Inputs fit in L2 and repeat: the runs measure L2, not DRAM", msg,
                             fix, evidence, scope, confirmed=above))
    elif rate is not None and working is None and rate > peak:
        r.flags.append(_flag(
            "warm-l2", "warning", "Bandwidth above the DRAM peak: a cache, or no synchronisation",
            f"{scope} reports {fmt_rate(rate)}, above the {roofs.gpu.name}'s DRAM peak of {fmt_rate(peak)}: its data "
            "came from a cache, or its timer did not wait for the GPU.",
            "Say how many distinct bytes the runs touch (working_set_bytes) so the two can be told apart; use "
            "inputs several times the L2 and synchronise before reading the timer.", evidence, scope))
    elif (working is not None and not fits) or b.get("l2_flush") is True:
        r.passed.append(("warm-l2", "working set larger than the L2" if not fits else "L2 cleared between runs"))
    else:
        r.not_checked.append(("warm-l2", "the JSON gives no working_set_bytes"))
    beyond_dram = working is not None and not fits and rate is not None and rate > peak
    beyond_l1 = rate is not None and l1.value is not None and rate > l1.value
    if beyond_dram or beyond_l1:
        what = (f"over a {fmt_bytes(working)} working set larger than the L2: above the DRAM peak of {fmt_rate(peak)}"
                if beyond_dram else f"above the L1/shared-memory bandwidth of all SMs together, {fmt_rate(l1.value)}")
        timer = f" (timer: {b.get('timer')})" if b.get("timer") else ""
        r.flags.append(_flag(
            "unsynchronised", "warning", "A bandwidth no memory of this GPU can deliver",
            f"{scope} reports {fmt_rate(rate)} {what}. The timer stopped before the GPU finished{timer}.",
            SYNC_FIX, [*evidence, Evidence("datasheet_dram_bytes_per_s", peak, "byte/s", source="datasheet")], scope))
    elif rate is not None:
        r.passed.append(("unsynchronised", f"{fmt_rate(rate)} is a rate the memory can deliver"))
    return r


def _flop_rate(b: Benchmark, roofs: Ceilings, scope: str) -> Report:
    """zero-inputs (a matmul faster than on random data) or unsynchronised (faster than the datasheet)."""
    r = Report()
    flop, precision = b.number("flop_per_rep"), b.get("precision")
    if not flop or precision not in roofs.compute:
        if not b.get("inputs"):
            r.not_checked.append(("zero-inputs", "the JSON names neither its inputs nor flop_per_rep with a precision"))
        return r
    roof = roofs.compute[precision]
    rate = flop / b.median_s
    tflops = f"{rate / 1e12:.0f} TFLOP/s of {precision}"
    if roof.measured and roof.measured * (1 + CEILING_MARGIN) < rate <= (roof.datasheet or float("inf")):
        r.flags.append(_flag(
            "zero-inputs", "warning", f"Faster than {precision} matmul on random data",
            f"{scope} reports {tflops}, above the {roof.measured / 1e12:.0f} TFLOP/s measured on random inputs on "
            f"this GPU ({roof.ref}): zeros or low-entropy inputs let the tensor cores run cooler and faster.",
            "Time on random inputs (torch.randn), as the measured ceiling was.",
            [Evidence("flop_per_s", rate, "flop/s", f"<= {roof.measured:.3g} (random data)", roof.measured,
                      BENCHMARK)], scope))
    elif roof.datasheet and rate > roof.datasheet:
        r.flags.append(_flag(
            "unsynchronised", "warning", f"Above the {precision} datasheet peak",
            f"{scope} reports {tflops}, above the datasheet peak of {roof.datasheet / 1e12:.0f} TFLOP/s: the timer "
            "cannot have waited for the GPU.", SYNC_FIX,
            [Evidence("flop_per_s", rate, "flop/s", f"<= {roof.datasheet:.3g}", roof.datasheet, BENCHMARK)], scope))
    else:
        r.passed.append(("zero-inputs", f"{rate / 1e12:.3g} TFLOP/s of {precision} is within the random-data ceiling"))
    return r


# --------------------------------------------------------------------------------------------
# Timelines
# --------------------------------------------------------------------------------------------


def timed_ranges(a: TimelineAnalysis) -> pl.DataFrame:
    """NVTX (or ``record_function``) ranges that can be timing regions: not operator ranges, not
    named as warm-up, launching GPU work; with ``base``, the name without a trailing run number
    (step0, step1 -> step#), and ``instances`` of that base on its thread."""
    return (a.projection
            .filter(pl.col("end_ns").is_not_null() & (pl.col("domain").fill_null("") != OPERATOR_DOMAIN)
                    & ~pl.col("text").fill_null("").str.contains(WARMUP_RANGE) & (pl.col("gpu_ops") > 0))
            .with_columns(base=pl.col("text").str.replace(r"\d+$", "#"))
            .with_columns(instances=pl.len().over("pid", "tid", "base"))
            .with_row_index("_range"))


def _calls_inside(ranges: pl.DataFrame, api: pl.DataFrame, pattern: str) -> pl.DataFrame:
    """Per range (``_range``): calls whose name matches ``pattern``: ``calls``, ``call_ns``, ``names``."""
    calls = api.filter(base_api_name(pl.col("name")).str.contains(pattern)).select("pid", "tid", "start_ns", "end_ns",
                                                                                    call="name")
    inside = interval_join(ranges.select("_range", "pid", "tid", "start_ns", "end_ns"), calls, "contains",
                           by=["pid", "tid"])
    return inside.group_by("_range").agg(calls=pl.len(), call_ns=pl.col("overlap_ns").sum(),
                                         names=pl.col("call").unique().sort())


def _timeline_checks(tl: Timeline, b: Benchmark | None) -> Report:
    r = Report()
    ranges = timed_ranges(TimelineAnalysis(tl))
    if b is not None and b.get("range"):
        name = str(b.get("range"))
        ranges = ranges.filter((pl.col("text") == name) | (pl.col("base") == name))
    scope = Path(tl.source.path).name
    if ranges.is_empty():
        why = "no NVTX or record_function ranges around the timed work (name each timed run with a range)"
        r.not_checked += [("unsynchronised", why), ("compile-in-timing", why)]
        return r
    r.merge(_unsynchronised(tl, ranges, b, scope))
    r.merge(_one_time_in_ranges(tl, ranges, scope))
    repeated = ranges.filter(pl.col("instances") >= 2)
    if b is None and not repeated.is_empty():
        top = repeated.group_by("base").agg(n=pl.len()).sort("n", "base", descending=[True, False]).row(0, named=True)
        if top["n"] < MIN_REPETITIONS:
            r.flags.append(_flag(
                "repetitions", "info", f"'{top['base']}' repeats {top['n']} times",
                f"The repeated range '{top['base']}' has {top['n']} instances in {scope}: if it is the timed loop, "
                "that is too few runs to know the spread.",
                f"Time at least {MIN_REPETITIONS} runs after the warm-up.",
                [Evidence("repetitions", top["n"], "runs", f">= {MIN_REPETITIONS}", MIN_REPETITIONS,
                          tl.source.tool)], scope))
    return r


def _unsynchronised(tl: Timeline, ranges: pl.DataFrame, b: Benchmark | None, scope: str) -> Report:
    """Timed ranges that close before their GPU work ends with no CUDA event recorded inside; and a
    benchmark's host time per run against the GPU span of a run."""
    r = Report()
    tool = tl.source.tool
    events = _calls_inside(ranges, tl.api, EVENT_RECORD).select("_range", events="calls")
    rows = (ranges.join(events, on="_range", how="left", maintain_order="left")
            .with_columns(events=pl.col("events").fill_null(0),
                          late_ns=(pl.col("proj_end_ns") - pl.col("end_ns")).clip(lower_bound=0)))
    early = rows.filter((pl.col("late_ns") > 0) & (pl.col("events") == 0))
    if early.is_empty():
        r.passed.append(("unsynchronised", f"every timed range in {scope} records CUDA events or outlasts its GPU work"))
    else:
        by = (early.group_by("base")
              .agg(n=pl.len(), late_ns=pl.col("late_ns").median(), wall_ns=pl.col("dur_ns").median(),
                   gpu_ns=pl.col("proj_dur_ns").median())
              .sort("n", descending=True).row(0, named=True))
        total = rows.filter(pl.col("base") == by["base"]).height
        msg = (f"{by['n']} of {total} '{by['base']}' ranges in {scope} end before the GPU work launched in them does "
               f"(by {fmt_time(by['late_ns'])}, median), with no CUDA event recorded inside: a host timer around them "
               f"reads {fmt_time(by['wall_ns'])} per run where the GPU work spans {fmt_time(by['gpu_ns'])}. Launches "
               "return at once; the timer measured the launching.")
        r.flags.append(_flag(
            "unsynchronised", "warning", f"'{by['base']}' closes before its GPU work ends", msg, SYNC_FIX,
            [Evidence("ranges_closing_early", by["n"], "ranges", "0", 0, tool),
             Evidence("range_wall_ns", by["wall_ns"], "ns", f">= the GPU span {fmt_time(by['gpu_ns'])}", source=tool),
             Evidence("gpu_after_range_ns", by["late_ns"], "ns", "0", 0, tool)], scope, range=by["base"]))
    if b is not None and b.get("timer") != "cuda-events":
        gpu_ms = float(rows["proj_dur_ns"].median()) * 1e-6
        host_ms = statistics.median(b.times_ms)
        if host_ms < HOST_UNDER_GPU * gpu_ms:
            r.flags.append(_flag(
                "unsynchronised", "warning", "The reported time is shorter than the GPU work it times",
                f"{Path(b.path).name} reports a median of {host_ms:.4g} ms per run; the GPU work of one timed range "
                f"in {scope} spans {gpu_ms:.4g} ms. The timer stopped before the GPU finished.", SYNC_FIX,
                [Evidence("reported_ms", host_ms, "ms", f">= {gpu_ms:.4g} ms (the GPU span)", HOST_UNDER_GPU * gpu_ms,
                          BENCHMARK),
                 Evidence("gpu_span_ms", gpu_ms, "ms", source=tool)], scope))
    return r


def _one_time_in_ranges(tl: Timeline, ranges: pl.DataFrame, scope: str) -> Report:
    """Module loading or library set-up inside timed ranges, against the same ranges without it."""
    r = Report()
    tool = tl.source.tool
    hit = ranges.join(_calls_inside(ranges, tl.api, ONE_TIME_CALLS), on="_range", how="inner").sort("start_ns")
    if hit.is_empty():
        r.passed.append(("compile-in-timing", f"no module loading or handle creation in the timed ranges of {scope}"))
        return r
    first = hit.row(0, named=True)
    others = ranges.filter((pl.col("base") == first["base"]) & ~pl.col("_range").is_in(hit["_range"].implode()))
    typical = float(others["dur_ns"].median()) if others.height else None
    calls = f"{first['calls']} one-time call{'s' if first['calls'] != 1 else ''}"
    msg = (f"'{first['text']}' in {scope} includes {calls} ({', '.join(first['names'])}: "
           f"{fmt_time(first['call_ns'])}) and takes {fmt_time(first['dur_ns'])}")
    msg += f", against {fmt_time(typical)} for the other '{first['base']}' ranges." if typical is not None else "."
    msg += (" Module loading (lazy loading, JIT and Triton compilation) and library set-up are paid once; inside a "
            "timed run they are measured as if every run paid them.")
    evidence = [Evidence("one_time_calls", float(hit["calls"].sum()), "calls", "0 inside timed ranges", 0, tool),
                Evidence("one_time_ns", float(hit["call_ns"].sum()), "ns", source=tool)]
    if typical is not None:
        evidence.append(Evidence("range_ns", float(first["dur_ns"]), "ns", f"about {fmt_time(typical)} (the other runs)",
                                 source=tool))
    r.flags.append(_flag(
        "compile-in-timing", "warning", f"Module loading inside the timed range '{first['text']}'", msg,
        "Warm up outside the timed region: run the work once (or a few times) first, so every kernel's module is "
        "loaded, Triton has compiled and autotuned, and library handles exist.",
        evidence, scope, ranges=hit["text"].to_list()))
    return r


# --------------------------------------------------------------------------------------------
# Nsight Compute
# --------------------------------------------------------------------------------------------


def _kernel_checks(kp: KernelProfile, roofs: Ceilings | None, expected_bytes: float | None) -> Report:
    r = Report()
    scope = Path(kp.source.path).name
    r.not_checked.append(("warm-l2", "Nsight Compute clears the caches before each replay pass by default "
                                     "(--cache-control all); its report does not say whether that was changed"))
    r.merge(_clocks(kp, scope))
    r.merge(_persisting_l2(kp, scope))
    r.merge(_kernel_zero_inputs(kp, roofs, expected_bytes, scope))
    return r


def _clocks(kp: KernelProfile, scope: str) -> Report:
    r = Report()
    max_hz = kp.devices["sm_clock_hz"].max() if kp.devices.height else None
    sm_hz = kp.launches["sm_frequency_hz"].mean()
    if not max_hz or not sm_hz:
        r.not_checked.append(("clocks", "the report has no SM frequency or maximum clock"))
        return r
    ratio = sm_hz / max_hz
    locked = ratio < BOOST_RATIO
    clocks = f"{sm_hz / 1e9:.2f} GHz, {ratio * 100:.0f}% of the {max_hz / 1e9:.2f} GHz maximum"
    msg = f"The launches in {scope} ran at {sm_hz / 1e9:.2f} GHz on average against a maximum of {max_hz / 1e9:.2f} GHz. "
    msg += ("That is a locked clock (Nsight Compute's default --clock-control base locks the base clock) or a "
            "throttled GPU: durations are longer than in an application run, and compare only with runs at the same "
            "clock." if locked else
            "Clocks were not locked (--clock-control none): durations match an application run, but vary with power "
            "and temperature, so compare before and after runs made back to back.")
    r.flags.append(_flag(
        "clocks", "info", f"SM clock {clocks}: " + ("locked below boost" if locked else "at boost (not locked)"), msg,
        "Profile before and after with the same --clock-control setting; to compare with application timings, use "
        "--clock-control none.",
        [Evidence("sm_frequency_hz", float(sm_hz), "hz", "the same in runs you compare", source="ncu"),
         Evidence("sm_clock_max_hz", float(max_hz), "hz", source="ncu")], scope, locked=locked))
    return r


def _persisting_l2(kp: KernelProfile, scope: str) -> Report:
    r = Report()
    setaside = kp.metrics.filter(pl.col("metric") == "launch__persisting_l2_cache_size")["value"].max()
    most = kp.metrics.filter(pl.col("metric") == "device__attribute_max_persisting_l2_cache_size")["value"].max()
    if setaside is None:
        r.not_checked.append(("persisting-l2", "the report lacks launch__persisting_l2_cache_size"))
    elif not setaside:
        r.passed.append(("persisting-l2", "no persisting-L2 set-aside"))
    else:
        of = f" (of at most {fmt_bytes(most)})" if most else ""
        r.flags.append(_flag(
            "persisting-l2", "info", f"A persisting-L2 set-aside of {fmt_bytes(setaside)}",
            f"The launches in {scope} ran with {fmt_bytes(setaside)} of L2 set aside for persisting accesses{of}. "
            "Lines that a stream's access-policy window marks persisting stay there between launches, so repeated "
            "runs can read them from L2. The report does not record whether a window was set; the set-aside alone is "
            "no proof (the recorded strided-copy report shows 11.8 MB for a program that never set one).",
            "If the program sets an access-policy window (cudaStreamSetAttribute with accessPolicyWindow), say so "
            "with the numbers, or reset it before timing: cudaCtxResetPersistingL2Cache() and "
            "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0).",
            [Evidence("launch__persisting_l2_cache_size", float(setaside), "byte", "0 unless the program uses it",
                      source="ncu")], scope))
    return r


def _kernel_zero_inputs(kp: KernelProfile, roofs: Ceilings | None, expected_bytes: float | None, scope: str) -> Report:
    """A tensor rate above the measured random-data ceiling; DRAM bytes far below the bytes model."""
    r = Report()
    launches = kp.launches.with_columns(tensor_rate=pl.col("tensor_flop") / (pl.col("duration_ns") * 1e-9))
    bf16 = roofs.compute["bf16"] if roofs is not None else None
    checked = False
    if bf16 is not None and bf16.measured and launches["tensor_rate"].drop_nulls().len():
        checked = True
        for row in launches.filter(pl.col("tensor_rate") > bf16.measured * (1 + CEILING_MARGIN)).iter_rows(named=True):
            name = row["kernel_name"] or scope
            r.flags.append(_flag(
                "zero-inputs", "warning", f"{name}: tensor rate above the random-data ceiling",
                f"{name} ran its tensor cores at {row['tensor_rate'] / 1e12:.0f} TFLOP/s, above the "
                f"{bf16.measured / 1e12:.0f} TFLOP/s cuBLAS reaches on random BF16 data on this GPU: zero or "
                "low-entropy inputs draw less power and hold higher clocks.",
                "Profile with random inputs of the real distribution.",
                [Evidence("tensor_flop_per_s", row["tensor_rate"], "flop/s", f"<= {bf16.measured:.3g}", bf16.measured,
                          "ncu")], name))
    if expected_bytes:
        checked = True
        floor = BYTES_MODEL_FRACTION * expected_bytes
        for row in kp.launches.filter(pl.col("dram_bytes") < floor).iter_rows(named=True):
            name = row["kernel_name"] or scope
            r.flags.append(_flag(
                "zero-inputs", "warning", f"{name}: DRAM moved far fewer bytes than the work needs",
                f"{name} moved {fmt_bytes(row['dram_bytes'])} through DRAM where the bytes model needs "
                f"{fmt_bytes(expected_bytes)}: its data came from L2 (caches not cleared), or from compressed or "
                "zero pages.",
                "Profile with random inputs larger than the L2, and Nsight Compute's default --cache-control all.",
                [Evidence("dram_bytes", row["dram_bytes"], "byte", f">= {fmt_bytes(expected_bytes)}", floor, "ncu")],
                name))
    if not checked:
        r.not_checked.append(("zero-inputs", "no tensor-core work to compare with the measured ceiling, and no bytes "
                                             "model (--bytes)"))
    elif not r.flags:
        r.passed.append(("zero-inputs", "tensor rates and DRAM bytes within what random inputs give"))
    return r
