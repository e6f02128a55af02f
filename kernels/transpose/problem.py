"""Transpose: out = x^T for a rows x cols fp32 matrix (row-major in, row-major out)."""

from __future__ import annotations

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
}
