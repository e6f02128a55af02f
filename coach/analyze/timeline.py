"""Timeline computations shared by the summary, the rules and the app: all Polars, sorted once.

Every function takes a ``coach.model.Timeline`` (or frames derived from it) and returns a Polars
frame whose times are integer nanoseconds on the timeline's own clock.

Definitions (where they follow NVIDIA's, and where they differ):

``window``
    First start to last end over kernels, memcpys, memsets and API calls (``Timeline.span_ns``):
    the stretch in which the program was doing CUDA work. Utilisation and gaps are measured in it.
``busy_intervals``
    The union of kernel, memcpy and memset intervals per device: two overlapping operations on
    different streams count once. ``busy_pct`` is busy time over the window.
``idle_gaps``
    The complement of the busy intervals inside the window, per device, including the stretch
    before the device's first operation and after its last (so busy + gaps = window). Nsight
    Systems' ``gpu_gaps`` recipe looks only between a device's first and last operation; the
    ``position`` column tells the leading and trailing gaps apart. For each gap: the API calls
    that overlap it (time clipped to the gap, the call with the most time in it) and the innermost
    NVTX / operator range that covers the whole gap, which is what the host was doing.
``copy_compute_overlap``
    Per device, the part of the host-device copy union (HtoD, DtoH) that runs while a kernel runs
    (any stream).
``nvtx_projection``
    NVIDIA's ``nvtx_gpu_proj_trace`` recipe: a GPU operation belongs to a range when the API call
    that launched it (joined by correlation id) lies within the range on the same thread; the
    projected range runs from the start of its first operation to the end of its last. Coach also
    counts driver-API launches (``cuLaunchKernel``, used by Triton), where the recipe joins runtime
    calls only; and ``gpu_ops`` counts operations, where the recipe counts distinct correlation ids
    (a CUDA-graph launch is one id and many kernels). ``gpu_time_ns`` sums the operations' own
    durations; ranges without GPU work are kept, with ``gpu_ops`` 0. PyTorch's step marks
    (``ProfilerStep#N``, ``PROCESS_WIDE_RANGES``) are the profiler's step of the whole process, opened
    on the thread that calls ``profiler.step()``: their work is what any thread of the process
    launched inside them (the backward pass launches from the autograd engine's own threads).
``launches``
    Each kernel with the API call that launched it: ``launch_ns`` is that call's duration (the host's
    cost per launch), ``latency_ns`` from the call's start to the kernel's start, and
    ``waited_for_launch``: the device had finished all earlier work before the call returned, so the
    kernel could not have been waiting in a queue. Whether the device sat idle before the kernel does
    not tell that: kernels run from a queue start about 1 us apart on the H200 (0.9-2.6 us, 5th to
    95th percentile, and none of 3876 back to back, in traces/h200/scenario-14/slow/nsys).
``launch_bound_stretches``
    Runs of consecutive kernels on a device, each shorter than its own launch call and waited for:
    there the GPU finishes work faster than the host can issue it. A kernel right after a GPU gap
    that a host synchronisation returned into does not count: the host could not launch it earlier
    because it was blocked, not because launching is slow.

Unions and interval joins (which API calls overlap a gap, which ranges contain a call) are sorted
sweeps (``coach.analyze.intervals``): an equality key (device, thread) is folded in by moving each
key onto its own stretch of the time axis, and the pairs are found by binary search, never by
comparing every interval with every other.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, TypeVar

import polars as pl

from coach.analyze.intervals import interval_join, merge_intervals  # noqa: F401 - the rules import them from here
from coach.model import Timeline

#: What ``cudaStreamSynchronize_v3020``, ``cuMemcpyDtoH_v2_ptds`` and ``hipMemcpy_spt`` end with beyond the
#: function's name: version and per-thread-stream suffixes (Nsight Systems keeps them, Kineto does not).
API_SUFFIX = r"(_v\d+)?(_ptsz|_ptds|_spt)?$"

GPU_WORK_COLUMNS = ("activity", "device_id", "stream_id", "pid", "correlation_id", "start_ns", "end_ns", "dur_ns",
                    "name", "bytes", "kind", "pageable")


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def gpu_work(tl: Timeline) -> pl.DataFrame:
    """Kernels, memcpys and memsets in one frame, sorted by device and start.

    ``name`` is the kernel name, ``memcpy <kind>`` or ``memset``; ``kind`` and ``pageable`` are
    filled for copies only.
    """
    null_str, null_int, null_bool = pl.lit(None, pl.Utf8), pl.lit(None, pl.Int64), pl.lit(None, pl.Boolean)
    parts = [
        tl.kernels.select(*_place(), activity=pl.lit("kernel"), name=pl.col("name"), bytes=null_int, kind=null_str,
                          pageable=null_bool),
        tl.memcpy.select(*_place(), activity=pl.lit("memcpy"), name=pl.lit("memcpy ") + pl.col("kind").fill_null("unknown"),
                         bytes=pl.col("bytes"), kind=pl.col("kind"), pageable=pl.col("pageable")),
        tl.memset.select(*_place(), activity=pl.lit("memset"), name=pl.lit("memset"), bytes=pl.col("bytes"),
                         kind=null_str, pageable=null_bool),
    ]
    # sorted before the columns are put in order: selecting from the parts joined copies every column
    work = pl.concat(parts, rechunk=False)
    devices = work["device_id"].unique()
    if devices.len() == 1 and devices.null_count() == 0:  # one GPU: by start alone, ties in the parts' order
        return work.sort("start_ns", nulls_last=True, maintain_order=True).select(GPU_WORK_COLUMNS)
    return work.sort("device_id", "start_ns", nulls_last=True).select(GPU_WORK_COLUMNS)


def _place() -> list[pl.Expr]:
    return [pl.col(c) for c in ("device_id", "stream_id", "pid", "correlation_id", "start_ns", "end_ns", "dur_ns")]


# --------------------------------------------------------------------------------------------
# GPU utilisation, gaps, overlap, streams
# --------------------------------------------------------------------------------------------


def busy_intervals(work: pl.DataFrame) -> pl.DataFrame:
    """The union of GPU work per device (see ``merge_intervals``)."""
    work = work.select("device_id", "start_ns", "end_ns", *(["name"] if "name" in work.columns else []))
    return merge_intervals(work.filter(pl.col("start_ns").is_not_null()) if work["start_ns"].null_count() else work,
                           ["device_id"])


def utilisation(work: pl.DataFrame, busy: pl.DataFrame, window: tuple[int, int] | None,
                unions: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per device: window, busy time and %, and the union time of kernels, copies and memsets.
    ``unions`` is ``merge_intervals(work, ["device_id", "activity"])`` where the caller has it."""
    if window is None or work.is_empty():
        return pl.DataFrame(schema={"device_id": pl.Int64, "window_ns": pl.Int64, "busy_ns": pl.Int64,
                                    "busy_pct": pl.Float64, "kernel_ns": pl.Int64, "memcpy_ns": pl.Int64,
                                    "memset_ns": pl.Int64})
    window_ns = window[1] - window[0]
    per_activity = (
        (merge_intervals(work, ["device_id", "activity"]) if unions is None else unions)
        .group_by("device_id")
        .agg(*(pl.col("dur_ns").filter(pl.col("activity") == a).sum().alias(f"{a}_ns") for a in ("kernel", "memcpy", "memset")))
    )
    return (
        busy.group_by("device_id")
        .agg(busy_ns=pl.col("dur_ns").sum())
        .join(per_activity, on="device_id", how="left", maintain_order="left")
        .with_columns(window_ns=pl.lit(window_ns, pl.Int64))
        .with_columns(busy_pct=pl.col("busy_ns") / pl.col("window_ns") * 100.0 if window_ns else pl.lit(0.0))
        .select("device_id", "window_ns", "busy_ns", "busy_pct", "kernel_ns", "memcpy_ns", "memset_ns")
        .sort("device_id")
    )


