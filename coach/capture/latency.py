"""Load latency of L1, L2 and DRAM, measured by pointer chasing.

One thread follows a chain of indices, ``i = next[i]``, so every load waits for the one before it:
the time per step is the latency of the level the chain lives in. The chain visits every 128-byte
line of a buffer once, in a random order (a single cycle, so it can be followed for any number of
steps), with one index per line so no two steps share a line. The buffer's size picks the level:

``l1_load_latency_s``    16 KiB: fits the L1 of every GPU in hardware/gpus (L1 hits after the first pass)
``l2_load_latency_s``    4 MiB: above every L1 (256 KB at most), below every L2 (6 MB on V100 and A10)
``dram_load_latency_s``  1 GiB: far above every L2; random lines over it also miss the TLBs now and
                         then, as a hash-table or embedding lookup would

Each level is timed for two chain lengths with CUDA events, and the latency is the slope,
(t_long - t_short) / (steps_long - steps_short), which removes the launch and setup cost. The kernel
is Triton, so it also runs on the CPU under ``TRITON_INTERPRET=1`` (the tests follow a chain there).

The L1 and L2 chases are warmed and then repeat from the same start: they are meant to hit. The DRAM
chase must not: a timed chase of 21,000 steps touches 2.7 MB, which the L2 (60 MiB on the H200) keeps
after the first repetition. The first calibration with latencies (H200, 2026-12-02) warmed the first
100,000 lines of the 1 GiB cycle and timed every chase from its start, and its "DRAM" latency came out
at 152 ns against the L2's 149 ns: L2 hits. So the DRAM chase (``COLD``) is not warmed, and each timed
chase starts where no earlier chase went: at successive, disjoint stretches of the cycle
(``cold_starts``), 14 x 21,000 of its 8.4 million lines.

Standard library, torch and triton only (the GPU machine has nothing else); both are imported by the
functions that need them.
"""

from __future__ import annotations

from typing import Any, Callable

LINE_BYTES = 128
INDEX_BYTES = 8  # int64 indices
#: Buffer size per level, as explained above.
LEVEL_BYTES = {"l1_load_latency_s": 16 * 2**10, "l2_load_latency_s": 4 * 2**20, "dram_load_latency_s": 2**30}
DETAIL = {
    "l1_load_latency_s": "dependent loads over 16 KiB of random 128-byte lines (L1 hits)",
    "l2_load_latency_s": "dependent loads over 4 MiB of random 128-byte lines (L2 hits, L1 misses)",
    "dram_load_latency_s": "dependent loads over 1 GiB of random 128-byte lines, each chase on lines no earlier "
                           "one touched (DRAM, with some TLB misses)",
}
#: Chain lengths timed: the difference of 20,000 dependent loads takes some 10 ms at DRAM latency and
#: 0.5 ms in L1, far above the event timer's resolution (about 0.5 us).
SHORT_STEPS = 1_000
LONG_STEPS = 21_000
REPEATS = 7
#: Steps of the untimed first pass: a whole pass through L1 and L2 buffers (which then hit).
WARM_STEPS = 100_000
#: Levels whose chases must miss every cache: not warmed, each timed chase on lines not touched before.
COLD = frozenset({"dram_load_latency_s"})
#: Steps of the one untimed chase that compiles the kernel for a cold level (on lines no timed chase
#: uses): as many as the short chase, so Triton's specialisation of ``steps`` (1, a multiple of 16 or
#: neither) is the one the timed chases use, and none of them compiles.
COMPILE_STEPS = SHORT_STEPS


def cycle(torch: Any, n_lines: int, seed: int = 0, device: str = "cpu") -> tuple[Any, Any]:
    """The chain (see ``chain``) and the order of its lines: line ``order[k]`` is the k-th visited
    from line ``order[0]``."""
    stride = LINE_BYTES // INDEX_BYTES
    gen = torch.Generator(device="cpu").manual_seed(seed)
    order = torch.randperm(n_lines, generator=gen).to(device)
    nxt = torch.zeros(n_lines * stride, dtype=torch.int64, device=device)
    nxt[order * stride] = torch.roll(order, -1) * stride
    return nxt, order


