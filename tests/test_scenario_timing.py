"""How the scenario programs time themselves and build their kernels, read from their source (the
programs need a GPU to run; tests/test_harness_timing.py tests the timing itself on a simulated one).

- Every program times through the harness (scenario 20's naive benchmark, the lesson's wrong way,
  aside): kernel scenarios one operation with its footprint (``time_kernel``, which flushes the L2
  where it could stay warm), host-side scenarios whole steps back to back (``time_steps``), and none
  reads CUDA events or synchronises per call on its own.
- Every CUDA C++ kernel is compiled through ``harness.cuda_source`` with ``harness.NVRTC_OPTIONS``
  (``-lineinfo``), so that Nsight Compute's source view names the scenario's own .cu file.
"""

from __future__ import annotations

import ast
import shutil
import subprocess

import pytest

from coach import scenarios
from coach.capture import harness

SCENARIOS = scenarios.all_scenarios()
HOST_SIDE = range(13, 20)  # launch-bound, syncs, pageable copies, overlap, allocator, input pipeline, layout copies


def calls(tree: ast.AST, module: str) -> list[ast.Call]:
    """Calls of ``module.<function>(...)`` in ``tree``."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == module]


def main_program(scenario) -> ast.Module:
    return ast.parse(scenario.programs["slow"].script.read_text())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_each_program_times_through_the_harness(scenario):
    tree = main_program(scenario)
    timed = [c.func.attr for c in calls(tree, "harness") if c.func.attr.startswith("time_")]
    if scenario.number in HOST_SIDE:
        assert timed == ["time_steps"], f"{scenario.id} times {timed}: whole steps go through time_steps"
    elif scenario.number == 20:
        assert timed == ["time_cuda"]  # the careful benchmark: batches over rotating inputs
        careful = next(c for c in calls(tree, "harness") if c.func.attr == "time_cuda")
        keywords = {k.arg for k in careful.keywords}
        assert {"calls_per_sample", "footprint_bytes"} <= keywords
    else:
        assert "time_kernel" in timed and set(timed) == {"time_kernel"}, timed
        for c in calls(tree, "harness"):
            if c.func.attr == "time_kernel":
                assert "footprint_bytes" in {k.arg for k in c.keywords}
    emitted = [c for c in calls(tree, "harness") if c.func.attr == "emit"]
    assert len(emitted) == 1 and "timing" in {k.arg for k in emitted[0].keywords}
    # no program keeps its own event timing (scenario 20 measures the trap it teaches, beside its result)
    source = scenario.programs["slow"].script.read_text()
    assert ("elapsed_time" in source) == (scenario.number == 20)


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if list(s.folder.glob("*.cu"))], ids=lambda s: s.id)
def test_cuda_kernels_are_built_with_line_info_for_their_file(scenario):
    tree = main_program(scenario)
    modules = [c for c in calls(tree, "cupy") if c.func.attr == "RawModule"]
    assert modules, f"{scenario.id} has a .cu file but builds no RawModule"
    for c in modules:
        kw = {k.arg: k.value for k in c.keywords}
        code, options = kw["code"], kw["options"]
        assert isinstance(code, ast.Call) and ast.unparse(code.func) == "harness.cuda_source"
        assert "harness.NVRTC_OPTIONS" in ast.unparse(options)
    assert "-lineinfo" in harness.NVRTC_OPTIONS


def test_cuda_source_names_the_file_for_the_line_table(tmp_path):
    src = tmp_path / 'odd "name".cu'
    src.write_text("__global__ void k() {}\n")
    text = harness.cuda_source(src)
    first, rest = text.split("\n", 1)
    assert first == f'#line 1 "{str(src.resolve())[:-len(src.name)]}odd \\"name\\".cu"'
    assert rest == src.read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_line_table_points_into_the_scenario_source(tmp_path):
    """Compiled from a temporary file, as CuPy compiles (its NVRTC program is named after a temporary
    path that is gone when Nsight Compute looks for it), the PTX's line table names the scenario's
    .cu file, and its lines are lines of that file."""
    path = next(s for s in SCENARIOS if s.number == 1).folder / "particles.cu"
    tmp = tmp_path / "kern.cu"
    tmp.write_text(harness.cuda_source(path))
    done = subprocess.run(["nvcc", "-arch=sm_90", *harness.NVRTC_OPTIONS, "-ptx", "-o", str(tmp_path / "k.ptx"),
                           str(tmp)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "k.ptx").read_text()
    files = {int(line.split()[1]): line.split('"')[1] for line in ptx.splitlines() if line.strip().startswith(".file")}
    assert str(path.resolve()) in files.values() and str(tmp) not in files.values()
    number = next(n for n, f in files.items() if f == str(path.resolve()))
    lines = [int(ln.split()[2]) for ln in ptx.splitlines() if ln.strip().startswith(f".loc\t{number} ")]
    source = path.read_text().splitlines()
    assert lines and all(1 <= n <= len(source) for n in lines)
    assert any("vx" in source[n - 1] for n in lines)  # the drift x' = x + dt * vx sits on a line of the file
