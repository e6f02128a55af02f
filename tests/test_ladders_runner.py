"""The ladder runner's plumbing on the CPU: argument parsing, kernel signatures and argument checks,
poisoning and comparison, the child that measures a ladder (with fake kernels), restarts after a
crash, and the JSON it writes. Timing needs a GPU (triton's do_bench) and is not exercised here."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import NamedTuple

import pytest

from coach.capture import ladder as runner
from coach.ladders import load_definition, load_results

ROOT = Path(__file__).resolve().parents[1]
#: A data folder (COACH_DATA) holding the synthetic compute ladder matmul/synthetic (tests/data/ladders/PROVENANCE.md).
SYNTHETIC_ROOT = Path(__file__).parent / "data" / "ladders" / "synthetic-root"


def test_imports_without_gpu_libraries_polars_typer_or_rich():
    code = ("import sys, coach.capture.ladder; "
            "print(sorted(m for m in ('torch', 'triton', 'cupy', 'polars', 'typer', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


def test_argument_parsing():
    args = runner.parse_args(["run", "reduction", "--out", "o", "--ncu"])
    assert args.names == ["reduction"] and args.ncu and args.size is None and str(args.out) == "o"
    assert "reduction" in runner.parse_args(["run", "all", "--out", "o"]).names
    assert runner.parse_args(["run", "reduction", "scan", "--out", "o", "--size", "small"]).size == "small"
    for bad in (["run", "nope", "--out", "o"], ["run", "reduction"], ["run", "reduction", "--out", "o", "--size", "big"], []):
        with pytest.raises(SystemExit):
            runner.parse_args(bad)


def test_size_is_checked_against_each_problems_sizes(monkeypatch, capsys):
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    args = runner.parse_args(["run", "all", "--out", "o", "--size", "h200_big"])
    assert args.names == ["matmul/synthetic"] and args.size == "h200_big", "nested ladders are in 'all'"
    with pytest.raises(SystemExit):
        runner.parse_args(["run", "matmul/synthetic", "--out", "o", "--size", "h200_huge"])
    assert "ladder matmul/synthetic has no size 'h200_huge' (its problem.py's SIZES: h200, h200_big, small)" in \
        capsys.readouterr().err


def test_kernel_signatures():
    src = """
    // extern "C" __global__ void commented_out(int n)
    extern "C" __global__ void __launch_bounds__(256, 4)
    k1(const float* __restrict__ x, bf16* y, unsigned n, const uint4* v) {}
    extern "C" __global__ void k2(float* out, long long n, float scale) {}
    __global__ void helper(int n) {}
    extern "C" __global__ void __launch_bounds__(384, 1) __cluster_dims__(2, 1, 1)
    k3(const uint4* maps, bf16* c) {}
    """
    sigs = runner.kernel_signatures(src)
    assert list(sigs) == ["k1", "k2", "k3"]
    assert [(p.name, p.ctype) for p in sigs["k3"]] == [("maps", "uint4"), ("c", "bf16")]
    assert [(p.name, p.ctype, p.pointer) for p in sigs["k1"]] == [
        ("x", "float", True), ("y", "bf16", True), ("n", "unsigned", False), ("v", "uint4", True)]
    assert [p.ctype for p in sigs["k2"]] == ["float", "long long", "float"]
    with pytest.raises(ValueError, match="type size_t is not one the runner passes"):
        runner.kernel_signatures('extern "C" __global__ void k(size_t n) {}')


def test_triton_kernel_names():
    src = "@triton.jit\ndef a_kernel(x):\n    pass\n\n@triton.jit(do_not_specialize=['n'])\ndef b(x, n):\n    pass\ndef launch(): pass\n"
    assert runner.triton_kernel_names(src) == ("a_kernel", "b")
    assert runner.triton_kernel_names("@gluon.jit\ndef g(desc):\n    pass\n@other.jit\ndef h():\n    pass\n") == ("g",)


class FakeBuild:
    """Stands in for an NVRTC build: "kernels" written in torch, launched by name."""

    def __init__(self, source: str, impl):
        self.signatures = runner.kernel_signatures(source)
        self.resources = {k: {"registers": 8, "local_bytes": 0, "static_smem_bytes": 0} for k in self.signatures}
        self.calls = []
        self._impl = impl

    def launch(self, name, grid, block, args, smem):
        self.calls.append((name, grid, block, smem))
        self._impl[name](*[a for _, a in args])


def test_context_checks_arguments_against_the_signature():
    torch = pytest.importorskip("torch")
    build = FakeBuild('extern "C" __global__ void k(const float* x, bf16* y, unsigned n) {}',
                      {"k": lambda x, y, n: None})
    ctx = runner.Context(torch, "cpu", 4, build)
    x, y = torch.zeros(4), torch.zeros(4, dtype=torch.bfloat16)
    ctx.launch("k", 2, (32, 2), x, y, 4)
    assert build.calls == [("k", (2, 1, 1), (32, 2, 1), 0)]
    with pytest.raises(TypeError, match=r"k\(y\): bf16 \* cannot point at a float32 tensor"):
        ctx.launch("k", 1, 32, x, x, 4)
    with pytest.raises(OverflowError, match="does not fit unsigned"):
        ctx.launch("k", 1, 32, x, y, 2**32)
    with pytest.raises(OverflowError):
        ctx.launch("k", 1, 32, x, y, -1)
    with pytest.raises(TypeError, match="takes 3 arguments, got 2"):
        ctx.launch("k", 1, 32, x, y)
    with pytest.raises(ValueError, match="contiguous"):
        ctx.launch("k", 1, 32, torch.zeros(4, 2).t(), y, 4)
    with pytest.raises(ValueError, match="bad launch"):
        ctx.launch("k", 1, 2048, x, y, 4)
    with pytest.raises(KeyError, match="no kernel 'nope'"):
        ctx.launch("nope", 1, 32)
    a = ctx.scratch("flags", 8, torch.int32, zero=True)
    assert a.tolist() == [0] * 8 and ctx.scratch("flags", 4, torch.int32).data_ptr() == a.data_ptr()


def test_a_cooperative_launch_reaches_the_build_and_occupancy_needs_one_that_knows_it():
    """Context.launch(cooperative=True) passes the flag to the build (plain launches do not, so a
    build without it still works); blocks_per_sm asks the build, and one that cannot say is an error."""
    torch = pytest.importorskip("torch")

    class Cooperative(FakeBuild):
        def launch(self, name, grid, block, args, smem, cooperative=False):
            self.calls.append((name, grid, cooperative))

        def blocks_per_sm(self, name, threads, smem):
            return 3 if smem <= 1024 else 1

    build = Cooperative('extern "C" __global__ void k(unsigned n) {}', {})
    ctx = runner.Context(torch, "cpu", 4, build)
    ctx.launch("k", 2, 32, 1)
    ctx.launch("k", 2, 32, 1, cooperative=True)
    assert build.calls == [("k", (2, 1, 1), False), ("k", (2, 1, 1), True)]
    assert (ctx.blocks_per_sm("k", 256), ctx.blocks_per_sm("k", 256, 4096)) == (3, 1)
    plain = runner.Context(torch, "cpu", 4, FakeBuild('extern "C" __global__ void k(unsigned n) {}', {"k": lambda n: None}))
    plain.launch("k", 1, 32, 1)
    with pytest.raises(RuntimeError, match="cannot say how many blocks fit"):
        plain.blocks_per_sm("k", 256)


def test_poison_unwritten_and_compare():
    torch = pytest.importorskip("torch")
    out = {"f": torch.empty(5), "i": torch.empty(3, dtype=torch.int32)}
    runner.poison(torch, out)
    assert runner.unwritten(torch, out["f"]) == 5 and runner.unwritten(torch, out["i"]) == 3
    ref = torch.arange(5, dtype=torch.float64)
    out["f"][:4] = ref[:4].float()
    assert runner.compare(torch, out["f"], ref, 1e-4) == (False, None, 1)
    out["f"][4] = 4.0
    assert runner.compare(torch, out["f"], ref, 0.0) == (True, 0.0, 0)
    out["f"][4] = 4.001
    ok, rel, missing = runner.compare(torch, out["f"], ref, 0.0)
    assert not ok and rel == pytest.approx(0.001 / 30**0.5, rel=1e-3) and missing == 0
    assert runner.compare(torch, out["f"], ref, 1e-3)[0]
    assert runner.compare(torch, out["f"].reshape(5, 1), ref, 1e-3)[0], "same numel, other shape: compared flat"
    assert runner.tolerance_for(torch.bfloat16, False) == 1e-2 and runner.tolerance_for(torch.float32, True) == 0.0


def test_a_problem_sets_its_own_tolerance_for_the_dtypes_it_names():
    torch = pytest.importorskip("torch")
    fp8 = types.SimpleNamespace(TOLERANCE={"bfloat16": 6e-2})
    assert runner.tolerance_for(torch.bfloat16, False, fp8) == 6e-2
    assert runner.tolerance_for(torch.float32, False, fp8) == 1e-4, "a dtype it does not name keeps the runner's"
    assert runner.tolerance_for(torch.bfloat16, True, fp8) == 0.0, "exact stays exact"
    assert runner.tolerances(types.SimpleNamespace())["bfloat16"] == 1e-2
    with pytest.raises(ValueError, match="positive limits"):
        runner.tolerances(types.SimpleNamespace(TOLERANCE={"bfloat16": 0}))


def test_rotation_sets():
    assert runner.rotation_sets(1 << 30, 60 << 20) == 2
    assert runner.rotation_sets(10 << 20, 60 << 20) == 18
    assert runner.rotation_sets(0, 0) == 2


def test_measured_ceiling_from_the_hardware_tables():
    value, source = runner.read_ceiling("NVIDIA H200", "dram_copy_bandwidth_bytes_per_s")
    # the calibration recorded on the H200 (hardware/measured/h200.json)
    assert value == pytest.approx(4.191e12, rel=1e-3) and source == "hardware/measured/h200.json"
    assert runner.read_ceiling("NVIDIA H200", "dram_read_bandwidth_bytes_per_s")[0] == pytest.approx(4.195e12, rel=1e-3)
    assert runner.read_ceiling("NVIDIA A10", "dram_copy_bandwidth_bytes_per_s") == (None, None)
    assert runner.gpu_slug("NVIDIA H200") == "h200" and runner.gpu_slug("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"


# A whole ladder with fake kernels, in a data folder of its own (COACH_DATA).

FAKE_TOML = """
schema = "coach-ladder/1"
name = "fake"
title = "Copy"
operation = "y = x"
size = "n"
ceiling = "dram_copy_bandwidth_bytes_per_s"
goal = "fast"
goal_bytes_per_s = 1e12
baseline = "torch.clone"
peers = ["torch.clone", "broken"]
[[rungs]]
id = "00"
file = "00_copy.cu"
title = "copy"
change = "naive"
reason = "r"
prediction = "p"
[[rungs]]
id = "01"
file = "01_half.cu"
title = "half"
change = "writes half"
reason = "r"
prediction = "p"
[[rungs]]
id = "02"
file = "02_crash.cu"
title = "crash"
change = "raises"
reason = "r"
prediction = "p"
[[rungs]]
id = "03"
file = "03_off.cu"
title = "off by a little"
change = "adds 1e-3"
reason = "r"
prediction = "p"
"""

FAKE_PROBLEM = """
import torch
SIZES = {"h200": {"n": 64}, "small": {"n": 10}}
INPUTS = ("integers", "normal")
EXACT = frozenset({"integers"})
def inputs(kind, *, n, device, generator):
    if kind == "integers":
        return {"x": torch.randint(-3, 4, (n,), generator=generator).float()}
    return {"x": torch.randn(n, generator=generator)}
