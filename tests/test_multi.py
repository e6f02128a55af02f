"""Many timelines side by side (coach.analyze.multi and ``coach load`` on several timelines).

Two kinds of reports: the recorded 8 ranks (tests/data/nsys_ranks/, rank 5 the planted straggler),
checked at the end, and synthetic ones for the edges: copies of the recorded softmax export in which
one "rank" is made slow on purpose (everything after one instant moved later, so the call running at
that instant lasts longer). The softmax report has three top-level NVTX ranges (step0-2, step0 the
warm-up), so its copies are compared by median step; with its ranges removed (``unstepped``), by
wall time.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from coach.analyze import multi
from coach.analyze.multi import (cache_reports, cached_report, distinct_reports, side_by_side,
                                 side_by_side_from_outputs, timeline_format)
from coach.cli import main as coach_main
from coach.errors import InputError
from coach.ingest.nsys_sqlite import read
from coach.ingest.recipes import RecipeOutput, read_output
from coach.model import Timeline, save

SOFTMAX_WINDOW_NS = 437002665  # tests/test_timeline_nsys.py pins it
DELAY_NS = 100_000_000
RANKS = Path(__file__).parent / "data" / "nsys_ranks"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COACH_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def softmax(softmax_nsys_sqlite) -> Timeline:
    return read(softmax_nsys_sqlite)


@pytest.fixture(scope="module")
def unstepped(softmax) -> Timeline:
    """Synthetic: the softmax report without its NVTX ranges (no steps: compared by wall time)."""
    return dataclasses.replace(softmax, nvtx=softmax.nvtx.clear())


def delayed(tl: Timeline, at_ns: int, by_ns: int) -> Timeline:
    """Synthetic: ``tl`` with everything from ``at_ns`` on ``by_ns`` later; a row running at ``at_ns``
    ends ``by_ns`` later (a stall inside that call or kernel)."""

    def shift(df: pl.DataFrame) -> pl.DataFrame:
        if "start_ns" not in df.columns or df.is_empty():
            return df
        later = lambda c: pl.when(pl.col(c) >= at_ns).then(pl.col(c) + by_ns).otherwise(pl.col(c))  # noqa: E731
        moved = df.with_columns(later("start_ns"), later("end_ns"))
        return moved.with_columns(dur_ns=pl.col("end_ns") - pl.col("start_ns"))

    return dataclasses.replace(tl, **{name: shift(df) for name, df in tl.tables().items()})


def saved_ranks(folder: Path, timelines: list[Timeline]) -> list[Path]:
    """Save each timeline as rank<i> (a coach profile folder, as traces/ keeps them)."""
    out = []
    for i, tl in enumerate(timelines):
        tl = dataclasses.replace(tl, source=dataclasses.replace(tl.source, path=f"rank{i}.sqlite"))
        out.append(save(tl, folder / f"rank{i}"))
    return out


def _sync_end(tl: Timeline) -> int:
    """The end of the cudaStreamSynchronize at 5011276161 ns (between steps 1 and 2, GPU idle)."""
    return int(tl.api.filter(pl.col("start_ns") == 5011276161)["end_ns"].item())


def test_a_rank_stalled_in_synchronisation(unstepped, tmp_path):
    slow = delayed(unstepped, _sync_end(unstepped) - 1, DELAY_NS)
    result = side_by_side(saved_ranks(tmp_path, [unstepped, unstepped, slow, unstepped]))
    t = result.table
    assert t["report"].to_list() == ["rank0", "rank1", "rank2", "rank3"]
    assert t["wall_ns"].to_list() == [SOFTMAX_WINDOW_NS] * 2 + [SOFTMAX_WINDOW_NS + DELAY_NS, SOFTMAX_WINDOW_NS]
    fast, slow_row = t.row(0, named=True), t.row(2, named=True)
    assert (fast["kernels"], fast["kernel_ns"], fast["sync_calls"], fast["gaps"]) == (11, 433888, 6, 15)
    assert (fast["gap_ns"], fast["max_gap_ns"], fast["sync_ns"]) == (141362703, 44022673, 95820)
    assert slow_row["sync_ns"] - fast["sync_ns"] == DELAY_NS and slow_row["gap_ns"] - fast["gap_ns"] == DELAY_NS
    assert slow_row["kernel_ns"] == fast["kernel_ns"]
    assert fast["busy_pct"] == pytest.approx(129263379 / SOFTMAX_WINDOW_NS * 100)
    assert result.slowest == "rank2" and result.measured_by == "wall_ns"
    assert result.reasons["metric"].to_list() == ["sync_ns", "gap_ns"]
    assert result.reasons["excess_ns"].to_list() == [DELAY_NS, DELAY_NS]
    assert result.verdict.startswith(
        "rank2 is the slowest: 537 ms from its first to its last CUDA activity, 100 ms more than the median of the "
        "other 3 (437 ms). It spends 100 ms more in synchronisation calls")
    assert result.verdict.endswith("Compared over the whole report, start-up included: rank0 has 0 top-level NVTX "
                                   "ranges, and a steady-state step time needs at least 3 in every report.")
    assert (t["steps"] == 0).all() and t["step_ns"].is_null().all()


def test_a_rank_with_a_long_kernel(unstepped, tmp_path):
    """One kernel runs 50 ms longer; the host waits for it in a copy call, not a synchronisation."""
    kernel = unstepped.kernels.sort("dur_ns").row(-1, named=True)
    slow = delayed(unstepped, kernel["end_ns"] - 1, 50_000_000)
    result = side_by_side(saved_ranks(tmp_path, [unstepped, slow, unstepped]))
    assert result.slowest == "rank1"
    assert result.reasons["metric"].to_list() == ["kernel_ns"] and result.reasons["excess_ns"][0] == 50_000_000
    assert "50 ms more of kernel time" in result.verdict


def test_no_rank_stands_out_within_run_to_run_noise(unstepped, tmp_path):
    slightly = delayed(unstepped, _sync_end(unstepped) - 1, 1_000_000)  # 0.2% of the window
    result = side_by_side(saved_ranks(tmp_path, [unstepped, slightly, unstepped]))
    assert result.slowest is None and result.reasons.is_empty()
    assert result.verdict.startswith("No report stands out: the longest, rank1, took 438 ms")


def test_a_slow_rank_with_the_same_cuda_work(unstepped, tmp_path):
    """Everything moved later from a moment the host was outside CUDA: no CUDA number explains it."""
    idle = unstepped.api.filter(pl.col("start_ns") == 5011276161)["start_ns"].item() - 1000
    result = side_by_side(saved_ranks(tmp_path, [unstepped, delayed(unstepped, idle, DELAY_NS), unstepped]))
    assert result.slowest == "rank1"
    assert result.reasons["metric"].to_list() == ["gap_ns"]  # the GPU idles while the host is busy elsewhere


def test_invariants(softmax, tmp_path):
    t = side_by_side(saved_ranks(tmp_path, [softmax, delayed(softmax, _sync_end(softmax) - 1, DELAY_NS)])).table
    assert (t["busy_pct"] <= 100).all() and (t["gap_ns"] >= t["max_gap_ns"]).all()
    assert ((t["busy_pct"] / 100 * t["wall_ns"]) + t["gap_ns"] <= t["wall_ns"]).all()
    assert (t["step_gpu_ns"] <= t["step_ns"]).all() and (t["step_sync_ns"] <= t["step_ns"]).all()
    assert (t["step_ns"] <= t["wall_ns"]).all()


# --------------------------------------------------------------------------------------------
# Steady state: the median step
# --------------------------------------------------------------------------------------------

SYNC_IN_STEP_NS = (4965161249, 5011290687, 5055374291)  # the end of the stream sync in step0, 1, 2
STEP_NS = 48_062_263  # the softmax report's median step: step1 (step0, 138.1 ms, is the warm-up)


def every_step_slower(tl: Timeline, by_ns: int) -> Timeline:
    """Synthetic: each step's stream synchronisation lasts ``by_ns`` longer (latest first, so that
    each instant is still where it was recorded when it is moved)."""
    for end in reversed(SYNC_IN_STEP_NS):
        tl = delayed(tl, end - 1, by_ns)
    return tl


def test_every_step_slower_in_synchronisation(softmax, tmp_path):
    slow = every_step_slower(softmax, 10_000_000)
    result = side_by_side(saved_ranks(tmp_path, [softmax, slow, softmax]))
    t = result.table
    assert t["steps"].to_list() == [3, 3, 3] and t["step_ns"].to_list() == [STEP_NS, STEP_NS + 10_000_000, STEP_NS]
    assert t["step_sync_calls"].to_list() == [1.0, 1.0, 1.0]
    assert result.slowest == "rank1" and result.measured_by == "step_ns"
    assert result.reasons["metric"].to_list() == ["step_sync_ns", "step_gap_ns"]
    assert result.reasons["excess_ns"].to_list() == [10_000_000, 10_000_000]
    assert result.verdict.startswith(
        "rank1 is the slowest: 58.06 ms per step (the median of its 3 top-level NVTX ranges), 10 ms more than the "
        "median of the other 2 (48.06 ms). Per step it spends 10 ms more in synchronisation calls")
    assert "1 -> 1 calls" in result.verdict


def test_a_slow_start_up_is_not_a_slow_rank(softmax, tmp_path):
    """300 ms more in step0 before its first kernel (module loading, say): the longest wall time, the
    same steady state."""
    first_kernel_of_step0 = 4847134335
    slow_start = delayed(softmax, first_kernel_of_step0 - 1000, 300_000_000)
    result = side_by_side(saved_ranks(tmp_path, [softmax, slow_start, softmax]))
    assert result.table["wall_ns"].to_list() == [SOFTMAX_WINDOW_NS, SOFTMAX_WINDOW_NS + 300_000_000, SOFTMAX_WINDOW_NS]
    assert result.slowest is None and result.measured_by == "step_ns"
    assert result.verdict.startswith("No report stands out: the longest, rank0, took 48.06 ms per step")


def test_too_few_steps_somewhere_compares_wall_time(softmax, unstepped, tmp_path):
    slow = every_step_slower(softmax, 10_000_000)
    result = side_by_side(saved_ranks(tmp_path, [softmax, slow, unstepped]))
    assert result.table["steps"].to_list() == [3, 3, 0] and result.measured_by == "wall_ns"
    assert result.slowest == "rank1"
    assert "rank2 has 0 top-level NVTX ranges, and a steady-state step time needs at least 3" in result.verdict


def test_needs_two_reports(softmax, tmp_path):
    with pytest.raises(InputError, match="needs at least two reports"):
        side_by_side(saved_ranks(tmp_path, [softmax]))


# --------------------------------------------------------------------------------------------
# Reports read once into a Parquet cache
# --------------------------------------------------------------------------------------------


def _copies(folder: Path, source: Path, names: list[str]) -> list[Path]:
    folder.mkdir(exist_ok=True)
    for n in names:
        shutil.copyfile(source, folder / n)
    return sorted(folder.iterdir())


def test_each_report_is_read_once(softmax_nsys_sqlite, tmp_path, monkeypatch):
    reports = _copies(tmp_path / "ranks", softmax_nsys_sqlite, ["rank0.sqlite", "rank1.sqlite"])
    first = cache_reports(reports)
    assert [f.parent for f in first] == [tmp_path / "cache" / "reports"] * 2
    monkeypatch.setattr(multi, "load", lambda p: pytest.fail(f"{p} read again"))
    assert cache_reports(reports) == first
    for r in reports:
        r.unlink()  # the summary needs only the cache
    result = side_by_side(first)
    assert result.table["report"].to_list() == ["rank0", "rank1"] and result.slowest is None


def test_a_changed_report_is_read_again(softmax_nsys_sqlite, tmp_path):
    [report] = _copies(tmp_path / "ranks", softmax_nsys_sqlite, ["rank0.sqlite"])
    before = cached_report(report)
    report.write_bytes(report.read_bytes() + b"\0" * 512)  # bigger (SQLite ignores trailing bytes)
    assert cached_report(report) != before


def test_a_report_with_its_export_counts_once(softmax_nsys_sqlite, softmax_nsys_rep, tmp_path):
    folder = tmp_path / "ranks"
    _copies(folder, softmax_nsys_sqlite, ["rank0.sqlite", "rank1.sqlite"])
    _copies(folder, softmax_nsys_rep, ["rank0.nsys-rep"])
    assert [p.name for p in distinct_reports(sorted(folder.iterdir()))] == ["rank0.sqlite", "rank1.sqlite"]
    assert timeline_format(folder / "rank0.nsys-rep") == "nsys-rep"


def test_kernel_profiles_are_not_timelines(strided_ncu_rep, tmp_path):
    assert timeline_format(strided_ncu_rep) is None


# --------------------------------------------------------------------------------------------
# coach load
# --------------------------------------------------------------------------------------------


def test_coach_load_of_a_folder_names_the_slowest(unstepped, tmp_path, capsys):
    saved_ranks(tmp_path / "ranks", [unstepped, delayed(unstepped, _sync_end(unstepped) - 1, DELAY_NS), unstepped])
    coach_main(["load", str(tmp_path / "ranks")])
    out = " ".join(capsys.readouterr().out.split())
    assert "Reports side by side" in out and "rank1 0 - 537.0 11 0.4 24.1 241.4 103.6 6 100.1" in out
    assert "rank1 is the slowest: 537 ms from its first to its last CUDA activity" in out
    coach_main(["load", str(tmp_path / "ranks"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["slowest"] == "rank1" and [r["metric"] for r in doc["reasons"]] == ["sync_ns", "gap_ns"]
    assert len(doc["reports"]) == 3 and doc["measured_by"] == "wall_ns"


def test_coach_load_of_exports_goes_through_the_cache(softmax_nsys_sqlite, tmp_path, capsys):
    reports = _copies(tmp_path / "ranks", softmax_nsys_sqlite, ["a.sqlite", "b.sqlite"])
    coach_main(["load", *map(str, reports), "--json"])
    assert json.loads(capsys.readouterr().out)["verdict"].startswith("No report stands out")
    assert len(list((tmp_path / "cache" / "reports").iterdir())) == 2


def test_coach_load_of_mixed_kinds_lists_each(softmax_nsys_sqlite, strided_ncu_rep, capsys):
    coach_main(["load", str(softmax_nsys_sqlite), str(strided_ncu_rep), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert [d["kind"] for d in doc] == ["timeline", "kernel-profile"]


# --------------------------------------------------------------------------------------------
# The same table from NVIDIA's recipes
# --------------------------------------------------------------------------------------------


def synthetic_multi_output(name: str, nvidia: Path, ranks: int, slow: int, factor: float = 1) -> RecipeOutput:
    """Synthetic: the recorded single-report output repeated for ``ranks`` reports, with the
    ``slow`` rank's durations and sums multiplied by ``factor``."""
    one = read_output(name, nvidia / f"recipe_{name}").table
    value = "dur_ns" if "dur_ns" in one.columns else "total_ns"
    tables = [one.with_columns(rank=pl.lit(r, pl.Int64), report=pl.lit(f"rank{r}"),
                               **{value: (pl.col(value) * (factor if r == slow else 1)).cast(pl.Int64)})
              for r in range(ranks)]
    return RecipeOutput(name, pl.concat(tables), tuple(f"rank{r}" for r in range(ranks)))


