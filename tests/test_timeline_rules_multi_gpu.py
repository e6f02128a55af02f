"""Savings over several GPUs: a trace of two GPUs doing the same work side by side (the recorded
.item()-in-the-loop trace and a copy of it on GPU 1 from a second process, built here) saves no more
than one GPU alone; no finding claims more than the window."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules import host_sync, run_all
from coach.ingest.kineto import read
from coach.model import make_timeline

CORRELATION_OFFSET = 10_000_000
PID_OFFSET = 100_000


@pytest.fixture(scope="module")
def one(data_dir):
    return read(data_dir / "kineto_timeline_cases" / "item_in_loop.json.gz")


@pytest.fixture(scope="module")
def two(one):
    """The same trace on GPU 0 and, from a second process, on GPU 1."""
    def twin(frame: pl.DataFrame, device: bool) -> pl.DataFrame:
        moved = frame.with_columns(
            *([pl.col("correlation_id") + CORRELATION_OFFSET] if "correlation_id" in frame.columns else []),
            *([pl.col("pid") + PID_OFFSET] if "pid" in frame.columns else []),
            *([pl.lit(1, pl.Int64).alias("device_id")] if device else []))
        return pl.concat([frame, moved])

    tables = {name: twin(getattr(one, name), name in ("kernels", "memcpy", "memset", "sync"))
              for name in ("kernels", "memcpy", "memset", "api", "sync", "nvtx")}
    return make_timeline(dataclasses.replace(one.source, path="two-gpus"), devices=one.devices, **tables)


def test_host_sync_saving_is_one_gpus_not_the_sum(one, two):
    [single] = host_sync.apply(TimelineAnalysis(one))
    [double] = host_sync.apply(TimelineAnalysis(two))
    assert double.estimated_saving_ns == pytest.approx(single.estimated_saving_ns)
    assert [d["device_id"] for d in double.details["saving_by_device"]] == [0, 1]
    assert "GPU 0:" in double.message and "GPU 1:" in double.message


def test_no_finding_claims_more_than_the_window(two):
    window = TimelineAnalysis(two).window_ns
    for f in run_all(two):
        if f.estimated_saving_ns is not None:
            assert f.estimated_saving_ns <= window and f.estimated_gain_pct <= 100