def outputs(*, n, device):
    return {"y": torch.empty(n)}
def reference(inp):
    return {"y": inp["x"].double()}
def bytes_moved(*, n):
    return 8 * n
def flops(*, n):
    return 0
def _broken():
    raise RuntimeError("no such library")
PEERS = {"torch.clone": lambda: (lambda inp: {"y": inp["x"].clone()}), "broken": _broken}
def _one(kernel):
    return lambda ctx, inp, out: ctx.launch(kernel, 1, 32, inp["x"], out["y"], inp["x"].numel())
LAUNCH = {"00_copy": _one("copy"), "01_half": _one("half"), "02_crash": _one("crash"), "03_off": _one("off")}
"""


def _half(x, y, n):
    y[: n // 2] = x[: n // 2]


def _crash(x, y, n):
    raise RuntimeError("illegal memory access (fake)")


IMPLS = {"copy": lambda x, y, n: y.copy_(x), "half": _half, "crash": _crash,
         "off": lambda x, y, n: y.copy_(x + 1e-3)}


@pytest.fixture
def fake_data(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "kernels" / "fake"
    folder.mkdir(parents=True)
    (folder / "ladder.toml").write_text(FAKE_TOML)
    (folder / "problem.py").write_text(FAKE_PROBLEM)
    for stem, kernel in (("00_copy", "copy"), ("01_half", "half"), ("02_crash", "crash"), ("03_off", "off")):
        (folder / f"{stem}.cu").write_text(f'extern "C" __global__ void {kernel}(const float* x, float* y, unsigned n) {{}}\n')
    monkeypatch.setenv("COACH_DATA", str(tmp_path / "data"))
    return tmp_path


def _describe():
    return {"gpu_name": "fake CPU", "driver": None, "date": "2026-12-01T00:00:00+00:00"}


def test_child_measures_checks_and_records_each_rung(fake_data):
    pytest.importorskip("torch")
    out = fake_data / "out"
    builder = lambda path, arch, include: FakeBuild(path.read_text(), IMPLS)  # noqa: E731
    rc = runner.run_ladder_child("fake", out, "small", device="cpu", builder=builder, timing=False, describe=_describe)
    assert rc == 0
    assert not (out / "fake" / "results.json").exists(), "small is not the ladder's main size (h200)"
    doc = json.loads((out / "fake" / "results.small.json").read_text())
    assert doc["partial"] is True and "in_progress" not in doc, "the parent clears 'partial' when all is done"
    assert doc["size"] == {"n": 10} and doc["size_name"] == "small"
    assert doc["ceiling"] == {"name": "dram_copy_bandwidth_bytes_per_s", "unit": "bytes/s", "value": None,
                              "bytes_per_s": None, "source": None}
    rungs = {r["key"]: r for r in doc["rungs"]}
    assert rungs["00_copy"]["status"] == "ok" and rungs["00_copy"]["kernels"] == ["copy"]
    assert [c["name"] for c in rungs["00_copy"]["checks"]] == ["integers", "normal"]
    assert all(c["passed"] and c["rel_err"] == 0.0 for c in rungs["00_copy"]["checks"])
    assert rungs["01_half"]["status"] == "wrong" and rungs["01_half"]["checks"][0]["unwritten"] == 5
    assert rungs["01_half"]["error"] == "integers inputs: 5 output elements never written"
    assert rungs["02_crash"]["status"] == "error" and "illegal memory access (fake)" in rungs["02_crash"]["error"]
    off = rungs["03_off"]["checks"]
    assert not off[0]["passed"] and off[0]["tolerance"] == 0.0, "integer inputs must match exactly"
    assert not off[1]["passed"] or off[1]["rel_err"] <= 1e-4
    peers = {p["key"]: p for p in doc["peers"]}
    assert peers["torch.clone"]["status"] == "ok" and peers["broken"]["status"] == "error"
    assert rungs["00_copy"]["bytes"] == 80
    doc.pop("partial")
    for m in doc["rungs"] + doc["peers"]:  # untimed on the CPU; a recorded run has times
        m["time_s"] = 1e-6 if m["status"] == "ok" else None
    (out / "fake" / "results.small.json").write_text(json.dumps(doc))
    res = load_results(out / "fake" / "results.small.json")
    assert [m.status for m in res.rungs] == ["ok", "wrong", "error", "wrong"] and res.size_name == "small"


def test_child_resumes_and_records_the_rung_that_killed_its_predecessor(fake_data):
    pytest.importorskip("torch")
    out = fake_data / "out"
    builder = lambda path, arch, include: FakeBuild(path.read_text(), IMPLS)  # noqa: E731
    path = out / "fake" / "results.small.json"
    path.parent.mkdir(parents=True)
    # A child that died during 01_half after recording 00_copy:
    defn = load_definition("fake")
    problem = runner.load_problem(defn)
    doc = runner.new_results(defn, problem, "small", {"n": 10}, _describe())
    doc["rungs"].append({"key": "00_copy", "status": "ok", "checks": [], "bytes": 80, "flops": 0, "marker": 1})
    doc["in_progress"] = "01_half"
    doc["in_progress_error"] = "timed out after 240 s (a hung kernel?)"
    path.write_text(json.dumps(doc))
    assert runner.run_ladder_child("fake", out, "small", device="cpu", builder=builder, timing=False) == 0
    doc = json.loads(path.read_text())
    keys = [r["key"] for r in doc["rungs"]]
    assert keys == ["00_copy", "01_half", "02_crash", "03_off"]
    assert doc["rungs"][0]["marker"] == 1, "a recorded rung is not measured again"
    assert doc["rungs"][1]["status"] == "error" and doc["rungs"][1]["error"] == "timed out after 240 s (a hung kernel?)"


def test_parent_restarts_children_until_done_and_finalises(fake_data, monkeypatch):
    out = fake_data / "out"
    path = out / "fake" / "results.json"
    calls = []

    def fake_child(args, timeout):
        calls.append(args)
        doc = json.loads(path.read_text()) if path.is_file() else {"schema": "coach-ladder-results/1", "partial": True,
                                                                    "rungs": [], "peers": [], "provenance": {}}
        if len(calls) == 1:  # dies during the first rung
            doc["in_progress"] = "00_copy"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(doc))
            return -11, False
        assert doc["in_progress_error"] == "the process died during it (exit -11)"
        doc.pop("in_progress"), doc.pop("in_progress_error")
        doc["rungs"].append({"key": "00_copy", "status": "error"})
        path.write_text(json.dumps(doc))
        return 0, False

    monkeypatch.setattr(runner, "_run_child", fake_child)
    assert runner.run(["fake"], out, command="python -m coach.capture.ladder run fake --out out") == 0
    assert [c[:2] for c in calls] == [["measure", "fake"]] * 2
    doc = json.loads(path.read_text())
    assert "partial" not in doc and doc["provenance"]["command"].endswith("--out out")


def test_parent_gives_up_on_a_child_that_makes_no_progress(fake_data, monkeypatch):
    monkeypatch.setattr(runner, "_run_child", lambda args, timeout: (1, False))
    assert runner.run(["fake"], fake_data / "out") == 1


def test_ncu_command_profiles_only_the_rung_kernels_inside_the_ladders_ranges():
    cmd = runner.ncu_command("ncu", "reduction", Path("o"), "h200", ["b_k", "a.k", "b_k"], ["00_a", "01_b"])
    assert cmd[:3] == ["ncu", "--clock-control", "none"]
    assert cmd[cmd.index("-k") + 1] == r"regex:^(a\.k|b_k)$"
    assert "--nvtx" in cmd and cmd[cmd.index("--nvtx-include") + 1] == "reduction/"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == list(runner.NCU_SECTIONS)
    assert cmd[cmd.index("-o") + 1] == str(Path("o") / "reduction" / "ncu" / "reduction")
    assert cmd[-8:] == ["coach.capture.ladder", "profile", "reduction", "--size", "h200", "--rungs", "00_a", "01_b"]
    assert runner.parse_args(cmd[cmd.index("profile"):]).rungs == ["00_a", "01_b"]


def test_ncu_command_of_a_nested_compute_ladder(monkeypatch):
    """matmul/synthetic: the NVTX filter names its two nested ranges, the report a flat file name, and
    the ladder's own sections follow the default ones."""
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    defn = load_definition("matmul/synthetic")
    sections = runner.ncu_sections(defn)
    assert sections == [*runner.NCU_SECTIONS, "ComputeWorkloadAnalysis", "InstructionStats", "WarpStateStats"]
    cmd = runner.ncu_command("ncu", defn.name, Path("o"), "h200", ["mm_naive"], ["00_naive"], sections)
    assert cmd[cmd.index("--nvtx-include") + 1] == "matmul/synthetic/"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == sections
    assert cmd[cmd.index("-o") + 1] == str(Path("o") / "matmul" / "synthetic" / "ncu" / "matmul-synthetic")
    assert runner.parse_args(cmd[cmd.index("profile"):]).name == "matmul/synthetic"


