"""Work spread over the cores (coach.analyze.parallel): results in order, errors raised where the
loop would raise them, each worker on one Polars thread, forked from the fork server (not this
process), and COACH_SERIAL=1 keeping everything in this process."""

from __future__ import annotations

import os

import pytest

from coach.analyze import parallel
from coach.errors import InputError

several_cores = pytest.mark.skipif(parallel.cores() < 2, reason="needs 2 cores: on one, the work runs in this process")


def _where(item: int, offset: int) -> tuple[int, int, int, int]:
    import polars as pl  # noqa: PLC0415

    return item + offset, os.getpid(), os.getppid(), pl.thread_pool_size()


def _fails_on_three(item: int) -> int:
    if item == 3:
        raise InputError(f"report{item}.sqlite", "is damaged")
    return item


@several_cores
def test_results_come_in_order_from_worker_processes_on_one_polars_thread(monkeypatch):
    monkeypatch.delenv(parallel.SERIAL_ENV, raising=False)
    ticks = []
    out = parallel.map_reports(_where, range(40), 100, on_each=lambda: ticks.append(1))
    assert [r[0] for r in out] == list(range(100, 140))
    assert len(ticks) == 40
    pids = {r[1] for r in out}
    assert os.getpid() not in pids
    assert {r[3] for r in out} == {1}  # POLARS_MAX_THREADS=1 in every worker
    if "forkserver" in parallel.multiprocessing.get_all_start_methods():
        # forked from the fork server, a child of this process: not from this process itself
        assert os.getpid() not in {r[2] for r in out}


@several_cores
def test_an_error_in_a_worker_is_raised_here_with_its_message(monkeypatch):
    monkeypatch.delenv(parallel.SERIAL_ENV, raising=False)
    with pytest.raises(InputError, match=r"report3\.sqlite: is damaged"):
        parallel.map_reports(_fails_on_three, range(8))


def test_serial_runs_in_this_process(monkeypatch):
    monkeypatch.setenv(parallel.SERIAL_ENV, "1")
    out = parallel.map_reports(_where, range(5), 0)
    assert [r[0] for r in out] == list(range(5))
    assert {r[1] for r in out} == {os.getpid()}
