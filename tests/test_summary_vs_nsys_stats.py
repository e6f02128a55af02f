"""coach's kernel and API summaries against ``nsys stats`` on the same recorded exports.

Two sources of NVIDIA's numbers:

- the ``nsys stats --report cuda_gpu_kern_sum,cuda_api_sum`` CSVs that Nsight Systems 2025.3 wrote
  beside each recorded export when it was recorded (tests/data/*/nvidia/, nsys_ranks/nvidia/rank*/);
- Debian's Nsight Systems 2022.4 (``/usr/bin/nsys``, where installed) run here on the same exports,
  with its report names of that version (``gpukernsum``, ``cudaapisum``). It groups kernels by
  name, grid and block, so its rows are compared where a kernel ran with one launch configuration.

Every column nsys prints is compared: count, total, mean, median, min, max and standard deviation
(nsys prints means and deviations to 0.1 ns, and a deviation of 0 for a single instance, where
coach's is null: one sample has none).
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.timeline_rules._shared import base_api_name
from coach.analyze.timeline_summary import top_api, top_kernels
from coach.ingest.nsys_sqlite import read

DATA = Path(__file__).parent / "data"
RECORDED = sorted(p for p in DATA.glob("*/nvidia/stats_cuda_gpu_kern_sum.csv")) + sorted(
    DATA.glob("nsys_ranks/nvidia/rank*/stats_cuda_gpu_kern_sum.csv"))
NSYS = shutil.which("nsys")


def export_of(csv: Path) -> Path:
    folder = csv.parent
    if folder.parent.name == "nvidia":  # nsys_ranks/nvidia/rank3/ -> nsys_ranks/rank3.sqlite
        return folder.parent.parent / f"{folder.name}.sqlite"
    exports = sorted(folder.parent.glob("*.sqlite"))
    assert len(exports) == 1, exports
    return exports[0]


COLUMNS = {"count": "Instances", "total_ns": "Total Time (ns)", "min_ns": "Min (ns)", "max_ns": "Max (ns)",
           "median_ns": "Med (ns)"}
ROUNDED = {"avg_ns": "Avg (ns)", "stddev_ns": "StdDev (ns)"}  # printed to 0.1 ns


def compare(ours: pl.DataFrame, theirs: pl.DataFrame, key: str, count: str) -> None:
    theirs = theirs.rename({"Name": key, count: "Instances"})
    joined = ours.join(theirs, on=key, how="full", coalesce=True)
    assert joined.height == ours.height == theirs.height, "the same names on both sides"
    for mine, nvidia in COLUMNS.items():
        assert (joined[mine].cast(pl.Float64) == joined[nvidia].cast(pl.Float64)).all(), mine
    for mine, nvidia in ROUNDED.items():
        value = joined[mine].fill_null(0.0)  # nsys prints 0.0 for the deviation of one instance
        assert ((value - joined[nvidia]).abs() <= 0.05 + 1e-9 * value.abs()).all(), mine
    assert (joined.filter(pl.col("count") == 1)["stddev_ns"].is_null()).all()


@pytest.mark.parametrize("csv", RECORDED, ids=lambda p: str(p.relative_to(DATA).parent))
def test_summaries_match_the_recorded_nsys_stats(csv):
    tl = read(export_of(csv))
    kernels = top_kernels(tl.kernels, top=10_000)
    compare(kernels, pl.read_csv(csv), "demangled_name", "Instances")
    api = top_api(tl.api, top=10_000)
    # nsys stats keeps some version suffixes (cudaGetDeviceProperties_v12000) that the reader drops
    stats = pl.read_csv(csv.with_name("stats_cuda_api_sum.csv")).with_columns(Name=base_api_name(pl.col("Name")))
    compare(api, stats, "name", "Num Calls")


def nsys_stats(report: str, export: Path) -> pl.DataFrame:
    out = subprocess.run([NSYS, "stats", "--report", report, "--format", "csv", "--output", "-", str(export)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return pl.read_csv(io.StringIO(out[out.index("Time (%)"):])).filter(pl.col("Name").is_not_null())  # blank last line


@pytest.mark.nsys
@pytest.mark.parametrize("csv", RECORDED[:4], ids=lambda p: str(p.relative_to(DATA).parent))
def test_summaries_match_nsys_stats_run_here(csv, tmp_path):
    export = shutil.copy(export_of(csv), tmp_path / "export.sqlite")  # nsys may write beside its input
    tl = read(export)
    theirs = nsys_stats("gpukernsum", export)
    single = theirs.group_by("Name").agg(configs=pl.len()).filter(pl.col("configs") == 1)["Name"]
    kernels = top_kernels(tl.kernels, top=10_000).filter(pl.col("demangled_name").is_in(single.implode()))
    assert kernels.height > 0
    compare(kernels, theirs.filter(pl.col("Name").is_in(single.implode())).drop("GridXYZ", "BlockXYZ"),
            "demangled_name", "Instances")
    # nsys 2022 keeps the version suffix of some calls (cudaStreamIsCapturing_v10000), the reader drops all
    api = nsys_stats("cudaapisum", export).with_columns(Name=pl.col("Name").str.replace(r"_v\d+$", ""))
    compare(top_api(tl.api, top=10_000), api, "name", "Num Calls")
