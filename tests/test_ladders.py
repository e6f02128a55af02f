"""Ladder definitions (kernels/<name>/ladder.toml), recorded results and `coach ladder`.

The results fixtures are synthetic (tests/data/ladders/PROVENANCE.md): their times are typed round
numbers, so the ratios pinned here follow from them exactly. ``synthetic-root`` is a data folder
(COACH_DATA) with one compute-bound ladder, ``matmul/synthetic``, and its results at two sizes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coach.errors import InputError
from coach.ladders import (
    LADDER_NAME,
    goal_verdict,
    ladder_names,
    ladders_under,
    load_definition,
    load_results,
    problem_sizes,
    results_path,
    rung_table,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "data" / "ladders" / "reduction-results.synthetic.json"
SYNTHETIC_ROOT = Path(__file__).parent / "data" / "ladders" / "synthetic-root"
SYNTHETIC_KERNELS = SYNTHETIC_ROOT / "kernels"
SYNTHETIC_RESULTS = SYNTHETIC_ROOT / "traces" / "h200" / "ladders" / "matmul" / "synthetic" / "results.json"
LADDERS = ladder_names()
MEMORY_LADDERS = ["gemv", "layernorm", "reduction", "scan", "softmax", "transpose"]


def test_the_six_memory_ladders_are_defined_and_every_name_is_a_folder():
    assert set(MEMORY_LADDERS) <= set(LADDERS)
    for name in LADDERS:
        assert LADDER_NAME.match(name) and load_definition(name).folder == ROOT / "kernels" / name


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
    assert {"h200", "small"} <= set(problem_sizes(defn)) and set(defn.sizes) <= set(problem_sizes(defn))
    assert defn.include_dir == ROOT / "kernels" / "common"


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
    (('name = "demo"', 'name = "other"'), "name 'other' differs from its folder 'demo'"),
    (('goal_bytes_per_s = 1e12', 'goal_flop_per_s = 1e12'), "needs goal_bytes_per_s and no other rate goal"),
    (('goal_bytes_per_s = 1e12', 'goal_bytes_per_s = 1e12\ngoal_flop_per_s = 1e12'), "and no other rate goal"),
    (('goal_bytes_per_s = 1e12', 'goal_bytes_per_s = 1e12\ngoal_ratio_to_baseline = -1'), "must be a positive number"),
    (('peers = ["torch"]', 'peers = ["torch"]\nsizes = "h200"'), "sizes must be a list of distinct names"),
    (('peers = ["torch"]', 'peers = ["torch"]\nncu_sections = ["Speed Of Light"]'), "not Nsight Compute section"),
    (('spills = true', 'spills = true\narch = "90a"'), 'arch must name a CUDA target such as "sm_90a"'),
    (('spills = true', 'spills = true\nemulate = false'), "emulate = false needs emulate_why"),
    (('spills = true', 'spills = true\nemulate_why = "x"'), "emulate_why is only for a rung with emulate = false"),
])
def test_bad_definitions_are_refused(tmp_path, edit, problem):
    root = _write_ladder(tmp_path, GOOD.replace(*edit, 1))
    with pytest.raises(InputError, match=problem):
        load_definition("demo", root)


def test_a_compute_ladder_needs_the_flop_goal_and_arch_only_on_cuda(tmp_path):
    flop = GOOD.replace('ceiling = "dram_copy_bandwidth_bytes_per_s"', 'ceiling = "bf16_tensor_matmul_flop_per_s"')
    with pytest.raises(InputError, match="against a FLOP/s ceiling needs goal_flop_per_s and no other rate goal "
                                         r"\(found goal_bytes_per_s\)"):
        load_definition("demo", _write_ladder(tmp_path / "a", flop))
    defn = load_definition("demo", _write_ladder(tmp_path / "b", flop.replace("goal_bytes_per_s", "goal_flop_per_s")))
    assert defn.unit == "FLOP/s" and defn.compute_bound and defn.goal_rate == 1e12 and defn.goal_bytes_per_s is None
    py = GOOD.replace('file = "01_b.cu"', 'file = "01_b.py"').replace("spills = true", 'arch = "sm_90a"')
    with pytest.raises(InputError, match="arch applies to CUDA rungs only"):
        load_definition("demo", _write_ladder(tmp_path / "c", py, files=("00_a.cu", "01_b.py")))


def test_unknown_ladder_names_the_known_ones(tmp_path):
    root = _write_ladder(tmp_path, GOOD)
    with pytest.raises(InputError, match=r"no ladder named 'nope' \(known: demo\)"):
        load_definition("nope", root)


def test_results_fixture_and_rung_table():
    res = load_results(FIXTURE)
    assert res.synthetic and res.gpu == "NVIDIA H200" and res.ceiling_bytes_per_s == 4.28e12
    assert res.ceiling_unit == "bytes/s" and res.ceiling_value == 4.28e12 and res.size_name == "h200", \
        "a file written before FLOP ceilings and sizes: bytes/s, the main size"
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
    assert results_path("matmul/fp32", size="h200_8192").parts[-6:] == (
        "traces", "h200", "ladders", "matmul", "fp32", "results.h200_8192.json")
    assert results_path("matmul/fp32", size="h200").name == "results.json"


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
    ("decode_attention", 2 * 32 * 8 * 8192 * 128 * 2 + 2 * 32 * 32 * 128 * 2),  # K, V once; Q, O
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
    assert {"h200", "small", *defn.sizes} == set(problem.SIZES) and defn.sizes[0] == "h200"
    assert set(problem.EXACT) <= set(problem.INPUTS)


@pytest.mark.parametrize("name", LADDERS)
def test_recorded_ncu_metrics_name_each_rung(name):
    """The H200 recording's Nsight Compute launches carry the NVTX range of their rung (ncu --nvtx)."""
    from coach.ingest import load

    folder = Path(__file__).parents[1] / "traces" / "h200" / "ladders" / name / "ncu"
    if not folder.exists():
        pytest.skip(f"{name}: no recorded Nsight Compute metrics")
    launches = load(folder).launches
    assert all(r.startswith(f"{name}/") for r in launches["nvtx_range"].drop_nulls())
    rungs = {r.rsplit("/", 1)[1] for r in launches["nvtx_range"].drop_nulls()}
    assert launches["nvtx_range"].null_count() == 0
    assert rungs <= {rung.key for rung in load_definition(name).rungs}
    assert launches["duration_ns"].min() > 0


