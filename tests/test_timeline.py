"""Shared timeline computations: exact numbers from the recorded PyTorch-profiler trace, invariants,
and small synthetic timelines (built here, naming only the columns a test is about) for the edges."""

from __future__ import annotations

import polars as pl
import pytest

from coach.analyze.timeline import (
    TimelineAnalysis,
    gpu_work,
    interval_join,
    launch_bound_launches,
    launch_bound_stretches,
    merge_intervals,
)
from coach.ingest.kineto import read
from coach.model import Source, Timeline, make_timeline

SYNTHETIC = Source(path="synthetic", format="kineto-json", tool="synthetic builder")


def synthetic_timeline(**tables: dict) -> Timeline:
    """A synthetic timeline from column dicts naming only what a test is about; ``dur_ns`` is derived
    from ``start_ns``/``end_ns`` where not given, as every reader fills it."""
    frames = {}
    for name, columns in tables.items():
        df = pl.DataFrame(columns)
        if {"start_ns", "end_ns"} <= set(df.columns) and "dur_ns" not in df.columns:
            df = df.with_columns(dur_ns=pl.col("end_ns") - pl.col("start_ns"))
        frames[name] = df
    return make_timeline(SYNTHETIC, **frames)


@pytest.fixture(scope="module")
def a(softmax_kineto_json) -> TimelineAnalysis:
    return TimelineAnalysis(read(softmax_kineto_json))


# --------------------------------------------------------------------------------------------
# The recorded trace
# --------------------------------------------------------------------------------------------


def test_window_and_utilisation(a):
    assert a.window == (3042673, 33226684)
    u = a.utilisation.row(0, named=True)
    assert (u["device_id"], u["window_ns"], u["busy_ns"]) == (0, 30184011, 1486785)
    assert (u["kernel_ns"], u["memcpy_ns"], u["memset_ns"]) == (1478273, 5888, 2624)
    assert u["busy_pct"] == pytest.approx(100 * 1486785 / 30184011)


def test_idle_gaps_and_what_the_host_did(a):
    g = a.gaps
    assert g.height == 13
    assert g["position"].to_list() == ["leading"] + ["between"] * 11 + ["trailing"]
    assert g["dur_ns"][0] == 63683 and g["dur_ns"][-1] == 197645
    largest = g.sort("dur_ns", descending=True).row(0, named=True)
    # the first .sum(): the host sat in aten::sum for 26 ms, 8.94 ms of it loading the reduction's module
    assert (largest["dur_ns"], largest["after"], largest["before"]) == (25958397, "memset", "reduce_kernel")
    assert (largest["top_api"], largest["top_api_ns"], largest["api_calls"]) == ("cudaLaunchKernel", 8936769, 1)
    assert (largest["range"], largest["range_domain"]) == ("aten::sum", "cpu_op")
    # each .item(): the GPU idles inside cudaStreamSynchronize between the reduction and the copy
    syncs = g.filter(pl.col("top_api") == "cudaStreamSynchronize")
    assert syncs["dur_ns"].to_list() == [895, 1536, 3615, 863, 1538, 7998]
    assert set(syncs["range"]) == {"aten::_local_scalar_dense"} and set(syncs["api_pct"]) == {100.0}


def test_gaps_and_busy_tile_the_window(a):
    g = a.gaps
    assert (g["dur_ns"] > 0).all()
    assert int(g["dur_ns"].sum()) + a.utilisation["busy_ns"].item() == a.window_ns
    # gaps and busy intervals alternate without overlap
    edges = pl.concat([g.select("start_ns", "end_ns"), a.busy.select("start_ns", "end_ns")]).sort("start_ns")
    assert (edges["start_ns"].shift(-1).drop_nulls() == edges["end_ns"].head(edges.height - 1)).all()
    assert g.select(((pl.col("api_pct") >= 0) & (pl.col("api_pct") <= 100)).all()).item()


def test_copies_do_not_overlap_kernels(a):
    o = a.overlap.row(0, named=True)
    assert (o["memcpy_ns"], o["copies"], o["overlap_ns"], o["overlap_pct"]) == (5888, 3, 0, 0.0)
    assert (o["copy_streams"], o["kernel_streams"], o["shared_streams"]) == (1, 1, 1)