IDLE_GAP_SCHEMA = {"device_id": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "dur_ns": pl.Int64,
                   "position": pl.Utf8, "after": pl.Utf8, "before": pl.Utf8}
IDLE_GAP_COLUMNS = list(IDLE_GAP_SCHEMA)


def idle_gaps(busy: pl.DataFrame, window: tuple[int, int] | None) -> pl.DataFrame:
    """Idle stretches per device inside the window: ``device_id, start_ns, end_ns, dur_ns, position``
    ("leading", "between", "trailing"), ``after`` (the operation that ended at the gap's start) and
    ``before`` (the operation that starts at its end)."""
    schema = IDLE_GAP_SCHEMA
    if window is None or busy.is_empty():
        return pl.DataFrame(schema=schema)
    w0, w1 = window
    s = busy if _sorted_by_device_start(busy) else busy.sort("device_id", "start_ns")  # merge_intervals' order
    has_names = "first" in s.columns
    first_of = pl.col("first") if has_names else pl.lit(None, pl.Utf8)
    last_of = pl.col("last") if has_names else pl.lit(None, pl.Utf8)
    between = s.select(
        "device_id",
        start_ns=pl.col("end_ns").shift(1).over("device_id"),
        end_ns=pl.col("start_ns"),
        position=pl.lit("between"),
        after=last_of.shift(1).over("device_id"),
        before=first_of,
    ).filter(pl.col("start_ns").is_not_null())
    edges = s.group_by("device_id").agg(
        first_start=pl.col("start_ns").first(), last_end=pl.col("end_ns").last(),
        first_name=first_of.first(), last_name=last_of.last(),
    )
    leading = edges.select("device_id", start_ns=pl.lit(w0, pl.Int64), end_ns="first_start", position=pl.lit("leading"),
                           after=pl.lit(None, pl.Utf8), before="first_name")
    trailing = edges.select("device_id", start_ns="last_end", end_ns=pl.lit(w1, pl.Int64), position=pl.lit("trailing"),
                            after="last_name", before=pl.lit(None, pl.Utf8))
    gaps = (
        pl.concat([leading, between, trailing], how="vertical_relaxed")
        .with_columns(dur_ns=pl.col("end_ns") - pl.col("start_ns"))
        .filter(pl.col("dur_ns") > 0)
        .select(list(schema))
        .cast(schema)
    )
    # one device's gaps come in order as they are (leading, between, trailing): no sort of a million then
    return gaps if _sorted_by_device_start(gaps) else gaps.sort("device_id", "start_ns")


