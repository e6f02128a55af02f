"""Read a profile folder written by ``coach.model.save`` (how ``traces/`` stores recordings).

A kernel profile saved before a canonical column existed gets it on reading, from the long metric
table it keeps (the same mapping the readers apply), so a recording made once serves every later
rule: the L2 sector counts the uncoalesced-access rule falls back to, for one.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from coach.errors import InputError
from coach.ingest.ncu_common import canonical_metrics
from coach.model import (LAUNCH_METRICS, SAVED_FORMAT_VERSION, SAVED_MARKER, KernelProfile, Source, Timeline,
                         make_kernel_profile, make_timeline)


def read(folder: Path) -> KernelProfile | Timeline:
    header_path = folder / SAVED_MARKER
    try:
        header = json.loads(header_path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(header_path, f"is not a readable coach profile header ({err})") from None
    version = header.get("coach_profile_format")
    if version != SAVED_FORMAT_VERSION:
        raise InputError(header_path, f"has profile format {version!r}; this coach reads format {SAVED_FORMAT_VERSION}")
    kind = header.get("kind")
    src = header.get("source", {})
    source = Source(
        path=str(folder),
        format=src.get("format", "coach-profile"),
        tool=src.get("tool", "unknown"),
        tool_version=src.get("tool_version"),
        meta=src.get("meta", {}),
    )
    build = {"kernel-profile": make_kernel_profile, "timeline": make_timeline}.get(kind)
    if build is None:
        raise InputError(header_path, f"has unknown profile kind {kind!r}")
    tables = {}
    for name in header.get("tables", []):
        f = folder / f"{name}.parquet"
        if not f.is_file():
            raise InputError(f, "is missing (the saved profile is incomplete)")
        try:
            tables[name] = pl.read_parquet(f)
        except Exception as err:  # polars raises several kinds for damaged files
            raise InputError(f, f"is not a readable Parquet file ({type(err).__name__})") from None
    if kind == "kernel-profile" and "launches" in tables and "metrics" in tables:
        tables["launches"] = _with_later_columns(tables["launches"], tables["metrics"])
    return build(source, **tables)


def _with_later_columns(launches: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """``launches`` with the canonical metric columns it was saved without, from ``metrics``."""
    later = [c for c in LAUNCH_METRICS if c not in launches.columns]
    if not later or "launch_id" not in launches.columns:
        return launches
    aggregates = metrics.filter(pl.col("instance").is_null()) if "instance" in metrics.columns else metrics
    filled = canonical_metrics(aggregates).select("launch_id", *later)
    return launches.join(filled, on="launch_id", how="left", maintain_order="left")
