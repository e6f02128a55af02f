"""Running ``nsys recipe`` through subprocess, with stand-in ``nsys`` scripts for each way it can go
(works, missing, too old, recipe absent, fails, lacks a Python package, hangs, finds no data), and
with the real nsys 2022.4 where it is installed. No case may leave its temporary folder behind, or
write anything beside the user's reports."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from coach.cli import main as coach_main
from coach.errors import CoachError, InputError, ToolError
from coach.ingest.recipes import recipe_tool, report_files, run_recipe, run_recipes

NEW_VERSION = "NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0"
OLD_VERSION = "NVIDIA Nsight Systems version 2022.4.2.1-df9881f"
REQUIREMENTS = "/opt/nsys/target-linux-x64/python/packages/nsys_recipe/requirements/common.txt"
HELP = f"""
usage: nsys recipe [<args>] <recipe name> [<recipe args>]

The following built-in recipes are available:

  cuda_api_sum -- CUDA API Summary
  cuda_api_sync -- CUDA Synchronization APIs
  cuda_gpu_kern_sum -- CUDA GPU Kernel Summary
  cuda_gpu_mem_time_sum -- CUDA GPU MemOps Summary (by Time)
  gpu_gaps -- GPU Gaps
  nvtx_gpu_proj_trace -- NVTX GPU Projection Trace

Note that running 'nsys recipe <recipe name>' requires extra Python packages:
  - List of required Python packages: '{REQUIREMENTS}'
"""


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    """Temporary files go to a folder of this test's own, checked empty afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("COACH_NSYS", raising=False)
    yield folder
    assert list(folder.iterdir()) == []


@pytest.fixture
def report(tmp_path, softmax_nsys_rep):
    """The recorded report, alone in a folder of its own (to see that nothing is written beside it)."""
    folder = tmp_path / "reports"
    folder.mkdir()
    shutil.copyfile(softmax_nsys_rep, folder / softmax_nsys_rep.name)
    return folder / softmax_nsys_rep.name


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch, data_dir, softmax_nsys_sqlite):
    """Install a stand-in ``nsys`` (as $COACH_NSYS) whose ``recipe NAME`` runs the given Python
    snippet with ``name``, ``inputs``, ``out`` and ``NVIDIA`` (the recorded outputs) defined, and
    whose ``export`` hands out the recorded SQLite export. Each call's arguments are appended to
    ``calls.jsonl``. Returns that log's path."""
    calls = tmp_path / "calls.jsonl"

    def _install(body: str = "", help_text: str = HELP, help_rc: int = 0, version: str = NEW_VERSION) -> Path:
        script = tmp_path / "bin" / "nsys"
        script.parent.mkdir(exist_ok=True)
        script.write_text(f"""#!{sys.executable}
import json, pathlib, shutil, sys, time
argv = sys.argv[1:]
with open({str(calls)!r}, "a") as log:
    log.write(json.dumps(argv) + "\\n")
if argv == ["--version"]:
    print({version!r}); sys.exit(0)
if argv[:2] == ["recipe", "--help"]:
    print({help_text!r}); sys.exit({help_rc})
if argv[:1] == ["export"]:
    shutil.copyfile({str(softmax_nsys_sqlite)!r}, argv[argv.index("--output") + 1]); sys.exit(0)
name = argv[1]
inputs = argv[argv.index("--input") + 1: argv.index("--output")]
out = pathlib.Path(argv[argv.index("--output") + 1])
NVIDIA = pathlib.Path({str(data_dir / "nsys_torch_softmax" / "nvidia")!r})
for i in inputs:  # a recipe exports each report beside its input
    pathlib.Path(i).with_suffix(".sqlite").write_text("export")
{body}
""")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("COACH_NSYS", str(script))
        return calls

    return _install


COPY_RECORDED = 'shutil.copytree(NVIDIA / f"recipe_{name}", out)'


def _recipe_calls(calls: Path) -> list[list[str]]:
    return [c for c in map(json.loads, calls.read_text().splitlines()) if c[:1] == ["recipe"] and c[1:2] != ["--help"]]


