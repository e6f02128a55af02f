"""Scan: the inclusive prefix sum of n fp32 values, out[i] = x[0] + ... + x[i]."""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

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


class Lagged(NamedTuple):
    """One instantiation of rung 09's template: its kernel, values per thread, tiles loading ahead,
    rounds of lag before the look-back, blocks per SM."""

    kernel: str
    items: int
    ahead: int
    lag: int
    blocks_per_sm: int

    @property
    def tile(self) -> int:
        return 256 * self.items

    @property
    def smem(self) -> int:
        """Dynamic shared memory: the ring of ahead + 1 + lag tiles, plus 128 bytes so that a 48 KB ring
        (with the kernel's few static bytes) takes CuPy's opt-in above 48 KB."""
        return (self.ahead + 1 + self.lag) * self.tile * 4 + 128


#: Rung 09's candidates: blocks per SM as the registers (launch bounds) and shared memory allow.
LAGGED = (
    Lagged("scan09_items8_ahead1_lag2", 8, 1, 2, 6),
    Lagged("scan09_items8_ahead2_lag1", 8, 2, 1, 6),
    Lagged("scan09_items16_ahead1_lag1", 16, 1, 1, 4),
    Lagged("scan09_items16_ahead1_lag2", 16, 1, 2, 3),
    Lagged("scan09_items16_ahead2_lag1", 16, 2, 1, 3),
)
TUNE_WARMUP = 1  # untimed calls per candidate (the first loads the kernel)
TUNE_REPS = 10  # timed calls per candidate: about 1.5 ms each at 2^26


def launch_lagged(ctx, cfg: Lagged, x, out) -> None:
    n = x.numel()
    tiles = math.ceil(n / cfg.tile)
    state = ctx.scratch("state", tiles + 2, torch.int64)
    state.zero_()
    grid = min(tiles, ctx.sm_count * cfg.blocks_per_sm)
    ctx.launch(cfg.kernel, grid, 256, x, out, state[:tiles], state[tiles:].view(torch.int32), n, smem=cfg.smem)


def fastest(ctx, rung: str, candidates, launch, x, out):
    """Time every candidate on the call's own tensors; the fastest. On the CPU emulator the first is
    kept untimed. The times go to stderr (the run's log): results.json lists every candidate kernel."""
    n = x.numel()
    if ctx.device == "cpu":
        return candidates[0]
    times = ctx.time_each(candidates, lambda cfg: launch(ctx, cfg, x, out), warmup=TUNE_WARMUP, reps=TUNE_REPS)
    best = min(times, key=times.get)
    tried = ", ".join(f"{c.kernel} x {c.blocks_per_sm}/SM {t * 1e6:.1f} us" if 0 < t < math.inf else
                      f"{c.kernel} x {c.blocks_per_sm}/SM {'given' if t == 0 else 'not timed'}" for c, t in times.items())
    print(f"[scan] {rung} at n = {n}: {tried} -> {best.kernel}", file=sys.stderr)
    return best


def _tuned(rung: str, candidates, launch):
    """A rung that chooses among ``candidates`` by timing them on its first call per (device, n)
    (``fastest``), then launches its choice."""
    choice = {}

    def run(ctx, inp, out):
        x = inp["x"]
        key = (ctx.device, x.numel())
        if key not in choice:
            choice[key] = fastest(ctx, rung, candidates, launch, x, out["out"])
        launch(ctx, choice[key], x, out["out"])

    return run


class Specialised(NamedTuple):
    """One instantiation of rung 10's template: its kernel, values per data thread, tiles loading
    ahead, rounds between a tile's aggregate and its store, look-back warps, blocks per SM, and
    whether a look-back waits for the next round's aggregate before it starts."""

    kernel: str
    items: int
    ahead: int
    lag: int
    lookback_warps: int
    blocks_per_sm: int
    defer: bool = False  # a look-back starts once the next round's aggregate is published

    @property
    def tile(self) -> int:
        return 256 * self.items

    @property
    def block(self) -> int:
        """8 data warps and the look-back warps."""
        return 256 + 32 * self.lookback_warps

    @property
    def smem(self) -> int:
        """The ring of ahead + 1 + lag tiles, plus 128 bytes as rung 09's (a 48 KB ring takes the opt-in)."""
        return (self.ahead + 1 + self.lag) * self.tile * 4 + 128


