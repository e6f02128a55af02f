"""Every rung of every ladder computes the right answer at a small size on the CPU: CUDA rungs through
the emulator (tests/ladder_emu), Triton rungs under TRITON_INTERPRET=1, both through the rung's real
launcher and the runner's own check (fresh random inputs, poisoned outputs, per-dtype tolerance).
A rung whose ladder.toml says ``emulate = false`` (inline PTX the emulator lacks) is skipped with
its ``emulate_why``: it is checked on the GPU only."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from coach.capture import ladder as runner  # noqa: E402
from coach.ladders import ladder_names, load_definition  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from ladder_emu import EMU_BLOCKS_PER_SM, EmuBuild, triton_interpreter  # noqa: E402

RUNGS = [(name, r) for name in ladder_names() for r in load_definition(name).rungs]
SYNTHETIC_ROOT = Path(__file__).parent / "data" / "ladders" / "synthetic-root"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")
SM_COUNT = 3  # a small "GPU": persistent grids still have several blocks, each looping several times


def emu_builder(path, *, arch, include):
    """The emulator in the runner's builder's place: it runs any target's C++ (``arch`` is for NVRTC)."""
    return EmuBuild(path, include)


def _measure(name, rung, monkeypatch, seed=11):
    if not rung.emulate:
        pytest.skip(f"{name}/{rung.key} runs on the GPU only: {rung.emulate_why}")
    if rung.language == "triton":
        # Before triton is first imported: it decides at import whether its own jit functions (tl.max,
        # ...) are interpreted.
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        pytest.importorskip("triton")
        import triton.language as tl

        if type(tl.max).__name__ != "InterpretedFunction":
            pytest.skip("triton was imported before TRITON_INTERPRET was set; run this file on its own")
        triton_interpreter.patch(monkeypatch)  # bf16 tl.dot and autotune on the CPU
    defn = load_definition(name)
    problem = runner.load_problem(defn)
    ctx = {"torch": torch, "device": "cpu", "sm_count": SM_COUNT}
    return runner.measure_item(torch, problem, lambda: runner.prepare_rung(defn, rung, problem, ctx, emu_builder),
                               problem.SIZES["small"], "cpu", seed, lambda: None, None)


@needs_gxx
@pytest.mark.parametrize("name, rung", RUNGS, ids=[f"{n}/{r.key}" for n, r in RUNGS])
def test_rung_is_correct_at_a_small_size(name, rung, monkeypatch):
    record = _measure(name, rung, monkeypatch)
    assert record["status"] == "ok", record.get("error", "") + "\n" + record.get("traceback", "")
    assert [c["name"] for c in record["checks"]] == list(runner.load_problem(load_definition(name)).INPUTS)


def test_a_rung_the_emulator_cannot_run_is_skipped_with_its_reason(monkeypatch):
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    fenced = load_definition("matmul/synthetic").rung("01")
    with pytest.raises(pytest.skip.Exception, match="matmul/synthetic/01_wgmma runs on the GPU only: wgmma.fence is "
                                                    "inline PTX the CPU emulator does not implement"):
        _measure("matmul/synthetic", fenced, monkeypatch)


@needs_gxx
def test_the_synthetic_ladders_naive_rung_runs_in_the_emulator_from_a_nested_folder(monkeypatch):
    """Its #include "tile.cuh" is found in kernels/common two levels up."""
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    record = _measure("matmul/synthetic", load_definition("matmul/synthetic").rung("00"), monkeypatch)
    assert record["status"] == "ok", record.get("error")
    assert record["flops"] == 2 * 32**3 and record["kernels"] == ["mm_naive"]


# The emulator itself: warp exchanges, barriers, and the errors it must report.