def _results(tmp_path, rungs, peers=(), name="x", ceiling=None):
    path = tmp_path / name / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schema": "coach-ladder-results/1", "ceiling": ceiling or {"bytes_per_s": 4e12}, "rungs": list(rungs),
           "peers": list(peers), "provenance": {}}
    path.write_text(json.dumps(doc))
    return path


def test_ncu_leaves_out_rungs_that_crashed_and_stops_when_the_budget_is_spent(fake_data, monkeypatch):
    tmp_path = fake_data / "out"
    path = _results(tmp_path, name="fake", rungs=[
        {"key": "00_a", "status": "ok", "kernels": ["ka"]},
        {"key": "01_b", "status": "error", "kernels": ["kb"]},
        {"key": "02_c", "status": "wrong", "kernels": ["kc"]},
        {"key": "03_d", "status": "error"},
    ])
    seen = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    monkeypatch.setattr(runner.subprocess, "run", lambda cmd, **kw: seen.append((cmd, kw["timeout"])) or Done())
    runner.profile_with_ncu("fake", tmp_path, "h200", "ncu", timeout_s=100)
    (cmd, timeout), = seen
    assert cmd[cmd.index("-k") + 1] == "regex:^(ka|kc)$" and cmd[-2:] == ["00_a", "02_c"] and timeout == 100
    assert json.loads(path.read_text())["ncu"]["command"].startswith("ncu --clock-control none")
    runner.profile_with_ncu("fake", tmp_path, "h200", "ncu", timeout_s=5)
    assert len(seen) == 1
    assert json.loads(path.read_text())["ncu"]["error"] == "skipped: the run's time budget was spent"


