"""C = A @ B in fp32 on the CUDA cores (row-major A: m x k, B: k x n, C: m x n; no tensor cores)."""

from __future__ import annotations

import sys
import time
from typing import NamedTuple

import torch

SIZES = {
    "h200": {"m": 4096, "n": 4096, "k": 4096},
    "h200_8192": {"m": 8192, "n": 8192, "k": 8192},
    # The CPU emulator's size: a multiple of every rung's block tile (256 x 256 at most), not square, so
    # that a transposed index fails the check, and K long enough for several double-buffered k-tiles.
    "small": {"m": 256, "n": 512, "k": 192},
}
#: "integers": entries in {-2, ..., 2}, so every partial sum is an integer below 2^24 (|c| <= 4 k =
#: 32768 at k = 8192) and exact in fp32 whatever the summation order: the result must match bit for
#: bit, which catches any misplaced element. "normal": N(0, 1) entries, checked to fp32 tolerance.
INPUTS = ("integers", "normal")
EXACT = frozenset({"integers"})


def inputs(kind: str, *, m: int, n: int, k: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    if kind == "integers":
        a = torch.randint(-2, 3, (m, k), device=device, generator=generator).float()
        b = torch.randint(-2, 3, (k, n), device=device, generator=generator).float()
    else:
        a = torch.randn(m, k, device=device, generator=generator)
        b = torch.randn(k, n, device=device, generator=generator)
    return {"a": a, "b": b}


def outputs(*, m: int, n: int, k: int, device: str) -> dict[str, torch.Tensor]:
    return {"c": torch.empty(m, n, device=device, dtype=torch.float32)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"c": inp["a"].to(torch.float64) @ inp["b"].to(torch.float64)}


def bytes_moved(*, m: int, n: int, k: int) -> int:
    """The compulsory DRAM traffic: A and B read once, C written once (4 bytes each)."""
    return 4 * (m * k + k * n + m * n)


def flops(*, m: int, n: int, k: int) -> int:
    """One multiply and one add per (i, j, l): 2 m n k."""
    return 2 * m * n * k


def _cublas():
    # cuBLAS SGEMM on the CUDA cores: with TF32 allowed, torch.matmul on fp32 runs on the tensor cores
    # (10 mantissa bits) and is a different operation. Set here, where nothing else changes it.
    torch.backends.cuda.matmul.allow_tf32 = False
    return lambda inp: {"c": torch.matmul(inp["a"], inp["b"])}


PEERS = {"cublas.fp32": _cublas}


# --------------------------------------------------------------------------------------------
# Launchers
# --------------------------------------------------------------------------------------------


def _shape(inp, out) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, int, int]:
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    return a, b, c, m, n, k


def _require(kernel: str, m: int, n: int, k: int, tile_m: int, tile_n: int, tile_k: int) -> None:
    """The tiled rungs carry no bounds checks: every size here is a power of two."""
    if m % tile_m or n % tile_n or k % tile_k:
        raise ValueError(f"{kernel} needs M a multiple of {tile_m}, N of {tile_n} and K of {tile_k}; "
                         f"got {m} x {n} x {k}")


