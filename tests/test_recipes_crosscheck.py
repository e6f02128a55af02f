"""Coach's numbers against NVIDIA's, on every recorded Nsight Systems export that has NVIDIA's own
outputs beside it: kernel sums and counts, API sums, copy totals, NVTX projections, GPU utilisation,
gaps, pageable and synchronous copies, synchronisation calls.

Where the outputs live (made by scripts/export-nvidia-outputs.sh on the machine that recorded the
report): ``<case>/nvidia/`` beside a folder's only export, or ``<case>/nvidia/<export name>/`` beside
several; ``<case>/nvidia/all/`` holds recipes run over all of a folder's reports together. A new
recording with its outputs is checked by these tests without any change here.

Every check compares NVIDIA's value with coach's computed by NVIDIA's definition
(``coach.analyze.recipes``); where coach's everyday definition differs, docs/analysis.md says how.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.recipes import (DEFINITIONS, NVIDIA_GAP_THRESHOLD_NS, compare, nvidia_projection,
                                   session_origin_ns)
from coach.analyze.timeline_rules._shared import base_api_name
from coach.analyze.timeline_summary import top_kernels
from coach.ingest.nsys_sqlite import read
from coach.errors import CoachError
from coach.ingest.recipes import empty_output, read_output
from coach.model import Source, Timeline, make_timeline

ROOTS = [Path(__file__).parent / "data", Path(__file__).parent.parent / "traces"]
RECIPE_DIR = re.compile(r"^recipe_([a-z0-9_]+)$")


def recorded() -> list[tuple[Path, Path]]:
    """(export, folder of NVIDIA's outputs for it) for every recorded export that has them."""
    found = []
    for root in ROOTS:
        for export in sorted(root.glob("**/*.sqlite")):
            nvidia = export.parent / "nvidia"
            own = nvidia / export.stem
            folder = own if own.is_dir() else nvidia if len(list(export.parent.glob("*.sqlite"))) == 1 else None
            has_outputs = folder is not None and folder.is_dir() and any(
                any(folder.glob(pattern)) for pattern in ("recipe_*", "stats_cuda_*"))
            if has_outputs:
                found.append((export, folder))
    return found


def recipe_cases() -> list:
    cases = []
    for export, folder in recorded():
        for entry in sorted(folder.iterdir()):
            m = RECIPE_DIR.match(entry.name if entry.is_dir() else entry.name.removesuffix(".log"))
            if m and m.group(1) in DEFINITIONS and (entry.is_dir() or _found_no_data(entry)):
                kind = "" if entry.is_dir() else "-no-data"
                cases.append(pytest.param(export, m.group(1), entry, id=f"{export.stem}-{m.group(1)}{kind}"))
    return cases


def multi_report_cases() -> list:
    cases = []
    for root in ROOTS:
        for together in sorted(root.glob("**/nvidia/all")):
            for entry in sorted(together.glob("recipe_*")):
                name = entry.name.removeprefix("recipe_")
                if entry.is_dir() and name in DEFINITIONS:
                    case = together.parent.parent
                    cases.append(pytest.param(case, name, entry, id=f"{case.name}-{name}"))
    return cases


def _found_no_data(entry: Path) -> bool:
    """A recipe log that says the recipe found nothing (it then writes no output folder)."""
    return entry.suffix == ".log" and not entry.with_suffix("").is_dir() and "no data was found" in entry.read_text()


def _gap_threshold_ns(folder: Path) -> int:
    """The --gap gpu_gaps ran with: scripts/export-nvidia-outputs.sh writes its command line as the
    log's first line; logs without one are of runs with NVIDIA's default."""
    log = folder.parent / "recipe_gpu_gaps.log" if folder.is_dir() else folder
    found = re.search(r"--gap[= ](\d+)", log.read_text()) if log.is_file() else None
    return int(found.group(1)) * 1_000_000 if found else NVIDIA_GAP_THRESHOLD_NS


def _made_from(export: Path, out) -> None:
    """An output that names processes the export does not have was made from another report (as when
    two reports of one name were exported into one folder): the data is wrong, not coach."""
    if "pid" not in out.table.columns:
        return
    tl = timeline(export)
    pids = pl.concat([t.select(pl.col("pid").cast(pl.Int64)) for t in (tl.kernels, tl.memcpy, tl.api, tl.nvtx)])
    ours = set(pids["pid"])
    strangers = set(out.table["pid"].drop_nulls()) - ours
    if strangers:
        pytest.xfail(f"{out.recipe} output beside {export.name} names process(es) {sorted(strangers)} that the "
                     "export does not have: it was made from another report; re-export it with "
                     "scripts/export-nvidia-outputs.sh")


@cache
def timeline(export: Path) -> Timeline:
    return read(export)


def _disagreements(checks: pl.DataFrame) -> str:
    with pl.Config(tbl_rows=30, tbl_width_chars=200, fmt_str_lengths=60):
        return str(checks.filter(~pl.col("agrees")).drop("recipe", "report"))


def test_there_are_recorded_exports_to_check():
    names = {export.stem for export, _ in recorded()}
    assert "torch_softmax_nvtx" in names


@pytest.mark.parametrize(("export", "name", "entry"), recipe_cases())
def test_recipe_agrees_with_coach(export, name, entry):
    tl = timeline(export)
    threshold = _gap_threshold_ns(entry)
    if entry.is_dir():
        out = read_output(name, entry)
        _made_from(export, out)
        checks = compare(out, tl, gap_threshold_ns=threshold)
        assert checks.height > 0
    else:  # NVIDIA found nothing: neither may coach
        checks = compare(empty_output(name, "no data"), tl, gap_threshold_ns=threshold)
    assert checks["agrees"].all(), _disagreements(checks)


@pytest.mark.parametrize(("case", "name", "entry"), multi_report_cases())
def test_multi_report_recipe_agrees_with_each_report(case, name, entry):
    out = read_output(name, entry)
    assert len(out.reports) > 1
    timelines = {report: timeline(case / f"{report}.sqlite") for report in out.reports}
    origin = session_origin_ns(timelines.values())
    for report, tl in timelines.items():
        checks = compare(out, tl, report, gap_threshold_ns=_gap_threshold_ns(entry), session_origin_ns=origin)
        assert checks["agrees"].all(), f"{report}:\n{_disagreements(checks)}"


# --------------------------------------------------------------------------------------------
# nsys stats (2025 report names), where recorded
# --------------------------------------------------------------------------------------------

MEMCPY_OPERATIONS = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device",
                     "HtoH": "Host-to-Host", "PtoP": "Peer-to-Peer"}


