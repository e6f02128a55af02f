"""The FP32 matmul ladder's rung 07 in the CPU emulator: every tile shape its launcher may choose is
correct, not only the one the emulator's timing happens to pick; the tiled launchers refuse sizes
their tiles do not divide."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from coach.capture import ladder as runner  # noqa: E402
from coach.paths import kernels_dir  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from ladder_emu import EmuBuild  # noqa: E402

FOLDER = kernels_dir() / "matmul" / "fp32"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")


def _problem():
    spec = importlib.util.spec_from_file_location("matmul_fp32_problem_under_test", FOLDER / "problem.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


problem = _problem()


@pytest.fixture(scope="module")
def build():
    return EmuBuild(FOLDER / "07_tuned.cu")


@needs_gxx
def test_every_tuned_instantiation_is_an_extern_c_kernel(build):
    assert {cfg.kernel for cfg in problem.TUNED} == set(build.signatures)


@needs_gxx
@pytest.mark.parametrize("cfg", problem.TUNED, ids=[c.kernel for c in problem.TUNED])
@pytest.mark.parametrize("kind", problem.INPUTS)
def test_every_tile_shape_of_rung_07_is_correct(build, cfg, kind):
    size = problem.SIZES["small"]
    gen = torch.Generator().manual_seed(5)
    inp = problem.inputs(kind, device="cpu", generator=gen, **size)
    out = problem.outputs(device="cpu", **size)
    runner.poison(torch, out)
    ctx = runner.Context(torch, "cpu", 3, build)
    problem.launch_config(ctx, cfg, inp["a"], inp["b"], out["c"], size["m"], size["n"], size["k"])
    tol = runner.tolerance_for(torch.float32, kind in problem.EXACT)
    passed, rel, unwritten = runner.compare(torch, out["c"], problem.reference(inp)["c"], tol)
    assert unwritten == 0 and passed, f"{cfg.kernel} on {kind}: relative error {rel}"


def test_tiled_launchers_refuse_sizes_their_tiles_do_not_divide():
    a, b, c = torch.zeros(96, 64), torch.zeros(64, 128), torch.zeros(96, 128)
    ctx = runner.Context(torch, "cpu", 3)  # never launches: the size is refused first
    with pytest.raises(ValueError, match="no tile configuration divides 96 x 128 x 64"):
        problem.fastest_config(ctx, a, b, c, 96, 128, 64)
    with pytest.raises(ValueError, match="sgemm06_warp_tiling needs M a multiple of 128"):
        problem.LAUNCH["06_warp_tiling"](ctx, {"a": a, "b": b}, {"c": c})
