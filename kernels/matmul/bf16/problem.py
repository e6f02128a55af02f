"""C = A @ B in bf16 on the tensor cores: A (m x k) and B (k x n) row-major bf16, fp32 accumulation,
C (m x n) row-major bf16."""

from __future__ import annotations

import torch

#: "small" is one CUDA tile row short of square on purpose (384 = 3 x 128, 512 = 2 x 256): non-square,
#: several tiles in both directions, and a multiple of every block size the rungs use, so no rung
#: needs a smaller block than it runs with on the H200.
SIZES = {"h200": {"m": 8192, "n": 8192, "k": 8192}, "small": {"m": 384, "n": 512, "k": 256}}
#: "uniform": entries in [0, 1), so every product is positive and a dropped or repeated K-block
#: shifts each output by ~1/(k / BLOCK_K) of its value - far past the tolerance. "normal": N(0, 1),
#: signs mixed, which catches a transposed fragment or a swapped tile (the last is timed).
INPUTS = ("uniform", "normal")
EXACT = frozenset()
CUDA_TILE = (128, 128, 32)  # rung 00's block tile (BM, BN, BK): the launcher's grid and its size check


def inputs(kind: str, *, m: int, n: int, k: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    draw = torch.rand if kind == "uniform" else torch.randn
    a = draw(m, k, device=device, generator=generator)
    b = draw(k, n, device=device, generator=generator)
    return {"a": a.to(torch.bfloat16), "b": b.to(torch.bfloat16)}


def outputs(*, m: int, n: int, k: int, device: str) -> dict[str, torch.Tensor]:
    return {"c": torch.empty(m, n, device=device, dtype=torch.bfloat16)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"c": inp["a"].to(torch.float64) @ inp["b"].to(torch.float64)}


def bytes_moved(*, m: int, n: int, k: int) -> int:
    """Compulsory DRAM traffic: A and B read once, C written once, 2 bytes each."""
    return 2 * (m * k + k * n + m * n)


def flops(*, m: int, n: int, k: int) -> int:
    """A multiply and an add per (i, j, l): 2 m n k."""
    return 2 * m * n * k


PEERS = {
    # cuBLAS through PyTorch (bf16 in, fp32 accumulation, bf16 out), the ladder's baseline.
    "cublas.bf16": lambda: (lambda inp: {"c": torch.matmul(inp["a"], inp["b"])}),
}


def _mma_sync(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = CUDA_TILE
    if m % bm or n % bn or k % bk:
        raise ValueError(f"00_mma_sync needs m % {bm}, n % {bn}, k % {bk} == 0; got {m} x {n} x {k}")
    ctx.launch("mmbf16_00_mma_sync", (n // bn, m // bm), 256, a, b, c, m, n, k)


LAUNCH = {"00_mma_sync": _mma_sync}