def stats_cases(report: str) -> list:
    return [pytest.param(export, folder / f"stats_{report}.csv", id=export.stem)
            for export, folder in recorded() if (folder / f"stats_{report}.csv").is_file()]


@pytest.mark.parametrize(("export", "csv"), stats_cases("cuda_gpu_kern_sum"))
def test_kernel_sums_by_signature(export, csv):
    ours = top_kernels(timeline(export).kernels, top=1 << 30).select(
        "demangled_name", "count", "total_ns", "min_ns", "max_ns")
    stats = pl.read_csv(csv).select("Name", "Instances", "Total Time (ns)", "Min (ns)", "Max (ns)")
    assert ours.sort("demangled_name").rows() == stats.sort("Name").rows()


@pytest.mark.parametrize(("export", "csv"), stats_cases("cuda_api_sum"))
def test_api_sums(export, csv):
    ours = (timeline(export).api.group_by(name=base_api_name(pl.col("name")))
            .agg(n=pl.len(), total=pl.col("dur_ns").sum()))
    stats = (pl.read_csv(csv).group_by(name=base_api_name(pl.col("Name")))
             .agg(n=pl.col("Num Calls").sum(), total=pl.col("Total Time (ns)").sum()))
    assert ours.sort("name").rows() == stats.sort("name").rows()


