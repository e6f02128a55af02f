"""Two timelines (Nsight Systems, PyTorch profiler): the end-to-end window, GPU busy and idle time,
and per kernel name, NVTX range and copy kind; the quantities of ``TIMELINE_METRICS``, each fix of
the table judged on them, and the best supported one credited.
"""

from __future__ import annotations

import functools

import polars as pl

from coach.analyze.diff.fixes import (
    Fix, change_pct, credit, expect_frame, fixes, in_credit_order, judge, labelled, moved, verdict_of, verdicts,
)
from coach.analyze.diff.metrics import NOISE, TIMELINE_METRICS
from coach.analyze.diff.result import (
    Diff, aspect, aspect_frame, blocked, device_aspects, scenario_checks, scenario_verdict, tool, value_map,
)
from coach.analyze.kernel_rules._common import fmt_bytes
from coach.analyze.timeline import TimelineAnalysis, interval_join
from coach.analyze.timeline_rules._shared import base_api_name
from coach.analyze.timeline_rules.allocator_churn import ALLOC_CALLS, FREE_CALLS
from coach.analyze.timeline_rules.host_sync import SYNC_CALLS
from coach.analyze.timeline_rules.layout_copies import copies as layout_copies
from coach.analyze.timeline_rules.warmup import LOADING_CALLS
from coach.model import Timeline
from coach.scenarios import Scenario

#: The NVTX range a program puts around each timed region: the name coach's harness gives it
#: (coach.capture.harness.time_cuda) and its scenario programs use. Where a timeline has such ranges,
#: a diff can check the measurement itself (``timed_regions``): what falls inside the timer, and
#: which clock it reads.
TIMED_RANGE = "timed"
EVENT_RECORD_CALLS = r"^cu(da)?EventRecord"


def timeline_metrics(tl: Timeline, analysis: TimelineAnalysis | None = None) -> dict[str, float | None]:
    """The quantities of ``TIMELINE_METRICS`` for one timeline."""
    a = analysis or TimelineAnalysis(tl)
    util = a.utilisation
    devices = max(util.height, 1)
    busy_ns = float(util["busy_ns"].sum()) if util.height else 0.0
    api = tl.api.with_columns(base=base_api_name(pl.col("name")))
    memcpy_ns = float(tl.memcpy["dur_ns"].sum()) if tl.memcpy.height else 0.0
    memcpy_bytes = float(tl.memcpy["bytes"].sum()) if tl.memcpy.height else 0.0
    overlap = a.overlap
    copy_ns = float(overlap["memcpy_ns"].sum()) if overlap.height else 0.0
    calls = {name: api.filter(pl.col("base").str.contains(pattern))
             for name, pattern in (("sync", SYNC_CALLS), ("alloc", f"{ALLOC_CALLS}|{FREE_CALLS}"), ("load", LOADING_CALLS),
                                   ("event", EVENT_RECORD_CALLS))}
    allocs = calls["alloc"].filter(pl.col("base").str.contains(ALLOC_CALLS))
    timed = timed_regions(tl, a)
    measured_ns = float(timed["measured_ns"].sum()) if timed.height else 0.0
    window = float(a.window_ns)
    # one launch call can start many kernels (a CUDA graph replay): count the calls, not the kernels
    launch_calls = a.launches.unique(subset=["pid", "correlation_id"])
    return {
        "window_ns": window,
        "gpu_busy_pct": busy_ns / (window * devices) * 100.0 if window else None,
        "gpu_idle_ns": window * devices - busy_ns,
        "idle_host_ns": _idle_host_ns(a),
        "kernel_count": float(tl.kernels.height),
        "kernel_ns": float(tl.kernels["dur_ns"].sum()) if tl.kernels.height else 0.0,
        "memcpy_count": float(tl.memcpy.height),
        "memcpy_ns": memcpy_ns,
        "memcpy_bytes": memcpy_bytes,
        "memcpy_bytes_per_s": memcpy_bytes / (memcpy_ns * 1e-9) if memcpy_ns else None,
        "pageable_memcpy_count": float(tl.memcpy["pageable"].fill_null(False).sum()) if tl.memcpy.height else 0.0,
        "copy_compute_overlap_pct": float(overlap["overlap_ns"].sum()) / copy_ns * 100.0 if copy_ns else None,
        "copy_overlap_ns": float(overlap["overlap_ns"].sum()) if overlap.height else 0.0,
        "sync_calls": float(calls["sync"].height),
        "sync_ns": _total_ns(calls["sync"]),
        "launch_calls": float(launch_calls.height),
        "launch_ns": float(launch_calls["launch_ns"].sum()) if launch_calls.height else 0.0,
        "alloc_calls": float(allocs.height),
        "alloc_ns": _total_ns(calls["alloc"]),
        "module_load_calls": float(calls["load"].height),
        "module_load_ns": _total_ns(calls["load"]),
        "layout_copy_ns": float(layout_copies(a)["dur_ns"].sum()),
        "event_record_calls": float(calls["event"].height),
        "timed_module_load_calls": float(timed["module_loads"].sum()) if timed.height else None,
        "timed_gpu_share_pct": float(timed["gpu_time_ns"].sum()) / measured_ns * 100.0 if measured_ns else None,
    }


