"""The steady window of a whole-program capture: the loop, without the start-up before it.

A capture of a whole program (``nsys profile python train.py`` with no capture range) holds the
program's start-up: importing, building the model, uploading weights, the first launch of each kernel
loading its module, torch.compile compiling, a CUDA graph being captured. In a short program that is
most of the capture, and it is one-time work: the loop the program runs does not pay it again. The
rules then speak of the start-up, not of the loop. Where the capture says where the loop is, the
rules read that part instead (the steady window), and the start-up is reported apart, as one-time
work that makes no step faster.

Where the loop is, in the order looked for:

``cudaProfilerStart``/``cudaProfilerStop``
    The program brackets what it wants measured (``cuProfilerStart`` for the driver API). A capture
    made with ``nsys --capture-range=cudaProfilerApi`` starts at the call already, so its window is
    the whole capture and nothing is left out.
NVTX step ranges
    Ranges of one family on one thread, at least ``MIN_STEPS`` of them, one after the other (none
    overlaps the next), that launched GPU work: "step 3", "rank1/step12", "token7" (a family is the
    text with its numbers taken out). Per process the family that launched the most GPU time is the
    loop (the outermost on a tie: "step #" before the "layer #" inside it), if that is at least
    ``MIN_STEP_GPU_SHARE_PCT`` of the process's GPU time. The leading steps that hold one-time work
    (module loading, compilation, slow first launches: the warm-up rule's calls) are start-up too,
    when they lie in the first half of the steps. The window runs from the first steady step's start
    to the end of the last step or of the GPU work its steps launched, whichever is later. The PyTorch
    profiler's operator ranges (domain ``cpu_op``) are not steps.

A repeating loop of kernels
    Where nothing is marked, in a capture the program did not bound itself (not a PyTorch-profiler
    trace, whose window the program opened), and one-time work precedes it: per process, the longest
    stretch of its launches (in launch order, by kernel name) that repeats itself with one period,
    at least ``MIN_LOOP_PERIODS`` periods long. A sequence ``c`` repeats with period ``p`` where
    ``c[i] == c[i + p]``; the candidate periods are the spacings of the most frequent kernel's
    launches at every lag (a kernel that runs k times per step, as a GEMM does per layer, repeats at
    its lag-k spacing). A kernel that strays from the pattern once (an allocator's memset, a
    checkpoint's copy) breaks the self-match for at most one period and one launch, after which the
    loop matches itself again: stretches that each repeat a whole period and lie that close together
    are one loop. Of the candidates, the period whose loop matches itself at the most launches is the
    step: a token's sequence of layers matches itself at every launch at the token's period, while at
    one layer's period the kernels between tokens break it. The window runs from the loop's first
    launch to the end of the last kernel it launched (an epilogue after the loop, a final check or
    save, is left out with the start-up). It never starts inside an NVTX range the program opened (a
    benchmark's single "timed" range that holds its first, compiling call is measured on purpose):
    there the whole capture is read.

A window that leaves out less than ``MIN_LEFT_OUT_PCT`` of the capture is not used: the capture is
its steady state already. With several processes each process's records are kept within its own
window (its GPU work: all of it within the union of the windows, see ``crop``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from coach.analyze.timeline import TimelineAnalysis, interval_join, merge_intervals
from coach.model import Timeline

# Three steps are the fewest in which a repetition can be told from a sequence of one-off phases
# (set-up, run, check), and what the PyTorch profiler's schedule records with active=3.
MIN_STEPS = 3
# Steps that launched under a quarter of their process's GPU time are not its loop (ranges around an
# evaluation pass, say, while the training steps are unmarked).
MIN_STEP_GPU_SHARE_PCT = 25.0
# Leaving out less than this share of the capture changes no finding by more than run-to-run noise
# (see _shared.REPORTABLE_SHARE_PCT): the whole capture is read as it is.
MIN_LEFT_OUT_PCT = 5.0

# Unmarked, a repetition must be longer to be a loop: a benchmark's handful of calls after its first
# (tests/data/nsys_triton_softmax: six calls of one kernel, the first compiling it) is the measurement
# itself, which the program chose to time, not a steady state it lives in. Marked steps need three
# (MIN_STEPS); a repetition found by its kernels alone must hold ten, enough that its period is seen
# many times over rather than read into a few calls.
MIN_LOOP_PERIODS = 10
# The lags tried: a step that runs its most frequent kernel up to this many times (64 layers of four
# GEMMs). Each costs a pass over that kernel's launches, and over all of them where it passes that:
# it bounds the search on a capture of a million launches with no loop in it to seconds.
MAX_LAGS = 256
# Another repeating stretch beside the loop taken is a loop worth naming from this share of the taken
# loop's GPU time: decode_graph's 22 graph replays after its eager loop hold 14.5 ms against 2.3 ms;
# the 33 launches of one initialising kernel before it (weights drawn at random) hold 0.09 ms, 0.7%.
OTHER_LOOP_GPU_SHARE_PCT = 5.0
PYTORCH_PROFILER = "PyTorch profiler"

PROFILER_START = r"^cu(da)?ProfilerStart$"
PROFILER_STOP = r"^cu(da)?ProfilerStop$"
OPERATOR_DOMAIN = "cpu_op"  # the PyTorch profiler's aten operators (coach.ingest.kineto)


@dataclass(frozen=True)
class SteadyWindow:
    """Where the loop is: per process ``windows`` (``pid, start_ns, end_ns, steps``), their union
    ``start_ns``/``end_ns``, what marked it (``source``), and the capture's own window."""

    windows: pl.DataFrame
    start_ns: int
    end_ns: int
    source: str  # "cudaProfilerStart/Stop", "NVTX ranges 'step#'" or "a repeating loop of kernels"
    steps: int  # steady steps over all processes (0 for a profiler-API range)
    capture: tuple[int, int]
    warm_steps: int = 0  # leading steps left out for the one-time work they hold, over all processes

    @property
    def holes(self) -> pl.DataFrame:
        """The stretches between ``start_ns`` and ``end_ns`` inside no process's window."""
        merged = merge_intervals(self.windows.select("start_ns", "end_ns").with_columns(_k=pl.lit(0)), ["_k"])
        return merged.select(start_ns=pl.col("end_ns").shift(1), end_ns=pl.col("start_ns")).drop_nulls().filter(
            pl.col("end_ns") > pl.col("start_ns"))

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def before_ns(self) -> int:
        return self.start_ns - self.capture[0]

    @property
    def after_ns(self) -> int:
        return self.capture[1] - self.end_ns

    @property
    def left_out_ns(self) -> int:
        return self.before_ns + self.after_ns