def test_streams(a):
    s = a.streams.row(0, named=True)
    assert (s["stream_id"], s["kernels"], s["memcpys"], s["memsets"], s["busy_ns"]) == (7, 6, 3, 3, 1486785)


def test_launches(a):
    l = a.launches
    assert l["launch_ns"].to_list() == [70828, 8955736, 44640, 17359, 22106, 11895]
    assert l["latency_ns"][0] == 63683
    stats = a.launch_stats.row(0, named=True)
    assert (stats["kernels"], stats["shorter_than_launch"]) == (6, 1)
    assert stats["launches_per_s"] == pytest.approx(6 / 30184011e-9)


def test_operator_ranges_projected_onto_the_gpu(a):
    p = a.projection
    assert p.height == 21
    first_sum = p.filter(pl.col("text") == "aten::sum").row(0, named=True)
    # the memset and the reduction launched inside the first aten::sum
    assert (first_sum["gpu_ops"], first_sum["proj_start_ns"], first_sum["proj_end_ns"]) == (2, 3799828, 29831568)
    assert (first_sum["proj_dur_ns"], first_sum["gpu_time_ns"]) == (26031740, 73343)
    softmax = p.filter(pl.col("text") == "aten::softmax")
    assert softmax["gpu_time_ns"].to_list() == [422112, 419328, 418785]
    assert p.filter(pl.col("text") == "aten::as_strided")["gpu_ops"].to_list() == [0, 0, 0]
    item = p.filter(pl.col("text") == "aten::item")
    assert item["proj_dur_ns"].to_list() == [2720, 1600, 1568]


def test_projection_invariants(a):
    p = a.projection.filter(pl.col("gpu_ops") > 0)
    assert (p["proj_start_ns"] >= p["start_ns"]).all()  # work launched in a range cannot start before it
    assert (p["proj_dur_ns"] <= a.window_ns).all()
    assert (p["gpu_time_ns"] <= p["proj_dur_ns"]).all()  # one stream: operations never overlap


# --------------------------------------------------------------------------------------------
# Synthetic timelines
# --------------------------------------------------------------------------------------------


def test_merge_intervals_per_group():
    df = pl.DataFrame({"device_id": [0, 0, 0, 0, 1], "start_ns": [0, 5, 8, 30, 0], "end_ns": [10, 7, 20, 40, 4],
                       "name": ["a", "b", "c", "d", "e"]})
    m = merge_intervals(df, ["device_id"])
    assert m.select("device_id", "start_ns", "end_ns", "ops", "first", "last").rows() == [
        (0, 0, 20, 3, "a", "c"), (0, 30, 40, 1, "d", "d"), (1, 0, 4, 1, "e", "e")]


def test_interval_join_with_an_equality_key():
    left = pl.DataFrame({"lane": [1, 2, None], "start_ns": [0, 0, 0], "end_ns": [10, 10, 10], "id": ["A", "B", "N"]})
    right = pl.DataFrame({"lane": [1, 1, 2, 2, None], "start_ns": [2, 9, 10, -5, 3], "end_ns": [4, 15, 12, 1, 4]})
    over = interval_join(left, right, "overlap", by=["lane"]).sort("id", "right_start_ns")
    assert over.select("id", "right_start_ns", "overlap_ns").rows() == [("A", 2, 2), ("A", 9, 1), ("B", -5, 1)]
    inside = interval_join(left, right, "contains", by=["lane"])
    assert inside.select("id", "right_start_ns").rows() == [("A", 2)]


