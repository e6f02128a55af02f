"""Reduction: the sum of n fp32 values.

What the runner needs (``coach.capture.ladder``): sizes, the input distributions to check, how to
make inputs and outputs, the float64 reference, the bytes model, the peers timed beside the rungs,
and the launcher of each CUDA rung. Kernels are in the rung files; this file only sizes grids.
"""

from __future__ import annotations

import math

import torch

SIZES = {"h200": {"n": 1 << 28}, "small": {"n": 3 * 4096 + 77}}
#: Checked in this order; the last is also the one timed. Sums of small integers are exact in fp32
#: whatever the order of the additions (every partial sum stays far below 2^24), so "integers" must
#: match the reference bit for bit and catches any element dropped or added twice.
INPUTS = ("integers", "uniform")
EXACT = frozenset({"integers"})
BLOCK = 256
BLOCKS_PER_SM = 4  # rungs 04 and 05: must match their BLOCKS_PER_SM (their __launch_bounds__)


def inputs(kind: str, *, n: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    if kind == "integers":
        x = torch.randint(-2, 3, (n,), device=device, generator=generator).to(torch.float32)
    else:
        x = torch.rand(n, device=device, generator=generator, dtype=torch.float32)
    return {"x": x}


def outputs(*, n: int, device: str) -> dict[str, torch.Tensor]:
    return {"out": torch.empty(1, device=device, dtype=torch.float32)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"out": inp["x"].to(torch.float64).sum().reshape(1)}


def bytes_moved(*, n: int) -> int:
    """Each value read once, one float written: the floor every rung is measured against."""
    return 4 * n + 4


def flops(*, n: int) -> int:
    return n - 1


def _cupy_sum():
    import cupy

    def run(inp):
        return {"out": torch.from_dlpack(cupy.from_dlpack(inp["x"]).sum()).reshape(1)}

    return run


PEERS = {
    "torch.sum": lambda: (lambda inp: {"out": inp["x"].sum().reshape(1)}),
    "cupy.sum": _cupy_sum,  # CuPy reduces through CUB: the strongest peer measured on the H200
}


def _tree(kernel: str, per_block: int):
    """Rungs 00-03: one block per ``per_block`` values, a pass per level until one sum is left."""

    def launch(ctx, inp, out):
        src, n, level = inp["x"], inp["x"].numel(), 0
        while True:
            blocks = math.ceil(n / per_block)
            dst = out["out"] if blocks == 1 else ctx.scratch(f"partial{level % 2}", blocks, torch.float32)
            ctx.launch(kernel, blocks, BLOCK, src, dst, n)
            if blocks == 1:
                return
            src, n, level = dst, blocks, level + 1

    return launch


def _two_pass(ctx, inp, out):
    blocks = ctx.sm_count * BLOCKS_PER_SM
    partial = ctx.scratch("partial", blocks, torch.float32)
    ctx.launch("reduce_vec4_grid_stride", blocks, BLOCK, inp["x"], partial, inp["x"].numel())
    ctx.launch("reduce_partials", 1, 1024, partial, out["out"], blocks)


def _single_pass(ctx, inp, out):
    blocks = ctx.sm_count * BLOCKS_PER_SM
    partial = ctx.scratch("partial", blocks, torch.float32)
    tickets = ctx.scratch("tickets", 1, torch.int32, zero=True)
    ctx.launch("reduce_single_pass", blocks, BLOCK, inp["x"], partial, tickets, out["out"], inp["x"].numel())


LAUNCH = {
    "00_interleaved": _tree("reduce_interleaved", BLOCK),
    "01_sequential": _tree("reduce_sequential", BLOCK),
    "02_add_during_load": _tree("reduce_add_during_load", 2 * BLOCK),
    "03_warp_shuffle": _tree("reduce_warp_shuffle", 2 * BLOCK),
    "04_vec4_grid_stride": _two_pass,
    "05_single_pass": _single_pass,
}
