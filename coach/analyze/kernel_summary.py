"""The first things a performance engineer wants from a kernel profile, for ``coach load``.

``summarize_kernels(profile)`` returns plain numbers and a Polars frame:

``device``    the GPU the launches ran on (name, SMs, peak DRAM bandwidth the tool reports)
``launches``  how many launches were profiled
``kernels``   one row per kernel name and launch configuration, by total time: launches, total and
              average duration, achieved DRAM bandwidth (bytes read + written over the duration, or
              Nsight Compute's DRAM throughput times its peak where the report has no byte count;
              ``dram_rate_source`` says which) and its share of Nsight Compute's peak, compute (SM) throughput % of peak, achieved FLOP/s
              (FP64 + FP32 + FP16 instructions, an FMA counting 2, plus tensor-pipe work where the
              report counts it), arithmetic intensity (FLOPs per DRAM byte), achieved occupancy,
              and the launch configuration

``to_jsonable(summary)`` turns the frame into a list of row dicts for ``--json``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.kernel_metrics import with_derived
from coach.analyze.quantities import dram_rate, dram_rate_source, sum_or_null
from coach.model import KernelProfile

TOP = 10


def summarize_kernels(profile: KernelProfile, top: int = TOP) -> dict[str, Any]:
    """The summary (see module doc). A metric the report lacks stays null ("not in report"): a
    report without DRAM byte counts gets its DRAM rate from Nsight Compute's DRAM throughput (% of
    its peak) where it has that (``coach.analyze.quantities.dram_rate``), and none otherwise."""
    launches = with_derived(profile.launches, profile.devices).with_columns(
        _dram_rate=dram_rate(), _dram_rate_source=dram_rate_source()
    ).with_columns(_dram_moved=pl.col("_dram_rate") * pl.col("duration_ns") * 1e-9)
    dev = profile.devices.row(0, named=True) if profile.devices.height else {}
    kernels = (
        launches.group_by("kernel_name", "grid_size", "block_size", maintain_order=True)
        .agg(
            demangled_name=pl.col("demangled_name").first(),
            launches=pl.len(),
            total_ns=sum_or_null("duration_ns"),  # a --metrics report without the duration: unknown, not 0
            avg_ns=pl.col("duration_ns").mean(),
            dram_bytes=sum_or_null("dram_bytes"),
            dram_read_bytes=sum_or_null("dram_read_bytes"),
            dram_moved=sum_or_null("_dram_moved"),
            dram_rate_source=pl.col("_dram_rate_source").drop_nulls().first(),
            flop=sum_or_null("flop"),
            sm_throughput_pct=pl.col("sm_throughput_pct").mean(),
            dram_throughput_pct=pl.col("dram_throughput_pct").mean(),
            achieved_occupancy_pct=pl.col("achieved_occupancy_pct").mean(),
            registers_per_thread=pl.col("registers_per_thread").first(),
            peak_bytes_per_s=pl.col("device_memory_bandwidth_bytes_per_s").first(),
        )
        .with_columns(
            time_pct=pl.when(pl.col("total_ns").sum() > 0).then(100 * pl.col("total_ns") / pl.col("total_ns").sum()),
            dram_bytes_per_s=pl.when(pl.col("total_ns") > 0).then(pl.col("dram_moved") / (pl.col("total_ns") * 1e-9)),
            flop_per_s=pl.when(pl.col("total_ns") > 0).then(pl.col("flop") / (pl.col("total_ns") * 1e-9)),
            arithmetic_intensity=pl.when(pl.col("dram_bytes") > 0).then(pl.col("flop") / pl.col("dram_bytes")),
        )
        # % of Nsight Compute's own peak (the report's device attribute); the report's own
        # percentage where the peak is not in it
        .with_columns(dram_pct_of_peak=pl.coalesce(100 * pl.col("dram_bytes_per_s") / pl.col("peak_bytes_per_s"),
                                                   pl.col("dram_throughput_pct")))
        .drop("peak_bytes_per_s", "dram_moved")
        .sort("total_ns", descending=True, nulls_last=True)
        .head(top)
    )
    out = {
        "device": {k: dev.get(k) for k in ("name", "sm_count", "memory_bandwidth_bytes_per_s", "l2_bytes")},
        "launches": profile.launches.height,
        "kernels": kernels,
    }
    meta = profile.source.meta
    notes = []
    if meta.get("truncated"):
        notes.append(f"The file is cut short: {meta['truncated']}.")
    if meta.get("unread_sections"):
        notes.append(f"Sections coach does not read: {', '.join(meta['unread_sections'])}; their values are kept in "
                     "the metric table, and no finding uses them.")
    if meta.get("rules_unrecognised"):
        n = meta["rules_unrecognised"]
        notes.append(f"{n} of Nsight Compute's rule results {'is' if n == 1 else 'are'} not recognised by its wording "
                     "(kept without a rule id).")
    if notes:
        out["notes"] = notes
    return out


def to_jsonable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.to_dicts() if isinstance(v, pl.DataFrame) else v) for k, v in summary.items()}