def test_ncu_profiles_the_candidate_the_timed_run_chose(fake_data, monkeypatch):
    """A tuned rung's choice in the results file (its "tuned" entries) goes to the profile child as
    --picks, so Nsight Compute profiles the kernel that was timed, not a new choice made under it."""
    tmp_path = fake_data / "out"
    _results(tmp_path, name="fake", rungs=[
        {"key": "00_a", "status": "ok", "kernels": ["ka1", "ka2"],
         "tuned": [{"pick": "ka2", "times_s": {"ka1": 2e-4, "ka2": 1e-4}}]},
        {"key": "01_b", "status": "ok", "kernels": ["kb"]},
    ])
    seen = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    monkeypatch.setattr(runner.subprocess, "run", lambda cmd, **kw: seen.append(cmd) or Done())
    runner.profile_with_ncu("fake", tmp_path, "h200", "ncu", timeout_s=100)
    (cmd,) = seen
    args = runner.parse_args(cmd[cmd.index("profile"):])
    assert args.rungs == ["00_a", "01_b"] and list(args.picks) == ["ka2"]


def test_time_each_chooses_a_given_pick_without_timing():
    """With picks, time_each runs nothing and the pick is the fastest; the choice is kept in tunings."""
    import torch

    class Cand(NamedTuple):
        kernel: str

    ctx = runner.Context(torch, "cpu", 4, picks=["k2"])
    ran = []
    times = ctx.time_each([Cand("k1"), Cand("k2"), Cand("k3")], ran.append, warmup=1, reps=2)
    assert min(times, key=times.get) == Cand("k2") and ran == []
    assert ctx.tunings == [{"pick": "k2", "given": True}]
    assert runner.candidate_name(Cand("k3")) == "k3" and runner.candidate_name(7) == "7"


