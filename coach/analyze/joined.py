"""One program seen by both tools: Nsight Systems' timeline rows and Nsight Compute's per-kernel
metrics in one table, so the kernels that dominate the timeline show what bounds each.

Nsight Systems records every launch and when it ran; Nsight Compute replays a few launches and
measures them in depth. ``join(timeline, profile)`` matches them by kernel name (the function name
both tools give; the demangled signature where the short names differ), launch configuration (grid
and block) and invocation order: the n-th profiled launch of a (name, grid, block) is the n-th such
launch on the timeline. That holds when Nsight Compute profiled from the program's start, filtered
by kernel name and count only (``-k``, ``-c``); with ``--launch-skip`` it profiled later launches,
and the durations of a matched pair (``nsys_ns``, ``ncu_ns``) tell whether the pairing is right: Nsight
Compute clears the caches before each replay pass, so its duration is usually a little longer.

``Joined.kernels``    one row per (name, grid, block) on the timeline, largest total time first:
                      launches, total and share of kernel time, and for the profiled ones the
                      speed-of-light bound (which unit, how close to its roof) and the top finding
``Joined.launches``   every timeline launch with the Nsight Compute launch it matched (or null)
``Joined.unmatched``  profiled launches not found on the timeline (another run, another process?)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from coach.analyze.coverage import no_gpu_activity
from coach.analyze.diagnose import is_not_checked
from coach.analyze.diff import CONFIG
from coach.analyze.kernel_metrics import with_derived
from coach.analyze.kernel_rules import diagnose_launch, ncu_rules_by_launch, speed_of_light
from coach.errors import CoachError
from coach.model import KernelProfile, Timeline

#: Nsight Compute columns carried into the joined table.
NCU_COLUMNS = ("duration_ns", "dram_throughput_pct", "sm_throughput_pct", "memory_throughput_pct",
               "achieved_occupancy_pct", "dram_bandwidth_bytes_per_s", "arithmetic_intensity_flop_per_byte")


@dataclass
class Joined:
    kernels: pl.DataFrame
    launches: pl.DataFrame
    unmatched: pl.DataFrame
    timeline_path: str
    profile_path: str

    def to_dict(self) -> dict[str, Any]:
        return {"timeline": self.timeline_path, "profile": self.profile_path, "kernels": self.kernels.to_dicts(),
                "unmatched": self.unmatched.to_dicts()}


def join(timeline: Timeline, profile: KernelProfile) -> Joined:
    """The joined view of one program's timeline and kernel profile (see module doc)."""
    if timeline.kind != "timeline" or profile.kind != "kernel-profile":
        raise CoachError(f"coach join takes a timeline (Nsight Systems or PyTorch profiler) and an Nsight Compute "
                         f"profile; got a {timeline.kind} and a {profile.kind}")
    if timeline.kernels.is_empty():
        why = no_gpu_activity(timeline.source.format).removeprefix("No GPU activity recorded")
        raise CoachError(f"{timeline.source.path} has no kernel records{why}")
    runs = (timeline.kernels.sort("start_ns")
            .select("name", "demangled_name", *CONFIG, "device_id", "stream_id", "start_ns", nsys_ns="dur_ns"))
    profiled = _profiled(profile)
    matched = _match(runs, profiled)
    launches = runs.with_row_index("_run").join(matched, on="_run", how="left", maintain_order="left").drop("_run")
    total = float(runs["nsys_ns"].sum())
    kernels = (
        launches.group_by("name", *CONFIG, maintain_order=True)
        .agg(
            launches=pl.len(), total_ns=pl.col("nsys_ns").sum(), avg_ns=pl.col("nsys_ns").mean(),
            profiled=pl.col("launch_id").is_not_null().sum(),
            first_launch_id=pl.col("launch_id").drop_nulls().first(),
            nsys_ns_of_profiled=pl.col("nsys_ns").filter(pl.col("launch_id").is_not_null()).mean(),
        )
        .with_columns(time_pct=pl.col("total_ns") / total * 100.0 if total else pl.lit(None, pl.Float64))
        .join(profiled.drop("name", "demangled_name", *CONFIG, "_nth"), left_on="first_launch_id",
              right_on="launch_id", how="left", maintain_order="left")
        .sort("total_ns", descending=True)
        .rename({"first_launch_id": "launch_id", "duration_ns": "ncu_ns"})
        .select("name", *CONFIG, "launches", "total_ns", "time_pct", "avg_ns", "profiled", "launch_id",
                "nsys_ns_of_profiled", "ncu_ns", "bound", "regime", "busiest_pct", "top_finding", "top_rule",
                "top_saving_pct", *NCU_COLUMNS[1:])
    )
    unmatched = profiled.filter(~pl.col("launch_id").is_in(launches["launch_id"].drop_nulls().implode())).select(
        "launch_id", "name", *CONFIG, ncu_ns="duration_ns")
    return Joined(kernels=kernels, launches=launches.rename({"duration_ns": "ncu_ns"}), unmatched=unmatched,
                  timeline_path=str(timeline.source.path), profile_path=str(profile.source.path))


