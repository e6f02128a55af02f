"""The correctness paths of the PyTorch, CuPy and Triton scenario programs, on the CPU at small sizes:
each variant's result passes the program's own check against float64, and a wrong result fails it.
The Triton kernels run under the interpreter (TRITON_INTERPRET=1, set before triton is imported);
scenario 17's CuPy code runs with NumPy. Where a planted problem shows in the operators PyTorch runs
on any device, the slow variant has it and the fixed one does not.

The CUDA C++ programs (scenarios 01, 08, 09) need a GPU to run; their sources compile in
test_scenarios_compile.py.
"""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from coach.paths import scenarios_dir

torch = pytest.importorskip("torch")
CPU = torch.device("cpu")
VARIANTS = ("slow", "fixed")


def program(folder: str, name: str):
    """Import a scenario program as its folder's script would be run (its folder first on sys.path)."""
    path = str(scenarios_dir() / folder)
    sys.path.insert(0, path)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(path)


def test_scenario_10_fp32_and_tf32_products():
    matmul = program("scenario-10-tensor-cores-idle", "matmul")
    a, b = matmul.inputs(96, 80, 128, "cpu", seed=3)
    out = torch.empty(96, 80)
    try:
        for variant in ("slow", "fixed"):
            torch.set_float32_matmul_precision(matmul.PRECISION[variant])
            assert matmul.check(a, b, out) <= matmul.TOLERANCE
    finally:
        torch.set_float32_matmul_precision("highest")
    # an unwritten (still poisoned) element fails the check
    from coach.capture import harness

    out[0, 0] = float("nan")
    assert math.isinf(harness.relative_error(out, a.double() @ b.double()))


def test_scenario_12_decode_and_batched_products():
    decode = program("scenario-12-decode-gemv", "decode")
    w = decode.weights(64, 512, "cpu", seed=2)
    for batch in (1, 8):
        x = decode.tokens(batch, 512, "cpu", seed=2)
        out = torch.empty(batch, 64, dtype=torch.bfloat16)
        assert decode.check(x, w, out) <= decode.TOLERANCE
    # the product with the weights' rows in another order is caught
    from coach.capture import harness

    decode.layer(x, w.flip(0), out)
    assert harness.relative_error(out, x.double() @ w.double().t()) > decode.TOLERANCE


@pytest.fixture
def triton_interpreter(monkeypatch):
    """Triton's CPU interpreter: @triton.jit reads TRITON_INTERPRET when it decorates, so the scenario's
    modules are imported afresh after setting it."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for name in ("chain", "fused"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_scenario_11_chain_and_fused_kernel(triton_interpreter):
    chain = program("scenario-11-unfused-chain", "chain")
    x = chain.activation(16, 2048, "cpu", seed=5)
    y = torch.empty_like(x)
    errors = {variant: chain.check(variant, x, y) for variant in ("slow", "fixed")}
    assert all(e <= chain.TOLERANCE for e in errors.values()), errors
    # the poison is NaN, so a step that writes nothing fails the check
    chain.poison(y)
    assert bool(torch.isnan(y).all())
    from coach.capture import harness

    assert math.isinf(harness.relative_error(y, chain.reference(x)))


def test_scenario_11_fused_kernel_refuses_shapes_it_does_not_tile(triton_interpreter):
    fused = program("scenario-11-unfused-chain", "fused")
    x = torch.zeros(12, 2048, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="rows a multiple of 8"):
        fused.launch(x, 1.0, 0.0, 1.0, torch.empty_like(x))


# --------------------------------------------------------------------------------------------
# Scenarios 13-20
# --------------------------------------------------------------------------------------------


def operators(fn) -> Counter:
    """How often each operator ran in ``fn()`` (the PyTorch profiler, CPU activity only)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return Counter(e.name for e in prof.events())


# --------------------------------------------------------------------------------------------
# 13: launch-bound optimizer
# --------------------------------------------------------------------------------------------

SIZE_13 = {"tensors": 24, "elements": 64, "check_steps": 3}


@pytest.fixture(scope="module")
def optimizer():
    return program("scenario-13-launch-bound-optimizer", "optimizer")


@pytest.mark.parametrize("variant", VARIANTS)
def test_optimizer_variants_pass_the_check(optimizer, variant):
    _, error = optimizer.run(variant, SIZE_13, CPU, seed=1)
    assert error <= optimizer.TOLERANCE


