"""What the Nsight Compute readers share, so that a ``.ncu-rep`` and an ``ncu --csv`` export of the same
report give the same canonical tables.

Both readers first build a long table of the tool's own metrics (launch_id, metric, value, unit,
text) in base units; everything canonical is derived from it here:

* ``canonical_metrics``: the ``LAUNCH_METRICS`` columns, through the mapping in ``ncu_metrics.csv``.
  One row per canonical column with an expression over Nsight Compute metric names: ``|`` separates
  alternatives, tried in order per launch (newer names first, older versions' names after); ``+``
  adds terms; ``*`` multiplies a term's factors, each a metric name or a number. An alternative
  counts only where all its metrics are present.
* ``launch_config``: grid, block, registers and shared memory from the ``launch__*`` metrics.
* ``devices``: one row per device from the ``device__attribute_*`` metrics.
* ``to_base_units``: raw values and unit strings to coach's units (``coach.ingest.units``).

Rule results carry Nsight Compute's message and speed-up types; ``RULE_SEVERITY`` and
``SPEEDUP_TYPE`` translate the ``ncu_report`` enums, ``RULE_TYPE_SEVERITY`` the labels the CSV
prints for the same enums.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from coach.ingest.units import unit_table
from coach.model import LAUNCH_METRICS

MAPPING_FILE = Path(__file__).with_name("ncu_metrics.csv")

#: canonical launch column -> the ``launch__*`` metric that holds it
LAUNCH_CONFIG: dict[str, str] = {
    "grid_x": "launch__grid_dim_x",
    "grid_y": "launch__grid_dim_y",
    "grid_z": "launch__grid_dim_z",
    "block_x": "launch__block_dim_x",
    "block_y": "launch__block_dim_y",
    "block_z": "launch__block_dim_z",
    "grid_size": "launch__grid_size",
    "block_size": "launch__block_size",
    "cluster_size": "launch__cluster_size",
    "registers_per_thread": "launch__registers_per_thread",
    "shared_mem_static_bytes": "launch__shared_mem_per_block_static",
    "shared_mem_dynamic_bytes": "launch__shared_mem_per_block_dynamic",
    "shared_mem_config_bytes": "launch__shared_mem_config_size",
    "device_id": "launch__device_id",
    "context_id": "launch__context_id",
    "stream_id": "launch__stream_id",
}

#: canonical device column -> (``device__attribute_*`` metric, factor; None for a text attribute)
DEVICE_ATTRS: dict[str, tuple[str, float | None]] = {
    "name": ("device__attribute_display_name", None),
    "cc_major": ("device__attribute_compute_capability_major", 1),
    "cc_minor": ("device__attribute_compute_capability_minor", 1),
    "sm_count": ("device__attribute_multiprocessor_count", 1),
    "sm_clock_hz": ("device__attribute_clock_rate", 1e3),  # reported in kHz, without a unit
    "memory_clock_hz": ("device__attribute_memory_clock_rate", 1e3),  # kHz
    "memory_bus_width_bits": ("device__attribute_global_memory_bus_width", 1),
    "memory_bytes": ("device__attribute_total_memory", 1),
    "l2_bytes": ("device__attribute_l2_cache_size", 1),
    "shared_mem_per_sm_bytes": ("device__attribute_max_shared_memory_per_multiprocessor", 1),
    "registers_per_sm": ("device__attribute_max_registers_per_multiprocessor", 1),
    "max_warps_per_sm": ("device__attribute_max_warps_per_multiprocessor", 1),
    "max_blocks_per_sm": ("device__attribute_max_blocks_per_multiprocessor", 1),
    "max_threads_per_block": ("device__attribute_max_threads_per_block", 1),
}

# Peak DRAM bandwidth = bytes per DRAM cycle at peak x DRAM clock, both measured by the tool.
PEAK_DRAM = ("dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second")

#: ``ncu_report.MsgType`` -> severity. NONE carries no message; OK is what the CSV and the UI label
#: "INF"; OPTIMIZATION ("OPT") and WARNING ("WRN") both ask the user to act.
RULE_SEVERITY: dict[int, str] = {0: "ok", 1: "info", 2: "warning", 3: "warning", 4: "error"}
#: the same message types as ``ncu --csv --page details`` labels them in its "Rule Type" column
RULE_TYPE_SEVERITY: dict[str, str] = {"OK": "ok", "INF": "info", "OPT": "warning", "WRN": "warning", "ERR": "error"}
#: ``ncu_report`` speed-up estimate types (SpeedupType_UNKNOWN = 0, LOCAL = 1, GLOBAL = 2)
SPEEDUP_TYPE: dict[int, str] = {1: "local", 2: "global"}

# Links in a rule message as ``ncu_report`` gives it: "@url:Profiling Guide:https://...@" and
# "@section:SourceCounters:Source Counters@"; the CSV and text pages print them as "Profiling Guide
# (https://...)" and "Source Counters".
_URL_MARKUP = re.compile(r"@url:([^:@]*):([^@]*)@")
_SECTION_MARKUP = re.compile(r"@section:[^:@]*:([^@]*)@")


def plain_rule_message(message: str | None) -> str | None:
    """A rule message with its links written out as ncu's CSV and text pages print them."""
    if not message or "@" not in message:
        return message
    return _SECTION_MARKUP.sub(r"\1", _URL_MARKUP.sub(r"\1 (\2)", message))


@dataclass(frozen=True)
class Term:
    factor: float
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class Mapping:
    column: str
    alternatives: tuple[tuple[Term, ...], ...]

    @property
    def metrics(self) -> set[str]:
        return {m for alt in self.alternatives for t in alt for m in t.metrics}