EMU_KERNELS = r"""
extern "C" __global__ void shuffles(const float* x, float* out) {
    const unsigned lane = threadIdx.x % 32;
    const float v = x[threadIdx.x];
    const unsigned base = threadIdx.x * 6;
    out[base + 0] = __shfl_xor_sync(0xffffffffu, v, 1);
    out[base + 1] = __shfl_down_sync(0xffffffffu, v, 3);
    out[base + 2] = __shfl_up_sync(0xffffffffu, v, 2);
    out[base + 3] = __shfl_sync(0xffffffffu, v, 5);
    out[base + 4] = __shfl_xor_sync(0xffffffffu, v, 4, 8);
    out[base + 5] = (float)__popc(__ballot_sync(0xffffffffu, lane % 3 == 0));
}
extern "C" __global__ void block_sum(const float* x, float* out) {
    __shared__ float s[64];
    s[threadIdx.x] = x[blockIdx.x * 64 + threadIdx.x];
    __syncthreads();
    for (unsigned k = 32; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void deadlock(float* out) {
    if (threadIdx.x < 16) __syncthreads();
    else __syncwarp();
    out[threadIdx.x] = 1.0f;
}
extern "C" __global__ void out_of_bounds(float* out, int n) {
    out[threadIdx.x + n] = 1.0f;
}
extern "C" __global__ void handshake(unsigned* flags, float* out) {
    // each block's own shared memory, then a wait for the next block's flag: only all blocks resident finish
    float* mine = static_cast<float*>(emu::dynamic_shared());
    if (threadIdx.x == 0) mine[0] = static_cast<float>(blockIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) *reinterpret_cast<volatile unsigned*>(&flags[blockIdx.x]) = 1u;
    const unsigned next = (blockIdx.x + 1) % gridDim.x;
    for (unsigned spins = 0; *reinterpret_cast<volatile unsigned*>(&flags[next]) == 0u; ++spins) {
        if (spins == 1000) __trap();
        __nanosleep(32);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = mine[0];
}
"""


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    src = tmp_path_factory.mktemp("emu") / "kernels.cu"
    src.write_text(EMU_KERNELS)
    return EmuBuild(src)


def _launch(build, name, grid, block, *args):
    ctx = runner.Context(torch, "cpu", 1, build)
    ctx.launch(name, grid, block, *args)


@needs_gxx
def test_emulator_shuffles_and_ballot(emu):
    x = torch.arange(64, dtype=torch.float32) * 10
    out = torch.full((64 * 6,), float("nan"))
    _launch(emu, "shuffles", 1, 64, x, out)
    got = out.reshape(64, 6)
    lane = torch.arange(64) % 32
    warp0 = torch.arange(64) - lane
    v = lambda src: (warp0 + src).float() * 10  # noqa: E731
    assert torch.equal(got[:, 0], v(lane ^ 1))
    assert torch.equal(got[:, 1], v(torch.where(lane + 3 < 32, lane + 3, lane)))
    assert torch.equal(got[:, 2], v(torch.where(lane >= 2, lane - 2, lane)))
    assert torch.equal(got[:, 3], v(torch.full_like(lane, 5)))
    assert torch.equal(got[:, 4], v(lane ^ 4)), "xor within groups of 8 lanes"
    assert torch.equal(got[:, 5], torch.full((64,), 11.0)), "lanes 0, 3, ..., 30: 11 of 32"


@needs_gxx
def test_emulator_block_barriers(emu):
    x = torch.randn(3 * 64)
    out = torch.empty(3)
    _launch(emu, "block_sum", 3, 64, x, out)
    assert torch.allclose(out, x.reshape(3, 64).sum(1), atol=1e-5)


@needs_gxx
def test_emulator_reports_deadlock_and_out_of_bounds_writes(emu):
    with pytest.raises(RuntimeError, match="deadlock"):
        _launch(emu, "deadlock", 1, 32, torch.empty(32))
    with pytest.raises(RuntimeError, match="wrote outside a tensor of 32"):
        _launch(emu, "out_of_bounds", 1, 32, torch.empty(32), 1)
    out = torch.empty(32)
    _launch(emu, "out_of_bounds", 1, 32, out, 0)
    assert torch.equal(out, torch.ones(32))