def test_runs_the_recipe_and_reads_its_output(fake_nsys, report):
    calls = fake_nsys(COPY_RECORDED)
    out = run_recipe("cuda_gpu_kern_sum", [report], mode="dask-futures", args=["--filter-time", "0/1"])
    assert out.reports == ("torch_softmax_nvtx",) and out.table.height == 4
    assert int(out.table["total_ns"].sum()) == 171136 + 41280 + 26784 + 194688
    [argv] = _recipe_calls(calls)
    linked = Path(argv[argv.index("--input") + 1])
    assert argv[:2] == ["recipe", "cuda_gpu_kern_sum"] and linked.name == report.name and linked != report
    assert argv[-4:] == ["--mode", "dask-futures", "--filter-time", "0/1"]
    assert sorted(p.name for p in report.parent.iterdir()) == [report.name]  # the export went to the temporary folder


def test_several_recipes_share_one_folder(fake_nsys, report):
    calls = fake_nsys(COPY_RECORDED)
    outs = run_recipes(["cuda_api_sum", "cuda_api_sync"], [report.parent])  # a folder of reports
    assert outs["cuda_api_sum"].table.height == 13 and outs["cuda_api_sync"].table.height == 6
    inputs = {c[c.index("--input") + 1] for c in _recipe_calls(calls)}
    assert len(inputs) == 1  # the same linked report, so the second recipe reuses the first one's export


def test_no_data_is_an_empty_result(fake_nsys, report):
    fake_nsys('print("INFO: x.nsys-rep: Report was successfully processed, but no data was found.")\n'
              'print("INFO: No output generated.")')
    out = run_recipe("gpu_gaps", [report])
    assert out.table.is_empty() and "found no data" in out.note


