"""Scenario 04: count the events of each of 32 types in every user's event log (chains of chunks).

    python events.py --variant slow     # 32 counters per lane in registers: 72 registers, 37.5% occupancy
    python events.py --variant fixed    # the counters packed four to a register: 32 registers, 100%

Both variants build the same pool from the same seed: 128-byte chunks of 31 random event words and a
link, each user's 64 chunks scattered at random over the pool. Each runs the kernel once on a
poisoned output (-1 everywhere) and compares every count with torch's (integers: they must match
exactly), then times the kernel with CUDA events (warm-up, then the median of the repeats) and prints
one JSON line (coach.capture.harness.emit) with the registers the compiler gave the kernel. The
kernels live in events.cu and are compiled at run time through NVRTC.

The work: read every chunk once, 128 bytes, and write 32 counts per user. Each warp reads its
user's chunks one after the other (the next address is in the chunk), so the kernel waits on memory
latency, and its speed is the number of chains in flight: the warps each SM holds.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
TYPES, LANES, THREADS = 32, 32, 256  # as in events.cu
KERNELS = {"slow": "count_events_wide", "fixed": "count_events_packed"}
#: Integer counts: exact or wrong.
TOLERANCE = 0.0


def build_pool(chunks: int, chain: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The chunk pool (chunks x 32 int32: 31 event words and the link), each user's chunks in chain
    order (users x chain, int64), and the users' first chunks (int32)."""
    users = chunks // chain
    pool = torch.randint(0, 2**31 - 1, (chunks, LANES), dtype=torch.int32, device="cuda", generator=gen)
    order = torch.randperm(chunks, device="cuda", generator=gen).view(users, chain)  # scattered chains
    links = torch.full((users, chain), -1, dtype=torch.int32, device="cuda")
    links[:, :-1] = order[:, 1:].to(torch.int32)
    pool[order.flatten(), LANES - 1] = links.flatten()
    return pool, order, order[:, 0].to(torch.int32).contiguous()


def reference_counts(pool: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """counts[u, t]: events of type t in user u's chunks (the low 5 bits of the 31 event words)."""
    types = (pool[:, : LANES - 1] & (TYPES - 1)).to(torch.uint8)[order]  # users x chain x 31
    return torch.stack([(types == t).sum(dim=(1, 2), dtype=torch.int32) for t in range(TYPES)], dim=1)


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    chunks, chain = size["chunks"], size["chain_chunks"]
    users = chunks // chain
    if size["chunk_words"] != LANES or size["types"] != TYPES or chunks % chain or users % (THREADS // LANES):
        raise SystemExit("sizes do not match events.cu: 32-word chunks, 32 types, whole chains, 8 users per block")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    pool, order, heads = build_pool(chunks, chain, gen)
    counts = torch.empty(users, TYPES, dtype=torch.int32, device="cuda")
    module = cupy.RawModule(code=(HERE / "events.cu").read_text(), options=("--std=c++17", "-lineinfo"))
    kernel = module.get_function(KERNELS[args.variant])
    grid = (users // (THREADS // LANES),)
    kernel_args = (cupy.asarray(pool), cupy.asarray(heads), cupy.asarray(counts), np.int32(users))

    def launch() -> None:
        kernel(grid, (THREADS,), kernel_args)

    counts.fill_(-1)  # poison: a count the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = reference_counts(pool, order)
    error = harness.relative_error(counts, reference)
    del reference, order
    torch.cuda.empty_cache()

    times = harness.time_cuda(launch, warmup=args.warmup, repeat=args.repeat, label=f"count_events {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, times_ms=times, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, users=users, chain_chunks=chain, kernel=KERNELS[args.variant],
                 registers=kernel.num_regs, local_bytes_per_thread=kernel.local_size_bytes,
                 device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
