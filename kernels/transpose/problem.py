"""Transpose: out = x^T for a rows x cols fp32 matrix (row-major in, row-major out)."""

from __future__ import annotations

import sys
from typing import NamedTuple

import torch

SIZES = {"h200": {"rows": 16384, "cols": 16384}, "small": {"rows": 128, "cols": 192}}
#: A transpose moves values without arithmetic: every element must match exactly.
INPUTS = ("normal",)
EXACT = frozenset({"normal"})
TILE = 32


def inputs(kind: str, *, rows: int, cols: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    return {"x": torch.randn(rows, cols, device=device, generator=generator, dtype=torch.float32)}


def outputs(*, rows: int, cols: int, device: str) -> dict[str, torch.Tensor]:
    return {"out": torch.empty(cols, rows, device=device, dtype=torch.float32)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"out": inp["x"].to(torch.float64).t().contiguous()}


def bytes_moved(*, rows: int, cols: int) -> int:
    """Each element read once and written once."""
    return 8 * rows * cols


def flops(*, rows: int, cols: int) -> int:
    return 0


def _compiled():
    fn = torch.compile(lambda x: x.t().contiguous())
    return lambda inp: {"out": fn(inp["x"])}


PEERS = {
    "torch .t().contiguous()": lambda: (lambda inp: {"out": inp["x"].t().contiguous()}),
    "torch.compile": _compiled,  # Inductor's generated Triton kernel: the strongest peer measured on the H200
}


def _launcher(kernel: str, block: tuple[int, int], tile_rows: int, tile_cols: int = TILE):
    """One block per ``tile_cols``-column by ``tile_rows``-row tile of x."""

    def launch(ctx, inp, out):
        x = inp["x"]
        rows, cols = x.shape
        if rows % tile_rows or cols % tile_cols:
            raise ValueError(f"{kernel} needs rows a multiple of {tile_rows} and cols of {tile_cols}; got {rows} x {cols}")
        ctx.launch(kernel, (cols // tile_cols, rows // tile_rows), block, x, out["out"], rows, cols)

    return launch


BLOCKS_PER_SM08 = 8  # rung 08's persistent grid: rung 06's residency (32 registers, 16.6 KB a block)


def _persistent(kernel: str, blocks_per_sm: int, tile: int = 2 * TILE):
    """Rung 08: a grid of blocks_per_sm blocks per SM, each walking tiles blockIdx.x, + gridDim.x, ..."""

    def launch(ctx, inp, out):
        x = inp["x"]
        rows, cols = x.shape
        if rows % tile or cols % tile:
            raise ValueError(f"{kernel} needs rows and cols multiples of {tile}; got {rows} x {cols}")
        tiles = (rows // tile) * (cols // tile)
        ctx.launch(kernel, min(tiles, ctx.sm_count * blocks_per_sm), (8, 32), x, out["out"], rows, cols)

    return launch


class Shape(NamedTuple):
    """One instantiation of rung 09's template: its kernel, the tile of x it moves, its block."""

    kernel: str
    tile_rows: int
    tile_cols: int
    block: tuple[int, int]


#: Rung 09's candidates: Inductor's 32 x 32 tile with 128 threads first, rung 06's 64 x 64 last.
SHAPES = (
    Shape("transpose09_32x32_t128", 32, 32, (8, 16)),
    Shape("transpose09_32x32_t64", 32, 32, (8, 8)),
    Shape("transpose09_64x32_t128", 64, 32, (8, 16)),
    Shape("transpose09_32x64_t128", 32, 64, (8, 16)),
    Shape("transpose09_64x64_t256", 64, 64, (8, 32)),
)
#: Rung 09's choice per (device, rows, cols): timed on its first call at that shape, then reused.
_SHAPE_CHOICE: dict[tuple[str, int, int], Shape] = {}
TUNE_WARMUP = 1  # untimed calls per candidate (the first loads the kernel)
TUNE_REPS = 5  # timed calls per candidate: about 3 ms each at 16384^2


def launch_shape(ctx, cfg: Shape, x, out) -> None:
    rows, cols = x.shape
    ctx.launch(cfg.kernel, (cols // cfg.tile_cols, rows // cfg.tile_rows), cfg.block, x, out, rows, cols)


def fastest_shape(ctx, x, out) -> Shape:
    """Time every candidate whose tile divides the matrix, on the call's own tensors; the fastest. On
    the CPU emulator the first that fits is kept untimed. The times go to stderr (the run's log)."""
    rows, cols = x.shape
    fits = [c for c in SHAPES if rows % c.tile_rows == 0 and cols % c.tile_cols == 0]
    if not fits:
        raise ValueError(f"09_tile_shapes: no tile divides {rows} x {cols}")
    if ctx.device == "cpu":
        return fits[0]
    times = ctx.time_each(fits, lambda cfg: launch_shape(ctx, cfg, x, out), warmup=TUNE_WARMUP, reps=TUNE_REPS)
    best = min(times, key=times.get)
    tried = ", ".join(f"{c.kernel} {t * 1e6:.1f} us" for c, t in times.items())
    print(f"[transpose] 09_tile_shapes at {rows} x {cols}: {tried} -> {best.kernel}", file=sys.stderr)
    return best


def _tile_shapes(ctx, inp, out):
    x = inp["x"]
    key = (ctx.device, *x.shape)
    if key not in _SHAPE_CHOICE:
        _SHAPE_CHOICE[key] = fastest_shape(ctx, x, out["out"])
    launch_shape(ctx, _SHAPE_CHOICE[key], x, out["out"])


LAUNCH = {
    "00_naive": _launcher("transpose_naive", (32, 8), 8),
    "01_smem_tile": _launcher("transpose_smem_tile", (32, 32), TILE),
    "02_padded_tile": _launcher("transpose_padded_tile", (32, 32), TILE),
    "03_four_rows_per_thread": _launcher("transpose_four_rows", (32, 8), TILE),
    "04_vec4": _launcher("transpose_vec4", (8, 32), TILE),
    "05_vec4_two_tiles": _launcher("transpose_vec4_two_tiles", (8, 32), 2 * TILE),
    "06_square_tile": _launcher("transpose_square_tile", (8, 32), 2 * TILE, 2 * TILE),
    "07_banded_order": _launcher("transpose_banded_order", (8, 32), 2 * TILE, 2 * TILE),
    "08_persistent_pipelined": _persistent("transpose_persistent_pipelined", BLOCKS_PER_SM08),
    "09_tile_shapes": _tile_shapes,
}