# The synthetic compute-bound ladder, nested in a family folder.

def test_nested_ladder_names_and_families():
    assert ladder_names(SYNTHETIC_KERNELS) == ["matmul/synthetic"]
    assert ladders_under("matmul", SYNTHETIC_KERNELS) == ladders_under("matmul/", SYNTHETIC_KERNELS) == ["matmul/synthetic"]
    assert ladders_under("synthetic", SYNTHETIC_KERNELS) == []
    with pytest.raises(InputError, match=r"no ladder named 'matmul' \(known: matmul/synthetic\)"):
        load_definition("matmul", SYNTHETIC_KERNELS)
    with pytest.raises(InputError, match="no ladder named '../kernels/matmul/synthetic'"):
        load_definition("../kernels/matmul/synthetic", SYNTHETIC_KERNELS)


def test_compute_ladder_definition():
    defn = load_definition("matmul/synthetic", SYNTHETIC_KERNELS)
    assert defn.unit == "FLOP/s" and defn.goal_rate == 30e12 and defn.goal_ratio_to_baseline == 0.8
    assert defn.sizes == ("h200", "h200_big") and defn.main_size == "h200"
    assert problem_sizes(defn) == ("h200", "h200_big", "small")
    assert defn.ncu_sections == ("ComputeWorkloadAnalysis", "InstructionStats", "WarpStateStats")
    assert defn.include_dir == SYNTHETIC_KERNELS / "common" and (defn.include_dir / "tile.cuh").is_file()
    fenced = defn.rung("01")
    assert fenced.arch == "sm_90a" and not fenced.emulate and fenced.emulate_why.startswith("wgmma.fence")
    assert [r.arch for r in defn.rungs] == [None, "sm_90a", None] and [r.emulate for r in defn.rungs] == [True, False, True]


def test_flop_table_and_goal_verdict():
    """% of ceiling from the FLOP model: 2 * 4096^3 FLOP over the median against 51.12 TFLOP/s."""
    defn = load_definition("matmul/synthetic", SYNTHETIC_KERNELS)
    res = load_results(SYNTHETIC_RESULTS)
    assert res.ceiling_unit == "FLOP/s" and res.ceiling_bytes_per_s is None and res.ceiling_value == 51123904740184.73
    rows = rung_table(defn, res)
    flops = 2 * 4096**3
    by = {r.rung.id: r for r in rows}
    assert by["01"].rate == flops / 3.2e-3 == res.rungs[1].flop_per_s
    assert by["01"].pct_of_ceiling == pytest.approx(100 * flops / 3.2e-3 / 51123904740184.73, rel=1e-12)
    assert round(by["01"].pct_of_ceiling, 1) == 84.0 and round(by["00"].pct_of_ceiling, 2) == 2.69
    assert by["01"].vs_baseline == pytest.approx(2.75e-3 / 3.2e-3) and by["02"].vs_baseline == pytest.approx(0.6875)
    verdict = goal_verdict(defn, rows)
    assert verdict.last.rung.key == "02_triton" and verdict.best.rung.key == "01_wgmma"
    assert by["02"].rate > 30e12 and not verdict.last_met, "rate goal met, x0.69 of cuBLAS is not 0.80"
    assert verdict.best_met
    assert res.rungs[0].sass == {"mm_naive": {"FFMA": 4, "LDG": 8, "STG": 1, "EXIT": 2}}
    assert res.rungs[2].sass == {}, "a rung whose SASS could not be read has an error, no histogram"