def test_side_by_side_from_recipe_outputs(data_dir):
    nvidia = data_dir / "nsys_torch_softmax" / "nvidia"
    outputs = {n: synthetic_multi_output(n, nvidia, 4, slow=3) for n in ("cuda_gpu_mem_time_sum", "cuda_api_sync")}
    outputs["cuda_gpu_kern_sum"] = synthetic_multi_output("cuda_gpu_kern_sum", nvidia, 4, slow=3, factor=1000)
    result = side_by_side_from_outputs(outputs)  # no gpu_gaps output: the recipe found no gap over 500 ms
    t = result.table
    first = t.row(0, named=True)
    assert (first["kernels"], first["kernel_ns"], first["sync_calls"], first["sync_ns"]) == (11, 433888, 6, 95820)
    assert first["span_ns"] == 433888 + 128828339 + 1152 and (t["gap_ns"] == 0).all()
    assert t.row(3, named=True)["kernel_ns"] == 433888 * 1000
    assert result.slowest == "rank3" and result.measured_by == "span_ns"
    assert result.reasons["metric"].to_list() == ["kernel_ns"] and result.reasons["excess_ns"][0] == 433888 * 999
    assert "of GPU operations and the gaps between them" in result.verdict


# --------------------------------------------------------------------------------------------
# The recorded 8-rank folder (tests/data/nsys_ranks), once recorded
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(not RANKS.is_dir(), reason="the 8-rank recording (scripts/record-ranks.sh) is not here yet")
def test_recorded_ranks_name_the_straggler(tmp_path):
    """Every rank's step0 takes 148-260 ms (8 processes loading CUDA modules at once) and its steady
    steps 1.5-3.0 ms: by wall time rank2 would be the slowest (754.6 ms, rank5 357.0 ms); by median
    step, rank5, with the extra GELU passes (GPU work), its 8 more device syncs per step, and the
    GPU idle after each."""
    exports = sorted(RANKS.glob("rank*.sqlite"))
    assert len(exports) == 8
    result = side_by_side(cache_reports(exports))
    t = result.table
    assert t.sort("wall_ns")["report"][-1] == "rank2" and t["wall_ns"].to_list()[2::3] == [754643446, 356980143]
    assert result.slowest == "rank5" and result.measured_by == "step_ns"
    assert t["steps"].to_list() == [4] * 8
    assert t["step_ns"].to_list() == [1632823.0, 2236525.0, 2461374.0, 1673707.0, 1792387.0, 2878080.0, 1700786.0,
                                      1704416.5]
    assert t["step_sync_calls"].to_list() == [1.0] * 5 + [9.0] + [1.0] * 2
    others = t.filter(pl.col("report") != "rank5")
    assert (others["step_gpu_ns"] < 1_469_000).all() and (others["step_gpu_ns"] > 1_466_000).all()
    assert result.reasons.rows() == [("step_gpu_ns", 2350817.5, 1468061.0, 882756.5),
                                     ("step_sync_ns", 1620000.5, 1194921.0, 425079.5),
                                     ("step_gap_ns", 526669.5, 238851.5, 287818.0)]
    assert result.verdict == (
        "rank5 is the slowest: 2.878 ms per step (the median of its 4 top-level NVTX ranges), 1.174 ms more than the "
        "median of the other 7 (1.704 ms). Per step it spends 883 us more of GPU work (1.468 ms -> 2.351 ms); 425 us "
        "more in synchronisation calls (1.195 ms -> 1.62 ms, 1 -> 9 calls); 288 us more with the GPU idle (239 us -> "
        "527 us).")


