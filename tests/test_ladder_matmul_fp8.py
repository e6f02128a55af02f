"""The FP8 matmul ladder's problem: e4m3 inputs with per-tensor scales, a reference from the
dequantised values, and a tolerance that admits the FP8 tensor core's truncating accumulation at
8192 terms while failing the errors of a wrong kernel (the argument of its problem.py)."""

from __future__ import annotations

import importlib.util

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from coach.capture import ladder as runner  # noqa: E402
from coach.paths import kernels_dir  # noqa: E402

FOLDER = kernels_dir() / "matmul" / "fp8"


def _problem():
    spec = importlib.util.spec_from_file_location("matmul_fp8_problem_under_test", FOLDER / "problem.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


problem = _problem()
TOL = runner.tolerance_for(torch.bfloat16, False, problem)


def _inputs(kind, seed=3, **size):
    return problem.inputs(kind, device="cpu", generator=torch.Generator().manual_seed(seed), **size)


def _rel(out, ref):
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


@pytest.mark.parametrize("kind", problem.INPUTS)
def test_inputs_are_e4m3_scaled_to_the_format_and_b_is_column_major(kind):
    inp = _inputs(kind, **problem.SIZES["small"])
    a, b = inp["a"], inp["b"]
    assert a.dtype == b.dtype == torch.float8_e4m3fn and inp["scale_a"].dtype == torch.float32
    assert a.is_contiguous() and b.stride() == (1, b.shape[0]), "B is held as B^T (n x k), K-major"
    for q in (a, b):
        assert float(q.float().abs().max()) == problem.E4M3_MAX  # the scale maps the largest value to 448
        assert abs(float(q.float().mean())) < 0.05 * float(q.float().abs().mean()), "zero-mean inputs"


def test_the_reference_is_the_product_of_the_dequantised_inputs():
    inp = _inputs("normal", **problem.SIZES["small"])
    ref = problem.reference(inp)["c"]
    a = inp["a"].double() * float(inp["scale_a"])
    b = inp["b"].double() * float(inp["scale_b"])
    assert ref.dtype == torch.float64 and torch.allclose(ref, a @ b, rtol=1e-12, atol=0)
    # the bf16 rounding of C alone stays far inside the tolerance
    assert _rel(ref.to(torch.bfloat16), ref) < TOL / 10


@pytest.mark.parametrize("kind", problem.INPUTS)
def test_the_tolerance_fails_the_errors_of_a_wrong_kernel_at_the_small_size(kind):
    inp = _inputs(kind, **problem.SIZES["small"])
    ref = problem.reference(inp)["c"]
    a = inp["a"].double() * float(inp["scale_a"])
    b = inp["b"].double() * float(inp["scale_b"])
    k = a.shape[1]
    assert _rel(a[:, 128:] @ b[128:], ref) > 10 * TOL, "a dropped K block of 128"
    assert _rel(a @ b / float(inp["scale_b"]), ref) > 10 * TOL, "a scale left out"
    assert _rel(a @ b.flip(1), ref) > 10 * TOL, "tiles of C swapped"
    assert k == 256


def _truncating_accumulation(a, b, group, fraction_bits):
    """A model of Hopper's FP8 tensor-core accumulation: after every ``group`` exact products the
    running sum is truncated (towards zero) to ``fraction_bits`` bits after the leading one."""
    c = np.zeros((a.shape[0], b.shape[1]))
    for j in range(0, a.shape[1], group):
        c = c + a[:, j:j + group] @ b[j:j + group]
        mant, exp = np.frexp(c)
        c = np.ldexp(np.trunc(mant * 2.0 ** (fraction_bits + 1)) / 2.0 ** (fraction_bits + 1), exp)
    return c


@pytest.mark.parametrize("kind", problem.INPUTS)
def test_the_tolerance_admits_truncating_accumulation_over_8192_terms_and_not_a_dropped_block(kind):
    """At the H200 size's k, on a 32 x 32 corner of C: the model's worst case (13 fraction bits, a
    truncation every 16 products) is under half the tolerance; one K block of 128 left out is over it."""
    k = problem.SIZES["h200"]["k"]
    inp = _inputs(kind, m=32, n=32, k=k)
    a = inp["a"].double().numpy()
    b = inp["b"].double().numpy()
    scale = float(inp["scale_a"]) * float(inp["scale_b"])
    ref = torch.from_numpy(a @ b * scale)
    worst = _rel(torch.from_numpy(_truncating_accumulation(a, b, 16, 13) * scale).to(torch.bfloat16), ref)
    assert 2e-3 < worst < TOL / 2, worst  # above bf16 rounding (the model does truncate), within the limit
    dropped = _rel(torch.from_numpy(a[:, 128:] @ b[128:] * scale), ref)
    assert dropped > TOL, dropped
