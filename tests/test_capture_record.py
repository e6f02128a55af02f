"""`coach record` on a faked GPU machine: the raw folder it writes, its provenance, and its failures
(a failed check, a crash, a profiler timeout, no GPU): one line each and no half-written folder."""

from __future__ import annotations

import json

import pytest
from test_capture_support import FAKE_PROGRAM, fake_bin, fake_data_root, run_cli, set_mode  # noqa: F401, F811  (fixtures)

from coach import scenarios
from coach.capture import harness
from coach.capture.record import MANIFEST, record, select
from coach.errors import CoachError, ToolError


def _scenario():
    return scenarios.find("99")


def _hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_record_writes_reports_results_and_provenance(fake_bin, fake_data_root, tmp_path):
    lines = []
    out = tmp_path / "raw"
    outcomes = record([_scenario()], out, log=lines.append)
    assert [(o.scenario, o.status) for o in outcomes] == [("scenario-99", "recorded")]
    folder = out / "scenario-99"
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["coach_raw_format"] == 1 and manifest["gpu"] == "h200"
    assert manifest["variants"] == {
        v: {"plain": f"{v}.plain.json", "nsys": f"{v}.sqlite", "nsys_rep": f"{v}.nsys-rep", "ncu": f"{v}.ncu-rep"}
        for v in ("slow", "fixed")}
    assert manifest["commands"]["slow"] == ["python", "prog.py", "--variant", "slow"]
    assert manifest["profile"]["ncu"] == {"set": "full", "kernel": "copy", "launch_count": 1,
                                         "flags": ["--clock-control", "none", "--import-source", "yes"]}
    prov = manifest["provenance"]
    assert prov["gpu"]["name"] == "NVIDIA H200" and prov["cuda_driver_version"] == "13.0"
    assert prov["ncu"] == "Version 2025.3.1.0 (build 36398880) (public-release)"
    assert prov["command"] == ["coach", "record", "scenario-99"]
    for name in ("slow.plain.json", "slow.plain.log", "slow.sqlite", "slow.nsys-rep", "slow.nsys.log",
                 "slow.ncu-rep", "slow.ncu.log", "fixed.plain.json", "fixed.ncu-rep"):
        assert (folder / name).is_file(), name
    slow = json.loads((folder / "slow.plain.json").read_text())
    assert (slow["median_ms"], slow["min_ms"], slow["unit"], slow["ok"], slow["n"]) == (2.1, 2.0, "launch", True, 1024)
    assert [s["step"] for s in manifest["steps"]] == ["plain run", "nsys", "ncu"] * 2
    # one progress line per step, and what the plain run measured
    assert "[1/1 scenario-99] slow: plain run ..." in lines
    assert "[1/1 scenario-99] slow: median 2.1 ms per launch, check ok (relative error 1e-07)" in lines
    assert any(line.startswith("[1/1 scenario-99] fixed: ncu done in ") for line in lines)
    assert _hidden(out) == []


@pytest.mark.parametrize("fail, message", [
    ("check", "scenario-99 slow: result check failed (relative error 0.5 > tolerance 1e-06)"),
    ("crash", "scenario-99 slow failed (exit 1): boom: the input was not what the kernel expected"),
])
def test_failing_program_leaves_no_folder(fake_bin, fake_data_root, tmp_path, fail, message):
    (fake_data_root / "scenarios" / "scenario-99-fake" / "FAIL").write_text(fail)
    out = tmp_path / "raw"
    outcomes = record([_scenario()], out, log=lambda line: None)
    assert [(o.status, o.message) for o in outcomes] == [("failed", message)]
    assert sorted(p.name for p in out.iterdir()) == []


def test_profiler_timeout_leaves_no_folder(fake_bin, fake_data_root, tmp_path):
    set_mode(fake_bin, "ncu", "hang")
    folder = fake_data_root / "scenarios" / "scenario-99-fake"
    # Long enough for the plain runs on a loaded 2-core machine; the hung ncu never ends on its own.
    (folder / "scenario.toml").write_text((folder / "scenario.toml").read_text().replace("timeout_s = 60",
                                                                                         "timeout_s = 6"))
    outcomes = record([_scenario()], tmp_path / "raw", log=lambda line: None)
    assert outcomes[0].status == "failed"
    assert outcomes[0].message.endswith("under ncu timed out after 6 s (raise the limit with --timeout)")
    assert list((tmp_path / "raw").iterdir()) == []