@needs_gxx
@pytest.mark.parametrize("seed", [0, 1])
def test_emulator_runs_a_cooperative_launchs_blocks_side_by_side(emu, seed):
    """Block b waits for block b + 1's flag (the last for block 0's): a cooperative launch finishes,
    each block reading back its own dynamic shared memory; block by block, block 0 waits for ever."""
    emu.schedule = seed
    out = torch.full((4 * 64,), float("nan"))
    ctx = runner.Context(torch, "cpu", 1, emu)
    ctx.launch("handshake", 4, 64, torch.zeros(4, dtype=torch.int32), out, smem=16, cooperative=True)
    assert torch.equal(out, torch.arange(4).repeat_interleave(64).float())
    with pytest.raises(RuntimeError, match=r"__trap\(\) \(block 0,0,0\)"):
        ctx.launch("handshake", 4, 64, torch.zeros(4, dtype=torch.int32), out, smem=16)
    emu.schedule = 0


@needs_gxx
@pytest.mark.parametrize("rung_key, first", [("04_decoupled_lookback", 40), ("05_lookback_vec4", 40),
                                             ("06_persistent_prefetch", 40), ("08_block_lookback", 40),
                                             ("08_block_lookback", 600)])
def test_scan_look_back_adds_aggregates_across_windows(rung_key, first):
    """Start the tile counter at ``first`` with tile 0 holding an inclusive prefix and the tiles
    between only their aggregates: the two tiles launched must look back over several windows (of 32,
    or for rung 08 one of 32 and then of 256: 600 tiles take three) and add them all."""
    defn = load_definition("scan")
    problem = runner.load_problem(defn)
    build = EmuBuild(defn.path(defn.rung(rung_key)))
    tile = problem.TILE
    n = (first + 2) * tile
    x = torch.randint(-2, 3, (n,)).float()
    out = torch.full((n,), float("nan"))
    state = torch.zeros(first + 2 + 2, dtype=torch.int64)
    aggregates = torch.randint(-50, 50, (first,)).float()
    bits = aggregates.view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # a status word: state << 32 | float bits
    state[:first] = bits | (1 << 32)  # AGGREGATE
    state[0] = bits[0] | (2 << 32)  # PREFIX: tile 0's inclusive prefix is its aggregate
    counter = state[first + 2:].view(torch.int32)
    counter[0] = first
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    kernel = next(iter(build.signatures))
    ctx.launch(kernel, 2, 256, x, out, state[:first + 2], counter, n)
    prefix = aggregates.sum()
    expected = torch.cumsum(x[first * tile:], 0) + prefix
    assert torch.equal(out[first * tile:], expected)
    assert torch.isnan(out[: first * tile]).all(), "tiles before the counter's start are not touched"
    assert (state[first: first + 2] >> 32).tolist() == [2, 2], "both tiles end holding their inclusive prefix"


@needs_gxx
@pytest.mark.parametrize("kernel", ["scan09_items8_ahead1_lag2", "scan09_items8_ahead2_lag1",
                                    "scan09_items16_ahead1_lag1", "scan09_items16_ahead1_lag2",
                                    "scan09_items16_ahead2_lag1"])
