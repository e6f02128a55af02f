"""Recording the correctness scenarios on a faked GPU machine (coach.capture.sanitize): the raw
folder, its commands and provenance, the tool's refusals and hangs as outcomes, a failed build as
a failure with nothing written; then the import into traces/ and ``coach run`` from it.

The fakes (tests/sanitizer_fakes.py) print made-up output: these tests check how the recording is
taken, kept and read back, never what a kernel does.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import sanitizer_fakes
from test_capture_support import fake_bin, flat, run_cli, set_mode  # noqa: F401  (fixture)

from coach import correctness, recordings
from coach.capture import sanitize
from coach.capture.record import MANIFEST
from coach.errors import CoachError, ToolError


@pytest.fixture
def fakes(fake_bin):  # noqa: F811
    sanitizer_fakes.install(fake_bin)
    return fake_bin


def _scenario(ident: str, fakes):
    scenario = correctness.find(ident)
    sanitizer_fakes.set_line(fakes, f"{scenario.source.name}:{scenario.planted_lines[0]}")
    return scenario


def test_record_writes_every_run_with_its_command_and_provenance(fakes, tmp_path):
    lines = []
    scenario = _scenario("21", fakes)
    outcomes = sanitize.record([scenario], tmp_path / "raw", log=lines.append)
    assert [(o.scenario, o.status) for o in outcomes] == [("scenario-21", "recorded")]
    folder = tmp_path / "raw" / "scenario-21"
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["kind"] == "correctness" and manifest["gpu"] == "h200" and manifest["coach_raw_format"] == 1
    prov = manifest["provenance"]
    assert prov["compute_sanitizer"] == "Version 2025.3.1.0 (build 36398880) (public-release)"
    assert prov["gpu"]["name"] == "NVIDIA H200" and prov["nvcc"] == "Cuda compilation tools, release 13.0, V13.0.88"
    build = manifest["build"]["command"]
    assert build[1:] == ["-arch=sm_90", "-std=c++17", "-O3", "-lineinfo", "-Xcompiler", "-rdynamic", "-o", "transpose",
                         str(scenario.source)]
    runs = manifest["runs"]
    assert list(runs) == ["buggy", "fixed", "buggy-racecheck", "fixed-racecheck"]
    assert runs["buggy"]["command"] == ["./transpose", "--variant", "buggy"]
    assert runs["buggy-racecheck"]["command"][1:] == [
        "--tool", "racecheck", "--log-file", "buggy-racecheck.txt", "--xml", "--save", "buggy-racecheck.xml",
        "./transpose", "--variant", "buggy", "--repeat", "1"]
    # a failing check is an outcome: recorded with its result line and exit code
    assert runs["buggy"]["exit"] == 1 and runs["buggy"]["result"]["ok"] is False
    assert runs["fixed"]["exit"] == 0 and runs["fixed"]["result"]["ok"] is True
    assert runs["buggy-racecheck"]["files"] == {"report": "buggy-racecheck.txt", "xml": "buggy-racecheck.xml",
                                                "stdout": "buggy-racecheck.stdout.txt",
                                                "stderr": "buggy-racecheck.stderr.txt"}
    assert "RACECHECK SUMMARY: 1 hazard" in (folder / "buggy-racecheck.txt").read_text()
    assert (folder / "build.log").read_text().startswith("$ ")
    assert "[1/1 scenario-21] buggy: exit 1, check FAILED in " in " ".join(lines)
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == ["scenario-21"]  # nothing half-written beside it


def test_extra_runs_keep_their_environment(fakes, tmp_path):
    scenario = _scenario("25", fakes)
    sanitize.record([scenario], tmp_path / "raw", log=lambda line: None)
    runs = json.loads((tmp_path / "raw" / "scenario-25" / MANIFEST).read_text())["runs"]
    blocking = runs["buggy-launch-blocking"]
    assert blocking["env"] == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert blocking["command"] == ["./embed", "--variant", "buggy", "--check-launches"]
    stderr = (tmp_path / "raw" / "scenario-25" / "buggy-launch-blocking.stderr.txt").read_text()
    assert "in the launch of embed" in stderr


def test_a_tool_that_refuses_xml_is_run_again_without_it(fakes, tmp_path):
    set_mode(fakes, "compute-sanitizer", "refuse-xml")
    sanitize.record([_scenario("22", fakes)], tmp_path / "raw", log=lambda line: None)
    run = json.loads((tmp_path / "raw" / "scenario-22" / MANIFEST).read_text())["runs"]["buggy-memcheck"]
    assert "--xml" not in run["command"] and run["files"]["report"] == "buggy-memcheck.txt"
    assert "xml" not in run["files"] and run["xml_note"].startswith("no report with --xml --save: ")
    assert "unrecognised option '--xml'" in run["xml_note"]


def test_a_hang_is_recorded_as_an_outcome(fakes, tmp_path):
    set_mode(fakes, "compute-sanitizer", "hang")
    scenario = dataclasses.replace(_scenario("24", fakes), timeout_s=1)
    outcomes = sanitize.record([scenario], tmp_path / "raw", log=lambda line: None)
    assert outcomes[0].status == "recorded"
    run = json.loads((tmp_path / "raw" / "scenario-24" / MANIFEST).read_text())["runs"]["buggy-synccheck"]
    assert run["timed_out"] is True and run["exit"] is None and "report" not in run["files"]


def test_a_program_that_does_not_build_leaves_nothing(fakes, tmp_path):
    set_mode(fakes, "nvcc", "fail")
    outcomes = sanitize.record([_scenario("21", fakes)], tmp_path / "raw", log=lambda line: None)
    assert outcomes[0].status == "failed"
    assert outcomes[0].message.startswith("scenario-21: transpose.cu did not build (exit 1): ")
    assert "identifier" in outcomes[0].message
    assert list((tmp_path / "raw").iterdir()) == []


def test_missing_tools_and_gpu_are_one_line_errors(fakes, tmp_path, monkeypatch):
    (fakes / "compute-sanitizer").unlink()
    monkeypatch.setattr(sanitize, "SANITIZER_DIRS", ())
    with pytest.raises(ToolError, match="compute-sanitizer not found: it comes with the CUDA toolkit"):
        sanitize.record([correctness.find("21")], tmp_path / "raw")
    monkeypatch.setenv(sanitize.SANITIZER_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(ToolError, match="COACH_COMPUTE_SANITIZER=.* is not an executable file"):
        sanitize.record([correctness.find("21")], tmp_path / "raw")


def test_select_names_the_scenarios():
    assert [s.id for s in sanitize.select([], all_=True)] == [s.id for s in correctness.all_scenarios()]
    with pytest.raises(CoachError, match="name the correctness scenarios"):
        sanitize.select([], all_=False)
    with pytest.raises(CoachError, match="unknown correctness scenario 'scenario-07'"):
        sanitize.select(["7"], all_=False)


def test_import_then_run_walks_through_the_recording(fakes, tmp_path, capsys, monkeypatch):
    scenario = _scenario("22", fakes)
    sanitize.record([scenario], tmp_path / "raw", log=lambda line: None)
    done = recordings.import_raw(tmp_path / "raw", tmp_path / "traces")
    folder = tmp_path / "traces" / "h200" / "scenario-22"
    assert [d.scenario for d in done] == ["scenario-22"] and done[0].folder == folder
    results = json.loads((folder / "results.json").read_text())
    assert results["kind"] == "correctness" and results["fixed_clean"] is True and results["fixed_check_ok"] is True
    d = results["diagnosis"]
    assert (d["first_rule"], d["lines"], d["names_planted_line"]) == ("out-of-bounds-access", scenario.planted_lines,
                                                                     True)
    assert results["values"]["buggy_memcheck_errors"] == 1 and results["values"]["bug_line"] == scenario.planted_lines[0]
    for name in ("buggy-memcheck.txt", "buggy-memcheck.xml", "buggy-memcheck/coach-profile.json",
                 "fixed-memcheck/records.parquet"):
        assert (folder / name).is_file(), name
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run_cli(["run", "22", "--no-interactive", "--traces", str(tmp_path / "traces")], capsys)
    assert code == 0, err
    text = flat(out)
    assert "scenario-22: An image shift whose bounds check" in text
    assert "buggy: exit 1, check FAILED" in text
    assert f"Out-of-bounds global write at shift.cu:{scenario.planted_lines[0]}" in text
    assert "expected first finding: out-of-bounds-access: matches" in text
    assert f"the report names shift.cu line(s) {scenario.planted_lines[0]}" in text and "names the planted line" in text
    assert "fixed: clean under memcheck, and its check passes" in text
    # the import refuses a manifest that lacks one of the scenario's runs
    manifest = tmp_path / "raw" / "scenario-22" / MANIFEST
    data = json.loads(manifest.read_text())
    del data["runs"]["fixed-memcheck"]
    manifest.write_text(json.dumps(data))
    with pytest.raises(CoachError, match="records no 'fixed-memcheck' run"):
        recordings.import_raw(tmp_path / "raw", tmp_path / "traces")


def test_run_of_an_unrecorded_scenario_says_so(capsys, tmp_path):
    code, out, err = run_cli(["run", "23", "--no-interactive", "--traces", str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert flat(err) == ("coach: error: scenario-23 is not recorded yet: there is no " + tmp_path.name
                         + "/<gpu>/scenario-23/. Record it on a GPU machine with `scripts/record-sanitizer.sh RAW`, "
                         "then `coach record --import RAW`")


def test_the_recording_script_runs_with_the_standard_library_alone(fakes, tmp_path):
    """scripts/record-sanitizer.sh with the system's python3 (no polars, no coach install) and the fakes
    first on PATH: every scenario recorded, the folder packed."""
    import shutil
    import subprocess
    from pathlib import Path

    python3 = shutil.which("python3", path="/usr/bin:/bin")
    if python3 is None:
        pytest.skip("no system python3")
    if subprocess.run([python3, "-c", "import polars"], capture_output=True).returncode == 0:
        pytest.skip("the system python3 has polars: it would not show that the capture does without it")
    sanitizer_fakes.set_line(fakes, "kernel.cu:12")
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "sanitizer"
    env = {"PATH": f"{fakes}:/usr/bin:/bin", "HOME": str(tmp_path), "COACH_SANITIZER_BUDGET_S": "200"}
    done = subprocess.run([str(root / "scripts" / "record-sanitizer.sh"), str(out), "21", "26"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["scenario-21", "scenario-26"]
    assert (out / "scenario-26" / MANIFEST).is_file() and (tmp_path / "sanitizer.tgz").is_file()
    assert "Version 2025.3.1.0" in done.stdout and "packed" in done.stdout
