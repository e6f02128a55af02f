"""The correctness paths of the PyTorch and Triton scenario programs, on the CPU at small sizes: each
variant's result passes the program's own check against float64, and a wrong result fails it. The
Triton kernel runs under the interpreter (TRITON_INTERPRET=1, set before triton is imported).

The CUDA C++ programs (scenarios 01, 08, 09) need a GPU to run; their sources compile in
test_scenarios_compile.py.
"""

from __future__ import annotations

import importlib
import math
import sys

import pytest

from coach.paths import scenarios_dir

torch = pytest.importorskip("torch")


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