@pytest.mark.parametrize("first, unpublished", [(40, None), (1100, None), (700, 100)])
def test_scan_lagged_look_back_walks_512_a_poll(kernel, first, unpublished):
    """Rung 09's candidates, each with its own tile: start the tile counter at ``first`` past
    published aggregates (tile 0 an inclusive prefix), so that the block's tiles look back one round
    late over several windows (of 512 status words, or 256 for 8 values a thread). With ``unpublished``, that tile has not published but tile
    ``unpublished + 1`` holds an inclusive prefix: the walk stops there and must not wait for it."""
    defn = load_definition("scan")
    problem = runner.load_problem(defn)
    cfg = next(c for c in problem.LAGGED if c.kernel == kernel)
    build = EmuBuild(defn.path(defn.rung("09")))
    tile = cfg.tile
    n = (first + 2) * tile + 5  # two full tiles and a partial third
    x = torch.randint(-2, 3, (n,)).float()
    out = torch.full((n,), float("nan"))
    tiles = first + 3
    state = torch.zeros(tiles + 2, dtype=torch.int64)
    aggregates = torch.randint(-50, 50, (first,)).float()
    bits = aggregates.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    state[:first] = bits | (1 << 32)  # AGGREGATE
    state[0] = bits[0] | (2 << 32)  # PREFIX
    prefix = aggregates.sum()
    if unpublished is not None:
        state[unpublished] = 0  # NOT_READY, and garbage below it: the prefix above must hide both
        state[: unpublished] = 0
        inclusive = aggregates[: unpublished + 2].sum()  # what tile unpublished + 1's prefix would be
        state[unpublished + 1] = (inclusive.view(torch.int32).to(torch.int64) & 0xFFFFFFFF) | (2 << 32)
    state[tiles:].view(torch.int32)[0] = first
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    ctx.launch(kernel, 2, 256, x, out, state[:tiles], state[tiles:].view(torch.int32), n, smem=cfg.smem)
    expected = torch.cumsum(x[first * tile:].double(), 0) + float(prefix)
    assert torch.equal(out[first * tile:], expected.float())
    assert torch.isnan(out[: first * tile]).all(), "tiles before the counter's start are not touched"
    assert (state[first:tiles] >> 32).tolist() == [2, 2, 2], "every tile ends holding its inclusive prefix"


SPECIALISED = ["scan10_items16_ahead1_lag2", "scan10_items16_ahead1_lag2_warps2", "scan10_items16_ahead1_lag2_warps2_defer",
               "scan10_items16_ahead2_lag1_warps2", "scan10_items8_ahead2_lag2_warps2",
               "scan10_items8_ahead2_lag2_warps2_defer"]


def _status_words(values, epoch, flag):
    """Rung 10's status words: (epoch << 2 | flag) << 32 | the value's float bits."""
    bits = values.float().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    return bits | ((epoch << 2 | flag) << 32)


@needs_gxx
def test_scan_problem_declares_every_rung_10_kernel():
    problem = runner.load_problem(load_definition("scan"))
    assert [c.kernel for c in problem.SPECIALISED] == SPECIALISED


@needs_gxx
@pytest.mark.parametrize("kernel", SPECIALISED)
@pytest.mark.parametrize("first, stale", [(40, None), (1100, None), (700, 100)])
def test_scan_lookback_warp_adds_pre_published_aggregates(kernel, first, stale):
    """Rung 10's candidates, each with its own tile: the call's counter (counters[epoch & 1]) starts at
    ``first`` past aggregates published in this call's epoch (tile 0 an inclusive prefix), so the
    look-back warp walks several polls' worth of them. With ``stale``, that tile and all below it hold
    words of an older epoch (one an inclusive prefix with a wrong value) and tile ``stale + 1`` this
    epoch's inclusive prefix: the walk stops there and neither waits for nor adds the stale words.
    The other counter, the next call's, ends cleared."""
    defn = load_definition("scan")
    problem = runner.load_problem(defn)
    cfg = next(c for c in problem.SPECIALISED if c.kernel == kernel)
    build = EmuBuild(defn.path(defn.rung("10")))
    tile, epoch = cfg.tile, 6
    n = (first + 2) * tile + 5  # two full tiles and a partial third
    x = torch.randint(-2, 3, (n,)).float()
    out = torch.full((n,), float("nan"))
    tiles = first + 3
    state = torch.zeros(tiles + 1, dtype=torch.int64)
    aggregates = torch.randint(-50, 50, (first,)).float()
    state[:first] = _status_words(aggregates, epoch, 1)
    state[0] = _status_words(aggregates[:1], epoch, 2)[0]
    if stale is not None:
        state[: stale + 1] = _status_words(torch.randint(-50, 50, (stale + 1,)).float(), epoch - 1, 2)
        inclusive = aggregates[: stale + 2].sum()
        state[stale + 1] = _status_words(inclusive.reshape(1), epoch, 2)[0]
    counters = state[tiles:].view(torch.int32)
    counters[epoch & 1] = first
    counters[(epoch + 1) & 1] = 77
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    ctx.launch(kernel, 2, cfg.block, x, out, state[:tiles], counters, n, epoch, smem=cfg.smem)
    expected = torch.cumsum(x[first * tile:].double(), 0) + float(aggregates.sum())
    assert torch.equal(out[first * tile:], expected.float())
    assert torch.isnan(out[: first * tile]).all(), "tiles before the counter's start are not touched"
    assert (state[first:tiles] >> 32).tolist() == [epoch << 2 | 2] * 3, "every tile ends holding its inclusive prefix"
    assert counters[(epoch + 1) & 1].item() == 0, "the next call's counter is cleared"


