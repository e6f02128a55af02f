"""Read an Nsight Compute ``.ncu-rep`` through NVIDIA's own ``ncu_report`` module (PyPI ``ncu-report``).

Every metric of every profiled launch goes into the long ``metrics`` table; the canonical
``launches`` columns are derived from it through ``ncu_metrics.csv``; Nsight Compute's rule results
(``rule_results_as_dicts``) become the ``rules`` table; ``device__attribute_*`` metrics the
``devices`` table. ``ncu_report`` has no wheel for Linux aarch64: there, export the report with
``ncu --import FILE --csv --page raw`` and read the CSV instead.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import polars as pl

from coach.errors import InputError, ToolError
from coach.ingest.ncu_common import canonical_metrics
from coach.ingest.units import unit_table
from coach.model import KernelProfile, Source, make_kernel_profile

_FIRST_RECORD = 10  # magic b"NVR\0" and a 6-byte header come first

# ncu_report.IMetric.ValueKind_* values
_STRING_KIND = 2

_SEVERITY = {0: "ok", 1: "info", 2: "warning", 3: "error"}  # ncu rule message types
_SPEEDUP_TYPE = {0: "local", 1: "global"}

_LAUNCH_IDENTITY = {  # canonical column -> launch__ metric
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

_DEVICE_ATTRS = {  # canonical column -> (device__attribute_ metric, factor)
    "name": ("device__attribute_display_name", None),
    "cc_major": ("device__attribute_compute_capability_major", 1),
    "cc_minor": ("device__attribute_compute_capability_minor", 1),
    "sm_count": ("device__attribute_multiprocessor_count", 1),
    "sm_clock_hz": ("device__attribute_clock_rate", 1e3),  # reported in kHz
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


def _import_ncu_report(path: Path):
    try:
        import ncu_report  # noqa: PLC0415 - optional dependency, imported on use
    except ImportError:
        raise ToolError(
            f"{path}: reading .ncu-rep needs NVIDIA's ncu_report module (pip install ncu-report; it has no "
            "Linux aarch64 wheel): or export the report with `ncu --import FILE --csv --page raw > FILE.csv`"
        ) from None
    return ncu_report


def check_complete(path: Path) -> None:
    """Refuse a truncated report, which ``ncu_report`` would load silently with launches missing.

    A report is the 4-byte magic and a 6-byte header, then a chain of records, each a little-endian
    u32 size and that many bytes; a complete file ends exactly where its last record does (seen in
    reports of Nsight Compute 2025.3). A chain that runs past the end of the file means the file was
    cut short.
    """
    size = path.stat().st_size
    off = _FIRST_RECORD
    with path.open("rb") as fh:
        while off + 4 <= size:
            fh.seek(off)
            (length,) = struct.unpack("<I", fh.read(4))
            off += 4 + length
    if off != size:
        raise InputError(path, f"is truncated or damaged: its records need {off:,} bytes but the file has {size:,}")


def read(path: Path) -> KernelProfile:
    ncu_report = _import_ncu_report(path)
    check_complete(path)
    try:
        ctx = ncu_report.load_report(str(path))
    except Exception as err:  # the module raises its own exception types for damaged files
        raise InputError(path, f"is not a readable Nsight Compute report ({str(err).strip() or type(err).__name__})") from None

    metric_rows: dict[str, list[Any]] = {"launch_id": [], "metric": [], "raw_value": [], "raw_unit": [], "text": []}
    identity: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    launch_id = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            action = rng.action_by_idx(i)
            identity.append(_identity(ncu_report, action, launch_id))
            _collect_metrics(action, launch_id, metric_rows)
            rules.extend(_rules(action, launch_id))
            launch_id += 1
    if launch_id == 0:
        raise InputError(path, "holds no profiled kernel launches (did the ncu filter -k/-c match any kernel?)")

    metrics = _metrics_frame(metric_rows)
    launches = _launches(pl.DataFrame(identity), metrics)
    source = Source(path=str(path), format="ncu-rep", tool="Nsight Compute", tool_version=None,
                    meta={"reader": f"ncu_report {ncu_report.get_version() if hasattr(ncu_report, 'get_version') else ''}".strip()})
    return make_kernel_profile(
        source,
        launches=launches,
        metrics=metrics,
        rules=pl.DataFrame(rules) if rules else None,
        devices=_devices(metrics),
    )


def _identity(ncu_report, action, launch_id: int) -> dict[str, Any]:
    return {
        "launch_id": launch_id,
        "kernel_name": action.name(ncu_report.IAction.NameBase_FUNCTION),
        "demangled_name": action.name(ncu_report.IAction.NameBase_DEMANGLED),
        "mangled_name": action.name(ncu_report.IAction.NameBase_MANGLED),
    }


def _collect_metrics(action, launch_id: int, rows: dict[str, list[Any]]) -> None:
    for name in action.metric_names():
        m = action.metric_by_name(name)
        if m is None or not m.has_value():
            continue
        if m.kind() == _STRING_KIND:
            value, text = None, m.as_string()
        else:
            try:
                value, text = float(m.as_double()), None
            except (TypeError, ValueError):
                value, text = None, str(m.value())
        rows["launch_id"].append(launch_id)
        rows["metric"].append(name)
        rows["raw_value"].append(value)
        rows["raw_unit"].append(m.unit() or "")
        rows["text"].append(text)


def _metrics_frame(rows: dict[str, list[Any]]) -> pl.DataFrame:
    raw = pl.DataFrame(rows, schema={"launch_id": pl.Int64, "metric": pl.Utf8, "raw_value": pl.Float64,
                                     "raw_unit": pl.Utf8, "text": pl.Utf8})
    units = unit_table(raw["raw_unit"])
    return (
        raw.join(units, on="raw_unit", how="left")
        .select("launch_id", "metric", (pl.col("raw_value") * pl.col("factor")).alias("value"), "unit", "text")
    )


def _launches(identity: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    launch_cfg = (
        metrics.filter(pl.col("metric").is_in(list(_LAUNCH_IDENTITY.values())))
        .pivot(on="metric", index="launch_id", values="value")
        .rename({v: k for k, v in _LAUNCH_IDENTITY.items()}, strict=False)
    )
    return identity.join(launch_cfg, on="launch_id", how="left").join(canonical_metrics(metrics), on="launch_id", how="left")


def _rules(action, launch_id: int) -> list[dict[str, Any]]:
    try:
        results = action.rule_results_as_dicts()
    except Exception:  # older reports or modules without rule results: nothing to add
        return []
    out = []
    for r in results:
        msg = r.get("rule_message") or {}
        speed = r.get("speedup_estimation") or {}
        out.append({
            "launch_id": launch_id,
            "rule_id": r.get("rule_identifier"),
            "rule_name": r.get("name"),
            "section_id": r.get("section_identifier"),
            "severity": _SEVERITY.get(msg.get("type"), str(msg.get("type"))),
            "title": msg.get("title"),
            "message": msg.get("message"),
            "speedup_type": _SPEEDUP_TYPE.get(speed.get("type")) if speed else None,
            "speedup_pct": speed.get("speedup") if speed else None,
            "focus_metrics": [
                {"name": f.get("name"), "value": f.get("value"), "info": f.get("info")} for f in r.get("focus_metrics", [])
            ],
        })
    return out


def _devices(metrics: pl.DataFrame) -> pl.DataFrame:
    attrs = {metric: col for col, (metric, _) in _DEVICE_ATTRS.items()}
    dev = metrics.filter(pl.col("metric").is_in(list(attrs)) | (pl.col("metric") == "launch__device_id"))
    if dev.height == 0:
        return None  # type: ignore[return-value]
    per_launch = dev.with_columns(pl.coalesce(pl.col("text"), pl.col("value").cast(pl.Utf8)).alias("v")).pivot(
        on="metric", index="launch_id", values="v"
    )
    exprs = [pl.col("launch__device_id").cast(pl.Float64).cast(pl.Int64).alias("device_id")] if "launch__device_id" in per_launch.columns else []
    for col, (metric, factor) in _DEVICE_ATTRS.items():
        if metric not in per_launch.columns:
            continue
        e = pl.col(metric)
        exprs.append((e if factor is None else e.cast(pl.Float64) * factor).alias(col))
    devices = per_launch.select(exprs)
    # Peak DRAM bandwidth = bytes per DRAM cycle at peak x DRAM clock, both measured by the tool.
    peak = metrics.filter(pl.col("metric").is_in(["dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second"]))
    if peak.select(pl.col("metric").n_unique()).item() == 2:
        bw = peak.pivot(on="metric", index="launch_id", values="value").select(
            "launch_id",
            (pl.col("dram__bytes.sum.peak_sustained") * pl.col("dram__cycles_elapsed.avg.per_second")).alias("memory_bandwidth_bytes_per_s"),
        )
        devices = devices.with_columns(per_launch["launch_id"]).join(bw, on="launch_id", how="left").drop("launch_id")
    return devices.unique(subset=["device_id"] if "device_id" in devices.columns else None, keep="first", maintain_order=True)