def chain(torch: Any, n_lines: int, seed: int = 0, device: str = "cpu") -> Any:
    """An int64 tensor of n_lines * (LINE_BYTES / INDEX_BYTES) entries whose entry at the start of
    each line holds the index of the next line's start, in one random cycle through all lines."""
    return cycle(torch, n_lines, seed, device)[0]


def cold_starts(order: Any, runs: int, span: int, compile_steps: int = COMPILE_STEPS) -> list[int]:
    """Start indices for ``runs`` chases of at most ``span`` steps each that touch no line twice: the
    k-th starts at the line ``k * span`` steps along the cycle, and the stretch after the last one is
    left for the compiling chase (``cold_compile_start``). Raises if the cycle is too short."""
    stride = LINE_BYTES // INDEX_BYTES
    n_lines = len(order)
    if runs * span + compile_steps + 1 > n_lines:
        raise ValueError(f"{runs} chases of {span} steps need more than the {n_lines} lines of the cycle")
    return [int(order[k * span]) * stride for k in range(runs)]


def cold_compile_start(order: Any, compile_steps: int = COMPILE_STEPS) -> int:
    """Where the compiling chase of a cold level starts: at the end of the cycle, past every timed stretch."""
    stride = LINE_BYTES // INDEX_BYTES
    return int(order[len(order) - compile_steps - 1]) * stride


def chase_kernel() -> Any:
    """The Triton kernel: follow ``steps`` links from ``start`` and store where it ends."""
    import triton
    import triton.language as tl

    @triton.jit
    def _chase(next_ptr, out_ptr, start, steps):
        i = tl.full((), start, tl.int64)
        for _ in range(steps):
            i = tl.load(next_ptr + i)
        tl.store(out_ptr, i)

    return _chase


def follow(torch: Any, nxt: Any, start: int, steps: int, kernel: Any = None) -> int:
    """Run the kernel once and return the index it ended on (a check that the chain is followed)."""
    kernel = kernel or chase_kernel()
    out = torch.zeros(1, dtype=torch.int64, device=nxt.device)
    kernel[(1,)](nxt, out, start, steps, num_warps=1)
    return int(out.item())


def measure(torch: Any, levels: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Latency per level in seconds, with the timings it comes from. Needs a CUDA device."""
    kernel = chase_kernel()
    out: dict[str, dict[str, Any]] = {}
    for name, nbytes in (levels or LEVEL_BYTES).items():
        n_lines = max(2, nbytes // LINE_BYTES)
        nxt, order = cycle(torch, n_lines, device="cuda")
        if name in COLD:  # compile on lines no timed chase uses; every timed chase on fresh lines
            starts = iter(cold_starts(order.cpu(), 2 * REPEATS, LONG_STEPS))
            follow(torch, nxt, cold_compile_start(order.cpu()), COMPILE_STEPS, kernel)
        else:
            starts = None
            follow(torch, nxt, 0, min(n_lines, WARM_STEPS), kernel)  # compile, and warm the level

        def timed(steps: int) -> float:
            return _median_time(torch, lambda: follow_async(torch, nxt, steps, kernel,
                                                            next(starts) if starts is not None else 0))

        short, long = timed(SHORT_STEPS), timed(LONG_STEPS)
        out[name] = {"value": (long - short) / (LONG_STEPS - SHORT_STEPS), "buffer_bytes": n_lines * LINE_BYTES,
                     "short_steps": SHORT_STEPS, "long_steps": LONG_STEPS, "short_s": short, "long_s": long,
                     "repeats": REPEATS, "cold": name in COLD}
        del nxt
        torch.cuda.empty_cache()
    return out


def follow_async(torch: Any, nxt: Any, steps: int, kernel: Any, start: int = 0) -> None:
    out = torch.empty(1, dtype=torch.int64, device=nxt.device)
    kernel[(1,)](nxt, out, start, steps, num_warps=1)


def _median_time(torch: Any, launch: Callable[[], None]) -> float:
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return sorted(times)[len(times) // 2]