def test_summary_table(tmp_path):
    _results(tmp_path, [{"key": "00_a", "status": "ok", "bytes": 4e9, "time_s": 1e-3},
                        {"key": "01_b", "status": "wrong", "bytes": 4e9}],
             [{"key": "torch", "status": "ok", "bytes": 4e9, "time_s": 2e-3}])
    _results(tmp_path, [{"key": "00_a", "status": "ok", "bytes": 3e6, "flops": 2e12, "time_s": 0.1}], name="m/y",
             ceiling={"name": "fp32_simt_matmul_flop_per_s", "unit": "FLOP/s", "value": 50e12})
    other = tmp_path / "m" / "y" / "results.big.json"
    other.write_text(json.dumps({**json.loads((tmp_path / "m" / "y" / "results.json").read_text()), "size_name": "big"}))
    lines = runner.summary(tmp_path, ["x", "m/y", "missing"]).splitlines()
    assert lines[1].split() == ["x/00_a", "ok", "1000.0us", "4.00", "TB/s", "100.0"]
    assert lines[2].split() == ["x/01_b", "wrong", "-", "-", "-"]
    assert lines[3].split() == ["x/[torch]", "ok", "2000.0us", "2.00", "TB/s", "50.0"]
    assert lines[4].split() == ["m/y/00_a", "ok", "100000.0us", "20.00", "TFLOP/s", "40.0"], "FLOP/s of a compute ladder"
    assert lines[5].split() == ["m/y[big]/00_a", "ok", "100000.0us", "20.00", "TFLOP/s", "40.0"]
    assert lines[6].split() == ["missing", "no", "results"]