def test_projection_follows_the_launching_thread():
    """Two threads; a nested range; a driver-API launch; a range with no GPU work; a mark."""
    tl = synthetic_timeline(
        nvtx={
            "pid": [1, 1, 1, 1, 1], "tid": [1, 1, 1, 2, 1],
            "start_ns": [0, 10, 60, 0, 5], "end_ns": [100, 40, 70, 100, None],
            "text": ["step", "fwd", "idle", "other thread", "mark"], "kind": ["push_pop"] * 4 + ["mark"],
        },
        api={
            "pid": [1, 1, 1], "tid": [1, 1, 1], "correlation_id": [7, 8, 9], "start_ns": [12, 45, 200], "end_ns": [15, 50, 205],
            "name": ["cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernel"], "api": ["runtime", "driver", "runtime"],
        },
        kernels={"device_id": [0, 0, 0], "correlation_id": [7, 8, 9], "start_ns": [20, 80, 210],
                              "end_ns": [30, 120, 220], "name": ["k1", "k2", "k3"]},
    )
    p = TimelineAnalysis(tl).projection
    assert p.select("text", "gpu_ops", "proj_start_ns", "proj_end_ns", "proj_dur_ns", "gpu_time_ns").rows() == [
        ("step", 2, 20, 120, 100, 50),  # both launches, the runtime one and the driver one
        ("fwd", 1, 20, 30, 10, 10),
        ("idle", 0, None, None, None, 0),
        ("other thread", 0, None, None, None, 0),  # the calls ran on thread 1
    ]


def test_copy_compute_overlap_across_streams():
    tl = synthetic_timeline(
        kernels={"device_id": [0], "stream_id": [1], "start_ns": [0], "end_ns": [100], "name": ["k"]},
        memcpy={"device_id": [0, 0, 0], "stream_id": [2, 2, 2], "start_ns": [50, 150, 60],
                             "end_ns": [150, 200, 70], "kind": ["HtoD", "DtoH", "DtoD"]},
    )
    o = TimelineAnalysis(tl).overlap.row(0, named=True)
    # the device-to-device copy is not a host transfer; 50 of the 150 ns of transfers ran under the kernel
    assert (o["memcpy_ns"], o["overlap_ns"], o["copies"]) == (150, 50, 2)
    assert (o["copy_streams"], o["kernel_streams"], o["shared_streams"]) == (1, 1, 0)
    assert o["overlap_pct"] == pytest.approx(100 * 50 / 150)


def test_launch_bound_runs():
    # 10 kernels of 2 us, each launched by an 8 us call, back to back on one thread: each starts on an idle GPU
    n = 10
    starts = [i * 8_000 for i in range(n)]
    tl = synthetic_timeline(
        api={"correlation_id": list(range(n)), "start_ns": starts, "end_ns": [s + 8_000 for s in starts],
                          "name": ["cudaLaunchKernel"] * n},
        kernels={"device_id": [0] * n, "correlation_id": list(range(n)),
                              "start_ns": [s + 10_000 for s in starts], "end_ns": [s + 12_000 for s in starts],
                              "name": ["tiny"] * n},
    )
    launched = TimelineAnalysis(tl).launches
    assert launched["idle_before_ns"].to_list() == [None] + [6_000] * (n - 1)
    # each kernel's predecessor ended 4 us before its launch call returned: nothing was queued
    assert launched["waited_for_launch"].all()
    bound = launch_bound_launches(launched, min_kernels=8)
    s = launch_bound_stretches(bound).row(0, named=True)
    assert (s["kernels"], s["start_ns"], s["end_ns"], s["kernel_ns"], s["top_kernel"]) == (10, 0, 84_000, 20_000, "tiny")
    assert s["waited_ns"] == 9 * 6_000  # the waits before the second to the tenth kernel
    assert s["gpu_busy_pct"] == pytest.approx(100 * 20_000 / 84_000)
    assert launch_bound_launches(launched, min_kernels=11).is_empty()
    # the gap before the sixth kernel is one a host synchronisation returned into: that kernel breaks the
    # run (the host was blocked, not slow to launch), leaving runs of five and four
    released = pl.DataFrame({"device_id": [0], "end_ns": [starts[5] + 10_000]})
    assert launch_bound_launches(launched, min_kernels=4, released=released)["stretch"].unique_counts().to_list() == [5, 4]
    assert launch_bound_launches(launched, min_kernels=6, released=released).is_empty()