def test_missing_nsys_says_what_is_missing(report, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("COACH_NCU_ROOT", str(tmp_path / "no-ncu"))
    with pytest.raises(ToolError, match=r"nsys recipes need Nsight Systems, which is not installed here: .*without it"):
        run_recipe("cuda_gpu_kern_sum", [report])


def test_too_old_nsys(fake_nsys, report):
    fake_nsys(help_text="Unknown command: recipe", help_rc=1, version=OLD_VERSION)
    with pytest.raises(ToolError, match=r"nsys 2022.4.2.1 \(.*\) has no recipe command: recipes need a newer Nsight"):
        run_recipe("cuda_gpu_kern_sum", [report])


def test_recipe_this_nsys_lacks(fake_nsys, report):
    fake_nsys(COPY_RECORDED)
    with pytest.raises(ToolError, match=r"nsys 2025.3.1.90 \(.*\) has no recipe cuda_memcpy_async"):
        run_recipe("cuda_memcpy_async", [report])


def test_missing_python_package_names_the_requirements(fake_nsys, report):
    fake_nsys('print("Traceback (most recent call last):", file=sys.stderr)\n'
              'print("ModuleNotFoundError: No module named \'pandas\'", file=sys.stderr)\nsys.exit(1)')
    with pytest.raises(ToolError, match=rf"needs Python packages its Python lacks \(no module 'pandas'\): "
                                        rf"python3 -m pip install -r {REQUIREMENTS}$"):
        run_recipe("cuda_api_sum", [report])


def test_dask_futures_without_dask(fake_nsys, report):
    fake_nsys('print("ModuleNotFoundError: No module named \'distributed\'", file=sys.stderr)\nsys.exit(1)')
    with pytest.raises(ToolError, match=r"--mode dask-futures needs Dask in the recipes' Python \(no module "
                                        r"'distributed'\): python3 -m pip install 'dask\[distributed\]', or leave out"):
        run_recipe("cuda_api_sum", [report], mode="dask-futures")


def test_dask_futures_without_dask_as_recorded(fake_nsys, report, data_dir):
    """What nsys 2025.3.1 printed on the H200 that recorded the 8 ranks, which had no Dask: the import
    error, then a crash in its own error handling (tests/data/nsys_ranks/nvidia/all-dask-futures)."""
    log = data_dir / "nsys_ranks" / "nvidia" / "all-dask-futures" / "recipe_cuda_gpu_kern_sum.log"
    if not log.is_file():
        pytest.skip("no dask-futures run recorded")
    assert "AttributeError" in log.read_text()
    fake_nsys(f"sys.stderr.write(pathlib.Path({str(log)!r}).read_text())\nsys.exit(1)")
    with pytest.raises(ToolError, match=r"--mode dask-futures needs Dask in the recipes' Python \(no module "
                                        r"'distributed'\)"):
        run_recipe("cuda_gpu_kern_sum", [report], mode="dask-futures")


def test_failing_recipe_is_one_line(fake_nsys, report):
    fake_nsys('print("Generated:", file=sys.stderr)\n'
              'print("ValueError: the report has no CUDA data", file=sys.stderr)\nsys.exit(1)')
    with pytest.raises(ToolError) as err:
        run_recipe("cuda_api_sum", [report])
    assert str(err.value) == "nsys recipe cuda_api_sum failed (exit 1): ValueError: the report has no CUDA data"


def test_recipe_that_writes_nothing(fake_nsys, report):
    fake_nsys('print("something unexpected")')
    with pytest.raises(ToolError, match="wrote no output: something unexpected"):
        run_recipe("cuda_api_sum", [report])


def test_timeout_stops_the_recipe(fake_nsys, report):
    fake_nsys("out.mkdir()\ntime.sleep(60)")
    with pytest.raises(ToolError, match=r"nsys recipe cuda_api_sum timed out after 1 s \(raise the limit with"):
        run_recipe("cuda_api_sum", [report], timeout=1)


def test_inputs_must_be_reports(softmax_nsys_sqlite, tmp_path, fake_nsys):
    fake_nsys(COPY_RECORDED)
    with pytest.raises(InputError, match="is nsys-sqlite, but nsys recipes read .nsys-rep reports"):
        run_recipe("cuda_api_sum", [softmax_nsys_sqlite])
    with pytest.raises(InputError, match="holds no .nsys-rep reports"):
        report_files([tmp_path / "tmp"])
    with pytest.raises(CoachError, match="--mode must be one of none, concurrent, dask-futures"):
        run_recipe("cuda_api_sum", [softmax_nsys_sqlite], mode="threads")


def test_two_reports_of_one_name(fake_nsys, report, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    shutil.copyfile(report, other / report.name)
    with pytest.raises(CoachError, match="two reports share the name torch_softmax_nvtx.nsys-rep"):
        run_recipe("cuda_api_sum", [report, other / report.name])


@pytest.mark.nsys(path="/usr/bin/nsys")  # Debian's nsight-systems package
def test_the_real_nsys_2022_has_no_recipes(monkeypatch):
    monkeypatch.setenv("COACH_NSYS", "/usr/bin/nsys")
    if "2022." not in os.popen("/usr/bin/nsys --version").read():
        pytest.skip("the system nsys is not 2022.x")
    with pytest.raises(ToolError, match=r"nsys 2022\.4\.\S+ \(/usr/bin/nsys\) has no recipe command"):
        recipe_tool()


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def test_cli_shows_the_table(fake_nsys, report, capsys):
    fake_nsys(COPY_RECORDED)
    coach_main(["recipe", "cuda_gpu_kern_sum", str(report)])
    out = capsys.readouterr().out
    assert "nsys recipe cuda_gpu_kern_sum" in out and "cunn_SoftMaxForwardReg" in out and "171,136" in out


def test_cli_check_sets_coach_beside_nvidia(fake_nsys, report, capsys):
    """--check reads each report with coach too (the stand-in nsys exports the recorded SQLite)."""
    fake_nsys(COPY_RECORDED)
    coach_main(["recipe", "cuda_api_sync", str(report), "--check", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["table"]) == 6 and len(doc["checks"]) == 6 and all(c["agrees"] for c in doc["checks"])
    coach_main(["recipe", "cuda_gpu_kern_sum", str(report), "--check"])
    assert "coach and NVIDIA agree on 24 of 24 values (4 items) of cuda_gpu_kern_sum." in capsys.readouterr().out


def test_cli_without_nsys_says_what_is_missing(report, softmax_nsys_sqlite, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("COACH_NCU_ROOT", str(tmp_path / "no-ncu"))
    with pytest.raises(SystemExit) as exit_:
        coach_main(["recipe", "cuda_gpu_kern_sum", str(report)])
    err = capsys.readouterr().err
    assert exit_.value.code == 3 and err.count("\n") == 1
    assert err.startswith("coach: error: nsys recipes need Nsight Systems, which is not installed here")
    coach_main(["load", str(softmax_nsys_sqlite), "--json"])  # everything else still works
    assert json.loads(capsys.readouterr().out)["kind"] == "timeline"
    coach_main(["diagnose", str(softmax_nsys_sqlite), "--json"])
    assert "pageable-memcpy" in capsys.readouterr().out


def test_cli_list_works_without_nsys(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("COACH_NCU_ROOT", str(tmp_path / "no-ncu"))
    coach_main(["recipe", "--list", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert {r["recipe"] for r in doc["recipes"]} >= {"cuda_gpu_kern_sum", "gpu_gaps", "nvtx_gpu_proj_trace"}
    assert all(r["in_this_nsys"] is None for r in doc["recipes"]) and "not installed" in doc["nsys_problem"]


def test_cli_list_with_nsys(fake_nsys, capsys):
    fake_nsys()
    coach_main(["recipe", "--list", "--json"])
    here = {r["recipe"]: r["in_this_nsys"] for r in json.loads(capsys.readouterr().out)["recipes"]}
    assert here["gpu_gaps"] is True and here["cuda_memcpy_async"] is False


def test_cli_needs_a_recipe_and_a_report(capsys):
    with pytest.raises(SystemExit) as exit_:
        coach_main(["recipe", "cuda_gpu_kern_sum"])
    assert exit_.value.code == 2 and "give a recipe and at least one report" in capsys.readouterr().err


SYNTHETIC_RANKS = '''
import polars as pl
src = NVIDIA / f"recipe_{name}"
if not src.is_dir() or name == "nvtx_gpu_proj_trace":  # these synthetic ranks have no NVTX steps
    print("INFO: Report was successfully processed, but no data was found.")
    sys.exit(0)
out.mkdir()
stems = sorted(pathlib.Path(i).name.split(".")[0] for i in inputs)
pl.DataFrame({"File": stems}).write_parquet(out / "files.parquet")
for f in src.glob("*.parquet"):
    t = pl.read_parquet(f)
    if "Rank" in t.columns:
        ranks = [t.with_columns(Rank=pl.lit(r, t.schema["Rank"])) for r in range(len(stems))]
        if name == "cuda_gpu_kern_sum":  # the last rank's kernels take 1000x as long
            ranks[-1] = ranks[-1].with_columns(Sum=pl.col("Sum") * 1000)
        pl.concat(ranks).write_parquet(out / f.name)
'''


def test_cli_side_by_side_from_recipes(fake_nsys, report, capsys):
    """Synthetic: the stand-in nsys repeats the recorded single-report outputs for each of three
    reports, the last one with 1000x the kernel time, and finds no NVTX ranges (so no steps: the
    reports are compared by span)."""
    calls = fake_nsys(SYNTHETIC_RANKS)
    for r in range(3):
        shutil.copyfile(report, report.parent / f"rank{r}.nsys-rep")
    report.unlink()
    coach_main(["recipe", "--side-by-side", str(report.parent), "--mode", "dask-futures", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert [r["report"] for r in doc["reports"]] == ["rank0", "rank1", "rank2"]
    assert doc["slowest"] == "rank2" and doc["measured_by"] == "span_ns"
    assert [r["metric"] for r in doc["reasons"]] == ["kernel_ns"]
    assert "rank0 has 0 top-level NVTX ranges" in doc["verdict"]
    made = _recipe_calls(calls)
    assert sorted(c[1] for c in made) == ["cuda_api_sync", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "gpu_gaps",
                                          "nvtx_gpu_proj_trace"]
    assert all(c[c.index("--mode") + 1] == "dask-futures" for c in made)
    assert next(c for c in made if c[1] == "gpu_gaps")[-2:] == ["--gap", "0"]