def test_skip_existing_and_time_budget(fake_bin, fake_data_root, tmp_path):
    out = tmp_path / "raw"
    record([_scenario()], out, log=lambda line: None)
    before = (out / "scenario-99" / MANIFEST).stat().st_mtime_ns
    lines = []
    outcomes = record([_scenario()], out, skip_existing=True, log=lines.append)
    assert [o.status for o in outcomes] == ["skipped"]
    assert (out / "scenario-99" / MANIFEST).stat().st_mtime_ns == before
    outcomes = record([_scenario()], tmp_path / "raw2", time_budget_s=0, log=lines.append)
    assert [(o.status, o.message) for o in outcomes] == [("not started", "time budget spent")]
    assert lines[-1] == "time budget of 0 s spent; not started: scenario-99 (run again with --skip-existing)"


def test_timed_only_scenario_captures_the_timed_repetitions(fake_bin, fake_data_root, tmp_path):
    """nsys_timed_only: nsys gets the capture range, and the profiled program the variable that makes
    harness.time_cuda call cudaProfilerStart/Stop; the plain and ncu runs get neither."""
    folder = fake_data_root / "scenarios" / "scenario-99-fake"
    toml = folder / "scenario.toml"
    toml.write_text(toml.read_text().replace("timeout_s = 60", "timeout_s = 60\nnsys_timed_only = true"))
    (folder / "prog.py").write_text("import os\nprint('timed only:', os.environ.get('COACH_NSYS_TIMED_ONLY'))\n"
                                    + FAKE_PROGRAM)
    out = tmp_path / "raw"
    record([_scenario()], out, log=lambda line: None)
    raw = out / "scenario-99"
    flags = "--trace=cuda,nvtx --sample=none --cpuctxsw=none --capture-range=cudaProfilerApi --capture-range-end=stop"
    assert json.loads((raw / MANIFEST).read_text())["profile"]["nsys_flags"] == flags
    nsys_log = (raw / "slow.nsys.log").read_text()
    assert flags in nsys_log and "timed only: 1" in nsys_log
    assert "timed only: None" in (raw / "slow.plain.log").read_text()
    assert "timed only: None" in (raw / "fixed.ncu.log").read_text()


def test_timed_capture_brackets_only_when_asked(monkeypatch):
    torch = pytest.importorskip("torch")
    calls = []
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: calls.append("start"))
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: calls.append("stop"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append("sync"))
    monkeypatch.delenv(harness.TIMED_CAPTURE_ENV, raising=False)
    with harness.timed_capture():
        calls.append("work")
    assert calls == ["work"]
    monkeypatch.setenv(harness.TIMED_CAPTURE_ENV, "1")
    calls.clear()
    with harness.timed_capture():
        calls.append("work")
    assert calls == ["start", "work", "sync", "stop"]


def test_nvtx_ranges_are_skipped_without_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: pytest.fail("no NVTX without CUDA"))
    with harness.nvtx("step 0"):
        pass


def test_no_nsys_no_ncu(fake_bin, fake_data_root, tmp_path):
    (fake_bin / "nsys").unlink()
    (fake_bin / "ncu").unlink()
    out = tmp_path / "raw"
    record([_scenario()], out, nsys=False, ncu=False, log=lambda line: None)
    manifest = json.loads((out / "scenario-99" / MANIFEST).read_text())
    assert manifest["variants"]["slow"] == {"plain": "slow.plain.json"}


def test_missing_profiler_is_found_before_anything_runs(fake_bin, fake_data_root, tmp_path):
    (fake_bin / "ncu").unlink()
    with pytest.raises(ToolError, match="^ncu not found: install Nsight Compute"):
        record([_scenario()], tmp_path / "raw", log=lambda line: None)
    assert not (tmp_path / "raw").exists()


