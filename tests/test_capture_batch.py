"""The GPU-machine batch scripts on a faked GPU machine: scripts/record-batch.sh runs the scenarios
step (scripts/record-scenarios.sh -> python3 -m coach.capture record), packs the step's folder with
scripts/pack-recording.sh into the pack folder, and `coach record --import` reads the packed files
back. The fake profilers hand out real H200 reports (tests/data), so the import reads real formats."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_capture_support import fake_bin, fake_data_root, hand_out, run_cli  # noqa: F401, F811  (fixtures)

from coach import recordings

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def batch_env(fake_bin: Path, data_root: Path, pack: Path, **extra: str) -> dict[str, str]:
    """The fakes first on PATH, then the system's tools (tar, split, ...), and no real NVIDIA tool."""
    python3 = Path(shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3")
    return {"PATH": f"{fake_bin}:{python3.parent}:/usr/bin:/bin", "HOME": str(pack.parent),
            "COACH_DATA": str(data_root),
            "COACH_NCU_ROOT": str(pack.parent / "no-ncu"), "COACH_PACK_DIR": str(pack),
            "COACH_PACK_PREFIX": "batch7a-", **extra}


@pytest.mark.skipif(shutil.which("tar") is None or shutil.which("split") is None, reason="needs tar and split")
def test_record_batch_packs_the_scenarios_and_the_import_reads_them(fake_bin, fake_data_root, tmp_path, capsys,
                                                                    strided_ncu_rep):
    pytest.importorskip("coach.ingest.ncu_rep")
    hand_out(fake_bin, "ncu", strided_ncu_rep)
    pack, out = tmp_path / "pack", tmp_path / "scratch"
    debs = tmp_path / "debs"
    debs.mkdir()
    toml = fake_data_root / "scenarios" / "scenario-99-fake" / "scenario.toml"
    toml.write_text(toml.read_text().replace("nsys = true\n", "nsys = false\n"))
    done = subprocess.run(["bash", str(SCRIPTS / "record-batch.sh"), str(debs), str(out), "scenarios:99"],
                          capture_output=True, text=True, timeout=300,
                          env=batch_env(fake_bin, fake_data_root, pack, COACH_RECORD_TIME_BUDGET_S="400"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in pack.iterdir()) == ["batch7a-batch.log", "batch7a-scenarios.tgz"]
    log = (pack / "batch7a-batch.log").read_text()
    assert "== scenarios:99: exit 0 after" in log
    # the time budget reached `coach.capture record`
    step_log = (out / "scenarios" / "step.log").read_text()
    assert "[1/1 scenario-99] recorded in" in step_log
    traces = tmp_path / "traces"
    code, stdout, err = run_cli(["record", "--import", str(pack), "--traces", str(traces)], capsys)
    assert code == 0, err
    results = json.loads((traces / "h200" / "scenario-99" / recordings.RESULTS_FILE).read_text())
    assert results["speedup"] == pytest.approx(2.1 / 1.0)
    steps = {(s["variant"], s["step"]) for s in results["record_steps"]}
    assert steps == {(v, s) for v in ("slow", "fixed") for s in ("plain run", "ncu")}
    assert all(s["seconds"] >= 0 for s in results["record_steps"])


def test_pack_refuses_a_missing_folder(tmp_path):
    done = subprocess.run(["bash", str(SCRIPTS / "pack-recording.sh"), str(tmp_path / "nothing"), str(tmp_path),
                           "x"], capture_output=True, text=True)
    assert done.returncode == 2 and "is not a folder" in done.stderr
    assert not list(tmp_path.glob("x.tgz*"))


@pytest.mark.skipif(shutil.which("tar") is None or shutil.which("split") is None, reason="needs tar and split")
def test_the_time_budget_reaches_the_record_command(fake_bin, fake_data_root, tmp_path):
    pack, out = tmp_path / "pack", tmp_path / "scratch"
    (tmp_path / "debs").mkdir()
    done = subprocess.run(["bash", str(SCRIPTS / "record-batch.sh"), str(tmp_path / "debs"), str(out), "scenarios:99"],
                          capture_output=True, text=True, timeout=300,
                          env=batch_env(fake_bin, fake_data_root, pack, COACH_RECORD_TIME_BUDGET_S="0"))
    assert done.returncode == 0, done.stdout + done.stderr
    step_log = (out / "scenarios" / "step.log").read_text()
    assert "time budget of 0 s spent; not started: scenario-99" in step_log
    assert not (out / "scenarios" / "scenario-99").exists()