def host_activity_in_gaps(gaps: pl.DataFrame, api: pl.DataFrame, nvtx: pl.DataFrame) -> pl.DataFrame:
    """``gaps`` with what the host was doing in each: ``api_calls``, ``api_ns`` (time inside CUDA
    calls within the gap: the union of calls per thread, so a driver call nested in a runtime call
    counts once, summed over threads), ``api_pct`` (of the gap, capped at 100), ``top_api`` and
    ``top_api_ns`` (the call name with the most time in the gap), and ``range``/``range_domain``:
    the innermost NVTX or operator range that covers the whole gap."""
    g = gaps.with_row_index("_gap")
    window = g.select("_gap", "start_ns", "end_ns")
    in_calls = _covered_in(window, merge_intervals(api.select("pid", "tid", "start_ns", "end_ns"), ["pid", "tid"]),
                           ["pid", "tid"])
    api_stats = _calls_in_gaps(g, api)
    if api_stats is None:  # gaps of one device that are not in order: the pairs joined
        # names as dictionary codes while grouping (a million calls name a few dozen functions)
        calls = interval_join(window, api.select("start_ns", "end_ns", api_name=pl.col("name").cast(pl.Categorical)),
                              "overlap")
        per_name = (calls.group_by("_gap", "api_name").agg(ns=pl.col("overlap_ns").sum(), n=pl.len())
                    .with_columns(pl.col("api_name").cast(pl.Utf8))
                    .sort("_gap", "ns", "api_name", descending=[False, True, False], nulls_last=True))
        api_stats = per_name.group_by("_gap", maintain_order=True).agg(
            api_calls=pl.col("n").sum(), top_api=pl.col("api_name").first(), top_api_ns=pl.col("ns").first())
    api_stats = api_stats.join(in_calls, on="_gap", how="left", maintain_order="left")
    # the innermost range: the deepest, then the latest to start (of equals, the last in the table), as
    # one rank per range, so that the pairs carry integers and no text
    spans = (nvtx.filter(pl.col("end_ns").is_not_null())
             .sort("depth", "start_ns", maintain_order=True)
             .with_row_index("_rank"))
    covering = interval_join(spans.select("start_ns", "end_ns", "_rank"), window, "contains")
    innermost = covering.group_by("_gap").agg(pl.col("_rank").max())
    innermost = innermost.select("_gap", range=spans["text"].gather(innermost["_rank"]),
                                 range_domain=spans["domain"].gather(innermost["_rank"]))
    return (
        g.join(api_stats, on="_gap", how="left", maintain_order="left")
        .join(innermost, on="_gap", how="left", maintain_order="left")
        .with_columns(
            api_calls=pl.col("api_calls").fill_null(0).cast(pl.Int64),
            api_ns=pl.col("api_ns").fill_null(0).cast(pl.Int64),
            top_api_ns=pl.col("top_api_ns").fill_null(0).cast(pl.Int64),
        )
        .with_columns(api_pct=pl.min_horizontal(pl.col("api_ns") / pl.col("dur_ns") * 100.0, pl.lit(100.0)))
        .drop("_gap")
    )


