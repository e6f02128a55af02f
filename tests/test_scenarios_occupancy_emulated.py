"""Scenarios 04 and 05 compute the right answer at a small size on the CPU: both kernels of each run
in the CUDA emulator (tests/ladder_emu) on the inputs the scenario's own program builds, and match
its own float64 reference within its own tolerance; a poisoned output element, or a link cut short,
fails the same check."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from coach.capture import harness  # noqa: E402
from coach.paths import scenarios_dir  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from ladder_emu import EmuBuild  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")
S04 = next(scenarios_dir().glob("scenario-04-*"))
S05 = next(scenarios_dir().glob("scenario-05-*"))


def _program(path: Path):
    spec = importlib.util.spec_from_file_location(f"scenario_program_{path.parent.name[:11]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launch(build: EmuBuild, name: str, grid: int, block: int, *args, smem: int = 0) -> None:
    build.launch(name, (grid, 1, 1), (block, 1, 1), list(zip(build.signatures[name], args)), smem)


@pytest.fixture(scope="module")
def scores():
    return _program(S04 / "scores.py"), EmuBuild(S04 / "scores.cu")


@pytest.fixture(scope="module")
def segments(tmp_path_factory):
    # The emulator keeps __shared__ arrays as statics, which cannot be extern: the dictionary becomes
    # a static array of the same size (nvcc would refuse one above 48 KB; g++ does not care).
    source = (S05 / "segments.cu").read_text()
    extern = "extern __shared__ float4 dict4[];"
    assert source.count(extern) == 1
    path = tmp_path_factory.mktemp("segments") / "segments.cu"
    path.write_text(source.replace(extern, "__shared__ float4 dict4[DICT / 4];"))
    return _program(S05 / "segments.py"), EmuBuild(path)


@pytest.mark.parametrize("kernel", ["score_users_hoisted", "score_users"])
def test_scenario_04_kernels_match_the_reference(scores, kernel):
    program, build = scores
    chain, users = 5, 16  # two blocks of 8 warps
    gen = torch.Generator().manual_seed(3)
    pool, order, heads = program.build_pool(users * chain, chain, gen)
    w = torch.randn(program.METRICS, program.SCORES, generator=gen)
    out = torch.full((users, program.SCORES), float("nan"))
    _launch(build, kernel, users // 8, program.THREADS, pool, heads, w, out, users)
    reference = program.reference_scores(pool, order, w)
    assert harness.relative_error(out, reference) <= program.TOLERANCE
    # a chain cut after its first chunk leaves that user's totals short: the check sees it
    pool[order[0, 0], program.LANES - 1] = -1
    _launch(build, kernel, users // 8, program.THREADS, pool, heads, w, out, users)
    assert harness.relative_error(out, reference) > 100 * program.TOLERANCE


def test_scenario_04_pool_links_every_chunk_once(scores):
    program, _ = scores
    pool, order, heads = program.build_pool(64, 8, torch.Generator().manual_seed(1))
    assert sorted(order.flatten().tolist()) == list(range(64))
    assert (heads == order[:, 0]).all() and (pool[order[:, -1], program.LANES - 1] == -1).all()
    assert (pool[order[:, :-1].flatten(), program.LANES - 1] == order[:, 1:].flatten()).all()
    assert int(pool[:, : program.METRICS].min()) >= 0 and int(pool[:, : program.METRICS].max()) < program.METRIC_VALUES


@pytest.mark.parametrize("variant", ["slow", "fixed"])
def test_scenario_05_kernels_match_the_reference(segments, variant):
    program, build = segments
    threads = program.THREADS[variant]
    per_block = threads // program.LANES * program.SEGMENTS_PER_WARP
    chain, count = 3, 256  # one block of 1024 threads, or eight of 128
    gen = torch.Generator().manual_seed(4)
    pool, order, heads = program.build_column(count * chain, chain, gen)
    dictionary = torch.rand(program.DICT, generator=gen) + 0.5
    out = torch.full((count,), float("nan"))
    name = program.KERNELS[variant]
    _launch(build, name, count // per_block, threads, pool, heads, dictionary, out, count)
    reference = program.reference_sums(pool, order, dictionary)
    assert harness.relative_error(out, reference) <= program.TOLERANCE
    pool[order[0, 0], program.LANES - 1] = -1
    _launch(build, name, count // per_block, threads, pool, heads, dictionary, out, count)
    assert harness.relative_error(out, reference) > 100 * program.TOLERANCE