# The synthetic compute ladder matmul/synthetic: arch, sizes, FLOP ceilings, the profile child.

def test_nvrtc_options_carry_the_rungs_arch():
    assert runner.nvrtc_options(Path("/k/common")) == ("--std=c++17", "-lineinfo", "-I/k/common")
    assert runner.nvrtc_options(Path("/k/common"), "sm_90a") == ("--std=c++17", "-lineinfo", "-I/k/common",
                                                                   "-arch=sm_90a")


def _recording_builder(seen):
    def build(path, *, arch, include):
        seen.append((path.name, arch, include))
        return FakeBuild(path.read_text(), {"mm_naive": _matmul, "mm_fenced": _matmul})
    return build


def _matmul(a, b, c, n):
    c.copy_(a @ b)


def test_rungs_are_built_for_their_arch_with_the_common_headers(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    defn = load_definition("matmul/synthetic")
    problem = runner.load_problem(defn)
    seen = []
    ctx = {"torch": torch, "device": "cpu", "sm_count": 4}
    for key in ("00_naive", "01_wgmma"):
        runner.prepare_rung(defn, defn.rung(key), problem, ctx, _recording_builder(seen))
    common = SYNTHETIC_ROOT.resolve() / "kernels" / "common"
    assert seen == [("00_naive.cu", None, common), ("01_wgmma.cu", "sm_90a", common)], \
        "kernels/common is two levels up from a nested ladder"


def test_measured_flop_ceiling_and_its_results_entry(monkeypatch):
    value, source = runner.read_ceiling("NVIDIA H200", "fp32_simt_matmul_flop_per_s")
    assert value == pytest.approx(51.124e12, rel=1e-4) and source == "hardware/measured/h200.json"
    assert runner.read_ceiling("NVIDIA H200", "bf16_tensor_matmul_flop_per_s")[0] == pytest.approx(683.0e12, rel=1e-3)
    assert runner.ceiling_entry("fp32_simt_matmul_flop_per_s", value, source) == {
        "name": "fp32_simt_matmul_flop_per_s", "unit": "FLOP/s", "value": value, "source": source}
    assert runner.ceiling_entry("dram_read_bandwidth_bytes_per_s", 4e12, source)["bytes_per_s"] == 4e12


def test_each_size_goes_to_its_own_file_and_only_the_first_is_profiled(monkeypatch, tmp_path):
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    calls, profiled = [], []

    def fake_child(args, timeout):
        calls.append(args)
        size = args[args.index("--size") + 1]
        path = tmp_path / "matmul" / "synthetic" / ("results.json" if size == "h200" else f"results.{size}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"schema": "coach-ladder-results/1", "partial": True, "size_name": size,
                                    "rungs": [], "peers": [], "provenance": {}}))
        return 0, False

    monkeypatch.setattr(runner, "_run_child", fake_child)
    monkeypatch.setattr(runner, "profile_with_ncu", lambda name, out, size, ncu, timeout_s: profiled.append((name, size)))
    assert runner.run(["matmul/synthetic"], tmp_path, ncu=True) == 0
    assert [c[c.index("--size") + 1] for c in calls] == ["h200", "h200_big"]
    assert {p.name for p in (tmp_path / "matmul" / "synthetic").iterdir()} == {"results.json", "results.h200_big.json"}
    assert profiled == [("matmul/synthetic", "h200")]
    calls.clear()
    profiled.clear()
    assert runner.run(["matmul/synthetic"], tmp_path, size="h200_big", ncu=True) == 0
    assert [c[c.index("--size") + 1] for c in calls] == ["h200_big"] and profiled == [("matmul/synthetic", "h200_big")]