def _profiled(profile: KernelProfile) -> pl.DataFrame:
    """Each profiled launch: name, configuration, order within its (name, grid, block), a few metrics,
    the speed-of-light bound and the top finding."""
    wide = with_derived(profile.launches, profile.devices).sort("launch_id")
    ncu_rules = ncu_rules_by_launch(profile.rules)
    verdicts = []
    for launch in wide.iter_rows(named=True):  # Nsight Compute profiles a handful of launches
        v = speed_of_light.verdict(launch)
        found, _ = diagnose_launch(launch, ncu_rules.get(launch["launch_id"], ()))
        top = next((f for f in found if not is_not_checked(f)), None)
        verdicts.append({
            "launch_id": launch["launch_id"],
            "bound": None if v is None else f"{v.unit} ({v.side})" if v.side != "balanced" else f"{v.unit} (balanced)",
            "regime": None if v is None else v.regime,
            "busiest_pct": None if v is None else v.busiest_pct,
            "top_finding": None if top is None else top.title,
            "top_rule": None if top is None else top.rule_id,
            "top_saving_pct": None if top is None else top.estimated_gain_pct,
        })
    schema = {"launch_id": pl.Int64, "bound": pl.Utf8, "regime": pl.Utf8, "busiest_pct": pl.Float64,
              "top_finding": pl.Utf8, "top_rule": pl.Utf8, "top_saving_pct": pl.Float64}
    return (wide.select("launch_id", pl.col("kernel_name").alias("name"), "demangled_name", *CONFIG, *NCU_COLUMNS)
            .with_columns(_nth=pl.int_range(pl.len()).over("name", *CONFIG))
            .join(pl.DataFrame(verdicts, schema=schema), on="launch_id", how="left", maintain_order="left"))


def _match(runs: pl.DataFrame, profiled: pl.DataFrame) -> pl.DataFrame:
    """``_run`` (row of ``runs``) -> the profiled launch's columns: by name, configuration and order;
    profiled launches whose short name is not on the timeline, by demangled signature instead."""
    indexed = runs.with_row_index("_run")
    carried = [c for c in profiled.columns if c not in ("name", "demangled_name", *CONFIG, "_nth")]
    by_name = indexed.with_columns(_nth=pl.int_range(pl.len()).over("name", *CONFIG)).join(
        profiled, on=["name", *CONFIG, "_nth"], how="inner", suffix="_ncu").select("_run", *carried)
    rest = profiled.filter(~pl.col("launch_id").is_in(by_name["launch_id"].implode())
                           & pl.col("demangled_name").is_not_null())
    free = indexed.filter(~pl.col("_run").is_in(by_name["_run"].implode()) & pl.col("demangled_name").is_not_null())
    by_signature = (free.with_columns(_nth=pl.int_range(pl.len()).over("demangled_name", *CONFIG))
                    .join(rest.with_columns(_nth=pl.int_range(pl.len()).over("demangled_name", *CONFIG)),
                          on=["demangled_name", *CONFIG, "_nth"], how="inner", suffix="_ncu")
                    .select("_run", *carried))
    return pl.concat([by_name, by_signature])
