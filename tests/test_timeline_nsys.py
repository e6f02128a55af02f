"""The timeline computations on the recorded Nsight Systems export, cross-checked against NVIDIA's
own analyses of the same report (``tests/data/nsys_torch_softmax/nvidia/``: ``nsys stats`` CSVs and
``nsys recipe`` Parquet outputs), and the timeline rules' diagnosis of it."""

from __future__ import annotations

import polars as pl
import pytest

from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules import host_sync, pageable_memcpy, run_all
from coach.analyze.timeline_rules._shared import base_api_name
from coach.analyze.timeline_summary import memcpy_by_kind, summarize_timeline, top_api, top_kernels
from coach.ingest.nsys_sqlite import read


@pytest.fixture(scope="module")
def tl(softmax_nsys_sqlite):
    return read(softmax_nsys_sqlite)


@pytest.fixture(scope="module")
def a(tl):
    return TimelineAnalysis(tl)


@pytest.fixture(scope="module")
def nvidia(data_dir):
    return data_dir / "nsys_torch_softmax" / "nvidia"


def test_nvtx_projection_matches_nvidia(a, nvidia):
    ours = a.projection.sort("start_ns")
    stats = pl.read_csv(nvidia / "stats_nvtx_gpu_proj_sum.csv")
    assert ours["text"].to_list() == ["step0", "step1", "step2"]
    assert ours["proj_dur_ns"].to_list() == stats["Total Proj Time (ns)"].to_list() == [116646423, 44204529, 40578642]
    assert ours["dur_ns"].to_list() == stats["Total Range Time (ns)"].to_list()
    assert ours["gpu_ops"].to_list() == stats["Total GPU Ops"].to_list() == [4, 4, 4]
    trace = pl.read_parquet(nvidia / "recipe_nvtx_gpu_proj_trace" / "trace.parquet").sort("Start")
    assert ours["proj_start_ns"].to_list() == trace["Start"].to_list()
    assert ours["proj_end_ns"].to_list() == trace["End"].to_list()
    assert ours["depth"].to_list() == trace["Stack Level"].to_list()


def test_projection_invariants(a):
    p = a.projection
    assert (p["proj_dur_ns"] <= a.window_ns).all() and (p["proj_start_ns"] >= p["start_ns"]).all()
    assert (p["gpu_time_ns"] <= p["proj_dur_ns"]).all()


def test_kernel_sums_match_nsys_stats(tl, nvidia):
    """Grouped by full signature, as ``nsys stats --report cuda_gpu_kern_sum`` does."""
    ours = top_kernels(tl.kernels, top=100).sort("demangled_name")
    stats = pl.read_csv(nvidia / "stats_cuda_gpu_kern_sum.csv").sort("Name")
    assert ours["demangled_name"].to_list() == stats["Name"].to_list()
    assert ours["total_ns"].to_list() == stats["Total Time (ns)"].to_list()
    assert ours["count"].to_list() == stats["Instances"].to_list()
    assert ours["min_ns"].to_list() == stats["Min (ns)"].to_list() and ours["max_ns"].to_list() == stats["Max (ns)"].to_list()
    assert ours["time_pct"].round(1).to_list() == stats["Time (%)"].to_list()


def test_kernel_sums_by_short_name_match_the_recipe(tl, nvidia):
    """The ``cuda_gpu_kern_sum`` recipe groups by short name instead."""
    ours = tl.kernels.group_by("name").agg(n=pl.len(), total=pl.col("dur_ns").sum()).sort("name")
    recipe = pl.read_parquet(nvidia / "recipe_cuda_gpu_kern_sum" / "all_stats.parquet").sort("Name")
    assert ours.rows() == recipe.select("Name", "Count", "Sum").rows()


def test_memcpy_and_api_sums_match_nsys_stats(tl, nvidia):
    m = memcpy_by_kind(tl.memcpy).row(0, named=True)
    time_sum = pl.read_csv(nvidia / "stats_cuda_gpu_mem_time_sum.csv").row(0, named=True)
    assert (m["kind"], m["count"], m["total_ns"]) == ("DtoH", time_sum["Count"], time_sum["Total Time (ns)"])
    assert (m["bytes"], m["pageable"]) == (3 * 67108864 + 4, 3)
    api = top_api(tl.api, top=100).sort("name")
    # nsys stats keeps some version suffixes (cudaGetDeviceProperties_v12000) that the reader drops
    stats = pl.read_csv(nvidia / "stats_cuda_api_sum.csv").with_columns(Name=base_api_name(pl.col("Name"))).sort("Name")
    assert api.select("name", "count", "total_ns").rows() == stats.select("Name", "Num Calls", "Total Time (ns)").rows()


