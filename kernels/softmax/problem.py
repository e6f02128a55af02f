"""Softmax over each row of a rows x cols bf16 matrix (bf16 in and out, fp32 arithmetic)."""

from __future__ import annotations

import math

import torch

SIZES = {"h200": {"rows": 32768, "cols": 4096}, "small": {"rows": 24, "cols": 4096}}
#: "normal": N(0, 2^2). "offsets": each row shifted by up to +-100, so exp(x) without subtracting the
#: row maximum overflows fp32 (exp(89) does) and the result turns to NaN: the check catches it.
INPUTS = ("offsets", "normal")
EXACT = frozenset()
COLS_IN_REGISTERS = 4096  # rung 04 holds the row in registers: its COLS


def inputs(kind: str, *, rows: int, cols: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    x = 2.0 * torch.randn(rows, cols, device=device, generator=generator)
    if kind == "offsets":
        x += 200.0 * torch.rand(rows, 1, device=device, generator=generator) - 100.0
    return {"x": x.to(torch.bfloat16)}


def outputs(*, rows: int, cols: int, device: str) -> dict[str, torch.Tensor]:
    return {"out": torch.empty(rows, cols, device=device, dtype=torch.bfloat16)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"out": torch.softmax(inp["x"].to(torch.float64), dim=1)}


def bytes_moved(*, rows: int, cols: int) -> int:
    """Each bf16 read once and written once."""
    return 4 * rows * cols


def flops(*, rows: int, cols: int) -> int:
    """Per element: subtract, exponential, add, multiply; the max is a comparison, not counted."""
    return 4 * rows * cols


def _compiled():
    fn = torch.compile(lambda x: torch.softmax(x, dim=1))
    return lambda inp: {"out": fn(inp["x"])}


PEERS = {
    "torch.softmax": lambda: (lambda inp: {"out": torch.softmax(inp["x"], dim=1)}),
    "torch.compile": _compiled,  # the strongest peer measured on the H200
}


def _three_kernels(ctx, inp, out):
    x = inp["x"]
    rows, cols = x.shape
    row_max = ctx.scratch("max", rows, torch.float32)
    row_sum = ctx.scratch("sum", rows, torch.float32)
    ctx.launch("softmax00_row_max", rows, 256, x, row_max, cols)
    ctx.launch("softmax00_row_sum", rows, 256, x, row_max, row_sum, cols)
    ctx.launch("softmax00_normalize", math.ceil(rows * cols / 256), 256, x, row_max, row_sum, out["out"], cols, rows * cols)


def _block_per_row(kernel: str):
    def launch(ctx, inp, out):
        x = inp["x"]
        ctx.launch(kernel, x.shape[0], 256, x, out["out"], x.shape[1])

    return launch


def _registers(ctx, inp, out):
    x = inp["x"]
    if x.shape[1] != COLS_IN_REGISTERS:
        raise ValueError(f"04_vec_registers is compiled for rows of {COLS_IN_REGISTERS}; got {x.shape[1]}")
    ctx.launch("softmax04_vec_registers", x.shape[0], 256, x, out["out"])


LAUNCH = {
    "00_three_kernels": _three_kernels,
    "01_fused_block_per_row": _block_per_row("softmax01_fused"),
    "02_online": _block_per_row("softmax02_online"),
    "03_online_shuffle": _block_per_row("softmax03_online_shuffle"),
    "04_vec_registers": _registers,
}