@pytest.mark.skipif(not RANKS.is_dir(), reason="the 8-rank recording (scripts/record-ranks.sh) is not here yet")
def test_coach_load_of_the_recorded_ranks(capsys):
    coach_main(["load", str(RANKS), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["slowest"] == "rank5" and doc["measured_by"] == "step_ns" and len(doc["reports"]) == 8
    assert [r["metric"] for r in doc["reasons"]] == ["step_gpu_ns", "step_sync_ns", "step_gap_ns"]


@pytest.mark.skipif(not (RANKS / "nvidia" / "all").is_dir(), reason="no multi-report recipe outputs recorded yet")
def test_recorded_ranks_from_nvidias_recipes_agree():
    together = RANKS / "nvidia" / "all"
    outputs = {n: read_output(n, together / f"recipe_{n}") for n in multi.SIDE_BY_SIDE_RECIPES
               if (together / f"recipe_{n}").is_dir()}
    ours = side_by_side(cache_reports(sorted(RANKS.glob("rank*.sqlite")))).table
    theirs = side_by_side_from_outputs(outputs)
    assert "nvtx_gpu_proj_trace" in outputs and theirs.slowest == "rank5" and theirs.measured_by == "step_ns"
    assert [r["metric"] for r in theirs.reasons.iter_rows(named=True)] == ["step_gpu_ns", "step_sync_ns", "step_gap_ns"]
    joined = ours.join(theirs.table, on="report", suffix="_nvidia")
    for c in ("kernels", "kernel_ns", "sync_calls", "sync_ns", "gaps", "gap_ns", "max_gap_ns", "steps", "step_gpu_ns",
              "step_sync_calls"):
        assert (joined[c] == joined[f"{c}_nvidia"]).all(), c
    # NVIDIA's steps are the ranges projected onto the GPU (first operation to last), so shorter than
    # the ranges on the CPU by the host time before the first launch and after the last operation
    assert (joined["step_ns_nvidia"] < joined["step_ns"]).all()
    assert theirs.table.filter(pl.col("report") == "rank5")["step_ns"].item() == 2752668.5


RANKS_DASK = Path(__file__).parent / "data" / "nsys_ranks_dask"  # a recording whose recipes' Python had Dask


def test_dask_futures_mode_gives_the_same_tables():
    """NVIDIA's recipes run over the same eight reports with --mode dask-futures (Dask's distributed
    scheduler) and in the default mode give the same tables, read through the same reader."""
    dask = RANKS_DASK / "nvidia" / "all-dask-futures"
    ran = [d for d in sorted(dask.glob("recipe_*")) if d.is_dir()]
    assert [d.name for d in ran] == ["recipe_cuda_api_sync", "recipe_cuda_gpu_kern_sum"], (dask / "failures.txt")
    for folder in ran:
        assert "--mode dask-futures" in (dask / f"{folder.name}.log").read_text().splitlines()[0]
        name = folder.name.removeprefix("recipe_")
        ours, default = read_output(name, folder).table, read_output(name, RANKS_DASK / "nvidia" / "all" / folder.name).table
        assert ours.height > 0 and set(ours["report"]) == {f"rank{r}" for r in range(8)}, name
        keys = [c for c in ("report", "name", "start_ns", "tid") if c in ours.columns]
        assert ours.sort(keys).equals(default.sort(keys)), name