def test_no_gpu(fake_bin, fake_data_root, tmp_path):
    set_mode(fake_bin, "nvidia-smi", "fail")
    with pytest.raises(ToolError, match=r"^no NVIDIA GPU here \(nvidia-smi: NVIDIA-SMI has failed"):
        record([_scenario()], tmp_path / "raw", log=lambda line: None)


def test_cli_record(fake_bin, fake_data_root, tmp_path, capsys):
    (fake_data_root / "scenarios" / "scenario-99-fake" / "FAIL").write_text("check")
    code, out, err = run_cli(["record", "99", "--out", str(tmp_path / "raw")], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == ("coach: error: 1 of 1 scenarios failed: scenario-99: scenario-99 slow: "
                                           "result check failed (relative error 0.5 > tolerance 1e-06)")
    code, _, err = run_cli(["record", "--out", str(tmp_path / "raw")], capsys)
    assert code == 2 and "name the scenarios to record" in err


def test_capture_entry_point(fake_bin, fake_data_root, tmp_path, capsys):
    from coach.capture.__main__ import main

    assert main(["record", "--only", "99", "--out", str(tmp_path / "raw")]) == 0
    assert (tmp_path / "raw" / "scenario-99" / MANIFEST).is_file()
    assert main(["record", "07", "--out", str(tmp_path / "raw")]) == 2
    assert capsys.readouterr().err.strip().endswith("unknown scenario 'scenario-07'; known scenarios: scenario-99")


def test_select():
    with pytest.raises(CoachError, match="--all records every scenario"):
        select(["01"], all_=True, only=None)
    assert [s.id for s in select(["15", "scenario-01"], all_=False, only="1,15")] == ["scenario-01", "scenario-15"]
    assert [s.id for s in select([], all_=True, only=None)] == [s.id for s in scenarios.all_scenarios()]


def test_result_line_round_trip(capsys):
    harness.emit(variant="slow", times_ms=[3.0, 1.0, 2.0], unit="step", rel_error=1e-9, tolerance=1e-6, seed=7,
                 note="x")
    line = capsys.readouterr().out
    assert harness.parse_result("noise\n" + line + "more noise\n") == {
        "coach_result": 1, "variant": "slow", "ok": True, "rel_error": 1e-9, "tolerance": 1e-6, "unit": "step",
        "median_ms": 2.0, "min_ms": 1.0, "times_ms": [3.0, 1.0, 2.0], "seed": 7, "note": "x"}
    with pytest.raises(SystemExit) as exc:
        harness.emit(variant="fixed", times_ms=[], unit="step", rel_error=float("nan"), tolerance=1e-6, seed=1)
    assert exc.value.code == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False
    assert harness.parse_result('{"variant": "slow"}\n') is None


def test_record_import_run_end_to_end(fake_bin, fake_data_root, tmp_path, capsys, strided_ncu_rep):
    """Fake profilers hand out the real H200 report of the strided copy (tests/data/ncu_strided_copy)
    for both variants: recording, import through the real .ncu-rep reader, and coach run."""
    pytest.importorskip("coach.ingest.ncu_rep")
    from test_capture_support import hand_out

    from coach import recordings

    hand_out(fake_bin, "ncu", strided_ncu_rep)
    raw = tmp_path / "raw"
    assert [o.status for o in record([_scenario()], raw, nsys=False, log=lambda line: None)] == ["recorded"]
    done = recordings.import_raw(raw, fake_data_root / "traces")
    results = done[0].results
    assert results["speedup"] == pytest.approx(2.1 / 1.0)
    sectors = results["evidence"][0]
    # both kernels of the report match 'copy'; the same report for both variants cannot move
    assert sectors["slow"] == sectors["fixed"] and sectors["slow"] > 4
    assert sectors["moved_as_expected"] is False
    code, out, err = run_cli(["run", "99", "--no-interactive"], capsys)
    assert code == 0, err
    assert "It takes 2.1 ms." in out and "speed-up 2.10x" in out
