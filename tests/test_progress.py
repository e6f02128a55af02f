"""The progress store: survives restarts, concurrent writers lose nothing, corrupt and locked
databases give one clear line and never lose saved answers."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import subprocess
import sys
import textwrap

import polars as pl
import pytest

from coach.exercises import progress
from coach.exercises.progress import Attempt, ProgressLocked, ProgressStore, summary, topic_strength

WRITERS = 4
PER_WRITER = 40


def _attempt(i: int, topic: str = "coalescing", score: float = 3, max_score: float = 4, kind: str = "quiz") -> Attempt:
    return Attempt(kind=kind, item=f"q-{i}", topic=topic, score=score, max_score=max_score, answer=f"answer {i}")


def test_home_follows_coach_home_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("COACH_HOME", str(tmp_path / "c"))
    assert progress.default_path() == tmp_path / "c" / "progress.sqlite"
    monkeypatch.delenv("COACH_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "x"))
    assert progress.default_path() == tmp_path / "x" / "coach" / "progress.sqlite"


def test_attempts_survive_a_restart_in_a_new_process(tmp_path):
    db = tmp_path / "progress.sqlite"
    with ProgressStore(db) as store:
        store.record(_attempt(1, score=3, max_score=4))
        store.record(_attempt(2, score=-1, max_score=4))
    code = textwrap.dedent(f"""
        from coach.exercises.progress import ProgressStore
        with ProgressStore({str(db)!r}) as s:
            f = s.attempts()
            print(f.height, f["item"].to_list(), f["fraction"].to_list(), f["answer"].to_list())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "2 ['q-1', 'q-2'] [0.75, 0.0] ['answer 1', 'answer 2']"
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _writer(db: str, n: int, barrier) -> None:
    barrier.wait()  # all writers start together
    store = ProgressStore(db)
    for i in range(PER_WRITER):
        store.record(_attempt(n * 1000 + i))
    store.close()


def test_concurrent_writers_lose_nothing(tmp_path):
    db = tmp_path / "progress.sqlite"  # not created yet: the writers race to create it too
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_writer, args=(str(db), n, barrier)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    with ProgressStore(db) as store:
        frame = store.attempts()
    assert frame.height == WRITERS * PER_WRITER
    assert frame["uid"].n_unique() == frame.height
    assert sorted(frame["item"].to_list()) == sorted(f"q-{n * 1000 + i}" for n in range(WRITERS) for i in range(PER_WRITER))


def test_a_file_that_is_not_a_database_is_kept_aside(tmp_path):
    db = tmp_path / "progress.sqlite"
    garbage = b"this is not sqlite\n" * 200
    db.write_bytes(garbage)
    with ProgressStore(db) as store:
        assert store.notice is not None and "\n" not in store.notice
        assert store.notice.startswith(f"progress database {db} was unreadable (file is not a database); kept it as "
                                       "progress.sqlite.corrupt-")
        store.record(_attempt(1))
        assert store.attempts().height == 1
    kept = list(tmp_path.glob("progress.sqlite.corrupt-*Z"))
    assert len(kept) == 1 and kept[0].read_bytes() == garbage


def test_a_damaged_database_keeps_what_can_be_read(tmp_path):
    db = tmp_path / "progress.sqlite"
    with ProgressStore(db) as store:
        for i in range(300):
            store.record(Attempt(kind="quiz", item=f"q-{i}", topic="atomics", score=1, max_score=1, answer="x" * 200))
    raw = bytearray(db.read_bytes())
    page = 4096
    assert len(raw) > 8 * page
    raw[len(raw) - 3 * page: len(raw) - 2 * page] = b"\xff" * page  # smash one page near the end
    db.write_bytes(bytes(raw))
    with ProgressStore(db) as store:
        assert store.notice is not None and "kept it as progress.sqlite.corrupt-" in store.notice
        rescued = store.attempts().height
    assert 0 < rescued < 300 and f"the {rescued} attempts that could be read" in store.notice
    kept = next(tmp_path.glob("progress.sqlite.corrupt-*Z"))  # not its -wal and -shm
    assert kept.read_bytes() == bytes(raw)


def test_a_locked_database_keeps_the_answer_and_merges_it_later(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(progress, "RETRY_BACKOFF_S", 0.01)
    db = tmp_path / "progress.sqlite"
    with ProgressStore(db) as store:
        store.record(_attempt(1))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    with pytest.raises(ProgressLocked) as err:
        progress.save([_attempt(2), _attempt(3)], db)
    message = str(err.value)
    assert "\n" not in message and "locked by another process" in message and "progress.pending.jsonl" in message
    pending = (tmp_path / "progress.pending.jsonl").read_text().splitlines()
    assert [json.loads(line)["item"] for line in pending] == ["q-2", "q-3"]
    holder.execute("ROLLBACK")
    holder.close()
    with ProgressStore(db) as store:
        assert sorted(store.attempts()["item"].to_list()) == ["q-1", "q-2", "q-3"]
    assert not list(tmp_path.glob("progress.pending.jsonl*"))
    with ProgressStore(db) as store:  # merging is idempotent
        assert store.attempts().height == 3


def test_cli_reports_a_corrupt_database_in_one_line(tmp_path):
    (tmp_path / "progress.sqlite").write_bytes(b"garbage" * 100)
    r = subprocess.run([sys.executable, "-m", "coach", "progress", "--json"], capture_output=True, text=True,
                       env={"COACH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": sys.path[0]})
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("coach: warning: progress database ")
    assert "kept it as progress.sqlite.corrupt-" in r.stderr
    assert json.loads(r.stdout)["attempts"] == 0


def test_summaries_by_topic_and_weak_topics():
    frame = pl.DataFrame(
        {"uid": ["a", "b", "c", "d"], "at": ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"],
         "kind": ["quiz", "quiz", "quiz", "drill"], "item": ["c-1", "c-2", "a-1", "m-1"],
         "topic": ["coalescing", "coalescing", "atomics", "training"], "score": [1.0, 4.0, 3.0, 0.0],
         "max_score": [4.0, 4.0, 4.0, 1.0], "answer": [""] * 4, "details": ["{}"] * 4},
    ).with_columns(fraction=pl.col("score") / pl.col("max_score"))
    s = summary(frame, "topic").filter(topic="coalescing").row(0, named=True)
    assert (s["attempts"], s["best"], s["last"], s["recent"]) == (2, 1.0, 1.0, 0.625)
    strength = {r["topic"]: r for r in topic_strength(frame, ["coalescing", "atomics", "training", "triton"]).to_dicts()}
    assert strength["coalescing"]["weak"] is False and strength["training"]["weak"] is True
    assert strength["triton"]["attempts"] == 0 and strength["triton"]["recent"] is None
