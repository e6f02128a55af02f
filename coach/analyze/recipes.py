"""Coach's own numbers beside NVIDIA's recipes: the same quantities computed from the timeline, so a
recipe's output is a second source of evidence (and a check on coach's definitions).

    out = run_recipe("cuda_gpu_kern_sum", ["run.nsys-rep"])       # coach.ingest.recipes
    checks = compare(out, timeline)                                # one row per item and quantity
    checks.filter(~pl.col("agrees"))                               # where the two disagree

For each recipe, ``compare`` computes from the timeline what the recipe computes from the report, by
NVIDIA's definition where it differs from coach's everyday one (docs/analysis.md lists every such
difference), then joins the two on the recipe's keys (kernel name, API name, NVTX range, gap start,
...). An item found on one side only counts as a disagreement. ``tolerance`` is NVIDIA's rounding:
the recipes print means and percentages to one decimal, so those agree within 0.05; counts, sums and
times are integers and must be equal.

The result: ``recipe, report, item, quantity, ours, nvidia, tolerance, agrees, note``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import polars as pl

from coach.analyze.timeline import (gpu_work, idle_gaps, interval_join, merge_intervals, nvtx_projection,
                                    with_launch_call)
from coach.analyze.timeline_rules._shared import base_api_name
from coach.analyze.timeline_rules.pageable_memcpy import pageable_copies
from coach.errors import CoachError
from coach.ingest.recipes import RecipeOutput
from coach.model import Timeline

#: The recipes print means, standard deviations and percentages rounded to one decimal.
ROUNDING = 0.05 + 1e-9

#: ``gpu_gaps`` lists only gaps longer than this unless given ``--gap`` (NVIDIA's default, 500 ms).
NVIDIA_GAP_THRESHOLD_NS = 500_000_000

#: The calls ``cuda_api_sync`` lists: "cudaDeviceSynchronize(), cudaStreamSynchronize()" (the
#: recipe's description). Coach's host-sync rule also counts event and context synchronisation.
NVIDIA_SYNC_CALLS = r"^(cudaDeviceSynchronize|cudaStreamSynchronize)$"

#: ``cuda_memcpy_sync`` leaves out host-to-device copies of 64 KB or less (its ``--help``): the CUDA
#: runtime returns from those once the data is staged, without waiting for the copy ("API
#: synchronization behavior" in the CUDA Runtime API reference).
NVIDIA_SMALL_HTOD_BYTES = 64 * 1024

#: Recipes whose multi-report output puts every report on one time axis, starting at the earliest
#: report's session start ("session times are aligned based on the epoch time of the report file
#: collection", ``cuda_gpu_time_util_map --help``; ``--disable-alignment`` turns it off).
ALIGNED_RECIPES = frozenset({"cuda_gpu_time_util_map"})

COMPARISON: dict[str, pl.DataType] = {
    "recipe": pl.Utf8, "report": pl.Utf8, "item": pl.Utf8, "quantity": pl.Utf8, "ours": pl.Float64,
    "nvidia": pl.Float64, "tolerance": pl.Float64, "agrees": pl.Boolean, "note": pl.Utf8,
}

_STAT_QUANTITIES = {"count": 0.0, "total_ns": 0.0, "min_ns": 0.0, "max_ns": 0.0, "mean_ns": ROUNDING}


@dataclass(frozen=True)
class Definition:
    """How coach computes one recipe's quantities: the keys that identify an item, the quantities
    with their tolerance, coach's side (from the timeline and NVIDIA's table, which some need for
    its bins), and what to say about a difference in definition."""

    keys: tuple[str, ...]
    quantities: dict[str, float]
    ours: Callable[[Timeline, pl.DataFrame, dict], pl.DataFrame]
    note: str = ""
    theirs: Callable[[pl.DataFrame], pl.DataFrame] | None = None  # NVIDIA's rows brought to coach's keys


def compare(out: RecipeOutput, tl: Timeline, report: str | None = None, *,
            gap_threshold_ns: int = NVIDIA_GAP_THRESHOLD_NS, session_origin_ns: int | None = None) -> pl.DataFrame:
    """Coach's numbers for ``tl`` beside the recipe's (see module doc). ``report`` picks the rows of
    a multi-report output (default: the timeline's file name without its suffix; an output of one
    report needs none). ``gap_threshold_ns`` is the ``--gap`` that ``gpu_gaps`` ran with.
    ``session_origin_ns``: for a multi-report output of an ``ALIGNED_RECIPES`` recipe, the earliest
    session start (epoch ns) of the reports it read (``session_origin_ns(timelines)``)."""
    d = DEFINITIONS.get(out.recipe)
    if d is None:
        raise KeyError(f"coach has no comparison for recipe {out.recipe}")
    name = report or Path(tl.source.path).name.split(".")[0]
    theirs = out.table
    shift_ns = 0
    if len(out.reports) > 1:
        theirs = theirs.filter(pl.col("report") == name)
        if out.recipe in ALIGNED_RECIPES:
            shift_ns = _aligned_shift_ns(tl, session_origin_ns, out.recipe)
    elif out.reports:
        name = out.reports[0]
    if d.theirs is not None and theirs.height:
        theirs = d.theirs(theirs)
    ours = d.ours(tl, theirs, {"gap_threshold_ns": gap_threshold_ns, "shift_ns": shift_ns})
    return _side_by_side(out.recipe, name, ours, theirs, d)


def session_origin_ns(timelines: Iterable[Timeline]) -> int | None:
    """The earliest session start (epoch ns) among ``timelines``: time 0 of an aligned multi-report
    recipe output. None when no timeline records its session start."""
    starts = [t.source.meta.get("session_start_epoch_ns") for t in timelines]
    known = [int(s) for s in starts if s is not None]
    return min(known) if known else None


def _aligned_shift_ns(tl: Timeline, origin_ns: int | None, recipe: str) -> int:
    """How far ``tl``'s session time lies from the aligned axis of a multi-report output: its session
    start minus the earliest one."""
    start = tl.source.meta.get("session_start_epoch_ns")
    if origin_ns is None or start is None:
        raise CoachError(f"{recipe} over several reports puts them on one time axis from the earliest session start; "
                         "comparing needs every report's session start (an Nsight Systems export records it)")
    return int(start) - origin_ns


def summary(checks: pl.DataFrame) -> pl.DataFrame:
    """Per recipe: how many values were compared and how many agree."""
    return (checks.group_by("recipe", maintain_order=True)
            .agg(compared=pl.len(), agree=pl.col("agrees").sum(), items=pl.col("item").n_unique()))


def _side_by_side(recipe: str, report: str, ours: pl.DataFrame, theirs: pl.DataFrame, d: Definition) -> pl.DataFrame:
    keys, quantities = list(d.keys), list(d.quantities)
    if theirs.is_empty() and ours.is_empty():
        return pl.DataFrame(schema=COMPARISON)
    o = ours.select(*keys, *quantities, _ours=pl.lit(True))
    if theirs.height:
        t = theirs.select(*[pl.col(k).cast(o.schema[k]) for k in keys], *quantities, _theirs=pl.lit(True))
    else:  # a recipe that found nothing writes no table at all
        t = pl.DataFrame(schema={**{k: o.schema[k] for k in keys}, **dict.fromkeys(quantities, pl.Float64),
                                 "_theirs": pl.Boolean})
    joined = o.join(t, on=keys, how="full", coalesce=True, nulls_equal=True, suffix="_nvidia")
    item = pl.concat_str([pl.col(k).cast(pl.Utf8).fill_null("-") for k in keys], separator=" / ")
    both = pl.col("_ours").fill_null(False) & pl.col("_theirs").fill_null(False)
    rows = [
        joined.select(
            item=item, quantity=pl.lit(q), ours=pl.col(q).cast(pl.Float64),
            nvidia=pl.col(f"{q}_nvidia").cast(pl.Float64), tolerance=pl.lit(tol), _both=both,
            _note=pl.when(~pl.col("_theirs").fill_null(False)).then(pl.lit("only in coach's numbers"))
            .when(~pl.col("_ours").fill_null(False)).then(pl.lit("only in NVIDIA's output")).otherwise(pl.lit(d.note)),
        )
        for q, tol in d.quantities.items()
    ]
    within = (pl.col("ours") - pl.col("nvidia")).abs() <= pl.col("tolerance")
    agree = within | (pl.col("ours").is_null() & pl.col("nvidia").is_null())  # a std of one value is null on both
    return (
        pl.concat(rows)
        .with_columns(agrees=(pl.col("_both") & agree).fill_null(False), recipe=pl.lit(recipe), report=pl.lit(report),
                      note=pl.col("_note"))
        .select(list(COMPARISON))
        .sort("item", "quantity")
    )


# --------------------------------------------------------------------------------------------
# Coach's side, recipe by recipe
# --------------------------------------------------------------------------------------------


def _stats(df: pl.DataFrame, by: str, value: str, unit: str = "ns") -> pl.DataFrame:
    """count, total, min, max, mean and (sample) standard deviation of ``value`` per ``by``."""
    v = pl.col(value)
    return df.group_by(by).agg(
        count=pl.len(), **{f"total_{unit}": v.sum(), f"min_{unit}": v.min(), f"max_{unit}": v.max(),
                           f"mean_{unit}": v.mean(), f"std_{unit}": v.std()})


def _kernels(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    return _stats(tl.kernels, "name", "dur_ns")


def _api(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    return _stats(tl.api.with_columns(name=base_api_name(pl.col("name"))), "name", "dur_ns")


def _their_api_names(table: pl.DataFrame) -> pl.DataFrame:
    """NVIDIA keeps the version suffix (``cudaLaunchKernel_v7000``), coach's reader drops it: the
    recipe's rows regrouped by the name without it."""
    return (table.with_columns(name=base_api_name(pl.col("name")))
            .group_by("name").agg(pl.col("count", "total_ns").sum(), pl.col("min_ns").min(), pl.col("max_ns").max()))