def test_utilisation_and_gaps(a):
    u = a.utilisation.row(0, named=True)
    assert (u["window_ns"], u["busy_ns"], u["kernel_ns"], u["memcpy_ns"], u["memset_ns"]) == (
        437002665, 129263379, 433888, 128828339, 1152)
    assert int(a.gaps["dur_ns"].sum()) + u["busy_ns"] == u["window_ns"]
    assert a.gaps.filter(pl.col("position") == "leading")["top_api"].item() == "cuLibraryLoadData"


def test_pageable_copies_match_the_recipe(a, nvidia):
    ours = pageable_memcpy.pageable_copies(a.timeline.memcpy).sort("start_ns")
    recipe = pl.read_parquet(nvidia / "recipe_cuda_memcpy_async" / "analysis.parquet").sort("Start")
    assert ours.select("start_ns", "dur_ns", "bytes").rows() == recipe.select("Start", "Duration", "Bytes").rows()


def test_sync_calls_match_the_recipe(a, nvidia):
    points = host_sync.sync_points(a)
    ours = points.filter(pl.col("reason") == "sync").sort("start_ns")
    recipe = pl.read_parquet(nvidia / "recipe_cuda_api_sync" / "analysis.parquet").sort("Start")
    assert ours.select("start_ns", "dur_ns").rows() == recipe.select("Start", "Duration").rows()
    # and the three asynchronous copies into pageable memory block the host too
    assert points.filter(pl.col("reason") == "pageable copy").height == 3


def test_diagnosis(tl):
    findings = run_all(tl)
    # the four gaps the synchronisations returned into (18.8 ms) are host-sync's, not gpu-idle's
    assert [f.rule_id for f in findings] == ["pageable-memcpy", "warmup-in-profile", "host-sync", "gpu-idle-gaps"]
    assert findings[3].estimated_saving_ns == 23982914
    pageable = findings[0]
    e = {ev.metric: ev.value for ev in pageable.evidence}
    assert e["pageable_copies"] == 3 and e["pageable_copy_ns"] == 44531408 + 43911985 + 40382642
    assert e["pageable_copy_bytes_per_s"] == pytest.approx(3 * 67108864 / (128826035e-9))
    assert pageable.estimated_saving_ns == pytest.approx(128826035 - 3 * 67108864 / 64e9 * 1e9)
    warm = findings[1]
    assert "5 x cuLibraryLoadData (86.64 ms)" in warm.message


def test_summary(tl):
    s = summarize_timeline(tl)
    assert s["counts"]["kernels"] == 11 and s["counts"]["nvtx"] == 3
    assert s["nvtx"].select("text", "count", "proj_ns", "gpu_ops").rows() == [
        ("step0", 1, 116646423, 4), ("step1", 1, 44204529, 4), ("step2", 1, 40578642, 4)]


def test_cpu_only_export_of_nsys_2022(data_dir):
    """A real nsys 2022.4 export with NVTX and no CUDA: nothing to diagnose (one note says the GPU side
    was not recorded), range times as NVIDIA's."""
    folder = data_dir / "nsys_nvtx_cpu_2022"
    tl = read(folder / "nvtx_cpu.sqlite")
    (note,) = run_all(tl)
    assert note.rule_id == "not-checked:capture"
    assert note.message.endswith("the trace records no GPU activity (was it profiled with --trace=cuda?).")
    s = summarize_timeline(tl)
    assert s["window_ns"] == 0 and s["devices"].is_empty()
    ours = dict(s["nvtx"].select("text", "wall_ns").iter_rows())
    stats = pl.read_csv(folder / "nvidia" / "stats_nvtxsum.csv")
    assert {r: ours[r] for r in stats["Range"]} == dict(stats.select("Range", "Total Time (ns)").iter_rows())
    assert (s["nvtx"]["gpu_ops"] == 0).all()
