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
    "dram_load_latency_s": "dependent loads over 1 GiB of random 128-byte lines (DRAM, with some TLB misses)",
}
#: Chain lengths timed: the difference of 20,000 dependent loads takes some 10 ms at DRAM latency and
#: 0.5 ms in L1, far above the event timer's resolution (about 0.5 us).
SHORT_STEPS = 1_000
LONG_STEPS = 21_000
REPEATS = 7
#: Steps of the untimed first pass: a whole pass through L1 and L2 buffers (which then hit), capped
#: for the DRAM buffer, which is not meant to be cached anyway (8M lines would take seconds).
WARM_STEPS = 100_000


def chain(torch: Any, n_lines: int, seed: int = 0, device: str = "cpu") -> Any:
    """An int64 tensor of n_lines * (LINE_BYTES / INDEX_BYTES) entries whose entry at the start of
    each line holds the index of the next line's start, in one random cycle through all lines."""
    stride = LINE_BYTES // INDEX_BYTES
    gen = torch.Generator(device="cpu").manual_seed(seed)
    order = torch.randperm(n_lines, generator=gen).to(device)
    nxt = torch.zeros(n_lines * stride, dtype=torch.int64, device=device)
    nxt[order * stride] = torch.roll(order, -1) * stride
    return nxt


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
        nxt = chain(torch, n_lines, device="cuda")
        follow(torch, nxt, 0, min(n_lines, WARM_STEPS), kernel)  # compile, and warm the level
        short = _median_time(torch, lambda: follow_async(torch, nxt, SHORT_STEPS, kernel))
        long = _median_time(torch, lambda: follow_async(torch, nxt, LONG_STEPS, kernel))
        out[name] = {"value": (long - short) / (LONG_STEPS - SHORT_STEPS), "buffer_bytes": n_lines * LINE_BYTES,
                     "short_steps": SHORT_STEPS, "long_steps": LONG_STEPS, "short_s": short, "long_s": long,
                     "repeats": REPEATS}
        del nxt
        torch.cuda.empty_cache()
    return out


def follow_async(torch: Any, nxt: Any, steps: int, kernel: Any) -> None:
    out = torch.empty(1, dtype=torch.int64, device=nxt.device)
    kernel[(1,)](nxt, out, 0, steps, num_warps=1)


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