#: Rung 10's candidates: blocks per SM as the registers (launch bounds) and shared memory allow.
SPECIALISED = (
    Specialised("scan10_items16_ahead1_lag2", 16, 1, 2, 1, 3),
    Specialised("scan10_items16_ahead1_lag2_warps2", 16, 1, 2, 2, 3),
    Specialised("scan10_items16_ahead1_lag2_warps2_defer", 16, 1, 2, 2, 3, True),
    Specialised("scan10_items16_ahead2_lag1_warps2", 16, 2, 1, 2, 3),
    Specialised("scan10_items8_ahead2_lag2_warps2", 8, 2, 2, 2, 3),
    Specialised("scan10_items8_ahead2_lag2_warps2_defer", 8, 2, 2, 2, 3, True),
)
#: Rung 10's call count per status buffer (keyed by its address): the epoch that tags the status
#: words, so that no memset clears them between calls. The buffer is zeroed when first made (epoch 0:
#: nothing published); a buffer made anew at an address seen before is zero too, and any later epoch
#: differs from 0.
_EPOCHS: dict[int, int] = {}


def launch_specialised(ctx, cfg: Specialised, x, out) -> None:
    n = x.numel()
    tiles = math.ceil(n / cfg.tile)
    # the largest candidate tile count (8 values a thread) so that every candidate shares one buffer
    most = math.ceil(n / (256 * min(c.items for c in SPECIALISED)))
    state = ctx.scratch("state10", most + 1, torch.int64, zero=True)
    epoch = _EPOCHS.get(state.data_ptr(), 0) + 1
    if epoch >= 1 << 30:  # the epoch's 30 bits are spent: start again on a cleared buffer
        state.zero_()
        epoch = 1
    _EPOCHS[state.data_ptr()] = epoch
    grid = min(tiles, ctx.sm_count * cfg.blocks_per_sm)
    ctx.launch(cfg.kernel, grid, cfg.block, x, out, state[:tiles], state[most:].view(torch.int32), n, epoch,
               smem=cfg.smem)


class Segmented(NamedTuple):
    """One instantiation of rung 11's template: its kernel, values per thread, tiles loading ahead,
    rounds between a tile's aggregate and its store, blocks per SM (its launch bounds), and the status
    words a thread reads per round (the grid is at most 256 times that)."""

    kernel: str
    items: int
    ahead: int
    lag: int
    blocks_per_sm: int
    window: int

    @property
    def tile(self) -> int:
        return 256 * self.items

    @property
    def smem(self) -> int:
        """Dynamic shared memory: the ring of ahead + 1 + lag tiles, then 128 bytes for the warp totals."""
        return (self.ahead + 1 + self.lag) * self.tile * 4 + 128


#: Rung 11's candidates: blocks per SM as the registers (launch bounds) and shared memory allow.
SEGMENTED = (
    Segmented("scan11_items16_ahead2_lag1", 16, 2, 1, 3, 2),
    Segmented("scan11_items16_ahead1_lag2", 16, 1, 2, 3, 2),
    Segmented("scan11_items16_ahead1_lag1", 16, 1, 1, 4, 3),
    Segmented("scan11_items16_ahead3_lag1", 16, 3, 1, 2, 2),
    Segmented("scan11_items32_ahead1_lag1", 32, 1, 1, 2, 1),
    Segmented("scan11_items8_ahead2_lag1", 8, 2, 1, 6, 4),
    Segmented("scan11_items12_ahead1_lag2", 12, 1, 2, 4, 3),
    Segmented("scan11_items8_ahead1_lag2", 8, 1, 2, 6, 4),
    Segmented("scan11_items16_ahead1_lag3", 16, 1, 3, 2, 2),
    Segmented("scan11_items12_ahead1_lag3", 12, 1, 3, 3, 2),
    Segmented("scan11_items8_ahead1_lag3", 8, 1, 3, 5, 3),
)
KEPT11 = 16  # segments of status words rung 11 keeps per block (its KEPT)
#: Rungs 11 and 12, per status buffer (keyed by its address): the next call's tag base and the calls
#: made on it. Each call's tags (base + tile) lie past every earlier call's, so no memset clears the
#: words between calls. The buffer is zeroed when first made (tag 0: nothing published, and bases
#: start at 1).
_TAGS: dict[int, tuple[int, int]] = {}