@pytest.mark.parametrize(("export", "csv"), stats_cases("cuda_gpu_mem_time_sum"))
def test_copy_and_memset_totals(export, csv):
    tl = timeline(export)
    operation = pl.lit("[CUDA memcpy ") + pl.col("kind").replace(MEMCPY_OPERATIONS) + pl.lit("]")
    copies = tl.memcpy.select("dur_ns", op=operation)
    ops = pl.concat([copies, tl.memset.select("dur_ns", op=pl.lit("[CUDA memset]"))])
    ours = ops.group_by("op").agg(n=pl.len(), total=pl.col("dur_ns").sum())
    stats = pl.read_csv(csv).select(op="Operation", n="Count", total="Total Time (ns)")
    assert ours.sort("op").rows() == stats.sort("op").rows()


@pytest.mark.parametrize(("export", "csv"), stats_cases("nvtx_gpu_proj_sum"))
def test_nvtx_projection_sums(export, csv):
    """nsys stats adds no ranges for CUDA-graph nodes (the recipes do) and counts launches."""
    projected = nvidia_projection(timeline(export)).filter(~pl.col("node"))
    ours = projected.group_by("text").agg(proj=pl.col("proj_dur_ns").sum(), n=pl.len(),
                                          ops=pl.col("gpu_launches").sum())
    stats = pl.read_csv(csv).select(text=pl.col("Range").str.replace(r"^[^:]*:", ""), proj="Total Proj Time (ns)",
                                    n="Range Instances", ops="Total GPU Ops")
    assert ours.sort("text").rows() == stats.sort("text").rows()


# --------------------------------------------------------------------------------------------
# What the recorded softmax report shows about the definitions
# --------------------------------------------------------------------------------------------


def test_gaps_under_nvidias_default_threshold(softmax_nsys_sqlite, data_dir):
    """NVIDIA's gpu_gaps at its default --gap of 500 ms found nothing in the softmax report (the first
    export's log); re-run with --gap 0 it lists 15 gaps between operations, the longest 44.0 ms, as
    coach finds them: all under the default threshold."""
    theirs = read_output("gpu_gaps", data_dir / "nsys_torch_softmax" / "nvidia" / "recipe_gpu_gaps").table
    assert "--gap 0" in (data_dir / "nsys_torch_softmax" / "nvidia" / "recipe_gpu_gaps.log").read_text()
    ours = DEFINITIONS["gpu_gaps"].ours(timeline(softmax_nsys_sqlite), pl.DataFrame(), {"gap_threshold_ns": 0})
    for gaps in (ours, theirs):
        assert gaps.height == 15 and gaps["dur_ns"].max() == 44_022_673 and gaps["dur_ns"].sum() == 141_362_703
    assert ours["dur_ns"].max() < NVIDIA_GAP_THRESHOLD_NS


