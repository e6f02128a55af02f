"""`coach profile`: the command under nsys / ncu (fakes on PATH), and what happens when it fails,
when a tool is missing, and when it times out: one line, a non-zero exit, no output folder left."""

from __future__ import annotations

import json
import sys

import pytest
from test_capture_support import fake_bin, flat, hand_out, run_cli, set_mode  # noqa: F401, F811  (fixtures)

from coach.capture.profile import NcuOptions, profile, resolve_command
from coach.errors import CoachError


@pytest.fixture
def app(tmp_path):
    """A 'user program': prints a line, and fails with a message when given 'fail'."""
    prog = tmp_path / "work" / "train.py"
    prog.parent.mkdir()
    prog.write_text("import sys\nprint('training')\nif 'fail' in sys.argv:\n"
                    "    sys.exit('RuntimeError: CUDA error: an illegal memory access was encountered')\n")
    return prog


def _leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(".") or p.name == "out")


def test_profile_writes_reports_logs_and_provenance(fake_bin, app, tmp_path, monkeypatch):
    monkeypatch.chdir(app.parent)
    out = tmp_path / "out"
    files = profile(["python", "train.py", "--steps", "3"], out, nsys=True, ncu=NcuOptions("full", "softmax", 2),
                    timeout=60)
    names = sorted(f.name for f in files)
    assert names == ["provenance.json", "report.ncu-rep", "report.ncu.log", "report.nsys-rep", "report.nsys.log",
                     "report.sqlite"]
    assert (out / "report.nsys-rep").read_bytes().startswith(b"NVIDIA Tegra Profiler Report")
    assert (out / "report.ncu-rep").read_bytes().startswith(b"NVR\x00")
    # the program ran from a scratch folder, with its script made absolute, and printed its line
    nsys_log = (out / "report.nsys.log").read_text()
    assert f"{app}" in nsys_log and "training" in nsys_log and "--trace=cuda,nvtx --sample=none --cpuctxsw=none" in nsys_log
    ncu_log = (out / "report.ncu.log").read_text()
    assert "--clock-control none --import-source yes --set full -k regex:softmax -c 2" in ncu_log
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["gpu"]["name"] == "NVIDIA H200" and prov["gpu"]["driver"] == "580.95.05"
    assert prov["cuda_driver_version"] == "13.0"
    assert prov["nsys"] == "NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0"
    assert prov["profile"]["ncu"] == {"set": "full", "kernel": "softmax", "launch_count": 2}
    assert _leftovers(tmp_path) == ["out"]