def find(a: TimelineAnalysis, one_time: pl.DataFrame) -> SteadyWindow | None:
    """The steady window of ``a``'s timeline, or None where the capture does not mark one or it
    would leave out too little. ``one_time`` is the warm-up rule's one-time calls (``pid, start_ns,
    end_ns``)."""
    if a.window is None or not a.window_ns:
        return None
    found = _profiler_range(a)
    source = "cudaProfilerStart/Stop"
    if found is None:
        found, source = _nvtx_steps(a, one_time)
    if found is None and not one_time.is_empty() and a.timeline.source.tool != PYTORCH_PROFILER:
        found, source = _kernel_loop(a, one_time)
    if found is None or found.is_empty():
        return None
    start, end = int(found["start_ns"].min()), int(found["end_ns"].max())
    start, end = max(start, a.window[0]), min(end, a.window[1])
    if end <= start:
        return None
    warm = int(found["warm_steps"].sum()) if "warm_steps" in found.columns else 0
    window = SteadyWindow(found.drop("warm_steps", strict=False), start, end, source, int(found["steps"].sum()), a.window,
                          warm)
    if window.left_out_ns / a.window_ns * 100.0 < MIN_LEFT_OUT_PCT:
        return None
    return window


def _profiler_range(a: TimelineAnalysis) -> pl.DataFrame | None:
    """Per process, from the end of its first cudaProfilerStart to the start of the last
    cudaProfilerStop after it (or the capture's end)."""
    api = a.timeline.api
    if api.is_empty():
        return None
    # the names matched once per distinct name (``api_matching``), not once per call
    starts = api.filter(a.api_matching(PROFILER_START))
    if starts.is_empty():
        return None
    first = starts.group_by("pid").agg(start_ns=pl.col("end_ns").min())
    stops = api.filter(a.api_matching(PROFILER_STOP)).select("pid", stop_ns="start_ns")
    last = (first.join(stops, on="pid", how="left", nulls_equal=True)
            .filter(pl.col("stop_ns").is_null() | (pl.col("stop_ns") > pl.col("start_ns")))
            .group_by("pid").agg(pl.col("start_ns").first(), end_ns=pl.col("stop_ns").max()))
    return last.with_columns(end_ns=pl.col("end_ns").fill_null(a.window[1]), steps=pl.lit(0, pl.Int64)).select(
        "pid", "start_ns", "end_ns", "steps")


