"""What the corpus programs share: the device, NVTX ranges that work without a GPU, a PyTorch-profiler
window over steady-state steps, and one JSON line of results.

Standard library and torch only (the programs run on a GPU machine with nothing else installed, and
on a laptop's CPU torch for a smoke test: there every CUDA-only part is skipped, and said so).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

import torch


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


@contextlib.contextmanager
def nvtx(name: str):
    """An NVTX push/pop range on a GPU machine (what nsys records); nothing on the CPU."""
    if torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()
    else:
        yield


def parser(doc: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kineto", metavar="TRACE.json.gz", help="write a PyTorch-profiler trace of the profiled steps")
    ap.add_argument("--steps", type=int, default=None, help="profiled steps (each program has its own default)")
    ap.add_argument("--warmup", type=int, default=2, help="steps run before the profiled ones")
    return ap


@contextlib.contextmanager
def kineto(path: str | None, dev: torch.device, record_shapes: bool = False):
    """torch.profiler over the block when ``path`` is given (CPU and CUDA activity), exported as a
    Chrome trace (gzipped when the name ends in .gz); a no-op otherwise."""
    if not path:
        yield None
        return
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=activities, record_shapes=record_shapes) as prof:
        yield prof
        sync(dev)
    prof.export_chrome_trace(path)


def emit(program: str, **numbers) -> None:
    """One JSON line on stdout: the program, its device, and what it measured."""
    info = {"program": program, "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
            "torch": torch.__version__, "time_unix": round(time.time(), 3), **numbers}
    # one write of the whole line: worker processes share the pipe, and a write of at most PIPE_BUF
    # bytes is not interleaved with another process's (print writes the text and the newline apart)
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (json.dumps(info, sort_keys=True) + "\n").encode())


def timed(dev: torch.device):
    """A wall-clock timer that synchronises the device first and last."""
    sync(dev)
    t0 = time.perf_counter()

    def stop() -> float:
        sync(dev)
        return time.perf_counter() - t0

    return stop