def _calls_in_gaps(g: pl.DataFrame, api: pl.DataFrame) -> pl.DataFrame | None:
    """``_gap, api_calls, top_api, top_api_ns`` for each gap of ``g`` (``_gap``, ``device_id``, times)
    that calls of ``api`` overlap: how many calls, and the call name with the most time in the gap
    (the calls' times clipped to it, summed per name; of names with equal time, the first in
    alphabetical order). None where the gaps of a device, in start order, do not end in order too.

    A sorted sweep, with no pairs joined: within a device the gaps' starts and ends both increase,
    so the gaps a call overlaps (those ending after it starts and starting before it ends) are one
    run of them, found by two binary searches per call. The names are dictionary codes, and the
    (gap, name) totals one sorted integer key."""
    schema = {"_gap": pl.UInt32, "api_calls": pl.UInt32, "top_api": pl.Utf8, "top_api_ns": pl.Int64}
    gaps = g.select("_gap", "device_id", "start_ns", "end_ns").filter(
        pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    calls = api.select("start_ns", "end_ns", "name").filter(
        pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if gaps.is_empty() or calls.is_empty():
        return pl.DataFrame(schema=schema)
    gaps = gaps.sort("device_id", "start_ns", "end_ns", nulls_last=True, maintain_order=True)
    if not gaps.select(((pl.col("end_ns").diff() >= 0) | pl.col("device_id").ne_missing(pl.col("device_id").shift(1)))
                       .fill_null(True).all()).item():
        return None
    names = calls["name"].unique().drop_nulls().sort()
    k = len(names) + 1  # codes 0..k-2 the names in order, k-1 a call without a name
    code = calls["name"].cast(pl.Enum(names)).to_physical().cast(pl.Int64).fill_null(k - 1)
    s, e = calls["start_ns"].rechunk(), calls["end_ns"].rechunk()  # binary searches over one chunk
    pairs = []
    for _, lane in gaps.group_by("device_id", maintain_order=True):
        gs, ge = lane["start_ns"].rechunk(), lane["end_ns"].rechunk()
        runs = pl.DataFrame({"_c": pl.int_range(calls.height, dtype=pl.Int64, eager=True),
                             "_lo": ge.search_sorted(s, "right").cast(pl.Int64),
                             "_hi": gs.search_sorted(e, "left").cast(pl.Int64)}).filter(pl.col("_hi") > pl.col("_lo"))
        if runs.select((pl.col("_hi") - pl.col("_lo") > 1).any()).item():
            runs = runs.select("_c", _lo=pl.int_ranges("_lo", "_hi", dtype=pl.Int64)).explode("_lo")
        c, at = runs["_c"], runs["_lo"]
        pairs.append(pl.DataFrame({"_key": lane["_gap"].cast(pl.Int64).gather(at) * k + code.gather(c),
                                   "s": s.gather(c), "e": e.gather(c), "gs": gs.gather(at), "ge": ge.gather(at)})
                     .select("_key", _ns=pl.min_horizontal("e", "ge") - pl.max_horizontal("s", "gs")))
    per_name = (pl.concat(pairs).sort("_key")
                .group_by("_key", maintain_order=True).agg(ns=pl.col("_ns").sum(), n=pl.len()))
    if per_name.is_empty():
        return pl.DataFrame(schema=schema)
    # the most time first, then the lowest code: one maximum of ns * k + (k - 1 - code), where that fits
    top_ns = per_name["ns"].max()
    lowest = per_name["ns"].min()
    if lowest < 0 or (top_ns + 1) * k >= 1 << 62:
        return None
    best = (per_name.with_columns(_gap=pl.col("_key") // k, _rank=pl.col("ns") * k + (k - 1) - pl.col("_key") % k)
            .group_by("_gap", maintain_order=True)
            .agg(api_calls=pl.col("n").sum(), _best=pl.col("_rank").max(), top_api_ns=pl.col("ns").max()))
    top_code = k - 1 - best["_best"] % k
    return best.select(
        pl.col("_gap").cast(pl.UInt32), pl.col("api_calls").cast(pl.UInt32),
        top_api=names.cast(pl.Utf8).append(pl.Series([None], dtype=pl.Utf8)).gather(top_code),
        top_api_ns=pl.col("top_api_ns").cast(pl.Int64))


#: ``_covered_in`` evaluates each window once per key; past this many evaluations it joins the pairs instead.
COVERED_POINTS = 20_000_000


def _covered_in(window: pl.DataFrame, union: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """``_gap, api_ns``: for each window row (``_gap, start_ns, end_ns``), the time inside ``union``
    (``merge_intervals`` output: disjoint intervals per ``by`` key), summed over the keys. What
    ``interval_join(window, union, "overlap")`` summed per window gives, from cumulative sums: with
    each key moved onto its own stretch of the time axis, the union is one sorted run of disjoint
    intervals, and the time it covers before t is the lengths of those that start before t, less
    the part of the last one past t; a window's share is that at its end less that at its start."""
    u = union.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    w = window.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    keys = u.select(by).unique(maintain_order=True)
    if (u.is_empty() or w.is_empty() or w.height * keys.height > COVERED_POINTS
            or w.select((pl.col("end_ns") < pl.col("start_ns")).any()).item()):
        return (interval_join(window, union, "overlap").group_by("_gap").agg(api_ns=pl.col("overlap_ns").sum()))
    lo = min(int(u["start_ns"].min()), int(w["start_ns"].min()))
    hi = max(int(u["end_ns"].max()), int(w["end_ns"].max()))
    stretch = hi - lo + 1
    keys = keys.with_row_index("_lane")
    lanes = (u.join(keys, on=by, how="left", nulls_equal=True, maintain_order="left")
             .select(_s=pl.col("start_ns") - lo + pl.col("_lane").cast(pl.Int64) * stretch,
                     _e=pl.col("end_ns") - lo + pl.col("_lane").cast(pl.Int64) * stretch)
             .sort("_s"))
    s, e = lanes["_s"], lanes["_e"]
    # disjoint and in order (what merge_intervals gives), else the pairs are joined
    if not lanes.select(((pl.col("_e") >= pl.col("_s")).all()
                         & (pl.col("_s").shift(-1) >= pl.col("_e")).fill_null(True).all())).item():
        return (interval_join(window, union, "overlap").group_by("_gap").agg(api_ns=pl.col("overlap_ns").sum()))
    before = (e - s).cum_sum() - (e - s)  # lengths of the intervals before each one

    def covered(t: pl.Series) -> pl.Series:
        k = s.search_sorted(t, "left").cast(pl.Int64) - 1  # the last interval starting before t
        last = k.clip(lower_bound=0)
        frame = pl.DataFrame({"t": t, "k": k, "s": s.gather(last), "e": e.gather(last), "b": before.gather(last)})
        return frame.select(pl.when(pl.col("k") >= 0)
                            .then(pl.col("b") + pl.min_horizontal("t", "e") - pl.col("s"))
                            .otherwise(0)).to_series()

    points = w.select("_gap", "start_ns", "end_ns").join(keys.select("_lane"), how="cross").with_columns(
        _shift=pl.col("_lane").cast(pl.Int64) * stretch - lo)
    inside = covered(points["end_ns"] + points["_shift"]) - covered(points["start_ns"] + points["_shift"])
    return (points.select("_gap", api_ns=inside).group_by("_gap", maintain_order=True).agg(pl.col("api_ns").sum())
            .filter(pl.col("api_ns") > 0))


def host_activity_without(gaps: pl.DataFrame, api: pl.DataFrame, removed: pl.DataFrame,
                          nvtx: pl.DataFrame) -> pl.DataFrame:
    """``gaps`` as ``host_activity_in_gaps(idle gaps, api, nvtx)`` returned them, made as if the
    ``removed`` calls (rows of ``api``, matched by process, thread, start and name) had not been made.

    A gap's host activity depends only on the calls that overlap it (the union of a thread's calls
    clipped to the gap is the union of those that reach into it), so only the gaps a removed call
    overlaps are computed again, over the calls that overlap them; the other rows are kept as they
    are, in their order."""
    keys = ["pid", "tid", "start_ns", "name"]
    g = gaps.with_row_index("_row")
    touched = interval_join(g.select("_row", "start_ns", "end_ns"), removed.select("start_ns", "end_ns"),
                            "overlap")["_row"].unique()
    if touched.is_empty():
        return gaps
    sub = g.filter(pl.col("_row").is_in(touched.implode()))
    rest = api.join(removed.select(keys), on=keys, how="anti", nulls_equal=True, maintain_order="left")
    near = interval_join(sub.select("start_ns", "end_ns"), rest.select("start_ns", "end_ns").with_row_index("_api"),
                         "overlap")["_api"].unique().sort()
    again = host_activity_in_gaps(sub.select(IDLE_GAP_COLUMNS), rest[near], nvtx)
    return (
        pl.concat([g.filter(~pl.col("_row").is_in(touched.implode())),
                   again.with_columns(_row=sub["_row"]).select(g.columns)])
        .sort("_row")
        .drop("_row")
    )


def matching_rows(frame: pl.DataFrame, other: pl.DataFrame, keys: list[str]) -> pl.Series:
    """A mask over ``frame``: the rows whose ``keys`` (the first an integer column, such as a start
    time) equal those of some row of ``other``, missing values equal to missing ones, as a semi join
    on ``keys`` would pick them. Only the rows whose first key is among ``other``'s are joined: where
    ``other`` holds a few calls of a million, the million are not hashed on every key."""
    first = keys[0]
    wanted = other[first]
    candidate = frame[first].is_in(wanted.drop_nulls().implode()).fill_null(False)
    if wanted.null_count():
        candidate = candidate | frame[first].is_null()
    rows = (frame.select(keys).with_row_index("_row").filter(candidate)
            .join(other.select(keys), on=keys, how="semi", nulls_equal=True)["_row"])
    return pl.repeat(False, frame.height, dtype=pl.Boolean, eager=True).scatter(rows, True)


HOST_LINK_KINDS = ("HtoD", "DtoH")


def copy_compute_overlap(work: pl.DataFrame, unions: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per device with host-device copies (HtoD, DtoH): ``memcpy_ns`` (union of those copies),
    ``kernel_ns`` (union of kernels), ``overlap_ns`` (copy time during which a kernel runs),
    ``overlap_pct`` of copy time, and the number of streams with copies, with kernels, and with both
    (0 when the trace does not name streams). ``unions`` is ``merge_intervals(work, ["device_id",
    "activity"])`` where the caller has it (its kernel rows are the kernels' union)."""
    work = work.filter((pl.col("activity") == "kernel") | pl.col("kind").is_in(HOST_LINK_KINDS))
    copies = merge_intervals(work.filter(pl.col("activity") == "memcpy"), ["device_id"])
    kernels = (merge_intervals(work.filter(pl.col("activity") == "kernel"), ["device_id"]) if unions is None else
               unions.filter(pl.col("activity") == "kernel").drop("activity"))
    both = interval_join(copies.select("device_id", "start_ns", "end_ns"), kernels.select("device_id", "start_ns", "end_ns"),
                         "overlap", by=["device_id"])
    streams = (
        work.filter(pl.col("stream_id").is_not_null())
        .group_by("device_id", "stream_id")
        .agg(copies=(pl.col("activity") == "memcpy").any(), kernels=(pl.col("activity") == "kernel").any())
        .group_by("device_id")
        .agg(copy_streams=pl.col("copies").sum(), kernel_streams=pl.col("kernels").sum(),
             shared_streams=(pl.col("copies") & pl.col("kernels")).sum())
    )
    return (
        copies.group_by("device_id").agg(memcpy_ns=pl.col("dur_ns").sum(), copies=pl.col("ops").sum())
        .join(kernels.group_by("device_id").agg(kernel_ns=pl.col("dur_ns").sum()), on="device_id", how="left", maintain_order="left")
        .join(both.group_by("device_id").agg(overlap_ns=pl.col("overlap_ns").sum()), on="device_id", how="left", maintain_order="left")
        .join(streams, on="device_id", how="left", maintain_order="left")
        .with_columns(pl.col("kernel_ns", "overlap_ns", "copy_streams", "kernel_streams", "shared_streams").fill_null(0))
        .with_columns(overlap_pct=pl.col("overlap_ns") / pl.col("memcpy_ns") * 100.0)
        .sort("device_id")
    )


def stream_activity(work: pl.DataFrame, window: tuple[int, int] | None) -> pl.DataFrame:
    """Per device and stream: operation counts by activity, busy time (union), first start, last
    end, and busy % of the window."""
    window_ns = (window[1] - window[0]) if window else 0
    busy = merge_intervals(work, ["device_id", "stream_id"]).group_by("device_id", "stream_id").agg(busy_ns=pl.col("dur_ns").sum())
    return (
        work.group_by("device_id", "stream_id")
        .agg(
            kernels=(pl.col("activity") == "kernel").sum(),
            memcpys=(pl.col("activity") == "memcpy").sum(),
            memsets=(pl.col("activity") == "memset").sum(),
            first_start_ns=pl.col("start_ns").min(),
            last_end_ns=pl.col("end_ns").max(),
        )
        .join(busy, on=["device_id", "stream_id"], how="left", maintain_order="left")
        .with_columns(busy_pct=(pl.col("busy_ns") / window_ns * 100.0) if window_ns else pl.lit(None, pl.Float64))
        .sort("device_id", "stream_id")
    )


# --------------------------------------------------------------------------------------------
# Launches
# --------------------------------------------------------------------------------------------


def with_launch_call(work: pl.DataFrame, api: pl.DataFrame) -> pl.DataFrame:
    """GPU work joined to the API call that issued it (by correlation id, and process where both
    know it): adds ``api_name``, ``api_start_ns``, ``api_end_ns``, ``launch_ns``, ``tid`` (the
    calling thread), and fills ``pid`` from the call where the work lacks it."""
    # no filter for the calls without a correlation id (a copy of a million rows): the inner join
    # matches no missing key
    calls = api.select(
        "correlation_id", api_pid="pid", tid="tid", api_name="name", api_start_ns="start_ns", api_end_ns="end_ns",
        launch_ns="dur_ns",
    )
    joined = work.join(calls, on="correlation_id", how="inner")
    same = joined.select(pl.col("pid").is_null() | pl.col("api_pid").is_null() | (pl.col("pid") == pl.col("api_pid"))).to_series()
    if not same.all():  # else no copy of the rows joined: a million of them where every launch is traced
        joined = joined.filter(same)
    return joined.with_columns(pid=pl.coalesce("pid", "api_pid")).drop("api_pid")


def launches(work: pl.DataFrame, api: pl.DataFrame) -> pl.DataFrame:
    """Each kernel with its launch call: ``launch_ns`` (host cost), ``latency_ns`` (call start to
    kernel start), ``idle_before_ns`` (how long the device sat idle before the kernel began, null
    for a device's first operation) and ``waited_for_launch`` (the device had finished its earlier
    work before the launch call returned, or the kernel is its first operation: the GPU had nothing
    queued and waited for this launch), sorted by device and kernel start."""
    # the kernels picked out after the join, which keeps only the launched ones
    issued = with_launch_call(_queued(work), api)
    return _launches_of(issued.filter(pl.col("activity") == "kernel"))


def _queued(work: pl.DataFrame) -> pl.DataFrame:
    """``work`` in device and start order with ``_free_ns`` (when the device finished the work before
    each operation) and ``idle_before_ns``."""
    if not _sorted_by_device_start(work):  # gpu_work's order already: no copy of a million rows
        work = work.sort("device_id", "start_ns")
    return work.with_columns(
        _free_ns=pl.col("end_ns").cum_max().shift(1).over("device_id")
    ).with_columns(idle_before_ns=(pl.col("start_ns") - pl.col("_free_ns")).clip(lower_bound=0))


def _launches_of(kernels: pl.DataFrame) -> pl.DataFrame:
    """``launches`` from the kernel rows of ``with_launch_call(_queued(work), api)``."""
    if not _sorted_by_device_start(kernels):  # the join keeps the work's order as a rule: no second copy then
        kernels = kernels.sort("device_id", "start_ns")
    return kernels.with_columns(
        latency_ns=pl.col("start_ns") - pl.col("api_start_ns"),
        waited_for_launch=(pl.col("_free_ns") < pl.col("api_end_ns")).fill_null(True),
    ).drop("_free_ns")


def _sorted_by_device_start(work: pl.DataFrame) -> bool:
    """Whether ``work`` is in device order, and by start within each device, with no missing value."""
    if work.height < 2:
        return True
    d, t = pl.col("device_id"), pl.col("start_ns")
    return bool(work.select(
        (d.null_count() + t.null_count() == 0)
        & ((d.diff() > 0) | ((d.diff() == 0) & (t.diff() >= 0))).slice(1).all()).item())


def launch_stats(launched: pl.DataFrame, window: tuple[int, int] | None) -> pl.DataFrame:
    """One row per device: kernels, launch rate, median kernel and launch-call durations, and the
    share of kernels that ran shorter than their own launch call."""
    window_s = (window[1] - window[0]) / 1e9 if window else 0.0
    return (
        launched.group_by("device_id")
        .agg(
            kernels=pl.len(),
            kernel_ns_median=pl.col("dur_ns").median(),
            launch_ns_median=pl.col("launch_ns").median(),
            launch_ns_total=pl.col("launch_ns").sum(),
            shorter_than_launch=(pl.col("dur_ns") < pl.col("launch_ns")).sum(),
        )
        .with_columns(
            launches_per_s=(pl.col("kernels") / window_s) if window_s else pl.lit(None, pl.Float64),
            shorter_than_launch_pct=pl.col("shorter_than_launch") / pl.col("kernels") * 100.0,
        )
        .sort("device_id")
    )


def launch_bound_launches(launched: pl.DataFrame, min_kernels: int,
                          released: pl.DataFrame | None = None) -> pl.DataFrame:
    """The launches that form runs of at least ``min_kernels`` consecutive kernels on a device, each
    shorter than its launch call and waited for (``waited_for_launch``: it ran when its launch
    arrived, not from a queue): the ``launches`` rows plus ``stretch``, an id per run within the
    device. ``released`` holds GPU gaps (``device_id, end_ns``) that a host synchronisation returned
    into: the kernel that ends such a gap ends its run and belongs to none, since the GPU waited for
    it because the host had been blocked until the queue drained, not because launching is slow."""
    after_sync = pl.lit(False)
    if released is not None and released.height:
        launched = launched.join(released.select("device_id", start_ns="end_ns", _released=pl.lit(True)),
                                 on=["device_id", "start_ns"], how="left", maintain_order="left")
        after_sync = pl.col("_released").fill_null(False)
    return (
        launched.sort("device_id", "start_ns")
        .with_columns(short=(pl.col("dur_ns") < pl.col("launch_ns")) & pl.col("waited_for_launch") & ~after_sync)
        .with_columns(stretch=(~pl.col("short")).cum_sum().over("device_id"))
        # the kernel that breaks a run opens the next stretch id but is not part of it: count the short ones
        .filter(pl.col("short") & (pl.col("short").sum().over("device_id", "stretch") >= min_kernels))
        .drop("short", "_released", strict=False)
    )


def launch_bound_stretches(bound: pl.DataFrame) -> pl.DataFrame:
    """One row per run of ``launch_bound_launches``: ``device_id, stretch, kernels, start_ns`` (first
    launch call), ``end_ns`` (last kernel end), ``span_ns``, ``kernel_ns`` and ``launch_ns`` (sums),
    ``waited_ns`` (the device's idle time right before each kernel after the first: the waits for the
    run's own launches), ``gpu_busy_pct`` of the span and the most frequent kernel."""
    return (
        bound.sort("device_id", "start_ns")
        .group_by("device_id", "stretch", maintain_order=True)
        .agg(
            kernels=pl.len(),
            start_ns=pl.col("api_start_ns").min(),
            end_ns=pl.col("end_ns").max(),
            kernel_ns=pl.col("dur_ns").sum(),
            launch_ns=pl.col("launch_ns").sum(),
            waited_ns=pl.col("idle_before_ns").slice(1).fill_null(0).sum(),
            top_kernel=pl.col("name").mode().sort().first(),
        )
        .with_columns(span_ns=pl.col("end_ns") - pl.col("start_ns"))
        .with_columns(gpu_busy_pct=pl.col("kernel_ns") / pl.col("span_ns") * 100.0)
    )


# --------------------------------------------------------------------------------------------
# NVTX projection
# --------------------------------------------------------------------------------------------


#: Ranges that stand for the whole process, not the thread they were opened on: (domain, name prefix).
PROCESS_WIDE_RANGES = (("user_annotation", "ProfilerStep#"),)


def nvtx_projection(tl: Timeline, work: pl.DataFrame | None = None, issued: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every NVTX range (marks excluded) with the GPU work launched inside it (see module doc):
    ``gpu_ops``, ``proj_start_ns``, ``proj_end_ns``, ``proj_dur_ns``, ``gpu_time_ns``. ``issued`` is
    ``with_launch_call(work, tl.api)`` where the caller has it already."""
    ranges = tl.nvtx.filter(pl.col("end_ns").is_not_null()).with_row_index("_range")
    if issued is None:
        work = gpu_work(tl) if work is None else work
        issued = with_launch_call(work, tl.api.head(0) if ranges.is_empty() else tl.api)
    issued = issued.select(
        "pid", "tid", start_ns="api_start_ns", end_ns="api_end_ns", op_start_ns="start_ns", op_end_ns="end_ns",
        op_dur_ns="dur_ns",
    )
    process_wide = pl.any_horizontal([(pl.col("domain") == d) & pl.col("text").str.starts_with(p)
                                      for d, p in PROCESS_WIDE_RANGES]).fill_null(False)
    per_thread, per_process = ranges.filter(~process_wide), ranges.filter(process_wide)
    inside = interval_join(per_thread.select("_range", "pid", "tid", "start_ns", "end_ns"), issued, "contains",
                           by=["pid", "tid"])
    if per_process.height:
        inside = pl.concat([inside.drop("tid", strict=False), interval_join(
            per_process.select("_range", "pid", "start_ns", "end_ns"), issued.drop("tid"), "contains", by=["pid"])],
            how="diagonal_relaxed")
    projected = inside.group_by("_range").agg(
        gpu_ops=pl.len(),
        proj_start_ns=pl.col("op_start_ns").min(),
        proj_end_ns=pl.col("op_end_ns").max(),
        gpu_time_ns=pl.col("op_dur_ns").sum(),
    )
    return (
        ranges.join(projected, on="_range", how="left", maintain_order="left")
        .with_columns(
            gpu_ops=pl.col("gpu_ops").fill_null(0).cast(pl.Int64),
            gpu_time_ns=pl.col("gpu_time_ns").fill_null(0).cast(pl.Int64),
            proj_dur_ns=pl.col("proj_end_ns") - pl.col("proj_start_ns"),
        )
        .drop("_range")
    )


# --------------------------------------------------------------------------------------------
# All of it, computed on demand and once
# --------------------------------------------------------------------------------------------


@dataclass
class TimelineAnalysis:
    """The shared computations over one timeline, each computed on first use and kept: one analysis
    serves the summary and every rule (``coach load`` builds one for both), and a rule's helper that
    other rules call too is computed once (``derived``)."""

    timeline: Timeline
    # stretches of the window that belong to no one's steady state (``timeline_rules._steady``: between
    # the steady windows of processes that ran one after another): a gap that meets one is not a gap
    # in anyone's loop, and its position reads "outside"
    holes: pl.DataFrame | None = None
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def window(self) -> tuple[int, int] | None:
        return self.timeline.span_ns

    def release(self) -> None:
        """Let go of the tables computed so far (they are computed again if asked for): for an
        analysis whose work is done while the process goes on, so that its tables, a few columns per
        operation each, do not stay in memory beside the next analysis's."""
        for name, value in list(vars(self).items()):
            frames = value if isinstance(value, tuple) else (value,)
            if (isinstance(getattr(type(self), name, None), cached_property) and frames
                    and all(isinstance(v, (pl.DataFrame, pl.Series)) for v in frames)):
                del self.__dict__[name]
        self._derived.clear()

    @cached_property
    def window_ns(self) -> int:
        return (self.window[1] - self.window[0]) if self.window else 0

    @cached_property
    def work(self) -> pl.DataFrame:
        return gpu_work(self.timeline)

    @cached_property
    def busy(self) -> pl.DataFrame:
        return busy_intervals(self.work)

    @cached_property
    def unions(self) -> pl.DataFrame:
        """The union of each device's kernels, copies and memsets apart: ``merge_intervals(work,
        ["device_id", "activity"])`` without the names of the operations at each end, which no reader
        of it needs. Each activity's rows of the work keep its device and start order, so each is
        merged as it is, with no sort of a million rows by activity."""
        work = self.work.select("device_id", "activity", "start_ns", "end_ns")
        if work.is_empty() or not _sorted_by_device_start(work):
            return merge_intervals(work, ["device_id", "activity"])
        parts = [merge_intervals(work.filter(pl.col("activity") == activity), ["device_id", "activity"])
                 for activity in work["activity"].unique().drop_nulls().sort()]
        if work["activity"].null_count():
            return merge_intervals(work, ["device_id", "activity"])
        merged = pl.concat(parts)
        return merged if merged["device_id"].n_unique() < 2 else merged.sort("device_id", maintain_order=True)

    @cached_property
    def utilisation(self) -> pl.DataFrame:
        return utilisation(self.work, self.busy, self.window, self.unions if not self.work.is_empty() else None)

    @cached_property
    def idle(self) -> pl.DataFrame:
        """The idle gaps alone (``idle_gaps`` of the busy intervals in the window), for the rules that
        need no host activity in them; a gap that meets a hole of the steady window is marked "outside"."""
        gaps = idle_gaps(self.busy, self.window)
        if self.holes is None or self.holes.is_empty() or gaps.is_empty():
            return gaps
        met = interval_join(gaps.with_row_index("_g").select("_g", "start_ns", "end_ns"),
                            self.holes.select("start_ns", "end_ns"), "overlap")["_g"].unique()
        return (gaps.with_row_index("_g")
                .with_columns(position=pl.when(pl.col("_g").is_in(met.implode())).then(pl.lit("outside"))
                              .otherwise(pl.col("position")))
                .drop("_g"))

    @cached_property
    def gaps(self) -> pl.DataFrame:
        """The idle gaps with the host's activity in them (``host_activity_in_gaps``)."""
        return host_activity_in_gaps(self.idle, self.timeline.api, self.timeline.nvtx)

    def gaps_without(self, removed: pl.DataFrame, rows: pl.Series | None = None) -> pl.DataFrame:
        """``gaps`` as if the ``removed`` API calls had not been made: computed from ``gaps`` where
        that is there already (``host_activity_without``), else in one pass over the other calls.
        ``rows``, where the caller has it, is the mask of the API calls that are ``removed``
        (``matching_rows`` of them), so that it is not worked out again."""
        if "gaps" in self.__dict__:
            return host_activity_without(self.gaps, self.timeline.api, removed, self.timeline.nvtx)
        keys = ["pid", "tid", "start_ns", "name"]
        # the columns host_activity_in_gaps reads alone: the calls left are a copy
        api = self.timeline.api.select(*keys, "end_ns")
        api = api.filter(~(matching_rows(api, removed, keys) if rows is None else rows))
        return host_activity_in_gaps(self.idle, api, self.timeline.nvtx)

    @cached_property
    def overlap(self) -> pl.DataFrame:
        return copy_compute_overlap(self.work, self.unions)

    @cached_property
    def streams(self) -> pl.DataFrame:
        return stream_activity(self.work, self.window)

    @cached_property
    def _issued_parts(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The GPU work joined to its calls once, for both ``issued`` and ``launches``: the kernels'
        rows and the others' (copies, memsets), which ``issued`` puts back together without a copy."""
        joined = with_launch_call(_queued(self.work), self.timeline.api)
        kernel = joined["activity"] == "kernel"
        return joined.filter(kernel), joined.filter(~kernel)

    @cached_property
    def launches(self) -> pl.DataFrame:
        return _launches_of(self._issued_parts[0])

    @cached_property
    def launch_stats(self) -> pl.DataFrame:
        return launch_stats(self.launches, self.window)

    @cached_property
    def issued(self) -> pl.DataFrame:
        """The GPU work with the API call that issued it (``with_launch_call``): the kernels, then the
        other operations."""
        return pl.concat(self._issued_parts, rechunk=False).drop("_free_ns", "idle_before_ns")

    @cached_property
    def api_names(self) -> tuple[pl.Series, pl.Series]:
        """The API calls' names as a dictionary: ``(names, codes)``, the distinct names in order and,
        per call, the position of its name there (null for a call without one). A million calls name
        a few dozen functions: what depends on the name alone is worked out once per name."""
        column = self.timeline.api["name"]
        names = column.unique().drop_nulls().sort()
        return names, column.cast(pl.Enum(names)).to_physical().cast(pl.UInt32)

    @cached_property
    def api_base(self) -> pl.Series:
        """Each API call's name without version and per-thread-stream suffixes (``API_SUFFIX``),
        worked out once per distinct name (``api_names``)."""
        names, codes = self.api_names
        return names.str.replace(API_SUFFIX, "").gather(codes).rename("base")

    def api_matching(self, pattern: str) -> pl.Series:
        """Which API calls' base names (``api_base``) match the regular expression ``pattern``: a mask
        over ``timeline.api``, kept per pattern, matched once per distinct name."""
        key = ("api_matching", pattern)
        if key not in self._derived:
            names, codes = self.api_names
            hits = names.str.replace(API_SUFFIX, "").str.contains(pattern).fill_null(False).arg_true()
            self._derived[key] = codes.is_in(hits.cast(pl.UInt32).implode()).fill_null(False)
        return self._derived[key]

    @cached_property
    def projection(self) -> pl.DataFrame:
        return nvtx_projection(self.timeline, self.work, self.issued if self.timeline.nvtx.height else None)


_T = TypeVar("_T")


def derived(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Compute ``fn(analysis, *args)`` once per ``TimelineAnalysis`` and keep it: for the tables one
    rule derives that others ask for too (the synchronisation points, the one-time calls, the
    launch-bound launches). Polars frames are immutable, so sharing one is safe."""

    @functools.wraps(fn)
    def once(a: TimelineAnalysis, *args: Any) -> _T:
        key = (fn.__module__, fn.__qualname__, args)
        if key not in a._derived:
            a._derived[key] = fn(a, *args)
        return a._derived[key]

    return once

