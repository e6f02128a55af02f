"""The first things a performance engineer wants from a timeline, for ``coach load``.

``summarize_timeline(tl)`` returns a dict of plain numbers and Polars frames:

``window_ns``     the span of CUDA activity the percentages are measured over
``counts``        rows per canonical table, except ``devices``: the GPUs the timeline knows, from the
                  device table or from GPU work on a device the table does not list
``warnings``      one sentence per way the trace is incomplete (``coach.analyze.coverage``)
``devices``       per GPU: busy time and %, and the union time of kernels, copies and memsets
``top_kernels``   by total time: count, total/avg/min/max, share of all kernel time (``time_pct``),
                  grouped by full signature as ``nsys stats --report cuda_gpu_kern_sum`` groups them
                  (the ``cuda_gpu_kern_sum`` recipe groups by short name instead, merging template
                  instances such as the two ``vectorized_elementwise_kernel`` variants)
``memcpy``        per copy kind: count, bytes, time, achieved GB/s (bytes over summed copy time),
                  and how many copies touched pageable host memory
``top_api``       runtime/driver calls by total time: count, total/avg/max, share of API time
``nvtx``          per domain and range name: instances, wall time, projected GPU time (NVIDIA's
                  definition, see ``coach.analyze.timeline``) and the GPU operations launched inside;
                  the ``top`` largest by projected time in each domain

``to_jsonable(summary)`` turns the frames into lists of row dicts for ``--json``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.coverage import timeline_gaps
from coach.analyze.timeline import TimelineAnalysis
from coach.model import Timeline

TOP = 10


def summarize_timeline(tl: Timeline, top: int = TOP, analysis: TimelineAnalysis | None = None) -> dict[str, Any]:
    """The summary of one timeline (see module doc)."""
    a = analysis or TimelineAnalysis(tl)
    return {
        "window_ns": a.window_ns,
        "counts": {**{name: df.height for name, df in tl.tables().items()}, "devices": device_count(tl, a)},
        "warnings": timeline_gaps(tl),
        "devices": a.utilisation,
        "top_kernels": top_kernels(tl.kernels, top),
        "memcpy": memcpy_by_kind(tl.memcpy),
        "top_api": top_api(tl.api, top),
        "nvtx": nvtx_ranges(a.projection, top),
    }


def device_count(tl: Timeline, a: TimelineAnalysis) -> int:
    """GPUs the timeline knows: listed in its device table or running its work (a trace can hold work
    on devices whose properties it did not record, and list devices that ran nothing)."""
    ids = pl.concat([tl.devices.select("device_id"), a.work.select("device_id")]).drop_nulls().unique()
    return ids.height


def top_kernels(kernels: pl.DataFrame, top: int = TOP) -> pl.DataFrame:
    total = kernels["dur_ns"].sum() if kernels.height else 0
    return (
        kernels.with_columns(demangled_name=pl.coalesce("demangled_name", "name"))
        .group_by("demangled_name")
        .agg(
            name=pl.col("name").first(),
            count=pl.len(),
            total_ns=pl.col("dur_ns").sum(),
            avg_ns=pl.col("dur_ns").mean(),
            min_ns=pl.col("dur_ns").min(),
            max_ns=pl.col("dur_ns").max(),
        )
        .with_columns(time_pct=(pl.col("total_ns") / total * 100.0) if total else pl.lit(0.0))
        .sort("total_ns", "demangled_name", descending=[True, False])
        .head(top)
        .select("name", "count", "total_ns", "avg_ns", "min_ns", "max_ns", "time_pct", "demangled_name")
    )


def memcpy_by_kind(memcpy: pl.DataFrame) -> pl.DataFrame:
    return (
        memcpy.group_by(pl.col("kind").fill_null("unknown"))
        .agg(
            count=pl.len(),
            bytes=pl.col("bytes").sum(),
            total_ns=pl.col("dur_ns").sum(),
            pageable=pl.col("pageable").fill_null(False).sum(),
        )
        .with_columns(gb_per_s=pl.when(pl.col("total_ns") > 0).then(pl.col("bytes") / pl.col("total_ns")))
        .sort("total_ns", "kind", descending=[True, False])
    )


def top_api(api: pl.DataFrame, top: int = TOP) -> pl.DataFrame:
    total = api["dur_ns"].sum() if api.height else 0
    return (
        api.group_by("name")
        .agg(count=pl.len(), total_ns=pl.col("dur_ns").sum(), avg_ns=pl.col("dur_ns").mean(), max_ns=pl.col("dur_ns").max())
        .with_columns(time_pct=(pl.col("total_ns") / total * 100.0) if total else pl.lit(0.0))
        .sort("total_ns", "name", descending=[True, False])
        .head(top)
    )


def nvtx_ranges(projection: pl.DataFrame, top: int = TOP) -> pl.DataFrame:
    return (
        projection.group_by("domain", "text")
        .agg(
            count=pl.len(),
            wall_ns=pl.col("dur_ns").sum(),
            proj_ns=pl.col("proj_dur_ns").sum(),
            gpu_time_ns=pl.col("gpu_time_ns").sum(),
            gpu_ops=pl.col("gpu_ops").sum(),
        )
        .sort("domain", "proj_ns", "wall_ns", "text", descending=[False, True, True, False], nulls_last=True)
        .filter(pl.int_range(pl.len()).over("domain") < top)
    )


def to_jsonable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary with every frame as a list of row dicts (JSON-ready)."""
    return {k: (v.to_dicts() if isinstance(v, pl.DataFrame) else v) for k, v in summary.items()}
