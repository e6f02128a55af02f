"""Work spread over every core: one process pool per coach process, its workers one Polars thread each.

Reading many small reports is many small steps (a connection, a few dozen queries, a few dozen Polars
operations per report), each too short for Polars' own threads to help, so one report at a time
leaves all cores but one idle. ``map_reports`` runs a function over many inputs in worker processes
instead, as many as there are cores; each worker runs Polars on one thread, so the workers do not
compete for cores with each other's thread pools.

Starting the workers cheaply. A worker started fresh (``spawn``) imports Python, Polars, PyArrow and
the readers before its first report: about 0.4 s of CPU each, which on a folder of small reports is
as much as reading a dozen of them. Forking the coach process itself would cost nothing, but a
process whose Polars has run anything holds threads (Polars' pool, the allocator's) whose locks a
forked child would inherit held. So the workers are forked from a fork server
(``multiprocessing``'s ``forkserver``): one fresh process that imports the readers (``PRELOAD``) and
runs no Polars work, forked once per worker. ``warm_up`` starts it before the caller needs it (the
server imports while the caller goes on with its own imports and finding its inputs); ``map_reports``
starts it if nobody did. Polars reads ``POLARS_MAX_THREADS`` when it is imported, so the server is
started with it set to 1 (and so are its workers), and with this process's ``sys.path`` as it is
then: a folder put on it later is not seen by the workers (as with spawned workers, which start once
and are reused). Where there is no fork server (Windows) the
workers are spawned, as before.

The pool is started on first use and reused for the rest of the process; work is handed out in
chunks (a few per worker), so that a report's round trip to a worker is not paid once per report.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sys
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Callable, Iterable, Sequence, TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Set to 1 to read reports one after another in this process (a debugger, a profiler).
SERIAL_ENV = "COACH_SERIAL"

#: What the fork server imports before it forks any worker: the side-by-side code and the timeline
#: readers (a module that cannot be imported there is skipped by the server, and imported by the
#: worker that needs it).
PRELOAD = ("coach.analyze.multi", "coach.ingest.nsys_sqlite", "coach.ingest.kineto")

#: Chunks of work per worker: a few, so that a slow report does not leave the other workers idle at the end.
CHUNKS_PER_WORKER = 4

_pool: Executor | None = None
_server_started = False


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def parallel() -> bool:
    """Whether ``map_reports`` of several items would use worker processes."""
    return cores() >= 2 and os.environ.get(SERIAL_ENV) != "1"


def _context() -> multiprocessing.context.BaseContext:
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def warm_up(preload: Sequence[str] = PRELOAD) -> None:
    """Start the process the workers are forked from, now, so that it has imported ``preload`` by the
    time ``map_reports`` needs workers. Does nothing where work is not spread (one core,
    ``COACH_SERIAL=1``), where there is no fork server, or when it has already started."""
    global _server_started
    if _server_started or not parallel():
        return
    ctx = _context()
    if ctx.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver  # noqa: PLC0415

    ctx.set_forkserver_preload(list(preload))
    # The server's environment: Polars reads its thread count when imported; and the server imports
    # from this process's sys.path as it is now (a script or a test may have put folders on it),
    # which Python 3.11's fork server is handed but does not apply.
    server_env = {"POLARS_MAX_THREADS": "1", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    before = {k: os.environ.get(k) for k in server_env}
    os.environ.update(server_env)
    try:
        forkserver.ensure_running()
    finally:
        for k, v in before.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    _server_started = True


def _one_polars_thread() -> None:
    os.environ["POLARS_MAX_THREADS"] = "1"  # a spawned worker: read by Polars when it is first imported, after this


def _shutdown() -> None:
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)


def map_reports(fn: Callable[..., _R], items: Iterable[_T], *args, on_each: Callable[[], None] | None = None) -> list[_R]:
    """``[fn(item, *args) for item in items]``, on every core when there are several items and cores;
    ``on_each`` is called after each result (progress), results in the order of ``items``. An
    exception raised by ``fn`` is raised here, as it would be in a loop."""
    global _pool
    items = list(items)
    if len(items) < 2 or not parallel():
        out = []
        for item in items:
            out.append(fn(item, *args))
            if on_each:
                on_each()
        return out
    if _pool is None:
        warm_up()
        _pool = ProcessPoolExecutor(max_workers=cores(), mp_context=_context(), initializer=_one_polars_thread)
        atexit.register(_shutdown)
    chunk = max(1, len(items) // (cores() * CHUNKS_PER_WORKER))
    out = []
    for result in _pool.map(_call, [(fn, item, args) for item in items], chunksize=chunk):
        out.append(result)
        if on_each:
            on_each()
    return out


def _call(job: tuple[Callable[..., _R], _T, tuple]) -> _R:
    fn, item, args = job
    return fn(item, *args)