@needs_gxx
def test_scan_lookback_warp_waits_for_a_word_of_an_older_epoch():
    """A predecessor's word left by an earlier call (older epoch, flagged an inclusive prefix) is not
    ready: the look-back waits on it (the emulator's spin limit then traps) instead of using it."""
    defn = load_definition("scan")
    problem = runner.load_problem(defn)
    cfg = problem.SPECIALISED[0]
    build = EmuBuild(defn.path(defn.rung("10")))
    epoch, first = 3, 40
    n = (first + 1) * cfg.tile
    state = torch.zeros(first + 2, dtype=torch.int64)
    state[:first] = _status_words(torch.ones(first), epoch, 1)
    state[0] = _status_words(torch.ones(1), epoch, 2)[0]
    state[first - 1] = _status_words(torch.ones(1), epoch - 1, 2)[0]
    counters = state[first + 1:].view(torch.int32)
    counters[epoch & 1] = first
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    with pytest.raises(RuntimeError, match="__trap"):
        ctx.launch(cfg.kernel, 1, cfg.block, torch.ones(n), torch.empty(n), state[:first + 1], counters, n,
                   epoch, smem=cfg.smem)


@needs_gxx
def test_scan_lookback_warp_calls_again_without_a_memset():
    """Every candidate through rung 10's launcher, three calls on one buffer of status words and
    counters (never cleared between calls; the epoch tells the calls apart), each exact on fresh
    inputs, with many tiles a block (one SM's worth of blocks) and a partial last tile."""
    defn = load_definition("scan")
    problem = runner.load_problem(defn)
    build = EmuBuild(defn.path(defn.rung("10")))
    ctx = runner.Context(torch, "cpu", 1, build)
    n = 23 * 4096 + 3
    for cfg in problem.SPECIALISED:
        for _ in range(3):
            x = torch.randint(-2, 3, (n,)).float()
            out = torch.full((n,), float("nan"))
            problem.launch_specialised(ctx, cfg, x, out)
            assert torch.equal(out, torch.cumsum(x.double(), 0).float()), cfg.kernel


@needs_gxx
def test_transpose_tile_shapes_every_candidate_is_exact():
    """Rung 09's five instantiations (the runner's own check takes only the first on the CPU)."""
    defn = load_definition("transpose")
    problem = runner.load_problem(defn)
    build = EmuBuild(defn.path(defn.rung("09")))
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    x = torch.randn(128, 192)
    for cfg in problem.SHAPES:
        out = torch.full((192, 128), float("nan"))
        problem.launch_shape(ctx, cfg, x, out)
        assert torch.equal(out, x.t()), cfg.kernel


# Rung 11: a cooperative grid whose blocks wait for each other's aggregates, run side by side by the
# emulator (each block its own dynamic shared memory) on schedules that let blocks drift apart.

