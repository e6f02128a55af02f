"""Scenario 04: total each user's metrics along a chain of chunks and score the user (64 scores).

    python scores.py --variant slow     # weights loaded into registers before the walk: 74 registers
    python scores.py --variant fixed    # each weight loaded where it is used: 31 registers

Both variants build the same pool from the same seed: 128-byte chunks of 31 random metric words
(0-1023) and a link, each user's 64 chunks scattered at random over the pool, and a random 31 x 64
weight matrix. Each runs the kernel once on a poisoned output (NaN everywhere) and compares every
score with a float64 reference, then times the kernel with CUDA events (warm-up, then the median of
the repeats) and prints one JSON line (coach.capture.harness.emit) with the registers the compiler
gave the kernel. The kernels live in scores.cu and are compiled at run time through NVRTC.

The work: read every chunk once, 128 bytes, and write 64 scores per user. Each warp reads its
user's chunks one after the other (the next address is in the chunk), so the kernel waits on memory
latency, and its speed is the number of chains in flight: the warps each SM holds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from coach.capture import harness

HERE = Path(__file__).resolve().parent
LANES, SCORES, THREADS = 32, 64, 256  # as in scores.cu
METRICS = LANES - 1
#: Largest metric value + 1: a user's total (64 chunks) stays below 2^16, exact in float32.
METRIC_VALUES = 1024
KERNELS = {"slow": "score_users_hoisted", "fixed": "score_users"}
#: Exact integer totals, then 31 fp32 FMAs per score: each rounding is 2^-24 relative (6e-8), so
#: about 1e-7 on the norm; 1e-5 leaves room without hiding a wrong total (one wrong chunk in a user's
#: 64 moves that user's scores by about 1.5%).
TOLERANCE = 1e-5


def build_pool(chunks: int, chain: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The chunk pool (chunks x 32 int32: 31 metric words and the link), each user's chunks in chain
    order (users x chain, int64), and the users' first chunks (int32)."""
    users = chunks // chain
    pool = torch.randint(0, METRIC_VALUES, (chunks, LANES), dtype=torch.int32, device=gen.device, generator=gen)
    order = torch.randperm(chunks, device=gen.device, generator=gen).view(users, chain)  # scattered chains
    links = torch.full((users, chain), -1, dtype=torch.int32, device=gen.device)
    links[:, :-1] = order[:, 1:].to(torch.int32)
    pool[order.flatten(), LANES - 1] = links.flatten()
    return pool, order, order[:, 0].to(torch.int32).contiguous()


def reference_scores(pool: torch.Tensor, order: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """scores[u] = totals[u] @ w in float64, totals[u, j] the sum of word j over user u's chunks."""
    users, chain = order.shape
    owner = torch.empty(pool.shape[0], dtype=torch.int64, device=pool.device)
    owner[order.flatten()] = torch.arange(users, device=pool.device).repeat_interleave(chain)
    totals = torch.zeros(users, METRICS, dtype=torch.float64, device=pool.device)
    totals.index_add_(0, owner, pool[:, :METRICS].double())
    return totals @ w.double()


def main() -> None:
    import cupy  # here, so that the pool and its reference can be built on a machine without a GPU

    args = harness.parse_args(__doc__.splitlines()[0])
    size = harness.sizes(__file__)
    chunks, chain = size["chunks"], size["chain_chunks"]
    users = chunks // chain
    if (size["chunk_words"] != LANES or size["scores"] != SCORES or chunks % chain
            or users % (THREADS // LANES) or chain * (METRIC_VALUES - 1) >= 2**24):
        raise SystemExit("sizes do not match scores.cu: 32-word chunks, 64 scores, whole chains, 8 users per "
                         "block, totals exact in float32")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    pool, order, heads = build_pool(chunks, chain, gen)
    w = torch.randn(METRICS, SCORES, device="cuda", generator=gen)
    scores = torch.empty(users, SCORES, device="cuda")
    module = cupy.RawModule(code=harness.cuda_source(HERE / "scores.cu"), options=harness.NVRTC_OPTIONS)
    kernel = module.get_function(KERNELS[args.variant])
    grid = (users // (THREADS // LANES),)
    kernel_args = (cupy.asarray(pool), cupy.asarray(heads), cupy.asarray(w), cupy.asarray(scores), np.int32(users))

    def launch() -> None:
        kernel(grid, (THREADS,), kernel_args)

    scores.fill_(float("nan"))  # poison: a score the kernel does not write fails the check
    with harness.nvtx("check"):
        launch()
    torch.cuda.synchronize()
    reference = reference_scores(pool, order, w)
    error = harness.relative_error(scores, reference)
    del reference, order
    torch.cuda.empty_cache()

    timing = harness.time_kernel(launch, footprint_bytes=harness.footprint(pool, heads, w, scores),
                                 warmup=args.warmup, repeat=args.repeat, label=f"score_users {args.variant}")
    major, minor = torch.cuda.get_device_capability()
    harness.emit(variant=args.variant, timing=timing, unit="launch", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, users=users, chain_chunks=chain, kernel=KERNELS[args.variant],
                 registers=kernel.num_regs, local_bytes_per_thread=kernel.local_size_bytes,
                 device=torch.cuda.get_device_name(), arch=f"sm_{major}{minor}")


if __name__ == "__main__":
    main()