def test_profile_child_warms_every_rung_up_outside_the_ranges(monkeypatch):
    """Every rung is called once before any NVTX range is open (JIT, autotuning), then once inside
    the ranges ``matmul`` > ``synthetic`` > ``matmul/synthetic/<rung>`` that the ncu filter selects."""
    pytest.importorskip("torch")
    import contextlib

    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    events, stack = [], []

    @contextlib.contextmanager
    def fake_range(_torch, label):
        stack.append(label)
        try:
            yield
        finally:
            stack.pop()

    def builder(path, *, arch, include):
        def record(a, b, c, n):
            events.append((path.stem, tuple(stack)))
            c.copy_(a @ b)
        return FakeBuild(path.read_text(), {"mm_naive": record, "mm_fenced": record})

    monkeypatch.setattr(runner, "nvtx_range", fake_range)
    rc = runner.profile_child("matmul/synthetic", "small", ["00_naive", "01_wgmma"], device="cpu", builder=builder)
    assert rc == 0
    ranges = ("matmul", "synthetic")
    assert events == [("00_naive", ()), ("01_wgmma", ()),
                      ("00_naive", (*ranges, "matmul/synthetic/00_naive")),
                      ("01_wgmma", (*ranges, "matmul/synthetic/01_wgmma"))]


