"""Synthetic large timelines for tests, made from real recordings (no number typed in).

``replicate(tl, copies)`` lays ``copies`` copies of a recorded timeline end to end: copy k of every
row is shifted by k times the recording's span (plus one nanosecond, so copies never touch) and its
correlation ids by k times the largest one, so every launch still pairs with its own kernel. With
``devices=2`` each copy after the first alternates between device 0 and device 1 and overlaps the
previous copy by half a span, so two GPUs run at once and intervals of different devices interleave
in time (what a per-device sweep must keep apart).
"""

from __future__ import annotations

import dataclasses

import polars as pl

from coach.model import Timeline

TIME_COLUMNS = ("start_ns", "end_ns")


def replicate(tl: Timeline, copies: int, devices: int = 1) -> Timeline:
    tables = tl.tables()
    starts = [t["start_ns"].min() for t in tables.values() if "start_ns" in t.columns and t.height]
    ends = [t["end_ns"].max() for t in tables.values() if "end_ns" in t.columns and t.height]
    first, last = int(min(starts)), int(max(e for e in ends if e is not None))
    span = last - first + 1
    step = span if devices == 1 else span // 2
    corr = max(int(t["correlation_id"].max() or 0) for t in tables.values()
               if "correlation_id" in t.columns and t.height) + 1

    def copy(name: str, df: pl.DataFrame) -> pl.DataFrame:
        if name == "devices" or "start_ns" not in df.columns or df.is_empty():
            if name == "devices" and devices > 1 and df.height:
                return pl.concat([df.with_columns(device_id=pl.lit(d, df.schema["device_id"])) for d in range(devices)])
            return df
        parts = []
        for k in range(copies):
            shifted = df.with_columns(pl.col(c) + k * step for c in TIME_COLUMNS)
            if "correlation_id" in df.columns:
                shifted = shifted.with_columns(pl.col("correlation_id") + k * corr)
            if devices > 1 and "device_id" in df.columns:
                shifted = shifted.with_columns(pl.when(pl.col("device_id").is_not_null())
                                               .then(pl.lit(k % devices)).otherwise(None)
                                               .cast(df.schema["device_id"]).alias("device_id"))
            if devices > 1 and "tid" in df.columns:  # each device driven by its own host thread
                shifted = shifted.with_columns(pl.col("tid") + (k % devices))
            parts.append(shifted)
        return pl.concat(parts).sort("start_ns", maintain_order=True)

    return dataclasses.replace(tl, **{name: copy(name, df) for name, df in tables.items()})