def test_multi_report_utilisation_map_is_on_one_time_axis(data_dir):
    """Over the 8 rank reports the heatmap's 30 bins span all sessions on one axis from the earliest
    session start (rank5's), each report shifted by its own start; bins outside a report's session are
    empty (null). Coach's kernels, shifted the same way, fill NVIDIA's bins."""
    ranks = data_dir / "nsys_ranks"
    folder = ranks / "nvidia" / "all" / "recipe_cuda_gpu_time_util_map"
    if not folder.is_dir():
        pytest.skip("no multi-report recipe outputs recorded")
    out = read_output("cuda_gpu_time_util_map", folder)
    timelines = {r: timeline(ranks / f"{r}.sqlite") for r in out.reports}
    origin = session_origin_ns(timelines.values())
    assert origin == timelines["rank5"].source.meta["session_start_epoch_ns"] == 1796041565767641548
    assert timelines["rank0"].source.meta["session_start_epoch_ns"] - origin == 270_725_864
    rank0 = out.table.filter(pl.col("report") == "rank0").sort("bin_start_ns")
    assert rank0["bin_start_ns"][1] == 147_088_291  # 30 bins over 4.41 s, rank3's session ending last
    # rank0's session starts 270.7 ms into the axis and lasts 3.38 s: bins 1 to 24
    assert rank0["kernel_pct"].is_null().arg_true().to_list() == [0, 25, 26, 27, 28, 29]
    checks = compare(out, timelines["rank5"], "rank5", session_origin_ns=origin)
    busiest = checks.filter(pl.col("item") == "8471 / 0 / 2353412656").row(0, named=True)
    assert busiest["nvidia"] == 6.4 and busiest["ours"] == pytest.approx(6.3689, abs=1e-4) and busiest["agrees"]
    with pytest.raises(CoachError, match="one time axis from the earliest session start"):
        compare(out, timelines["rank0"], "rank0")


def test_synchronous_copies_leave_out_what_nvidia_leaves_out():
    """Synthetic: cuda_memcpy_sync's --help leaves out copies within one device and host-to-device
    copies of 64 KB or less; no recorded report has a blocking cudaMemcpy to show it."""
    kib = 1024
    api = {"start_ns": [0, 100, 200, 300, 400], "end_ns": [50, 150, 250, 350, 450], "pid": [1] * 5,
           "tid": [1] * 5, "correlation_id": [1, 2, 3, 4, 5],
           "name": ["cudaMemcpy", "cudaMemcpy", "cudaMemcpy", "cudaMemcpy", "cudaMemcpyAsync"]}
    memcpy = {"start_ns": [10, 110, 210, 310, 410], "end_ns": [40, 140, 240, 340, 440], "pid": [1] * 5,
              "device_id": [0] * 5, "stream_id": [7] * 5, "correlation_id": [1, 2, 3, 4, 5],
              "kind": ["HtoD", "HtoD", "DtoD", "DtoH", "DtoH"], "bytes": [64 * kib, 64 * kib + 1, 1 << 20, 4, 4]}
    tl = make_timeline(Source(path="synthetic", format="nsys-sqlite", tool="synthetic builder"),
                       api=pl.DataFrame(api).with_columns(dur_ns=pl.col("end_ns") - pl.col("start_ns")),
                       memcpy=pl.DataFrame(memcpy).with_columns(dur_ns=pl.col("end_ns") - pl.col("start_ns")))
    sync = DEFINITIONS["cuda_memcpy_sync"].ours(tl, pl.DataFrame(), {})
    assert sync.sort("start_ns")["start_ns"].to_list() == [110, 310]


def test_projection_follows_driver_launches_and_counts_launches(data_dir):
    """In the multi-stream report cuBLASLt launches each GEMM with cuLaunchKernelEx (driver API):
    NVIDIA counts 4 operations per chunk (copy in, memset, GEMM, copy out), so it follows driver-API
    launches as coach does. In the sync-kinds report one CUDA-graph launch runs two kernels: one
    launch for nsys stats, two nodes (extra ranges) for the recipes."""
    multi = nvidia_projection(timeline(data_dir / "nsys_torch_multistream" / "torch_multistream.sqlite"))
    chunk = multi.filter(pl.col("text") == "chunk0")
    assert chunk["gpu_launches"].to_list() == [4, 4, 4] and not chunk["node"].any()
    graph = nvidia_projection(timeline(data_dir / "nsys_torch_sync_kinds" / "torch_sync_kinds.sqlite")).filter(
        pl.col("text") == "cuda-graph")
    assert graph.select("depth", "proj_start_ns", "proj_end_ns", "gpu_launches", "node").rows() == [
        (0, 1910916659, 1913741202, 6, False), (1, 1913726162, 1913734290, 1, True),
        (1, 1913734546, 1913741202, 1, True)]