def _nvtx_steps(a: TimelineAnalysis, one_time: pl.DataFrame) -> tuple[pl.DataFrame | None, str]:
    nvtx = a.timeline.nvtx
    if nvtx.is_empty() or a.timeline.kernels.is_empty():
        return None, ""
    ranges = (a.projection
              .filter(pl.col("end_ns").is_not_null() & (pl.col("domain").fill_null("") != OPERATOR_DOMAIN)
                      & pl.col("text").is_not_null())
              .with_columns(family=pl.col("text").str.replace_all(r"\d+", "#"), domain=pl.col("domain").fill_null(""))
              .sort("start_ns"))
    if ranges.is_empty():
        return None, ""
    key = ["pid", "tid", "domain", "family"]
    families = (
        ranges.group_by(key, maintain_order=True)
        .agg(n=pl.len(), gpu_ns=pl.col("gpu_time_ns").sum(), depth=pl.col("depth").min(),
             sequential=(pl.col("start_ns") >= pl.col("end_ns").shift(1)).fill_null(True).all())
        .filter((pl.col("n") >= MIN_STEPS) & pl.col("sequential") & (pl.col("gpu_ns") > 0))
    )
    if families.is_empty():
        return None, ""
    gpu_by_pid = a.issued.group_by("pid").agg(pid_gpu_ns=pl.col("dur_ns").sum())
    loops = (
        families.sort(["gpu_ns", "depth", "n"], descending=[True, False, False], nulls_last=True)
        .group_by("pid", maintain_order=True).first()
        .join(gpu_by_pid, on="pid", how="left", nulls_equal=True)
        .filter(pl.col("gpu_ns") * 100.0 >= pl.col("pid_gpu_ns").fill_null(0) * MIN_STEP_GPU_SHARE_PCT)
    )
    if loops.is_empty():
        return None, ""
    steps = (ranges.join(loops.select(key), on=key, how="semi", nulls_equal=True).sort("pid", "start_ns")
             .with_columns(step=pl.int_range(pl.len()).over("pid"), steps=pl.len().over("pid"))
             .with_row_index("_step"))
    # the leading steps that hold one-time work (in the first half of the steps) are start-up
    held = interval_join(steps.select("_step", "pid", "start_ns", "end_ns"),
                         one_time.select("pid", "start_ns", "end_ns"), "overlap", by=["pid"])
    warm = (steps.join(held.select("_step").unique(), on="_step", how="semi")
            .filter(pl.col("step") * 2 < pl.col("steps"))
            .group_by("pid").agg(first_steady=pl.col("step").max() + 1))
    steady = (steps.join(warm, on="pid", how="left", nulls_equal=True)
              .filter(pl.col("step") >= pl.col("first_steady").fill_null(0)))
    per_pid = steady.group_by("pid").agg(
        start_ns=pl.col("start_ns").min(),
        end_ns=pl.max_horizontal(pl.col("end_ns").max(), pl.col("proj_end_ns").max()),
        steps=pl.len().cast(pl.Int64),
        warm_steps=pl.col("first_steady").fill_null(0).first().cast(pl.Int64),
    ).filter(pl.col("steps") >= MIN_STEPS).sort("pid")
    if per_pid.is_empty():
        return None, ""
    families_named = sorted(set(loops["family"].to_list()))
    return per_pid, "NVTX ranges " + ", ".join(f"'{f}'" for f in families_named)


