"""Scan: the inclusive prefix sum of n fp32 values, out[i] = x[0] + ... + x[i]."""

from __future__ import annotations

import math

import torch

SIZES = {"h200": {"n": 1 << 26}, "small": {"n": 3 * 4096 + 77}}
#: Prefix sums of small integers are exact in fp32 (every partial sum stays far below 2^24), so the
#: "integers" check must match bit for bit and catches any element counted twice, dropped or misplaced.
INPUTS = ("integers", "normal")
EXACT = frozenset({"integers"})
TILE = 4096  # rungs 01-07: BLOCK * ITEMS
TILE00 = 1024  # rung 00: one value per thread


def inputs(kind: str, *, n: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    if kind == "integers":
        x = torch.randint(-2, 3, (n,), device=device, generator=generator).to(torch.float32)
    else:
        x = torch.randn(n, device=device, generator=generator, dtype=torch.float32)
    return {"x": x}


def outputs(*, n: int, device: str) -> dict[str, torch.Tensor]:
    return {"out": torch.empty(n, device=device, dtype=torch.float32)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"out": torch.cumsum(inp["x"].to(torch.float64), 0)}


def bytes_moved(*, n: int) -> int:
    """Each value read once and written once."""
    return 8 * n


def flops(*, n: int) -> int:
    return n - 1


PEERS = {"torch.cumsum": lambda: (lambda inp: {"out": torch.cumsum(inp["x"], 0)})}


def _reduce_then_scan(ctx, x, out, level=0):
    """Rung 00: tile sums, the same algorithm on the sums (recursively), then the tiles with offsets."""
    n = x.numel()
    tiles = math.ceil(n / TILE00)
    if tiles == 1:
        ctx.launch("scan00_tiles", 1, TILE00, x, x, out, n, 0)
        return
    sums = ctx.scratch(f"sums{level}", tiles, torch.float32)
    scanned = ctx.scratch(f"scanned{level}", tiles, torch.float32)
    ctx.launch("scan00_tile_sums", tiles, TILE00, x, sums, n)
    _reduce_then_scan(ctx, sums, scanned, level + 1)
    ctx.launch("scan00_tiles", tiles, TILE00, x, scanned, out, n, 1)


def _three_pass(prefix: str):
    """Rungs 01-02: tile sums; one block scans all the sums in place; tiles scanned with offsets."""

    def launch(ctx, inp, out):
        x, n = inp["x"], inp["x"].numel()
        tiles = math.ceil(n / TILE)
        sums = ctx.scratch("sums", tiles, torch.float32)
        ctx.launch(f"{prefix}_tile_sums", tiles, 256, x, sums, n)
        ctx.launch(f"{prefix}_sums", 1, 256, sums, tiles)
        ctx.launch(f"{prefix}_tiles", tiles, 256, x, sums, out["out"], n)

    return launch


def _single_pass(kernel: str):
    """Rungs 03-05: one launch; tile status words and the tile counter are cleared first (one memset)."""

    def launch(ctx, inp, out):
        x, n = inp["x"], inp["x"].numel()
        tiles = math.ceil(n / TILE)
        state = ctx.scratch("state", tiles + 2, torch.int64)
        state.zero_()
        ctx.launch(kernel, tiles, 256, x, out["out"], state[:tiles], state[tiles:].view(torch.int32), n)

    return launch


BLOCKS_PER_SM06 = 8  # rungs 06 and 08's persistent grid: 32 registers and 16.9 KB of shared memory a block


def _persistent(kernel: str, blocks_per_sm: int):
    """Rungs 06 and 08: as _single_pass, with one block per slot (blocks_per_sm per SM) taking tiles in turn."""

    def launch(ctx, inp, out):
        x, n = inp["x"], inp["x"].numel()
        tiles = math.ceil(n / TILE)
        state = ctx.scratch("state", tiles + 2, torch.int64)
        state.zero_()
        grid = min(tiles, ctx.sm_count * blocks_per_sm)
        ctx.launch(kernel, grid, 256, x, out["out"], state[:tiles], state[tiles:].view(torch.int32), n)

    return launch


def _reduce_then_scan_vec4(ctx, inp, out):
    """Rung 07: tile sums; one 1024-thread block turns them into exclusive prefixes; tiles last to first."""
    x, n = inp["x"], inp["x"].numel()
    tiles = math.ceil(n / TILE)
    sums = ctx.scratch("sums", tiles, torch.float32)
    ctx.launch("scan07_tile_sums", tiles, 256, x, sums, n)
    ctx.launch("scan07_sums", 1, 1024, sums, tiles)
    ctx.launch("scan07_tiles", tiles, 256, x, sums, out["out"], n)


LAUNCH = {
    "00_reduce_then_scan": lambda ctx, inp, out: _reduce_then_scan(ctx, inp["x"], out["out"]),
    "01_blocked_scan": _three_pass("scan01"),
    "02_warp_shuffle_scan": _three_pass("scan02"),
    "03_chained_single_pass": _single_pass("scan03_chained"),
    "04_decoupled_lookback": _single_pass("scan04_decoupled_lookback"),
    "05_lookback_vec4": _single_pass("scan05_lookback_vec4"),
    "06_persistent_prefetch": _persistent("scan06_persistent_prefetch", BLOCKS_PER_SM06),
    "07_reduce_then_scan_vec4": _reduce_then_scan_vec4,
    "08_block_lookback": _persistent("scan08_block_lookback", BLOCKS_PER_SM06),
}