def _parse_term(text: str) -> Term:
    factor, metrics = 1.0, []
    for part in (p.strip() for p in text.split("*")):
        try:
            factor *= float(part)
        except ValueError:
            metrics.append(part)
    return Term(factor, tuple(metrics))


@lru_cache(maxsize=1)
def mappings() -> tuple[Mapping, ...]:
    with MAPPING_FILE.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        if row["column"] not in LAUNCH_METRICS:
            raise ValueError(f"{MAPPING_FILE.name}: {row['column']} is not a canonical launch metric")
        alts = tuple(tuple(_parse_term(t) for t in alt.split("+")) for alt in row["expression"].split("|"))
        out.append(Mapping(row["column"], alts))
    return tuple(out)


def referenced_metrics() -> set[str]:
    """Every Nsight Compute metric name the mapping can use."""
    return set().union(*(m.metrics for m in mappings()))


def _wide(metrics: pl.DataFrame, names: set[str]) -> pl.DataFrame:
    """One row per launch (every launch in ``metrics``), one column per metric of ``names`` present."""
    wide = (
        metrics.lazy()
        .filter(pl.col("metric").is_in(list(names)) & pl.col("value").is_not_null())
        .group_by("launch_id", "metric")
        .agg(pl.col("value").first())
        .collect()
        .pivot(on="metric", index="launch_id", values="value")
    )
    launch_ids = metrics.select(pl.col("launch_id").unique().sort())
    return launch_ids.join(wide, on="launch_id", how="left", maintain_order="left") if wide.height else launch_ids


def canonical_metrics(metrics: pl.DataFrame) -> pl.DataFrame:
    """From a long table (launch_id, metric, value) to one row per launch with the canonical columns.

    Only the metrics the mapping references are pivoted; everything else stays in the long table.
    """
    wide = _wide(metrics, referenced_metrics())
    present = set(wide.columns)
    exprs = []
    for m in mappings():
        alts = []
        for alt in m.alternatives:
            if not all(x in present for t in alt for x in t.metrics):
                continue
            terms = []
            for t in alt:
                e = pl.lit(t.factor, dtype=pl.Float64)
                for x in t.metrics:
                    e = e * pl.col(x)
                terms.append(e)
            alts.append(pl.sum_horizontal(terms, ignore_nulls=False) if len(terms) > 1 else terms[0])
        expr = pl.coalesce(alts) if alts else pl.lit(None, dtype=pl.Float64)
        exprs.append(expr.cast(pl.Float64).alias(m.column))
    return wide.select("launch_id", *exprs)


def launch_config(metrics: pl.DataFrame) -> pl.DataFrame:
    """Launch configuration columns (``LAUNCH_CONFIG``) per launch, from the long table."""
    wide = _wide(metrics, set(LAUNCH_CONFIG.values()))
    return wide.rename({v: k for k, v in LAUNCH_CONFIG.items()}, strict=False)


def to_base_units(raw: pl.DataFrame | pl.LazyFrame, raw_units: pl.Series | None = None) -> pl.DataFrame:
    """(launch_id, metric, raw_value, raw_unit, text) -> (launch_id, metric, value, unit, text) in base units,
    with the ``instance`` column too where ``raw`` has one (named instances of a metric, see
    ``coach.model.METRICS``).

    ``raw`` may be lazy, so that a large table is built, scaled and collected in one pass; then
    pass the unit strings it can hold as ``raw_units`` rather than have them collected first.
    """
    units = unit_table(raw_units if raw_units is not None else raw.lazy().select("raw_unit").unique().collect()["raw_unit"])
    lf = raw.lazy()
    instance = [c for c in ("instance",) if c in lf.collect_schema().names()]
    return (
        lf.with_columns(pl.col("raw_unit").fill_null(""))
        .join(units.lazy(), on="raw_unit", how="left", maintain_order="left")  # the report's order, every run
        .select("launch_id", "metric", (pl.col("raw_value") * pl.col("factor")).alias("value"), "unit", "text", *instance)
        .collect()
    )


def devices(metrics: pl.DataFrame) -> pl.DataFrame | None:
    """One row per device from the ``device__attribute_*`` metrics, or None where the report has none."""
    attrs = {metric for metric, _ in DEVICE_ATTRS.values()}
    dev = metrics.filter(pl.col("metric").is_in(list(attrs)) | (pl.col("metric") == "launch__device_id"))
    if dev.filter(pl.col("metric") != "launch__device_id").height == 0:
        return None
    per_launch = dev.with_columns(pl.coalesce(pl.col("text"), pl.col("value").cast(pl.Utf8)).alias("v")).pivot(
        on="metric", index="launch_id", values="v"
    ).sort("launch_id")  # a device's row comes from its first launch, whatever order the pivot returns
    exprs = [pl.col("launch__device_id").cast(pl.Float64).cast(pl.Int64).alias("device_id")] if "launch__device_id" in per_launch.columns else []
    for col, (metric, factor) in DEVICE_ATTRS.items():
        if metric not in per_launch.columns:
            continue
        e = pl.col(metric)
        exprs.append((e if factor is None else e.cast(pl.Float64) * factor).alias(col))
    out = per_launch.select(exprs)
    peak = metrics.filter(pl.col("metric").is_in(PEAK_DRAM))
    if peak.select(pl.col("metric").n_unique()).item() == len(PEAK_DRAM):
        bw = peak.pivot(on="metric", index="launch_id", values="value").select(
            "launch_id", (pl.col(PEAK_DRAM[0]) * pl.col(PEAK_DRAM[1])).alias("memory_bandwidth_bytes_per_s"),
        )
        out = out.with_columns(per_launch["launch_id"]).join(bw, on="launch_id", how="left", maintain_order="left").drop("launch_id")
    return out.unique(subset=["device_id"] if "device_id" in out.columns else None, keep="first", maintain_order=True)