def _total_ns(calls: pl.DataFrame) -> float:
    return float(calls["dur_ns"].sum()) if calls.height else 0.0


def _idle_host_ns(a: TimelineAnalysis) -> float:
    """GPU idle time between operations during which no CUDA call ran on the host: the GPU waiting
    for the host's own work (decoding a batch, Python between launches), not for a launch, a
    synchronisation or an allocation."""
    gaps = a.gaps.filter(pl.col("position") == "between")
    if gaps.is_empty():
        return 0.0
    return float(gaps.select((pl.col("dur_ns") - pl.col("api_ns")).clip(lower_bound=0).sum()).item())


def timed_regions(tl: Timeline, a: TimelineAnalysis | None = None) -> pl.DataFrame:
    """One row per ``TIMED_RANGE`` range: ``module_loads`` (module-loading calls inside it, on its
    thread), ``event_records`` (CUDA events recorded inside it), ``gpu_time_ns`` (the kernels launched
    inside it) and ``measured_ns``, the time its timer measured.

    With events recorded inside the range the timer reads the GPU's clock. An event is reached once
    the stream has finished the work queued before it and its record call has been made, so the
    events span from the later of the first record call and the end of the GPU's work before the
    range's first kernel, to the later of the range's last kernel end and the last record call: back
    to back behind earlier work, about the kernels' own time; on an idle GPU (a synchronisation before
    each timed call), the launch latency as well. Without events the timer is the host's, and it
    measured the range itself (perf_counter() around asynchronous launches)."""
    ranges = tl.nvtx.filter((pl.col("text") == TIMED_RANGE) & pl.col("end_ns").is_not_null()).select(
        "pid", "tid", "start_ns", "end_ns").with_row_index("_range")
    if ranges.is_empty():
        return pl.DataFrame(schema={"module_loads": pl.UInt32, "event_records": pl.UInt32, "gpu_time_ns": pl.Int64,
                                    "measured_ns": pl.Int64})
    a = a or TimelineAnalysis(tl)
    api = tl.api.with_columns(base=base_api_name(pl.col("name"))).select("pid", "tid", "start_ns", "end_ns", "base")
    inside = functools.partial(interval_join, ranges, how="contains", by=["pid", "tid"])
    loads = inside(api.filter(pl.col("base").str.contains(LOADING_CALLS)).drop("base")).group_by("_range").agg(
        module_loads=pl.len())
    events = inside(api.filter(pl.col("base").str.contains(EVENT_RECORD_CALLS)).drop("base")).group_by("_range").agg(
        event_records=pl.len(), first_record_ns=pl.col("right_start_ns").min(), last_record_ns=pl.col("right_start_ns").max())
    kernels = inside(a.launches.select(
        "pid", "tid", start_ns="api_start_ns", end_ns="api_end_ns", k_start_ns="start_ns", k_end_ns="end_ns",
        k_dur_ns="dur_ns", k_free_ns=pl.col("start_ns") - pl.col("idle_before_ns"),
    )).group_by("_range").agg(
        gpu_time_ns=pl.col("k_dur_ns").sum(), free_before_ns=pl.col("k_free_ns").sort_by("k_start_ns").first(),
        last_end_ns=pl.col("k_end_ns").max(),
    )
    timed_by_events = (pl.max_horizontal("last_end_ns", "last_record_ns")
                       - pl.max_horizontal("first_record_ns", "free_before_ns"))
    return (
        ranges.join(loads, on="_range", how="left", maintain_order="left").join(events, on="_range", how="left", maintain_order="left")
        .join(kernels, on="_range", how="left", maintain_order="left")
        .with_columns(pl.col("module_loads", "event_records").fill_null(0), pl.col("gpu_time_ns").fill_null(0))
        .with_columns(measured_ns=pl.when(pl.col("event_records") > 0).then(timed_by_events)
                      .otherwise(pl.col("end_ns") - pl.col("start_ns")))
        .select("module_loads", "event_records", "gpu_time_ns", "measured_ns")
    )


