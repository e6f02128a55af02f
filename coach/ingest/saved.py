"""Read a profile folder written by ``coach.model.save`` (how ``traces/`` stores recordings)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from coach.errors import InputError
from coach.model import (SAVED_FORMAT_VERSION, SAVED_MARKER, KernelProfile, Source, Timeline, make_kernel_profile,
                         make_timeline)


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
    return build(source, **tables)