def test_profiled_program_gets_a_minimal_environment(fake_bin, tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    prog = tmp_path / "env.py"
    prog.write_text("import os, json\nprint(json.dumps({'cwd': os.getcwd(), 'env': sorted(os.environ)}))\n")
    out = tmp_path / "out"
    profile([sys.executable, str(prog)], out, nsys=True, timeout=60)
    line = next(ln for ln in (out / "report.nsys.log").read_text().splitlines() if ln.startswith('{"cwd"'))
    seen = json.loads(line)
    assert "SECRET_TOKEN" not in seen["env"] and "CUDA_VISIBLE_DEVICES" in seen["env"]
    assert seen["cwd"] != str(tmp_path) and "coach-profile-" in seen["cwd"]


def test_failing_command_under_nsys(fake_bin, app, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(app.parent)
    code, out, err = run_cli(["profile", "--nsys", "--out", str(tmp_path / "out"), "--", "python", "train.py", "fail"],
                             capsys)
    last = err.strip().splitlines()[-1]
    assert code == 3
    assert last.startswith("coach: error: `python ")
    assert "under nsys failed (exit 1): RuntimeError: CUDA error: an illegal memory access was encountered" in last
    assert "  | RuntimeError" in err  # the tool's own words come first
    assert _leftovers(tmp_path) == []


def test_failing_command_under_ncu(fake_bin, app, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(app.parent)
    code, _, err = run_cli(["profile", "--ncu", "full", "--out", str(tmp_path / "out"), "--", "python", "train.py",
                            "fail"], capsys)
    assert code == 3
    assert err.strip().splitlines()[-1].endswith("failed (exit 1): ==ERROR== The application returned an error code (1).")
    assert _leftovers(tmp_path) == []


def test_missing_nsys(fake_bin, app, tmp_path, capsys):
    (fake_bin / "nsys").unlink()
    code, _, err = run_cli(["profile", "--out", str(tmp_path / "out"), "--", sys.executable, str(app)], capsys)
    assert code == 3
    assert err.strip() == ("coach: error: nsys not found: install Nsight Systems (or source scripts/nsys-env.sh where "
                           "Nsight Compute bundles it), or set COACH_NSYS to its nsys")
    assert _leftovers(tmp_path) == []


def test_coach_nsys_pointing_nowhere(fake_bin, app, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COACH_NSYS", str(tmp_path / "nsight" / "nsys"))
    code, _, err = run_cli(["profile", "--out", str(tmp_path / "out"), "--", sys.executable, str(app)], capsys)
    assert code == 3
    assert err.strip() == f"coach: error: COACH_NSYS={tmp_path / 'nsight' / 'nsys'} is not an executable file"


def test_coach_ncu_override_is_used(fake_bin, app, tmp_path, monkeypatch):
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (fake_bin / "ncu").rename(moved / "ncu")
    monkeypatch.setenv("COACH_NCU", str(moved / "ncu"))
    files = profile([sys.executable, str(app)], tmp_path / "out", nsys=False, ncu=NcuOptions(), timeout=60)
    assert [f.name for f in files] == ["report.ncu-rep", "report.ncu.log", "provenance.json"]


def test_timeout_kills_the_tool_and_leaves_nothing(fake_bin, app, tmp_path, capsys):
    set_mode(fake_bin, "nsys", "hang")
    code, _, err = run_cli(["profile", "--nsys", "--timeout", "1", "--out", str(tmp_path / "out"), "--",
                            sys.executable, str(app)], capsys)
    assert code == 3
    assert err.strip().endswith("under nsys timed out after 1 s (raise the limit with --timeout)")
    assert _leftovers(tmp_path) == []


def test_nsys_that_cannot_import_its_capture(fake_bin, app, tmp_path, capsys):
    set_mode(fake_bin, "nsys", "no-import")
    code, _, err = run_cli(["profile", "--out", str(tmp_path / "out"), "--", sys.executable, str(app)], capsys)
    assert code == 3
    assert err.strip().splitlines()[-1] == ("coach: error: nsys wrote no report: Importer error status: The importer "
                                           "binary and its dependencies were not found. (run coach doctor)")
    assert _leftovers(tmp_path) == []


def test_ncu_profiling_no_kernel(fake_bin, app, tmp_path, capsys):
    set_mode(fake_bin, "ncu", "none")
    code, _, err = run_cli(["profile", "--ncu", "basic", "--kernel", "gemm", "--out", str(tmp_path / "out"), "--",
                            sys.executable, str(app)], capsys)
    assert code == 3
    assert err.strip().splitlines()[-1] == ("coach: error: ncu profiled no kernels matching 'gemm': check --kernel "
                                           "against the kernel names")
    assert _leftovers(tmp_path) == []


def test_existing_output_folder_is_not_overwritten(fake_bin, app, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run_cli(["profile", "--out", str(out), "--", sys.executable, str(app)], capsys)
    assert code == 2 and "already exists and is not empty" in err
    assert (out / "keep.txt").read_text() == "mine"


def test_kernel_filter_needs_ncu(fake_bin, app, tmp_path, capsys):
    code, _, err = run_cli(["profile", "--kernel", "gemm", "--out", str(tmp_path / "out"), "--", sys.executable,
                            str(app)], capsys)
    assert code != 0 and "add --ncu SET" in flat(err)


def test_resolve_command(tmp_path, app):
    with pytest.raises(CoachError, match="no command given"):
        resolve_command([])
    with pytest.raises(CoachError, match="not-a-program-anywhere: not found on PATH"):
        resolve_command(["not-a-program-anywhere"])
    argv = resolve_command([sys.executable, "train.py", "--data", "missing.bin", "-v"], cwd=app.parent)
    assert argv == [sys.executable, str(app), "--data", "missing.bin", "-v"]


def test_cli_reads_the_reports_when_readers_exist(fake_bin, app, tmp_path, capsys, strided_ncu_rep):
    pytest.importorskip("coach.ingest.ncu_rep")
    hand_out(fake_bin, "ncu", strided_ncu_rep)
    code, out, err = run_cli(["profile", "--ncu", "full", "--json", "--out", str(tmp_path / "out"), "--",
                              sys.executable, str(app)], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["analyses"][0]["kind"] == "kernel-profile"
    assert data["analyses"][0]["tables"]["launches"] == 2


def test_show_analysis_prints_an_upper_bound_saving_without_a_share(capsys):
    """A finding whose saving the model marks an upper bound only prints no share of the time as a
    gain; one with an estimate prints its share."""
    from coach.analyze.findings import UPPER_BOUND
    from coach.cli.profile import show_analysis

    base = {"rule_id": "r", "title": "T", "category": "latency", "scope": "k", "message": "m"}
    show_analysis({"findings": [{**base, "estimated_gain_pct": 88.0, "details": {UPPER_BOUND: "why"}},
                                {**base, "estimated_gain_pct": 40.0, "details": {}}]})
    out = capsys.readouterr().out
    assert "gain not estimated: an upper bound only" in out and "88%" not in out
    assert "up to 40% of its time" in out
