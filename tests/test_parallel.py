"""Work spread over the cores (coach.analyze.parallel): results in order, errors raised where the
loop would raise them, each worker on one Polars thread, forked from the fork server (not this
process), and COACH_SERIAL=1 keeping everything in this process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_the_workers_run_the_callers_coach_when_it_put_coach_on_sys_path_itself(tmp_path):
    """A script that puts a checkout of coach on sys.path at run time (benchmarks/profile_scale.py
    does) gets workers running that checkout's code, not another coach the interpreter would find
    on its own (an installed one): the fork server imports coach before it forks, and Python 3.11's
    fork server does not apply the sys.path it is handed."""
    if parallel.cores() < 2:
        pytest.skip("needs 2 cores: on one, the work runs in this process")
    (tmp_path / "on_the_path").mkdir()
    (tmp_path / "on_the_path" / "where_from.py").write_text(
        "import sys\n\ndef where(_):\n    return sys.modules['coach.analyze.parallel'].__file__\n")
    root = Path(parallel.__file__).resolve().parents[2]
    script = ("import sys; sys.path[:0] = sys.argv[1:3]\n"
              "import where_from\n"
              "from coach.analyze import parallel\n"
              "print(parallel.__file__); print(set(parallel.map_reports(where_from.where, range(6))))\n")
    env = {k: v for k, v in os.environ.items() if k not in (parallel.SERIAL_ENV, "PYTHONPATH")}
    out = subprocess.run([sys.executable, "-c", script, str(root), str(tmp_path / "on_the_path")], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    ours, theirs = out.stdout.strip().splitlines()
    assert theirs == repr({ours})