def test_git_state_prefers_the_commit_the_sender_names(monkeypatch):
    """A tree copied to a GPU machine may carry a stale .git: the commit named in COACH_GIT_COMMIT wins."""
    monkeypatch.setenv("COACH_GIT_COMMIT", "f33032791c3a32ec07d635507dac89f8cbca62db")
    assert runner.git_state() == {"git_commit": "f33032791c3a32ec07d635507dac89f8cbca62db", "git_dirty": None}
    monkeypatch.delenv("COACH_GIT_COMMIT")
    assert len(runner.git_state()["git_commit"]) == 40


def test_a_trial_measures_only_the_named_rungs_and_peers_and_says_so(fake_data):
    pytest.importorskip("torch")
    out = fake_data / "out"
    builder = lambda path, arch, include: FakeBuild(path.read_text(), IMPLS)  # noqa: E731
    rc = runner.run_ladder_child("fake", out, "small", device="cpu", builder=builder, timing=False,
                                 describe=_describe, only=["01", "torch.clone"])
    assert rc == 0
    doc = json.loads((out / "fake" / "results.small.json").read_text())
    assert [r["key"] for r in doc["rungs"]] == ["01_half"], "a rung is named by its id or its file stem"
    assert [p["key"] for p in doc["peers"]] == ["torch.clone"]
    assert doc["only"] == ["01", "torch.clone"]


def test_time_each_times_every_candidate_after_its_warm_up_and_gives_seconds_per_call():
    """A fake CUDA clock that advances by each call's cost: warm-up calls are not timed, the reps are
    timed together and divided, candidates in order (the helper rung 09 of scan and transpose use)."""
    from types import SimpleNamespace

    clock = {"ms": 0.0}

    class Event:
        def __init__(self, enable_timing):
            assert enable_timing
            self.at = None

        def record(self):
            self.at = clock["ms"]

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return other.at - self.at

    torch = SimpleNamespace(cuda=SimpleNamespace(Event=Event))
    calls = []

    def run(c):
        calls.append(c)
        clock["ms"] += {"a": 2.0, "b": 0.5}[c]

    times = runner.Context(torch, "cuda", 132).time_each(["a", "b"], run, warmup=1, reps=4)
    assert list(times) == ["a", "b"] and calls == ["a"] * 5 + ["b"] * 5
    assert times == {"a": pytest.approx(2e-3), "b": pytest.approx(5e-4)}
