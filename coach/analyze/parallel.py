"""Work spread over every core: one process pool per coach process, its workers one Polars thread each.

Reading many small reports is many small steps (a connection, a few dozen queries, a few dozen Polars
operations per report), each too short for Polars' own threads to help, so one report at a time
leaves all cores but one idle. ``map`` runs a function over many inputs in worker processes instead,
as many as there are cores; each worker runs Polars on one thread, so the workers do not compete for
cores with each other's thread pools. The pool starts on first use (``spawn``: a fresh interpreter,
never a fork of a process whose Polars threads may hold locks) and is reused for the rest of the
process.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Callable, Iterable, TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Set to 1 to read reports one after another in this process (a debugger, a profiler).
SERIAL_ENV = "COACH_SERIAL"

_pool: Executor | None = None


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _one_polars_thread() -> None:
    os.environ["POLARS_MAX_THREADS"] = "1"  # read by Polars when it is first imported, which comes after this


def _shutdown() -> None:
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)


def map_reports(fn: Callable[..., _R], items: Iterable[_T], *args, on_each: Callable[[], None] | None = None) -> list[_R]:
    """``[fn(item, *args) for item in items]``, on every core when there are several items and cores;
    ``on_each`` is called after each result (progress), results in the order of ``items``. An
    exception raised by ``fn`` is raised here, as it would be in a loop."""
    global _pool
    items = list(items)
    if len(items) < 2 or cores() < 2 or os.environ.get(SERIAL_ENV) == "1":
        out = []
        for item in items:
            out.append(fn(item, *args))
            if on_each:
                on_each()
        return out
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=cores(), mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_one_polars_thread)
        atexit.register(_shutdown)
    futures = [_pool.submit(fn, item, *args) for item in items]
    out = []
    for f in futures:
        out.append(f.result())
        if on_each:
            on_each()
    return out