def _naive(ctx, inp, out):
    a, b, c, m, n, k = _shape(inp, out)
    # threadIdx.x walks down a column of C (rows of A), so a warp's 32 loads of A are 32 lines apart.
    ctx.launch("sgemm00_naive", (-(-m // 32), -(-n // 32)), (32, 32), a, b, c, m, n, k)


def _coalesced(ctx, inp, out):
    a, b, c, m, n, k = _shape(inp, out)
    ctx.launch("sgemm01_coalesced", (-(-n // 32), -(-m // 32)), (32, 32), a, b, c, m, n, k)


def _tiled(kernel: str, tile_m: int, tile_n: int, tile_k: int, threads: int | tuple[int, int]):
    """One block per tile_m x tile_n tile of C (grid x along N, so neighbouring blocks share rows of A)."""

    def launch(ctx, inp, out):
        a, b, c, m, n, k = _shape(inp, out)
        _require(kernel, m, n, k, tile_m, tile_n, tile_k)
        ctx.launch(kernel, (n // tile_n, m // tile_m), threads, a, b, c, m, n, k)

    return launch


class Config(NamedTuple):
    """One instantiation of rung 07's template (its extern "C" kernel and the tile it computes)."""

    kernel: str
    tile_m: int
    tile_n: int
    tile_k: int
    threads: int


#: The instantiations of 07_tuned.cu, each a different balance of registers, occupancy and tile reuse.
TUNED = (
    Config("sgemm07_128x128x8", 128, 128, 8, 256),
    Config("sgemm07_128x128x16", 128, 128, 16, 256),
    Config("sgemm07_128x256x8", 128, 256, 8, 256),
    Config("sgemm07_256x128x8", 256, 128, 8, 256),
    Config("sgemm07_64x128x8", 64, 128, 8, 128),
)
#: Rung 07's choice per (device, m, n, k): timed on its first call at that size, then reused.
_TUNED_CHOICE: dict[tuple[str, int, int, int], Config] = {}
TUNE_WARMUP = 1  # untimed launches per candidate (the first one loads the module's code)
TUNE_REPS = 3  # timed launches per candidate: a few milliseconds each at 4096^3, so the spread is small


def launch_config(ctx, cfg: Config, a, b, c, m: int, n: int, k: int) -> None:
    ctx.launch(cfg.kernel, (n // cfg.tile_n, m // cfg.tile_m), cfg.threads, a, b, c, m, n, k)


def _elapsed_s(ctx, fn, reps: int) -> float:
    """Seconds for ``reps`` calls of ``fn``: CUDA events on a GPU, the wall clock on the CPU emulator."""
    if ctx.device == "cpu":
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return time.perf_counter() - t0
    start, end = (ctx.torch.cuda.Event(enable_timing=True) for _ in range(2))
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3


def fastest_config(ctx, a, b, c, m: int, n: int, k: int) -> Config:
    """Time every instantiation whose tile divides the problem, on the call's own tensors; the fastest.
    The times go to stderr (the run's log): results.json lists all five kernels, not the winner."""
    fits = [cfg for cfg in TUNED if m % cfg.tile_m == 0 and n % cfg.tile_n == 0 and k % cfg.tile_k == 0]
    if not fits:
        raise ValueError(f"07_tuned: no tile configuration divides {m} x {n} x {k} (tiles: "
                         + ", ".join(f"{t.tile_m}x{t.tile_n}x{t.tile_k}" for t in TUNED) + ")")
    times = {}
    for cfg in fits:
        run = lambda cfg=cfg: launch_config(ctx, cfg, a, b, c, m, n, k)  # noqa: E731
        _elapsed_s(ctx, run, TUNE_WARMUP)
        times[cfg] = _elapsed_s(ctx, run, TUNE_REPS) / TUNE_REPS
    best = min(times, key=times.get)
    tried = ", ".join(f"{c.kernel} {t * 1e3:.3f} ms" for c, t in times.items())
    print(f"[matmul/fp32] 07_tuned at {m} x {n} x {k}: {tried} -> {best.kernel}", file=sys.stderr)
    return best


def _tuned(ctx, inp, out):
    a, b, c, m, n, k = _shape(inp, out)
    key = (ctx.device, m, n, k)
    if key not in _TUNED_CHOICE:
        _TUNED_CHOICE[key] = fastest_config(ctx, a, b, c, m, n, k)
    launch_config(ctx, _TUNED_CHOICE[key], a, b, c, m, n, k)


LAUNCH = {
    "00_naive": _naive,
    "01_coalesced": _coalesced,
    "02_smem_tiling": _tiled("sgemm02_smem_tiling", 32, 32, 32, (32, 32)),
    "03_1d_register_blocking": _tiled("sgemm03_1d_blocking", 64, 64, 8, 512),
    "04_2d_register_blocking": _tiled("sgemm04_2d_blocking", 128, 128, 8, 256),
    "05_vectorized": _tiled("sgemm05_vectorized", 128, 128, 8, 256),
    "06_warp_tiling": _tiled("sgemm06_warp_tiling", 128, 128, 8, 256),
    "07_tuned": _tuned,
}
