"""A part of a profile: the kernels whose name matches, the work launched inside NVTX ranges, a
time window. The result is a profile of the same kind, so every summary and rule reads it as it
reads a whole one.

``select(profile, kernel=REGEX, nvtx=REGEX, start_ms=, end_ms=)``

- ``kernel``: kernels (timeline) or launches (kernel profile) whose short or full name matches the
  regular expression (``re.search``, case-sensitive as nsys and ncu's ``--kernel-name regex:``).
- ``nvtx``: timeline: the NVTX ranges whose text matches; the API calls that start inside one (on
  its thread) and the GPU work they launched (by correlation id), as ``nsys stats`` with
  ``--filter-nvtx`` keeps it; NVTX ranges themselves are kept when they match. Kernel profile: the
  launches whose recorded NVTX range matches.
- ``start_ms``/``end_ms``: timeline: the events that start within the window, in milliseconds from
  the first recorded event (the time axis ``coach load`` and the dashboard show). Kernel profiles
  have no time axis: asking for one is an error that says so.

An empty selection is an error naming what matched nothing, never an empty summary read as "no
work".
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import polars as pl

from coach.errors import CoachError

_EVENT_TABLES = ("kernels", "memcpy", "memset", "api", "sync", "nvtx")
_GPU_TABLES = ("kernels", "memcpy", "memset")


def _regex(pattern: str, what: str) -> str:
    try:
        re.compile(pattern)
    except re.error as err:
        raise CoachError(f"{what} {pattern!r}: not a regular expression ({err})") from None
    return pattern


def _name_matches(pattern: str) -> pl.Expr:
    return (pl.col("name").cast(pl.Utf8).fill_null("").str.contains(pattern)
            | pl.col("demangled_name").cast(pl.Utf8).fill_null("").str.contains(pattern))


def origin_ns(profile: Any) -> int | None:
    """The first recorded event's start: time zero of ``start_ms``/``end_ms``."""
    starts = [getattr(profile, t)["start_ns"].min() for t in _EVENT_TABLES if getattr(profile, t).height]
    starts = [s for s in starts if s is not None]
    return min(starts) if starts else None


def select(profile: Any, *, kernel: str | None = None, nvtx: str | None = None,
           start_ms: float | None = None, end_ms: float | None = None) -> Any:
    """The part of ``profile`` asked for (see module doc); ``profile`` itself when nothing is asked."""
    if kernel is None and nvtx is None and start_ms is None and end_ms is None:
        return profile
    where = profile.source.path
    if profile.kind == "kernel-profile":
        return _select_kernel_profile(profile, kernel, nvtx, start_ms, end_ms, where)
    if profile.kind != "timeline":
        raise CoachError(f"{where}: --kernel, --nvtx and a time window select from a timeline or a kernel profile, "
                         f"not a {profile.kind}")
    tables = {t: getattr(profile, t) for t in _EVENT_TABLES}
    if start_ms is not None or end_ms is not None:
        if start_ms is not None and end_ms is not None and end_ms <= start_ms:
            raise CoachError(f"--end {end_ms:g} ms is not after --start {start_ms:g} ms")
        zero = origin_ns(profile) or 0
        lo = None if start_ms is None else zero + round(start_ms * 1e6)
        hi = None if end_ms is None else zero + round(end_ms * 1e6)
        for t, df in tables.items():
            keep = pl.lit(True)
            if lo is not None:
                keep &= pl.col("start_ns") >= lo
            if hi is not None:
                keep &= pl.col("start_ns") < hi
            tables[t] = df.filter(keep)
    if nvtx is not None:
        pattern = _regex(nvtx, "--nvtx")
        ranges = tables["nvtx"].filter(pl.col("text").fill_null("").str.contains(pattern)
                                       & pl.col("end_ns").is_not_null())
        if ranges.is_empty():
            raise CoachError(f"{where}: no NVTX range matches --nvtx {nvtx!r}"
                             + _known(profile.nvtx["text"], "ranges"))
        api = tables["api"]
        inside = (api.join(ranges.select("pid", "tid", r_start="start_ns", r_end="end_ns"), on=["pid", "tid"])
                  .filter((pl.col("start_ns") >= pl.col("r_start")) & (pl.col("start_ns") < pl.col("r_end")))
                  .select(pl.exclude("r_start", "r_end")).unique(maintain_order=True))
        ids = inside["correlation_id"].drop_nulls().unique()
        tables["api"] = inside
        for t in (*_GPU_TABLES, "sync"):
            tables[t] = tables[t].filter(pl.col("correlation_id").is_in(ids.implode()))
        tables["nvtx"] = ranges
    if kernel is not None:
        pattern = _regex(kernel, "--kernel")
        tables["kernels"] = tables["kernels"].filter(_name_matches(pattern))
        if tables["kernels"].is_empty():
            raise CoachError(f"{where}: no kernel matches --kernel {kernel!r}" + _known(profile.kernels["name"], "kernels"))
    if not any(tables[t].height for t in _GPU_TABLES + ("api",)):
        raise CoachError(f"{where}: nothing recorded in the selection ({_asked(kernel, nvtx, start_ms, end_ms)})")
    return dataclasses.replace(profile, **tables)


def _select_kernel_profile(profile: Any, kernel: str | None, nvtx: str | None, start_ms: float | None,
                           end_ms: float | None, where: str) -> Any:
    if start_ms is not None or end_ms is not None:
        raise CoachError(f"{where}: a kernel profile (Nsight Compute) has no time axis: --start/--end select from "
                         "a timeline; use --kernel or --nvtx")
    launches = profile.launches
    if kernel is not None:
        pattern = _regex(kernel, "--kernel")
        launches = launches.filter(pl.col("kernel_name").fill_null("").str.contains(pattern)
                                   | pl.col("demangled_name").fill_null("").str.contains(pattern))
        if launches.is_empty():
            raise CoachError(f"{where}: no kernel matches --kernel {kernel!r}"
                             + _known(profile.launches["kernel_name"], "kernels"))
    if nvtx is not None:
        pattern = _regex(nvtx, "--nvtx")
        if profile.launches["nvtx_range"].drop_nulls().is_empty():
            raise CoachError(f"{where}: the report records no NVTX ranges (profile with ncu --nvtx to select by them)")
        launches = launches.filter(pl.col("nvtx_range").fill_null("").str.contains(pattern))
        if launches.is_empty():
            raise CoachError(f"{where}: no launch is inside an NVTX range matching --nvtx {nvtx!r}"
                             + _known(profile.launches["nvtx_range"], "ranges"))
    ids = launches["launch_id"].implode()
    tables = {name: (df.filter(pl.col("launch_id").is_in(ids)) if "launch_id" in df.columns else df)
              for name, df in profile.tables().items()}
    return dataclasses.replace(profile, **tables)


def _known(names: pl.Series, what: str, limit: int = 5) -> str:
    known = names.drop_nulls().unique(maintain_order=True).head(limit).to_list()
    return f" ({what} in it: {', '.join(map(str, known))}{', ...' if names.n_unique() > limit else ''})" if known else ""


def _asked(kernel: str | None, nvtx: str | None, start_ms: float | None, end_ms: float | None) -> str:
    parts = [f"--kernel {kernel!r}" if kernel else "", f"--nvtx {nvtx!r}" if nvtx else "",
             f"--start {start_ms:g}" if start_ms is not None else "", f"--end {end_ms:g}" if end_ms is not None else ""]
    return " ".join(p for p in parts if p)