def _next_tags(state, tiles: int) -> tuple[int, int]:
    """This call's tag base on ``state`` and how many calls came before it (rung 12's counter parity),
    starting again on a cleared buffer where the 32-bit tags are spent."""
    base, call = _TAGS.get(state.data_ptr(), (1, 0))
    if base + tiles > 1 << 32:
        state.zero_()
        base, call = 1, 0
    _TAGS[state.data_ptr()] = (base + tiles, call + 1)
    return base, call


def _resident(ctx, cfg: Segmented | Counted) -> int:
    """Blocks per SM a grid whose blocks wait for each other may use: what the driver's occupancy
    holds, and no more than the launch bounds ask for."""
    fit = ctx.blocks_per_sm(cfg.kernel, 256, cfg.smem)
    if fit < 1:
        raise RuntimeError(f"{cfg.kernel}: no block of {cfg.smem} bytes of shared memory fits on an SM")
    return min(fit, cfg.blocks_per_sm)


def segmented_grid(ctx, cfg: Segmented, n: int) -> int:
    """Rung 11's grid: every block resident at once (the kernel's blocks wait for each other), so no
    more than the SMs hold by the driver's occupancy, nor more than the launch bounds ask for or the
    window's registers allow. Within that, as few blocks as take the same number of rounds, so that
    the last segment is nearly full (2^26 values in 16,384 tiles: 391 blocks, not 396, for 42 rounds;
    512, not 528, for 32)."""
    tiles = math.ceil(n / cfg.tile)
    most = min(tiles, ctx.sm_count * _resident(ctx, cfg), 256 * cfg.window)
    return math.ceil(tiles / math.ceil(tiles / most))


def launch_segmented(ctx, cfg: Segmented, x, out) -> None:
    n = x.numel()
    grid = segmented_grid(ctx, cfg, n)
    most = KEPT11 * max(ctx.sm_count * c.blocks_per_sm for c in SEGMENTED)  # one buffer for every candidate
    state = ctx.scratch("state11", most, torch.int64, zero=True)
    base, _ = _next_tags(state, math.ceil(n / cfg.tile))
    ctx.launch(cfg.kernel, grid, 256, x, out, state[:KEPT11 * grid], n, base, smem=cfg.smem, cooperative=True)


class Counted(NamedTuple):
    """One instantiation of rung 12's template: its kernel, values per thread, tiles loading ahead,
    rounds between a tile's aggregate and its store, blocks per SM (its launch bounds)."""

    kernel: str
    items: int
    ahead: int
    lag: int
    blocks_per_sm: int

    @property
    def tile(self) -> int:
        return 256 * self.items

    @property
    def smem(self) -> int:
        """The ring of ahead + 1 + lag tiles, then 256 bytes: warp and window totals, aggregates, tile ids."""
        return (self.ahead + 1 + self.lag) * self.tile * 4 + 256


#: Rung 12's candidates: rung 11's three fastest shapes with two or three rounds of lag.
COUNTED = (
    Counted("scan12_items16_ahead1_lag2", 16, 1, 2, 3),
    Counted("scan12_items12_ahead1_lag2", 12, 1, 2, 4),
    Counted("scan12_items8_ahead1_lag3", 8, 1, 3, 5),
)
RING12 = 1 << 14  # rung 12's status words (its RING): tile t's at t % RING12


def launch_counted(ctx, cfg: Counted, x, out) -> None:
    """The call count's parity on the status buffer (_next_tags) picks the call's tile counter; the kernel
    clears the other for the next call."""
    n = x.numel()
    tiles = math.ceil(n / cfg.tile)
    grid = min(tiles, ctx.sm_count * _resident(ctx, cfg), 1024)
    state = ctx.scratch("state12", RING12 + 1, torch.int64, zero=True)
    base, call = _next_tags(state, tiles)
    ctx.launch(cfg.kernel, grid, 256, x, out, state[:RING12], state[RING12:].view(torch.int32), n, base, call & 1,
               smem=cfg.smem, cooperative=True)


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
    "09_lagged_lookback": _tuned("09_lagged_lookback", LAGGED, launch_lagged),
    "10_lookback_warp": _tuned("10_lookback_warp", SPECIALISED, launch_specialised),
    "11_segment_carry": _tuned("11_segment_carry", SEGMENTED, launch_segmented),
    "12_counter_carry": _tuned("12_counter_carry", COUNTED, launch_counted),
}