def test_results_of_another_size():
    res = load_results(SYNTHETIC_RESULTS, "h200_big")
    assert res.size_name == "h200_big" and res.path.name == "results.h200_big.json"
    assert res.rungs[1].flops == 2 * 8192**3 and res.rungs[1].time_s == 0.025
    assert load_results(SYNTHETIC_RESULTS, "h200").path == SYNTHETIC_RESULTS
    with pytest.raises(InputError, match=r"no results recorded at size 'small' \(files there: results.h200_big.json, "
                                         r"results.json\)"):
        load_results(SYNTHETIC_RESULTS, "small")


def test_a_results_file_in_another_unit_than_its_ladder_is_refused(tmp_path):
    doc = json.loads(SYNTHETIC_RESULTS.read_text())
    doc["ceiling"] = {"name": "dram_read_bandwidth_bytes_per_s", "bytes_per_s": 4e12}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="is measured in bytes/s but ladder 'matmul/synthetic' in FLOP/s"):
        rung_table(load_definition("matmul/synthetic", SYNTHETIC_KERNELS), load_results(path))


def _coach_synthetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coach", *args], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "COLUMNS": "120", "PATH": "/usr/bin:/bin",
                               "COACH_DATA": str(SYNTHETIC_ROOT)})


def test_cli_shows_every_ladder_of_a_family_in_tflops():
    proc = _coach_synthetic("ladder", "matmul")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "TFLOP/s" in out and "GB/s" not in out and "51.1 TFLOP/s" in out
    row = next(line for line in out.splitlines() if line.startswith("01 "))
    assert row.split()[-5:-3] == ["42.9", "84.0"], "rung 01: 2*4096^3 / 3.2 ms = 42.9 TFLOP/s = 84.0% of 51.12"
    assert "needs 30.0 TFLOP/s and x0.80 of cublas.fp32" in out
    assert "last correct rung 02_triton: 34.4 TFLOP/s, x0.69 of cublas.fp32 (not met)" in out
    assert "fastest rung 01_wgmma: 42.9 TFLOP/s, x0.86 of cublas.fp32 (met)" in out


def test_cli_json_of_another_size_and_of_a_family():
    proc = _coach_synthetic("ladder", "matmul/synthetic", "--size", "h200_big", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ladder"] == "matmul/synthetic" and doc["size"] == "h200_big" and doc["unit"] == "FLOP/s"
    rungs = {r["rung"]: r for r in doc["rungs"]}
    assert rungs["01_wgmma"]["flop_per_s"] == rungs["01_wgmma"]["rate"] == 2 * 8192**3 / 0.025
    assert rungs["01_wgmma"]["pct_of_ceiling"] == pytest.approx(100 * 2 * 8192**3 / 0.025 / 51123904740184.73)
    assert doc["goal_met"] == {"last": "02_triton", "last_met": False, "best": "01_wgmma", "best_met": True}
    family = json.loads(_coach_synthetic("ladder", "matmul", "--json").stdout)
    assert [d["ladder"] for d in family["ladders"]] == ["matmul/synthetic"] and family["not_shown"] == []
    proc = _coach_synthetic("ladder", "matmul/synthetic", "--size", "small")
    assert proc.returncode == 2 and "no results recorded at size 'small'" in proc.stderr


def test_a_family_shows_the_ladders_that_have_results(tmp_path):
    """A second track without recorded results is named, not fatal; with none recorded it is an error."""
    import shutil

    root = tmp_path / "data"
    shutil.copytree(SYNTHETIC_ROOT, root)
    shutil.copytree(root / "kernels" / "matmul" / "synthetic", root / "kernels" / "matmul" / "other")
    toml = root / "kernels" / "matmul" / "other" / "ladder.toml"
    toml.write_text(toml.read_text().replace('name = "matmul/synthetic"', 'name = "matmul/other"'))
    env = {"PYTHONPATH": str(ROOT), "COLUMNS": "120", "PATH": "/usr/bin:/bin", "COACH_DATA": str(root)}
    proc = subprocess.run([sys.executable, "-m", "coach", "ladder", "matmul"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Synthetic FP32 matmul" in proc.stdout and "not shown: matmul/other:" in proc.stdout
    shutil.rmtree(root / "traces")
    proc = subprocess.run([sys.executable, "-m", "coach", "ladder", "matmul"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 2 and "none of its ladders has results to show" in proc.stderr
