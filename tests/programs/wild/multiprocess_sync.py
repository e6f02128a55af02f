"""Several processes, each training on its own GPU (or sharing one), each reading its loss every step.

    python multiprocess_sync.py [--procs 4] [--kineto-dir DIR]

The parent spawns --procs worker processes (torch.multiprocessing, "spawn"); worker r uses GPU
r % (number of GPUs). Each runs bf16 GEMM steps and reads its loss with .item() after every step, then
spends about 2 ms on host-side bookkeeping before launching the next step. Under nsys (which follows
the children) this is one report holding several processes and, on a machine with several GPUs,
several devices.

Known bottleneck: the .item() synchronises each process with its GPU every step, so each GPU's queue
drains and idles through the host's bookkeeping: coach should lead with host synchronisation, and its
saving must be per GPU (the GPUs idle side by side: the saving is at most one GPU's idle time, never
the sum over GPUs, and never more than the profiled window). With --kineto-dir each worker also
writes its own torch.profiler trace (rank<r>.json.gz).
"""

from __future__ import annotations

import os
import time

import torch
import torch.multiprocessing as mp

from _common import device, emit, kineto, nvtx, parser

BOOKKEEPING_S = 0.002


def worker(rank: int, steps: int, warmup: int, size: int, kineto_dir: str | None) -> None:
    dev = device()
    if dev.type == "cuda":
        dev = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
    torch.manual_seed(rank)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    w = torch.randn(size, size, device=dev, dtype=dtype) / size ** 0.5
    x = torch.randn(size, size, device=dev, dtype=dtype)
    losses = []

    def step(k: int) -> None:
        with nvtx(f"rank{rank}/step{k}"):
            y = x
            for _ in range(6):
                y = torch.tanh(y @ w)
            losses.append(y.float().square().mean().item())  # a sync every step
            deadline = time.perf_counter() + BOOKKEEPING_S  # logging, metrics, checkpoint bookkeeping
            while time.perf_counter() < deadline:
                pass

    for k in range(warmup):
        step(k)
    path = os.path.join(kineto_dir, f"rank{rank}.json.gz") if kineto_dir else None
    t0 = time.perf_counter()
    with kineto(path, dev):
        for k in range(warmup, warmup + steps):
            step(k)
    emit("multiprocess_sync", rank=rank, gpu=str(dev), steps=steps,
         step_ms=round(1e3 * (time.perf_counter() - t0) / steps, 3), last_loss=losses[-1])


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--kineto-dir", help="write one torch.profiler trace per worker here")
    args = ap.parse_args()
    if args.kineto_dir:
        os.makedirs(args.kineto_dir, exist_ok=True)
    mp.spawn(worker, args=(args.steps or 20, args.warmup, args.size, args.kineto_dir), nprocs=args.procs, join=True)


if __name__ == "__main__":
    main()