SEGMENTED = ["scan11_items16_ahead2_lag1", "scan11_items16_ahead1_lag2", "scan11_items16_ahead1_lag1",
             "scan11_items16_ahead3_lag1", "scan11_items32_ahead1_lag1", "scan11_items8_ahead2_lag1",
             "scan11_items12_ahead1_lag2", "scan11_items8_ahead1_lag2", "scan11_items16_ahead1_lag3",
             "scan11_items12_ahead1_lag3", "scan11_items8_ahead1_lag3"]
SEGMENT_ROUNDS = 18  # rounds a block: more than the 16 segments of status words kept, so their ring wraps


@pytest.fixture(scope="module")
def scan11():
    defn = load_definition("scan")
    return runner.load_problem(defn), EmuBuild(defn.path(defn.rung("11")))


def _launcher_calls(launch, build, cfg, calls, seed, rounds=SEGMENT_ROUNDS):
    """A generator of ``calls`` calls of a rung's launcher (rung 11's launch_segmented, rung 12's
    launch_counted) on one context (one status buffer, never cleared between calls), each on fresh
    integers over ``rounds`` rounds of the grid and a partial last tile: (input, output, exact) for each
    call as it returns."""
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    build.schedule = seed
    grid = SM_COUNT * min(cfg.blocks_per_sm, EMU_BLOCKS_PER_SM)
    n = (rounds - 1) * grid * cfg.tile + 3 * cfg.tile + 5
    for _ in range(calls):
        x = torch.randint(-2, 3, (n,)).float()
        out = torch.full((n,), float("nan"))
        launch(ctx, cfg, x, out)
        yield x, out, torch.equal(out, torch.cumsum(x.double(), 0).float())


def _segmented_calls(problem, build, cfg, calls, seed):
    return _launcher_calls(problem.launch_segmented, build, cfg, calls, seed)


@needs_gxx
def test_scan_problem_declares_every_rung_11_kernel(scan11):
    problem, build = scan11
    assert [c.kernel for c in problem.SEGMENTED] == SEGMENTED and set(SEGMENTED) == set(build.signatures)


@needs_gxx
@pytest.mark.parametrize("kernel", SEGMENTED)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scan_segment_carry_is_exact_on_skewed_schedules_without_a_memset(scan11, kernel, seed):
    """Every rung 11 candidate through its launcher: three calls on one status buffer, the blocks side
    by side at one pace (seed 0) or at speeds 1-8 times apart, each call exact on fresh inputs."""
    problem, build = scan11
    cfg = next(c for c in problem.SEGMENTED if c.kernel == kernel)
    assert [exact for _, _, exact in _segmented_calls(problem, build, cfg, 3, seed)] == [True] * 3


def _mutant(tmp_path, scan11, replacements):
    source = load_definition("scan").path(load_definition("scan").rung("11")).read_text()
    for old, new in replacements:
        assert source.count(old) == 1, f"the mutation's target {old!r} is not in rung 11 once"
        source = source.replace(old, new)
    path = tmp_path / "11_mutant.cu"
    path.write_text(source)
    return EmuBuild(path)


@needs_gxx
def test_scan_segment_carry_tags_without_the_calls_base_are_caught(scan11, tmp_path):
    """A mutant whose status tags are the tile index alone, the same in every call: a block that
    reads a word before this call's aggregate is there takes the previous call's (the second call is
    not exact) or finds a later tile's tag of the previous call in the slot and traps. The real kernel
    is exact on the same schedules (the test above; seed 3 is one where the mutant traps)."""
    problem, _ = scan11
    build = _mutant(tmp_path, scan11, [("base + i * G + c, total", "1u + i * G + c, total"),
                                       ("!= base + tw;", "!= 1u + tw;")])
    cfg = problem.SEGMENTED[0]
    for seed in (1, 2, 3):
        calls = _segmented_calls(problem, build, cfg, 2, seed)
        assert next(calls)[2], "the first call finds no stale words of its own tags"
        try:
            caught = not next(calls)[2]
        except RuntimeError as err:
            caught = "__trap" in str(err)
        assert caught, f"seed {seed}: the second call read stale aggregates unnoticed"