def test_optimizer_check_catches_a_missing_step(optimizer):
    initial = optimizer.draw(SIZE_13, CPU, 1)
    state = optimizer.as_tensors(initial)
    for _ in range(SIZE_13["check_steps"] - 1):
        optimizer.step_fixed(state)
    assert optimizer.check(state, initial, SIZE_13["check_steps"]) > 100 * optimizer.TOLERANCE


def test_optimizer_slow_issues_eight_operations_per_tensor(optimizer):
    state = optimizer.as_tensors(optimizer.draw(SIZE_13, CPU, 1))
    slow, fixed = operators(lambda: optimizer.step_slow(state)), operators(lambda: optimizer.step_fixed(state))
    n = SIZE_13["tensors"]
    assert [slow[op] for op in ("aten::mul_", "aten::lerp_", "aten::addcmul_", "aten::sqrt", "aten::div",
                                "aten::add_", "aten::addcdiv_")] == [2 * n] + [n] * 6
    assert not any(op.startswith("aten::_foreach_") for op in slow)
    # one multi-tensor call per operation for every tensor (on a CPU each falls back to a loop inside)
    assert sum(c for op, c in fixed.items() if op.startswith("aten::_foreach_")) == 8


# --------------------------------------------------------------------------------------------
# 14: host synchronisation in the loop
# --------------------------------------------------------------------------------------------

SIZE_14 = {"batch": 64, "features": 32, "hidden": 48, "classes": 10, "steps": 12, "pool": 4, "log_every": 4}


@pytest.fixture(scope="module")
def train():
    return program("scenario-14-host-sync-in-loop", "train")