def test_kernels_from_a_queue_are_not_launch_bound():
    """A 1 ms kernel, then eight 2 us kernels whose 8 us launch calls all return while it runs: they
    start about 1 us apart, as queued kernels do on the H200, each shorter than its launch call, but
    the GPU never waited for a launch. One kernel fewer behind the long one, the same seven small
    kernels launched one by one are not a run of eight either: the long kernel that ends the previous
    run is not part of the next."""
    n = 9
    calls = [i * 8_000 for i in range(n)]
    starts = [10_000] + [1_011_000 + (i - 1) * 3_000 for i in range(1, n)]
    ends = [1_010_000] + [s + 2_000 for s in starts[1:]]
    tl = synthetic_timeline(
        api={"correlation_id": list(range(n)), "start_ns": calls, "end_ns": [c + 8_000 for c in calls],
             "name": ["cudaLaunchKernel"] * n},
        kernels={"device_id": [0] * n, "correlation_id": list(range(n)), "start_ns": starts, "end_ns": ends,
                 "name": ["long"] + ["tiny"] * (n - 1)},
    )
    launched = TimelineAnalysis(tl).launches
    assert launched["idle_before_ns"].to_list() == [None, 1_000] + [1_000] * (n - 2)
    assert launched["waited_for_launch"].to_list() == [True] + [False] * (n - 1)
    assert launch_bound_launches(launched, min_kernels=8).is_empty()
    one_by_one = launched.with_columns(waited_for_launch=pl.lit(True))  # as if each had waited for its launch
    assert launch_bound_launches(one_by_one, min_kernels=8)["name"].to_list() == ["tiny"] * 8
    assert launch_bound_launches(one_by_one.slice(0, n - 1), min_kernels=8).is_empty()


def test_empty_timeline():
    a = TimelineAnalysis(synthetic_timeline())
    assert a.window is None and a.window_ns == 0
    for name in ("utilisation", "gaps", "overlap", "streams", "launches", "launch_stats", "projection"):
        assert getattr(a, name).is_empty(), name
    assert gpu_work(a.timeline).is_empty()


# --------------------------------------------------------------------------------------------
# Host activity in gaps with some calls left out, computed again only where they were
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("recording", ["nsys_triton_softmax/triton_softmax.sqlite", "nsys_torch_softmax/torch_softmax_nvtx.sqlite"])
def test_host_activity_without_calls_matches_computing_it_all_again(recording):
    """The module loads of a recorded export, replicated 5 times (tests/scale_support.py): the gaps
    computed again only where a load was are the gaps computed from scratch without the loads."""
    from pathlib import Path

    from scale_support import replicate

    from coach.analyze.timeline import host_activity_in_gaps, host_activity_without, idle_gaps
    from coach.ingest import load

    tl = replicate(load(Path(__file__).parent / "data" / recording), 5)
    a = TimelineAnalysis(tl)
    removed = tl.api.filter(pl.col("name").str.contains("ModuleLoad|LibraryLoad|cudaLaunchKernel")).gather_every(3)
    assert removed.height
    keys = ["pid", "tid", "start_ns", "name"]
    again = host_activity_in_gaps(idle_gaps(a.busy, a.window),
                                  tl.api.join(removed.select(keys), on=keys, how="anti", nulls_equal=True), tl.nvtx)
    kept = host_activity_without(a.gaps, tl.api, removed, tl.nvtx)
    assert not kept.equals(a.gaps)  # some gap lost a call
    assert kept.equals(again)
    assert a.gaps_without(removed).equals(again)  # from the gaps computed already
    fresh = TimelineAnalysis(tl)
    assert fresh.gaps_without(removed).equals(again) and "gaps" not in fresh.__dict__  # in one pass, gaps left alone