def _kernel_loop(a: TimelineAnalysis, one_time: pl.DataFrame) -> tuple[pl.DataFrame | None, str]:
    """Per process, the loop its kernels repeat after the start-up (see the module doc)."""
    launched = a.launches.filter(pl.col("api_start_ns").is_not_null()).sort("pid", "api_start_ns")
    if launched.height < MIN_LOOP_PERIODS:
        return None, ""
    ranges = a.timeline.nvtx.filter(pl.col("end_ns").is_not_null()
                                    & (pl.col("domain").fill_null("") != OPERATOR_DOMAIN))
    rows = []
    others = 0
    for (pid,), k in launched.group_by("pid", maintain_order=True):
        codes = k["name"].fill_null("").cast(pl.Categorical).to_physical().to_numpy()
        found = repeating_stretch(codes)
        if found is None:
            continue
        first, stop, period = found
        others += _other_loops(codes, k, first, stop)
        start = k["api_start_ns"][first]
        held = one_time.filter((pl.col("pid") == pid) & (pl.col("end_ns") <= start))
        if held.is_empty():
            continue  # nothing one-time before the loop: no start-up to set aside
        inside = ranges.filter((pl.col("pid") == pid) & (pl.col("start_ns") < start) & (pl.col("end_ns") > start))
        if inside.height:
            return None, ""  # the program measures a range that holds the start-up: read it whole
        rows.append({"pid": pid, "start_ns": start, "end_ns": int(k["end_ns"][first:stop].max()),
                     "steps": (stop - first) // period})
    if not rows:
        return None, ""
    source = "a repeating loop of kernels"
    if others:
        source += (f" (the one repeating at the most launches, of {others + len(rows)} loops found without marks: "
                   "mark the steps with NVTX ranges to choose another)")
    return (pl.DataFrame(rows, schema={"pid": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "steps": pl.Int64}),
            source)


def _other_loops(codes, k: pl.DataFrame, first: int, stop: int) -> int:
    """How many other loops repeat before or after the one taken (``codes[first:stop]``) with at least
    ``OTHER_LOOP_GPU_SHARE_PCT`` of its GPU time: an eager phase before graph replays, say. They are
    said, not chosen."""
    busy = (k["end_ns"] - k["start_ns"]).fill_null(0).to_numpy()
    taken = busy[first:stop].sum()
    n = 0
    for offset, part in ((0, codes[:first]), (stop, codes[stop:])):
        found = repeating_stretch(part)
        if found is not None and busy[offset + found[0]:offset + found[1]].sum() * 100 >= OTHER_LOOP_GPU_SHARE_PCT * taken:
            n += 1
    return n


def repeating_stretch(codes) -> tuple[int, int, int] | None:
    """The longest stretch of ``codes`` (kernel names as integers, in launch order) that repeats itself
    with one period, at least ``MIN_LOOP_PERIODS`` periods long: ``(first, stop, period)``, the
    stretch being ``codes[first:stop]``; None where there is none. See the module doc."""
    import numpy as np  # noqa: PLC0415

    n = len(codes)
    if n < MIN_LOOP_PERIODS:
        return None
    top = np.bincount(codes).argmax()
    where = np.flatnonzero(codes == top)
    best: tuple[int, int, int, int] | None = None  # (matched launches, first, stop, period)
    tried: set[int] = set()
    for lag in range(1, min(len(where) // MIN_LOOP_PERIODS, MAX_LAGS) + 1):
        period = int(np.median(where[lag:] - where[:-lag]))
        if period < 1 or period in tried or n < MIN_LOOP_PERIODS * period:
            continue
        if best is not None and n - period <= best[0]:
            break  # no longer period can match itself at more places than the best has (n - period at most)
        tried.add(period)
        # first on the most frequent kernel's launches alone (a pass over a fraction of them): in ten
        # periods of a loop, its lag launches in each of nine are followed one period on by the same
        # kernel, but for the lag + 1 before a stray kernel
        ahead = where[where + period < n]
        if _longest_run(codes[ahead + period] == top, lag + 1) < lag * (MIN_LOOP_PERIODS - 1):
            continue
        found = _self_matching(codes, period)
        if found is not None and found[2] - found[1] >= MIN_LOOP_PERIODS * period and (best is None or found[0] > best[0]):
            best = (*found, period)
    return None if best is None else best[1:]


def _longest_run(flags, gap: int) -> int:
    """The most True values in one stretch of a boolean array whose runs of True lie at most ``gap``
    places apart."""
    import numpy as np  # noqa: PLC0415

    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if not starts.size:
        return 0
    group = np.cumsum(np.concatenate(([True], starts[1:] - ends[:-1] > gap))) - 1
    return int(np.bincount(group, weights=ends - starts).max())


def _self_matching(codes, period: int) -> tuple[int, int, int] | None:
    """The stretch of ``codes`` that matches itself ``period`` launches on at the most places:
    ``(matched, first, stop)``. Runs of ``codes[i] == codes[i + period]`` a whole period long or longer
    are joined where at most ``period + 1`` places lie between them (what one stray kernel breaks) and
    the period after the break holds the same kernels as the one before it (the same step, its phase
    shifted by an inserted kernel or not): a run of other kernels beside a loop is not joined to it."""
    import numpy as np  # noqa: PLC0415

    same = np.concatenate(([False], codes[period:] == codes[:-period], [False])).astype(np.int8)
    edges = np.diff(same)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # runs same[starts:ends]
    solid = (ends - starts) >= period
    starts, ends = starts[solid], ends[solid]
    if not starts.size:
        return None
    # which kernels a period starting at i holds, as a sum of one large odd number per kernel
    # (wrapping 64-bit arithmetic; equal sums for different kernel sets are a 2**-64 chance)
    weights = (codes.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    total = np.concatenate(([np.uint64(0)], np.cumsum(weights, dtype=np.uint64)))
    held = total[period:] - total[:-period]  # held[i]: the kernels of codes[i:i + period]
    # a run's stretch is codes[start:end + period]: its last period codes[end:end + period]
    close = starts[1:] - ends[:-1] <= period + 1
    alike = held[np.minimum(ends[:-1], len(held) - 1)] == held[starts[1:]]
    new = np.concatenate(([True], ~(close & alike)))
    group = np.cumsum(new) - 1
    matched = np.bincount(group, weights=ends - starts).astype(np.int64)
    g = int(matched.argmax())
    first = int(starts[group == g][0])
    last = int(ends[group == g][-1])  # codes[last - 1] == codes[last - 1 + period]
    return int(matched[g]), first, last + period


def crop(timeline: Timeline, window: SteadyWindow) -> Timeline:
    """The timeline's records in the steady window: each process's API calls that start within its own
    window (a call without a process, or of a process without a window, within the union), the NVTX
    ranges that overlap it, and all GPU work that starts within the union: processes that share a
    GPU keep it busy together, so another process's start-up work on it is not an idle gap of this
    one's loop."""
    bounds = window.windows.select("pid", _lo="start_ns", _hi="end_ns")

    def keep(df: pl.DataFrame, overlap: bool = False, per_process: bool = True) -> pl.DataFrame:
        if df.is_empty():
            return df
        # the mask from the times and process alone: the table itself is not copied by a join, and a
        # table the window keeps whole is returned as it is
        times = df.select("start_ns", "end_ns", *(["pid"] if per_process and "pid" in df.columns else []))
        joined = (times.join(bounds, on="pid", how="left", maintain_order="left", validate="m:1") if "pid" in times.columns
                  else times.with_columns(_lo=pl.lit(None, pl.Int64), _hi=pl.lit(None, pl.Int64)))
        lo = pl.col("_lo").fill_null(window.start_ns)
        hi = pl.col("_hi").fill_null(window.end_ns)
        inside = ((pl.col("start_ns") < hi) & (pl.col("end_ns").fill_null(pl.col("start_ns")) > lo) if overlap
                  else (pl.col("start_ns") >= lo) & (pl.col("start_ns") < hi))
        mask = joined.select(inside.fill_null(False)).to_series()
        return df if mask.all() else df.filter(mask)

    return replace(timeline, kernels=keep(timeline.kernels, per_process=False), memcpy=keep(timeline.memcpy, per_process=False),
                   memset=keep(timeline.memset, per_process=False),
                   api=keep(timeline.api), sync=keep(timeline.sync), nvtx=keep(timeline.nvtx, overlap=True))
