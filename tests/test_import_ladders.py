"""scripts/import-ladders.py: a ladder run's results and its Nsight Compute report into traces/, and
--profiles-only, which re-reads the report and leaves the recorded (possibly hand-corrected)
results.json alone. The report here is the real strided-copy one (tests/data/ncu_strided_copy); the
results.json is the synthetic reduction ladder's (tests/data/ladders)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from coach.ingest import load

DATA = Path(__file__).parent / "data"
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "import-ladders.py"


@pytest.fixture(scope="module")
def importer():
    spec = importlib.util.spec_from_file_location("import_ladders", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def run_dir(tmp_path):
    """A run folder as the runner writes it: reduction/results.json naming its ncu/ report."""
    doc = json.loads((DATA / "ladders" / "reduction-results.synthetic.json").read_text())
    doc["ncu"] = {"report": "ncu/reduction.ncu-rep", "command": "ncu --section ... (synthetic)"}
    ladder = tmp_path / "run" / "reduction"
    (ladder / "ncu").mkdir(parents=True)
    (ladder / "results.json").write_text(json.dumps(doc))
    shutil.copyfile(DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep", ladder / "ncu" / "reduction.ncu-rep")
    return tmp_path / "run"


def test_import_copies_the_results_and_saves_the_profile(importer, run_dir, tmp_path, capsys):
    assert importer.main([str(run_dir), "--dest", str(tmp_path / "traces")]) == 0
    dest = tmp_path / "traces" / "h200" / "ladders" / "reduction"
    assert (dest / "results.json").read_bytes() == (run_dir / "reduction" / "results.json").read_bytes()
    profile = load(dest / "ncu")
    assert profile.launches.height == 2 and profile.source.meta["git_commit"] == "synthetic"
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "reduction: results and 2 profiled launches"
    # the best rates of the GPU are written again after an import (coach.recorded_rates)
    assert out[1] == f"best recorded rates: {tmp_path / 'traces' / 'h200' / 'best-rates.json'}"
    assert json.loads((tmp_path / "traces" / "h200" / "best-rates.json").read_text())["gpu"] == "h200"


def test_profiles_only_keeps_the_recorded_results_and_their_provenance(importer, run_dir, tmp_path, capsys):
    traces = tmp_path / "traces"
    assert importer.main([str(run_dir), "--dest", str(traces)]) == 0
    dest = traces / "h200" / "ladders" / "reduction"
    corrected = json.loads((dest / "results.json").read_text())
    corrected["provenance"].update(git_commit="f330327", git_note="corrected after the run")
    (dest / "results.json").write_text(json.dumps(corrected))
    before = (dest / "results.json").read_bytes()
    capsys.readouterr()

    assert importer.main([str(run_dir), "--dest", str(traces), "--profiles-only"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "reduction: profile 2 profiled launches"
    assert (dest / "results.json").read_bytes() == before
    profile = load(dest / "ncu")
    assert profile.source.meta["git_commit"] == "f330327"
    opcodes = profile.metrics.filter((pl.col("metric") == "sass__inst_executed_per_opcode") & (pl.col("instance") == "LDG"))
    assert opcodes["value"].to_list() == [2_097_152, 2_097_152]  # read again, with the executed opcodes


def test_profiles_only_refuses_another_recording(importer, run_dir, tmp_path, capsys):
    traces = tmp_path / "traces"
    assert importer.main([str(run_dir), "--dest", str(traces)]) == 0
    dest = traces / "h200" / "ladders" / "reduction"
    other = json.loads((dest / "results.json").read_text())
    other["provenance"]["date"] = "2026-12-01T10:00:00+00:00"
    (dest / "results.json").write_text(json.dumps(other))
    shutil.rmtree(dest / "ncu")
    capsys.readouterr()
    assert importer.main([str(run_dir), "--dest", str(traces), "--profiles-only"]) == 2
    err = capsys.readouterr().err
    assert "not the same recording" in err and err.count("\n") == 1
    assert not (dest / "ncu").exists()