def _mem_ops(tl: Timeline) -> pl.DataFrame:
    """Copies and memsets under the recipe's names: ``CUDA_MEMCPY_KIND_DTOH``, ``CUDA_MEMSET``."""
    kind = pl.col("kind").fill_null("unknown").str.to_uppercase()
    copies = tl.memcpy.select("dur_ns", "bytes", name=pl.lit("CUDA_MEMCPY_KIND_") + kind)
    sets = tl.memset.select("dur_ns", "bytes", name=pl.lit("CUDA_MEMSET"))
    return pl.concat([copies, sets])


def _mem_time(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    return _stats(_mem_ops(tl), "name", "dur_ns")


def _mem_size(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    return _stats(_mem_ops(tl), "name", "bytes", unit="bytes")


def _ranges(tl: Timeline) -> pl.DataFrame:
    return tl.nvtx.filter(pl.col("end_ns").is_not_null())


def _nvtx(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    return _stats(_ranges(tl), "text", "dur_ns")


def nvidia_projection(tl: Timeline) -> pl.DataFrame:
    """NVTX ranges projected onto the GPU as Nsight Systems 2025.3 does it (read off its outputs for
    the recorded reports; docs/analysis.md): coach's projection (``nvtx_projection``: work launched
    inside the range on its thread, through the runtime or the driver API) of each range with GPU
    work, counted in launches (``gpu_launches``: distinct correlation ids, so one CUDA-graph launch
    is one), plus, as the recipes do, one extra range per CUDA-graph kernel node (``node``): the
    innermost range around the graph launch, one level deeper, spanning that node's kernel.

    Columns: ``pid, tid, text, depth, proj_start_ns, proj_end_ns, proj_dur_ns, dur_ns`` (the range on
    its CPU thread; 0 for a node), ``gpu_launches``, ``node``."""
    ranges = tl.nvtx.filter(pl.col("end_ns").is_not_null()).with_row_index("_range")
    issued = with_launch_call(tl.kernels.select("pid", "correlation_id", "graph_id", "start_ns", "end_ns")
                              .with_columns(pl.lit(True).alias("kernel")), tl.api)
    copies = pl.concat([t.select("pid", "correlation_id", "start_ns", "end_ns") for t in (tl.memcpy, tl.memset)])
    other = with_launch_call(copies, tl.api)
    calls = pl.concat([issued, other], how="diagonal_relaxed").select(
        "pid", "tid", "correlation_id", "graph_id", start_ns="api_start_ns", end_ns="api_end_ns",
        node_start_ns="start_ns", node_end_ns="end_ns")
    inside = interval_join(ranges.select("_range", "pid", "tid", "start_ns", "end_ns", "depth"), calls, "contains",
                           by=["pid", "tid"])
    launches = inside.group_by("_range").agg(gpu_launches=pl.col("correlation_id").n_unique())
    # nvtx_projection keeps the ranges in the order of ``ranges``, so the row index names the same range
    projected = (nvtx_projection(tl).with_row_index("_range").join(launches, on="_range")
                 .select("pid", "tid", "text", "depth", "proj_start_ns", "proj_end_ns", "proj_dur_ns", "dur_ns",
                         "gpu_launches", node=pl.lit(False)))
    innermost = (inside.filter(pl.col("graph_id").is_not_null()).sort("depth")
                 .group_by("graph_id", "node_start_ns").agg(pl.col("_range", "node_end_ns").last()))
    nodes = innermost.join(ranges.select("_range", "pid", "tid", "text", "depth"), on="_range").select(
        "pid", "tid", "text", depth=pl.col("depth") + 1, proj_start_ns="node_start_ns", proj_end_ns="node_end_ns",
        proj_dur_ns=pl.col("node_end_ns") - pl.col("node_start_ns"), dur_ns=pl.lit(0, pl.Int64),
        gpu_launches=pl.lit(1, pl.UInt32), node=pl.lit(True))
    return pl.concat([projected, nodes], how="vertical_relaxed").sort("pid", "tid", "proj_start_ns", "depth")


def _proj_sum(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    p = nvidia_projection(tl)
    ranges = p.group_by("text").agg(range_total_ns=pl.col("dur_ns").sum())
    return _stats(p, "text", "proj_dur_ns").join(ranges, on="text")


def _proj_trace(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    return nvidia_projection(tl).select("pid", "tid", "text", "depth", "proj_start_ns", "proj_end_ns")


def _util_map(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    """The share of each of NVIDIA's time bins in which at least one kernel ran (the union of the
    process's kernels on the device, clipped to the bin), in percent. The kernels are moved by
    ``opts["shift_ns"]`` onto the bins' time axis (a multi-report output's, see ``compare``)."""
    if theirs.is_empty():
        return pl.DataFrame(schema={"pid": pl.Int64, "device_id": pl.Int64, "bin_start_ns": pl.Int64,
                                    "kernel_pct": pl.Float64})
    bins = (theirs.select("pid", "device_id", "bin_start_ns").unique().sort("pid", "device_id", "bin_start_ns")
            .with_columns(bin_end_ns=pl.col("bin_start_ns").shift(-1).over("pid", "device_id")))
    width = bins.select((pl.col("bin_end_ns") - pl.col("bin_start_ns")).max()).item() or 1
    bins = bins.with_columns(bin_end_ns=pl.col("bin_end_ns").fill_null(pl.col("bin_start_ns") + width))
    shift = opts.get("shift_ns", 0)
    kernels = tl.kernels.select("pid", "device_id", pl.col("start_ns") + shift, pl.col("end_ns") + shift)
    union = merge_intervals(kernels, ["pid", "device_id"])
    overlap = (
        bins.join(union.select("pid", "device_id", "start_ns", "end_ns"), on=["pid", "device_id"])
        .filter((pl.col("start_ns") < pl.col("bin_end_ns")) & (pl.col("end_ns") > pl.col("bin_start_ns")))
        .group_by("pid", "device_id", "bin_start_ns")
        .agg(busy_ns=(pl.min_horizontal("end_ns", "bin_end_ns") - pl.max_horizontal("start_ns", "bin_start_ns")).sum())
    )
    bin_ns = pl.col("bin_end_ns") - pl.col("bin_start_ns")
    return (bins.join(overlap, on=["pid", "device_id", "bin_start_ns"], how="left", maintain_order="left")
            .select("pid", "device_id", "bin_start_ns", kernel_pct=pl.col("busy_ns").fill_null(0) / bin_ns * 100.0))


def _their_util_map(table: pl.DataFrame) -> pl.DataFrame:
    """In a multi-report map NVIDIA leaves empty (null) the bins a report's session does not reach
    (before it started, after it ended): no kernel of that report ran there, so they count as 0%."""
    return table.with_columns(pl.col("kernel_pct").fill_null(0.0))


def between_gaps(work: pl.DataFrame) -> pl.DataFrame:
    """Idle stretches between a process's first and last operation on each device, as NVIDIA's
    ``gpu_gaps`` looks for them (per process and device, leading and trailing stretches left out):
    ``pid, device_id, start_ns, end_ns, dur_ns``."""
    parts = []
    for (pid,), w in work.filter(pl.col("start_ns").is_not_null()).group_by("pid"):
        busy = merge_intervals(w, ["device_id"])
        window = (int(busy["start_ns"].min()), int(busy["end_ns"].max()))
        parts.append(idle_gaps(busy, window).filter(pl.col("position") == "between")
                     .select(pl.lit(pid, pl.Int64).alias("pid"), "device_id", "start_ns", "end_ns", "dur_ns"))
    schema = {"pid": pl.Int64, "device_id": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "dur_ns": pl.Int64}
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def _gaps(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    return between_gaps(gpu_work(tl)).filter(pl.col("dur_ns") > opts["gap_threshold_ns"])


def _copies_by_call(tl: Timeline) -> pl.DataFrame:
    copies = gpu_work(tl).filter(pl.col("activity") == "memcpy")
    return with_launch_call(copies, tl.api).with_columns(call=base_api_name(pl.col("api_name")))


def _memcpy_async(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    pageable = pageable_copies(tl.memcpy).select("correlation_id", "pid")
    return (_copies_by_call(tl).join(pageable, on=["correlation_id", "pid"], how="semi", nulls_equal=True)
            .filter(pl.col("call").str.contains("Async")).select("start_ns", "dur_ns", "bytes"))


def _memcpy_sync(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    """Copies issued by a memcpy call without ``Async``, less those the recipe leaves out (its
    ``--help``): copies within one device, and host-to-device copies of ``NVIDIA_SMALL_HTOD_BYTES``
    or less."""
    blocking = pl.col("call").str.contains(r"^cu(da)?Memcpy") & ~pl.col("call").str.contains("Async")
    within_device = pl.col("kind") == "DtoD"
    small_upload = (pl.col("kind") == "HtoD") & (pl.col("bytes") <= NVIDIA_SMALL_HTOD_BYTES)
    left_out = (within_device | small_upload).fill_null(False)
    return _copies_by_call(tl).filter(blocking & ~left_out).select("start_ns", "dur_ns", "bytes")


def _api_sync(tl: Timeline, theirs: pl.DataFrame, opts: dict) -> pl.DataFrame:
    blocking = base_api_name(pl.col("name")).str.contains(NVIDIA_SYNC_CALLS)
    return tl.api.filter(blocking).select("tid", "start_ns", "dur_ns")


_PROJECTION = "ranges with GPU work, and one more per CUDA-graph kernel node (NVIDIA's rule)"

DEFINITIONS: dict[str, Definition] = {
    "cuda_gpu_kern_sum": Definition(("name",), {**_STAT_QUANTITIES, "std_ns": ROUNDING}, _kernels,
                                    "grouped by short name, as the recipe does (nsys stats groups by full signature)"),
    "cuda_api_sum": Definition(("name",), {"count": 0.0, "total_ns": 0.0, "min_ns": 0.0, "max_ns": 0.0}, _api,
                               "API names without their _vNNNN / _ptsz suffixes", theirs=_their_api_names),
    "cuda_gpu_mem_time_sum": Definition(("name",), _STAT_QUANTITIES, _mem_time),
    "cuda_gpu_mem_size_sum": Definition(("name",), {"count": 0.0, "total_bytes": 0.0, "min_bytes": 0.0,
                                                    "max_bytes": 0.0, "mean_bytes": ROUNDING}, _mem_size),
    "nvtx_sum": Definition(("text",), _STAT_QUANTITIES, _nvtx),
    "nvtx_gpu_proj_sum": Definition(("text",), {**_STAT_QUANTITIES, "range_total_ns": 0.0}, _proj_sum, _PROJECTION),
    "nvtx_gpu_proj_trace": Definition(("pid", "tid", "text", "depth", "proj_start_ns"), {"proj_end_ns": 0.0},
                                      _proj_trace, _PROJECTION),
    "cuda_gpu_time_util_map": Definition(("pid", "device_id", "bin_start_ns"), {"kernel_pct": ROUNDING}, _util_map,
                                         "union of the kernels in NVIDIA's bins", theirs=_their_util_map),
    "gpu_gaps": Definition(("pid", "device_id", "start_ns"), {"dur_ns": 0.0}, _gaps,
                           "gaps between operations per process and device, over the --gap threshold"),
    "cuda_memcpy_async": Definition(("start_ns",), {"dur_ns": 0.0, "bytes": 0.0}, _memcpy_async,
                                    "pageable copies issued by an Async call"),
    "cuda_memcpy_sync": Definition(("start_ns",), {"dur_ns": 0.0, "bytes": 0.0}, _memcpy_sync,
                                   "copies issued by a memcpy call without Async, not within one device, "
                                   "not host-to-device of 64 KB or less"),
    "cuda_api_sync": Definition(("tid", "start_ns"), {"dur_ns": 0.0}, _api_sync,
                                "cudaDeviceSynchronize and cudaStreamSynchronize only"),
}