# --------------------------------------------------------------------------------------------
# Host activity in gaps: the sweep against the definition, on random gaps and calls
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["sweep", "pairs"])
@pytest.mark.parametrize("seed", range(10))
def test_calls_in_gaps_match_their_definition(seed, path, monkeypatch):
    """``host_activity_in_gaps``' call counts and top call per gap (a sorted sweep) against a cross
    join filtered by the definition: calls overlapping a gap, clipped to it and summed per name, the
    name with the most time (ties: the first alphabetically; a call without a name last), on random
    gaps of two devices (touching, some empty of calls) and calls with equal times, nesting, zero
    lengths, missing names and missing times."""
    import numpy as np

    from coach.analyze import timeline
    from coach.analyze.timeline import host_activity_in_gaps

    if path == "pairs":  # what gaps out of order get: the pairs joined
        monkeypatch.setattr(timeline, "_calls_in_gaps", lambda g, api: None)
    rng = np.random.default_rng(seed)
    gaps = []
    for device in (0, 1):
        cuts = np.sort(rng.choice(np.arange(0, 200), size=24, replace=False))
        gaps += [(device, int(a), int(b)) for a, b in zip(cuts[::2], cuts[1::2])]
        gaps.append((device, 250, 260))  # past every call
    g = (pl.DataFrame(gaps, schema=["device_id", "start_ns", "end_ns"], orient="row")
         .with_columns(dur_ns=pl.col("end_ns") - pl.col("start_ns"), position=pl.lit("between"),
                       after=pl.lit(None, pl.Utf8), before=pl.lit(None, pl.Utf8))
         .sort("device_id", "start_ns"))
    n = 120
    start = rng.integers(0, 210, n)
    length = np.where(rng.random(n) < 0.2, 0, rng.integers(1, 30, n))
    names = rng.choice(["cudaLaunchKernel", "cudaMemcpyAsync", "cuLaunchKernel", "cudaStreamSynchronize"], n)
    api = pl.DataFrame({"start_ns": start, "end_ns": start + length, "pid": 1, "tid": rng.integers(1, 3, n),
                        "name": names}).with_columns(
        name=pl.when(pl.Series(rng.random(n) < 0.1)).then(None).otherwise(pl.col("name")),
        start_ns=pl.when(pl.Series(rng.random(n) < 0.05)).then(None).otherwise(pl.col("start_ns")))
    nvtx = pl.DataFrame(schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "text": pl.Utf8, "domain": pl.Utf8,
                                "depth": pl.Int64})
    got = host_activity_in_gaps(g, api, nvtx).with_row_index("_gap")

    pairs = (g.with_row_index("_gap").join(api.rename({"start_ns": "s", "end_ns": "e"}), how="cross")
             .filter((pl.col("s") < pl.col("end_ns")) & (pl.col("e") > pl.col("start_ns")))
             .with_columns(ns=pl.min_horizontal("e", "end_ns") - pl.max_horizontal("s", "start_ns")))
    per_name = pairs.group_by("_gap", "name").agg(pl.col("ns").sum(), n=pl.len())
    want = (per_name.sort("_gap", "ns", "name", descending=[False, True, False], nulls_last=True)
            .group_by("_gap", maintain_order=True)
            .agg(api_calls=pl.col("n").sum(), top_api=pl.col("name").first(), top_api_ns=pl.col("ns").first()))
    assert want.height and want["top_api"].null_count() < want.height
    joined = got.join(want, on="_gap", how="left", suffix="_want")
    assert (joined["api_calls"] == joined["api_calls_want"].fill_null(0)).all()
    assert (joined["top_api_ns"] == joined["top_api_ns_want"].fill_null(0)).all()
    assert joined["top_api"].cast(pl.Utf8).eq_missing(joined["top_api_want"]).all()
    assert (got["api_calls"] == 0).any()  # some gap saw no call


@pytest.mark.parametrize("seed", range(5))
def test_matching_rows_is_the_semi_join(seed):
    """``matching_rows`` (the rows of a frame whose keys some row of another has) picks what a semi
    join with missing values equal picks, on random keys with missing values and repeats."""
    import numpy as np

    from coach.analyze.timeline import matching_rows

    rng = np.random.default_rng(seed)
    n = 300

    def frame(m):
        return pl.DataFrame({"start_ns": rng.integers(0, 40, m), "tid": rng.integers(0, 3, m),
                             "name": rng.choice(["a", "b", "c"], m)}).with_columns(
            start_ns=pl.when(pl.Series(rng.random(m) < 0.1)).then(None).otherwise(pl.col("start_ns")),
            name=pl.when(pl.Series(rng.random(m) < 0.1)).then(None).otherwise(pl.col("name")))

    left, right = frame(n), frame(30)
    keys = ["start_ns", "tid", "name"]
    mask = matching_rows(left, right, keys)
    want = left.join(right.unique(), on=keys, how="semi", nulls_equal=True, maintain_order="left")
    assert 0 < want.height < n
    assert left.filter(mask).equals(want)