@pytest.mark.parametrize("variant", VARIANTS)
def test_training_variants_pass_the_check(train, variant):
    trainer, error = train.run(variant, SIZE_14, CPU, seed=3)
    assert error <= train.TOLERANCE
    assert len(trainer.log) == (SIZE_14["steps"] if variant == "slow" else SIZE_14["steps"] // SIZE_14["log_every"])


def test_training_slow_reads_ten_scalars_per_step(train):
    """isfinite, loss, accuracy, the six parameters' gradient norms and the total gradient norm:
    .item() (a host synchronisation on a GPU) ten times a step; the fixed loop reads one accumulated
    tensor every log_every steps."""
    counts = {}
    for variant in VARIANTS:
        model = train.make_model(SIZE_14, CPU, 3)
        x, y = train.make_data(SIZE_14, CPU, 3)
        counts[variant] = operators(train.Trainer(variant, model, x, y, SIZE_14).epoch)["aten::item"]
    assert counts == {"slow": 10 * SIZE_14["steps"], "fixed": 0}


def test_training_needs_whole_logging_windows(train):
    model = train.make_model(SIZE_14, CPU, 3)
    x, y = train.make_data(SIZE_14, CPU, 3)
    with pytest.raises(ValueError, match="must be a multiple of log_every"):
        train.Trainer("fixed", model, x, y, {**SIZE_14, "steps": 10})


# --------------------------------------------------------------------------------------------
# 16: no copy/compute overlap (streams need a GPU: on a CPU both variants run in order)
# --------------------------------------------------------------------------------------------

SIZE_16 = {"chunks": 4, "rows": 96, "features": 64, "outputs": 48}


@pytest.mark.parametrize("variant", VARIANTS)
def test_scoring_variants_pass_the_check(variant):
    score = program("scenario-16-no-copy-compute-overlap", "score")
    scorer, error = score.run(variant, SIZE_16, CPU, seed=3)
    assert error <= score.TOLERANCE
    assert len(scorer.buffers) == (score.STREAMS if variant == "fixed" else 1)


def test_scoring_check_catches_an_unscored_chunk():
    score = program("scenario-16-no-copy-compute-overlap", "score")
    scorer = score.Scorer("fixed", SIZE_16, CPU, 3)
    scorer.host_out.fill_(float("nan"))
    for i in range(SIZE_16["chunks"] - 1):
        scorer.score_chunk(i, 0)
    assert score.check(scorer) == float("inf")


# --------------------------------------------------------------------------------------------
# 17: allocator churn (CuPy on the GPU; the same array code with NumPy here)
# --------------------------------------------------------------------------------------------

SIZE_17 = {"pool": 3, "rows": 16, "cols": 128, "steps": 5}


def test_normalize_passes_the_check_and_catches_a_missing_batch():
    np = pytest.importorskip("numpy")
    normalize = program("scenario-17-allocator-churn", "normalize")
    pipeline, error = normalize.run(SIZE_17, np, seed=4)
    assert error <= normalize.TOLERANCE
    pipeline.run_pass()  # the timed pass writes the same values again
    assert normalize.check(pipeline) <= normalize.TOLERANCE
    pipeline.out[1] = np.nan
    assert normalize.check(pipeline) == float("inf")


# --------------------------------------------------------------------------------------------
# 18: CPU-bound input pipeline
# --------------------------------------------------------------------------------------------

SIZE_18 = {"batch": 8, "crop": 16, "image": 20, "images": 32, "classes": 10, "hidden": 32, "steps": 6,
           "workers": 2, "prefetch": 2}


@pytest.mark.parametrize("variant", VARIANTS)
def test_loader_variants_pass_the_check(variant):
    loader = program("scenario-18-cpu-bound-input", "loader")
    loop, error = loader.run(variant, SIZE_18, CPU, seed=5)
    assert error <= loader.TOLERANCE
    assert (loop.loader is not None) == (variant == "fixed")


def test_loader_batches_do_not_depend_on_who_prepares_them():
    loader = program("scenario-18-cpu-bound-input", "loader")
    data = loader.Augmented(SIZE_18, 5)
    x, y = data[3]
    assert x.shape == (8, 3, 16, 16) and x.dtype == torch.float32 and x.is_contiguous()
    assert torch.equal(x, loader.Augmented(SIZE_18, 5)[3][0]) and torch.equal(y, data[3][1])
    assert not torch.equal(x, data[4][0])


# --------------------------------------------------------------------------------------------
# 19: hidden layout copies
# --------------------------------------------------------------------------------------------

SIZE_19 = {"batch": 4, "steps": 128, "channels": 64, "time_hidden": 64, "ff": 128, "blocks": 8, "horizon": 24}


@pytest.mark.parametrize("variant", VARIANTS)
def test_mixer_variants_pass_the_check(variant):
    mixer = program("scenario-19-hidden-layout-copies", "mixer")
    _, _, out, error = mixer.run(variant, SIZE_19, CPU, seed=11)
    assert error <= mixer.TOLERANCE and out.shape == (4, 24, 64)


def test_mixer_slow_copies_the_activations_in_every_block():
    """F.linear folds a transposed view with a copy (aten::clone under aten::reshape) once per block
    and in the head; the time-major layout copies once, at the input. This is PyTorch's composite
    matmul, the same on every device."""
    mixer = program("scenario-19-hidden-layout-copies", "mixer")
    w, x = mixer.draw(SIZE_19, CPU, 11)
    with torch.no_grad():
        clones = {v: operators(lambda v=v: mixer.FORECAST[v](w, x))["aten::clone"] for v in VARIANTS}
    assert clones == {"slow": SIZE_19["blocks"] + 1, "fixed": 1}


# --------------------------------------------------------------------------------------------
# 20: the measurement (the Triton kernel under Triton's interpreter)
# --------------------------------------------------------------------------------------------


TRITON_CHECK = """
import sys, torch
sys.path[:0] = [{root!r}, {tests!r}]
from test_scenario_programs import program
bench = program("scenario-20-wrong-measurement", "bench")
gen = torch.Generator().manual_seed(6)
for rows, cols in ((4, 100), (3, 512), (2, 1000)):
    x = torch.randn(rows, cols, generator=gen) * 4
    out = torch.full_like(x, float("nan"))
    assert bench.softmax(x, out) is out
    print(bench.error(out, x), bench.error(torch.full_like(x, 1 / cols), x), bench.TOLERANCE)
"""


def test_triton_softmax_is_right_under_the_interpreter():
    """In its own process: TRITON_INTERPRET must be set before the kernel is decorated, and the
    interpreter patches triton.language for the whole process."""
    pytest.importorskip("triton")
    tests = Path(__file__).resolve().parent
    code = TRITON_CHECK.format(root=str(tests.parent), tests=str(tests))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr
    rows = [[float(v) for v in line.split()] for line in done.stdout.splitlines() if line[:1].isdigit()]
    assert len(rows) == 3
    for error, wrong, tolerance in rows:
        assert error <= tolerance and wrong > 1e3 * tolerance  # a uniform row is far from the softmax


def test_scenario_programs_are_tested_here():
    """Every program of scenarios 13-20 has a test above (a new one needs its own)."""
    covered = {"optimizer.py", "train.py", "score.py", "normalize.py", "loader.py", "mixer.py", "bench.py"}
    scripts = {p.name for n in range(13, 21) for p in scenarios_dir().glob(f"scenario-{n}-*/*.py")}
    assert scripts - {"feed.py"} == covered
