"""The roofline of kernels with known floating-point work (tests/programs/roofline_kernels.cu),
recorded on the H200 by scripts/record-roofline.sh into tests/data/ncu_roofline/.

The expected FLOP counts follow from the program's definition (see its header) and its machine code,
not from a run: Nsight Compute counts executed thread instructions exactly, so the roofline's FLOPs
must equal them. In the half2 kernels, nvcc 13.0 (-O3, sm_90) folds two of the six HADD2 and
materialises three constants with HFMA2.MMA (a move that Nsight Compute counts as an HFMA2), so the
machine code has 4K + 3 HFMA2 and 4 HADD2 per element (cuobjdump -sass): 16K + 20 FLOP, not 16K + 12.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from test_roofline import check_invariants

from coach.analyze.roofline import pair, roofline
from coach.ingest import load

HERE = Path(__file__).parent / "data" / "ncu_roofline"
REPORT = HERE / "roofline_kernels"  # a saved coach profile of the .ncu-rep (see PROVENANCE.md)
pytestmark = pytest.mark.skipif(not REPORT.exists(), reason="record it with scripts/record-roofline.sh (needs the H200)")

N = 1 << 26  # elements of the element-wise chains
# kernel: (precision, FLOPs per element, bytes per element, bound at DRAM)
CHAINS = {
    "fp32_fma_low": ("fp32", 8 * 2 + 6, 8, "memory"),
    "fp32_fma_high": ("fp32", 8 * 128 + 6, 8, "compute"),
    "fp64_fma_low": ("fp64", 8 * 2 + 6, 16, "memory"),
    "fp64_fma_high": ("fp64", 8 * 64 + 6, 16, "compute"),
    "half2_fma_low": ("fp16", 16 * 2 + 20, 8, "memory"),
    "half2_fma_high": ("fp16", 16 * 128 + 20, 8, "compute"),
}


@pytest.fixture(scope="module")
def rl():
    return roofline(load(REPORT))


def dram(rl, kernel: str, precision: str) -> dict:
    t = rl.table.filter((pl.col("kernel_name") == kernel) & (pl.col("level") == "DRAM") & (pl.col("precision") == precision))
    assert t.height == 1, kernel
    return t.row(0, named=True)


def test_chains_flops_bytes_and_bound(rl):
    for kernel, (precision, flop, nbytes, bound) in CHAINS.items():
        r = dram(rl, kernel, precision)
        assert r["flop"] == pytest.approx(flop * N, rel=1e-3), kernel
        # DRAM bytes: the array read and the result written; some writes may still sit in L2 at the end
        assert r["bytes"] == pytest.approx(nbytes * N, rel=0.1), kernel
        assert r["intensity_flop_per_byte"] == pytest.approx(flop / nbytes, rel=0.1), kernel
        assert r["bound"] == bound, kernel


def test_gemms(rl):
    for kernel in ("sgemm_naive", "sgemm_tiled"):
        assert dram(rl, kernel, "fp32")["flop"] == pytest.approx(2 * 2048**3, rel=1e-3)
    assert dram(rl, "wmma_bf16_gemm", "tensor_bf16")["flop"] == pytest.approx(2 * 4096**3, rel=1e-3)
    known = {*CHAINS, "sgemm_naive", "sgemm_tiled", "wmma_bf16_gemm"}
    cublas = rl.table.filter(~pl.col("kernel_name").is_in(list(known)) & (pl.col("level") == "DRAM") & (pl.col("precision") == "tensor_bf16"))
    # cuBLAS's kernel works in 320 x 128 tiles: 8192 / 320 = 25.6, so one dimension is padded to
    # 26 x 320 = 8320 and the tensor pipe does 2 x 8320 x 8192 x 8192 operations, 1.6% more than 2 x 8192^3.
    assert cublas["flop"].sum() == pytest.approx(2 * 8320 * 8192 * 8192, rel=1e-3)
    assert set(cublas.filter(pl.col("flop") > 0)["bound"]) == {"compute"}


def test_invariants(rl):
    check_invariants(rl.table)


def test_tiling_moves_the_sgemm_point(rl):
    before, after = (roofline(load(HERE / k)) for k in ("sgemm_naive", "sgemm_tiled"))
    p = pair(before, after).filter((pl.col("level") == "DRAM") & (pl.col("precision") == "fp32")).row(0, named=True)
    assert (p["kernel_name_before"], p["kernel_name_after"]) == ("sgemm_naive", "sgemm_tiled")
    assert p["flop_after"] == pytest.approx(p["flop_before"], rel=1e-3)  # same work, so the point moves up
    assert p["speedup"] > 1 and p["flop_per_s_after"] > p["flop_per_s_before"]
