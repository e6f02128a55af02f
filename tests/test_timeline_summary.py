"""``summarize_timeline`` on the recorded PyTorch-profiler trace: exact numbers and invariants."""

from __future__ import annotations

import json

import polars as pl
import pytest

from coach.analyze.timeline_summary import summarize_timeline, to_jsonable
from coach.ingest.kineto import read


@pytest.fixture(scope="module")
def summary(softmax_kineto_json):
    return summarize_timeline(read(softmax_kineto_json))


def test_devices_and_counts(summary):
    assert summary["window_ns"] == 30184011
    assert summary["counts"] == {"kernels": 6, "memcpy": 3, "memset": 3, "api": 21, "sync": 0, "nvtx": 21, "devices": 1}
    d = summary["devices"].row(0, named=True)
    assert d["busy_pct"] == pytest.approx(4.925737, abs=1e-6)


def test_top_kernels(summary):
    k = summary["top_kernels"]
    assert k.select("name", "count", "total_ns", "min_ns", "max_ns").rows() == [
        ("cunn_SoftMaxForwardReg", 3, 1260225, 418785, 422112),
        ("reduce_kernel", 3, 218048, 72256, 73120),
    ]
    assert k["avg_ns"][0] == pytest.approx(1260225 / 3)
    assert k["time_pct"].sum() == pytest.approx(100.0)
    assert k["time_pct"][0] == pytest.approx(100 * 1260225 / 1478273)


def test_memcpy_by_kind(summary):
    m = summary["memcpy"].row(0, named=True)
    assert (m["kind"], m["count"], m["bytes"], m["total_ns"], m["pageable"]) == ("DtoH", 3, 6, 5888, 0)
    assert m["gb_per_s"] == pytest.approx(6 / 5888)  # bytes per ns is GB/s


def test_top_api(summary):
    api = summary["top_api"]
    assert api.select("name", "count", "total_ns").row(0) == ("cudaLaunchKernel", 6, 9122564)
    assert api["name"].to_list()[:3] == ["cudaLaunchKernel", "cudaHostAlloc", "cudaStreamSynchronize"]
    assert api["time_pct"].sum() == pytest.approx(100.0)  # all 8 call names fit in the top 10


def test_nvtx_ranges(summary):
    n = summary["nvtx"]
    assert set(n["domain"]) == {"cpu_op"}
    row = n.filter(pl.col("text") == "aten::softmax").row(0, named=True)
    assert (row["count"], row["wall_ns"], row["proj_ns"], row["gpu_ops"]) == (3, 3443324, 1260225, 3)
    assert (n["proj_ns"] >= 0).all() and (n["gpu_time_ns"] <= n["proj_ns"]).all()


def test_top_limits_rows_per_domain(softmax_kineto_json):
    s = summarize_timeline(read(softmax_kineto_json), top=1)
    assert s["top_kernels"].height == 1 and s["top_api"].height == 1 and s["nvtx"].height == 1


def test_jsonable(summary):
    j = to_jsonable(summary)
    assert j["top_kernels"][0]["name"] == "cunn_SoftMaxForwardReg"
    json.dumps(j)  # every value is JSON-ready
