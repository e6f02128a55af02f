"""Ladder definitions (kernels/<op>/ladder.toml), recorded results and `coach ladder`.

The results fixture is synthetic (tests/data/ladders/PROVENANCE.md): its times are typed round numbers,
so the ratios pinned here follow from them exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coach.errors import InputError
from coach.ladders import (
    ladder_names,
    load_definition,
    load_results,
    results_path,
    rung_table,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "data" / "ladders" / "reduction-results.synthetic.json"
LADDERS = ladder_names()


def test_the_six_ladders_are_defined():
    assert LADDERS == ["gemv", "layernorm", "reduction", "scan", "softmax", "transpose"]


@pytest.mark.parametrize("name", LADDERS)
def test_definition_is_complete(name):
    defn = load_definition(name)
    assert len(defn.rungs) >= 5, "a ladder has at least five rungs"
    assert [r.id for r in defn.rungs] == [f"{i:02d}" for i in range(len(defn.rungs))]
    for r in defn.rungs:
        assert defn.path(r).is_file()
        assert len(r.reason) > 20 and len(r.prediction) > 20, f"{r.key}: reason and prediction in words"
        assert r.measured == "" or r.measured, "measured stays empty until a run on the H200"
    assert (defn.folder / "NOTES.md").is_file() and (defn.folder / "problem.py").is_file()
    assert defn.baseline in defn.peers


def _write_ladder(tmp_path: Path, toml: str, files=("00_a.cu", "01_b.cu")) -> Path:
    folder = tmp_path / "kernels" / "demo"
    folder.mkdir(parents=True)
    for f in files:
        (folder / f).write_text("// rung\n")
    (folder / "ladder.toml").write_text(toml)
    return tmp_path / "kernels"


GOOD = """
schema = "coach-ladder/1"
name = "demo"
title = "Demo"
operation = "y = x"
size = "n"
ceiling = "dram_copy_bandwidth_bytes_per_s"
goal = "fast"
goal_bytes_per_s = 1e12
baseline = "torch"
peers = ["torch"]
[[rungs]]
id = "00"
file = "00_a.cu"
title = "a"
change = "naive"
reason = "a reason"
prediction = "a prediction"
[[rungs]]
id = "01"
file = "01_b.cu"
title = "b"
change = "one change"
reason = "a reason"
prediction = "a prediction"
spills = true
"""


def test_definition_reads_rung_fields(tmp_path):
    root = _write_ladder(tmp_path, GOOD)
    defn = load_definition("demo", root)
    assert [r.key for r in defn.rungs] == ["00_a", "01_b"]
    assert defn.rungs[1].spills and not defn.rungs[0].spills
    assert defn.rung("01").file == "01_b.cu" and defn.rung("00_a").language == "cuda"


@pytest.mark.parametrize("edit, problem", [
    (('prediction = "a prediction"\n[[rungs]]', 'prediction = ""\n[[rungs]]'), "'prediction' must be non-empty"),
    (('id = "01"', 'id = "02"'), "does not start with its id"),
    (('file = "01_b.cu"', 'file = "01_c.cu"'), "does not exist"),
    (('baseline = "torch"', 'baseline = "cupy"'), "is not one of the peers"),
    (('ceiling = "dram_copy_bandwidth_bytes_per_s"', 'ceiling = "l2"'), "ceiling must be one of"),
    (('schema = "coach-ladder/1"', 'schema = "x"'), "schema must be"),
    (('file = "01_b.cu"', 'file = "01-b.cu"'), "is not named NN_<technique>"),
])
def test_bad_definitions_are_refused(tmp_path, edit, problem):
    root = _write_ladder(tmp_path, GOOD.replace(*edit, 1))
    with pytest.raises(InputError, match=problem):
        load_definition("demo", root)


def test_unknown_ladder_names_the_known_ones(tmp_path):
    root = _write_ladder(tmp_path, GOOD)
    with pytest.raises(InputError, match=r"no ladder named 'nope' \(known: demo\)"):
        load_definition("nope", root)


def test_results_fixture_and_rung_table():
    res = load_results(FIXTURE)
    assert res.synthetic and res.gpu == "NVIDIA H200" and res.ceiling_bytes_per_s == 4.28e12
    assert [m.status for m in res.rungs] == ["ok", "ok", "wrong", "ok", "ok"]
    rows = rung_table(load_definition("reduction"), res)
    assert [r.rung.key for r in rows][-1] == "05_single_pass" and rows[-1].result is None
    by = {r.rung.id: r for r in rows}
    assert by["00"].vs_first == 1.0 and by["00"].vs_previous is None and by["00"].vs_baseline == 0.25
    assert by["01"].vs_previous == 2.0
    assert by["02"].vs_previous is None and by["02"].pct_of_ceiling is None
    assert by["03"].vs_previous == pytest.approx(2.5), "compared with the last correct rung, 01"
    assert by["04"].vs_first == pytest.approx(8.0) and by["04"].vs_baseline == pytest.approx(2.0)
    assert by["04"].pct_of_ceiling == pytest.approx(100 * 1073741828 / 250e-6 / 4.28e12)


def test_results_refuse_bad_files(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("{")
    with pytest.raises(InputError, match="cannot be read as JSON"):
        load_results(bad)
    bad.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(InputError, match="not a ladder results file"):
        load_results(bad)
    doc = json.loads(FIXTURE.read_text())
    del doc["rungs"][0]["time_s"]
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="needs a positive time_s"):
        load_results(bad)
    with pytest.raises(InputError, match="does not exist"):
        load_results(tmp_path / "missing.json")


def test_results_path():
    assert results_path("scan").parts[-5:] == ("traces", "h200", "ladders", "scan", "results.json")


def _coach(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coach", *args], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "COLUMNS": "100", "PATH": "/usr/bin:/bin"})


def test_cli_table_from_fixture():
    proc = _coach("ladder", "reduction", "--results", str(FIXTURE))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "synthetic results" in out
    assert "first add during load" in out and "wrong" in out and "not run" in out
    assert "250.0 us" in out and "4,295" in out and "100.3" in out  # rung 04: 1.074 GB / 250 us
    assert "02_add_during_load: wrong: integers inputs" in out
    assert "cupy.sum: error: ImportError" in out


def test_cli_json_from_fixture():
    proc = _coach("ladder", "reduction", "--results", str(FIXTURE), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["synthetic"] is True
    rungs = {r["rung"]: r for r in doc["rungs"]}
    assert rungs["03_warp_shuffle"]["vs_previous"] == pytest.approx(2.5)
    assert rungs["05_single_pass"]["status"] == "not run"
    assert rungs["04_vec4_grid_stride"]["prediction"].startswith("bandwidth-bound")


def test_cli_errors_are_one_line(tmp_path):
    proc = _coach("ladder", "nope")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no ladder named 'nope'" in proc.stderr
    proc = _coach("ladder", "reduction", "--results", str(tmp_path / "none.json"))
    assert proc.returncode == 2 and "none.json" in proc.stderr and "Traceback" not in proc.stderr
    other = tmp_path / "other.json"
    doc = json.loads(FIXTURE.read_text())
    doc["ladder"] = "scan"
    other.write_text(json.dumps(doc))
    proc = _coach("ladder", "reduction", "--results", str(other))
    assert proc.returncode == 2 and "not 'reduction'" in proc.stderr


@pytest.mark.parametrize("name, expected", [
    ("reduction", 4 * 2**28 + 4),             # read n fp32, write one
    ("scan", 8 * 2**26),                      # read and write n fp32
    ("transpose", 8 * 16384 * 16384),         # read and write every fp32
    ("softmax", 4 * 32768 * 4096),            # read and write every bf16
    ("layernorm", 4 * 32768 * 4096 + 4 * 4096),  # and weight, bias once
    ("gemv", 2 * 28672 * 8192 + 2 * 8192 + 2 * 28672),  # W once, x, y
])
def test_bytes_models_at_the_h200_size(name, expected):
    pytest.importorskip("torch")
    from coach.capture.ladder import load_problem

    problem = load_problem(load_definition(name))
    assert problem.bytes_moved(**problem.SIZES["h200"]) == expected
    floor_us = expected / 4.25e12 * 1e6
    assert 100 < floor_us < 600, "every ladder is sized to take 0.1-0.6 ms at the copy ceiling"


@pytest.mark.parametrize("name", LADDERS)
def test_every_cuda_rung_has_a_launcher_and_every_peer_a_factory(name):
    pytest.importorskip("torch")
    from coach.capture.ladder import kernel_signatures, load_problem

    defn = load_definition(name)
    problem = load_problem(defn)
    cuda = {r.key for r in defn.rungs if r.language == "cuda"}
    assert set(problem.LAUNCH) == cuda
    assert set(problem.PEERS) == set(defn.peers)
    for r in defn.rungs:
        if r.language == "cuda":
            assert kernel_signatures(defn.path(r).read_text()), r.key
    assert set(problem.SIZES) == {"h200", "small"} and set(problem.EXACT) <= set(problem.INPUTS)


@pytest.mark.parametrize("name", LADDERS)
def test_recorded_ncu_metrics_name_each_rung(name):
    """The H200 recording's Nsight Compute launches carry the NVTX range of their rung (ncu --nvtx)."""
    from coach.ingest import load

    folder = Path(__file__).parents[1] / "traces" / "h200" / "ladders" / name / "ncu"
    if not folder.exists():
        pytest.skip(f"{name}: no recorded Nsight Compute metrics")
    launches = load(folder).launches
    rungs = {r.split("/", 1)[1] for r in launches["nvtx_range"].drop_nulls()}
    assert launches["nvtx_range"].null_count() == 0
    assert rungs <= {rung.key for rung in load_definition(name).rungs}
    assert launches["duration_ns"].min() > 0