@needs_gxx
def test_scan_segment_carry_ring_too_short_for_the_lag_traps(scan11, tmp_path):
    """A mutant that keeps 2 segments of status words instead of 16 (readers may lag 2 LAG + 2): a
    block rewrites a word before a lagging block has read it, and the reader, finding a newer tag
    than it waits for, traps instead of adding the wrong aggregate."""
    problem, _ = scan11
    build = _mutant(tmp_path, scan11, [("#define KEPT 16u", "#define KEPT 2u"),
                                       ('static_assert(2 * LAG + 3 <= KEPT', 'static_assert(true || 2 * LAG + 3 <= KEPT')])
    cfg = problem.SEGMENTED[0]
    with pytest.raises(RuntimeError, match="__trap"):
        list(_segmented_calls(problem, build, cfg, 1, 1))


@needs_gxx
def test_scan_segment_carry_grid_fits_and_fills_its_last_segment(scan11, monkeypatch):
    """Rung 11's grid is no larger than the SMs hold (the build's blocks_per_sm, here 1 or 2 an SM) and
    takes as few blocks as need the same rounds; a kernel that fits nowhere is an error."""
    problem, build = scan11
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    cfg = problem.SEGMENTED[0]
    assert problem.segmented_grid(ctx, cfg, 40 * cfg.tile) == 6  # 3 SMs x 2: 7 rounds
    assert problem.segmented_grid(ctx, cfg, 37 * cfg.tile) == 6  # 37 tiles: 7 rounds need 6 blocks
    assert problem.segmented_grid(ctx, cfg, 31 * cfg.tile) == 6  # 6 rounds of 6, the last one full but 5
    assert problem.segmented_grid(ctx, cfg, 25 * cfg.tile + 1) == 6  # 26 tiles, 5 rounds: 6 blocks, not fewer
    assert problem.segmented_grid(ctx, cfg, 13 * cfg.tile) == 5  # 13 tiles: 3 rounds of 5, not 6, 6, 1
    assert problem.segmented_grid(ctx, cfg, 2 * cfg.tile) == 2
    monkeypatch.setattr(build, "blocks_per_sm", lambda name, threads, smem: 1)
    assert problem.segmented_grid(ctx, cfg, 40 * cfg.tile) == 3
    monkeypatch.setattr(build, "blocks_per_sm", lambda name, threads, smem: 0)
    with pytest.raises(RuntimeError, match="fits on an SM"):
        problem.segmented_grid(ctx, cfg, 40 * cfg.tile)


# Rung 12: rung 11's carry with tiles from a counter (two counters, by call parity).

COUNTED = ["scan12_items16_ahead1_lag2", "scan12_items12_ahead1_lag2", "scan12_items8_ahead1_lag3"]


@pytest.fixture(scope="module")
def scan12():
    defn = load_definition("scan")
    return runner.load_problem(defn), EmuBuild(defn.path(defn.rung("12")))


def _counted_calls(problem, build, cfg, calls, seed, rounds=SEGMENT_ROUNDS):
    return _launcher_calls(problem.launch_counted, build, cfg, calls, seed, rounds)


@needs_gxx
def test_scan_problem_declares_every_rung_12_kernel(scan12):
    problem, build = scan12
    assert [c.kernel for c in problem.COUNTED] == COUNTED and set(COUNTED) == set(build.signatures)


@needs_gxx
@pytest.mark.parametrize("kernel", COUNTED)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scan_counter_carry_is_exact_on_skewed_schedules_without_a_memset(scan12, kernel, seed):
    """Every rung 12 candidate through its launcher: three calls on one status buffer and one pair of
    counters, blocks side by side at one pace or at speeds 1-8 times apart (a slow block takes fewer
    tiles, so windows are of every length), each call exact on fresh inputs."""
    problem, build = scan12
    cfg = next(c for c in problem.COUNTED if c.kernel == kernel)
    assert [exact for _, _, exact in _counted_calls(problem, build, cfg, 3, seed)] == [True] * 3