def _sides(before: pl.DataFrame, after: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Full outer join of two per-group summaries; value columns suffixed ``_before``/``_after``,
    missing groups as zero."""
    values = [c for c in before.columns if c not in on]
    joined = before.rename({c: f"{c}_before" for c in values}).join(
        after.rename({c: f"{c}_after" for c in values}), on=on, how="full", coalesce=True)
    return joined.with_columns(pl.col(f"{c}_{s}").fill_null(0) for c in values for s in ("before", "after"))


def _kernels_by_name(tl: Timeline) -> pl.DataFrame:
    return tl.kernels.group_by("name").agg(count=pl.len(), total_ns=pl.col("dur_ns").sum())


def _nvtx_by_range(a: TimelineAnalysis) -> pl.DataFrame:
    return a.projection.group_by(pl.col("domain").fill_null(""), "text").agg(
        count=pl.len(), wall_ns=pl.col("dur_ns").sum(), gpu_time_ns=pl.col("gpu_time_ns").sum())


def _memcpy_by_kind(tl: Timeline) -> pl.DataFrame:
    from coach.analyze.timeline_summary import memcpy_by_kind  # noqa: PLC0415 - one definition of the grouping

    return memcpy_by_kind(tl.memcpy).select("kind", "count", "bytes", "total_ns", "pageable")


def timeline_diff(before: Timeline, after: Timeline, fx: Fix | None, scenario: Scenario | None) -> Diff:
    ab, aa = TimelineAnalysis(before), TimelineAnalysis(after)
    mb, ma = timeline_metrics(before, ab), timeline_metrics(after, aa)
    values = pl.DataFrame({"metric": list(mb), "before": list(mb.values()), "after": [ma[k] for k in mb]},
                          schema={"metric": pl.Utf8, "before": pl.Float64, "after": pl.Float64})
    movements = labelled(moved(values), TIMELINE_METRICS)
    timeline_fixes = [f for f in fixes().values() if f.kind == "timeline"]
    all_checks = judge(values, expect_frame(timeline_fixes), [], pl.DataFrame())
    table = verdicts(all_checks, [])
    comparability = _comparability(before, after)
    cross = blocked(comparability)
    window_b, window_a = mb["window_ns"], ma["window_ns"]
    suggested = () if cross else credit(table, all_checks, timeline_fixes, values=value_map(values),
                                        saved=window_b - window_a)
    checks = labelled(in_credit_order(all_checks, [fx.id] if fx else list(suggested)), TIMELINE_METRICS)
    if scenario is not None:
        checks = pl.concat([checks, scenario_checks(scenario, before, after)], how="diagonal_relaxed")
    kernels = _sides(_kernels_by_name(before), _kernels_by_name(after), ["name"]).with_columns(
        change_ns=pl.col("total_ns_after") - pl.col("total_ns_before"),
    ).with_columns(change_pct=change_pct(pl.col("total_ns_before").cast(pl.Float64),
                                         pl.col("total_ns_after").cast(pl.Float64)))
    nvtx = _sides(_nvtx_by_range(ab), _nvtx_by_range(aa), ["domain", "text"]).with_columns(
        change_ns=pl.col("wall_ns_after") - pl.col("wall_ns_before"))
    headline = {
        "before_ns": window_b, "after_ns": window_a,
        "speedup": window_b / window_a if window_a else None,
        "saved_ns": window_b - window_a,
        "saved_pct": (window_b - window_a) / window_b * 100.0 if window_b else None,
        "kernel_before_ns": mb["kernel_ns"], "kernel_after_ns": ma["kernel_ns"],
        "busy_before_pct": mb["gpu_busy_pct"], "busy_after_pct": ma["gpu_busy_pct"],
        "fix_verdict": "not comparable" if (cross and fx is not None) else verdict_of(table, fx),
        "scenario_verdict": scenario_verdict(checks) if scenario is not None else None,
    }
    return Diff(
        kind="timeline", before_path=str(before.source.path), after_path=str(after.source.path), fix=fx,
        scenario=scenario.id if scenario else None, headline=headline, pairs=pl.DataFrame(),
        movements=movements.sort(pl.col("change_pct").abs(), descending=True, nulls_last=True),
        checks=checks, suggested=suggested, comparability=comparability,
        kernels=kernels.sort(pl.col("change_ns").abs(), "name", descending=[True, False]),
        nvtx=nvtx.sort(pl.col("change_ns").abs(), "text", descending=[True, False]),
        memcpy=_sides(_memcpy_by_kind(before), _memcpy_by_kind(after), ["kind"]).sort("kind"),
        values=value_map(values),
    )


def _comparability(before: Timeline, after: Timeline) -> pl.DataFrame:
    kb, ka = set(before.kernels["name"].drop_nulls().to_list()), set(after.kernels["name"].drop_nulls().to_list())
    gone, new = sorted(kb - ka), sorted(ka - kb)
    note = "; ".join(part for part in (f"only before: {', '.join(gone[:5])}" if gone else "",
                                       f"only after: {', '.join(new[:5])}" if new else "") if part)
    copied = [float(tl.memcpy["bytes"].sum()) if tl.memcpy.height else 0.0 for tl in (before, after)]
    return aspect_frame([
        *device_aspects(before, after),
        aspect("devices with work", before.kernels["device_id"].n_unique(), after.kernels["device_id"].n_unique()),
        aspect("tool", tool(before), tool(after)),
        aspect("bytes copied", *copied, tolerance=NOISE, fmt=fmt_bytes,
                note="different input sizes, or a fix that removed copies"),
        {"aspect": "kernel names", "before": str(len(kb)), "after": str(len(ka)), "same": not gone and not new,
         "note": note or "the same kernels ran in both"},
    ])