def _mutant12(tmp_path, replacements):
    source = load_definition("scan").path(load_definition("scan").rung("12")).read_text()
    for old, new in replacements:
        assert source.count(old) == 1, f"the mutation's target {old!r} is not in rung 12 once"
        source = source.replace(old, new)
    path = tmp_path / "12_mutant.cu"
    path.write_text(source)
    return EmuBuild(path)


@needs_gxx
def test_scan_counter_carry_next_calls_counter_left_uncleared_is_caught(scan12, tmp_path):
    """A mutant in which block 0 does not clear the next call's counter: the third call (the first's
    counter again) starts past every tile and writes nothing."""
    problem, _ = scan12
    build = _mutant12(tmp_path, [("if (blockIdx.x == 0) counters[(call + 1u) & 1u] = 0;", "")])
    assert [exact for _, _, exact in _counted_calls(problem, build, problem.COUNTED[0], 3, 1)] == [True, True, False]


@needs_gxx
def test_scan_counter_carry_ring_shorter_than_the_tiles_in_flight_traps(scan12, tmp_path):
    """A mutant keeping 8 status words instead of 16,384: a block rewrites a word before a lagging block
    has read it, and the reader, finding a newer tag than it waits for, traps."""
    problem, _ = scan12
    build = _mutant12(tmp_path, [("#define RING (1u << 14)", "#define RING (1u << 3)")])
    with pytest.raises(RuntimeError, match="__trap"):
        list(_counted_calls(problem, build, problem.COUNTED[0], 1, 1))


@needs_gxx
def test_scan_counter_carry_tags_without_the_calls_base_are_caught(scan12, tmp_path):
    """As rung 11's: tags that are the tile index alone let the second call read the first call's
    aggregates (not exact) or trap."""
    problem, _ = scan12
    build = _mutant12(tmp_path, [("base + cur, total", "1u + cur, total"), ("!= base + tw;", "!= 1u + tw;")])
    for seed in (1, 2, 3):
        calls = _counted_calls(problem, build, problem.COUNTED[0], 2, seed)
        assert next(calls)[2]
        try:
            caught = not next(calls)[2]
        except RuntimeError as err:
            caught = "__trap" in str(err)
        assert caught, f"seed {seed}: the second call read stale aggregates unnoticed"


@needs_gxx
@pytest.mark.parametrize("first", [40, 700])
def test_scan_counter_carry_adds_a_window_longer_than_the_block(scan12, first):
    """The call's counter starts at ``first`` past aggregates already published with this call's tags:
    the block's first tile adds a window of ``first`` words (700: three passes of 256 threads)."""
    problem, build = scan12
    cfg = problem.COUNTED[0]
    base, call = 5, 1
    n = (first + 2) * cfg.tile + 5
    x = torch.randint(-2, 3, (n,)).float()
    out = torch.full((n,), float("nan"))
    state = torch.zeros(problem.RING12 + 1, dtype=torch.int64)
    aggregates = torch.randint(-50, 50, (first,)).float()
    bits = aggregates.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    state[:first] = bits | ((base + torch.arange(first)) << 32)
    counters = state[problem.RING12:].view(torch.int32)
    counters[call] = first
    counters[1 - call] = 99
    build.schedule = 0
    ctx = runner.Context(torch, "cpu", SM_COUNT, build)
    ctx.launch(cfg.kernel, 1, 256, x, out, state[:problem.RING12], counters, n, base, call, smem=cfg.smem,
               cooperative=True)
    expected = torch.cumsum(x[first * cfg.tile:].double(), 0) + float(aggregates.sum())
    assert torch.equal(out[first * cfg.tile:], expected.float())
    assert torch.isnan(out[: first * cfg.tile]).all(), "tiles before the counter's start are not touched"
    assert counters[1 - call].item() == 0, "the next call's counter is cleared"
