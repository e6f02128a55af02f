"""The user's attempts and scores, kept in SQLite in the user's data folder.

``$COACH_HOME/progress.sqlite`` if ``COACH_HOME`` is set, else
``$XDG_DATA_HOME/coach/progress.sqlite`` (``~/.local/share/coach`` when ``XDG_DATA_HOME`` is unset).

What the store promises:

* **Concurrent writers lose nothing.** The database runs in WAL mode with a busy timeout, and every
  attempt is committed in its own ``BEGIN IMMEDIATE`` transaction, so two ``coach`` processes
  answering at once queue for the write lock instead of failing.
* **A locked database** (another process holding a write transaction past the busy timeout) is
  retried ``LOCK_RETRIES`` times with back-off; if it stays locked, the attempt is appended to
  ``progress.pending.jsonl`` beside the database and ``ProgressLocked`` says so in one line. The
  next process that opens the store merges pending attempts in.
* **A corrupt database** is never deleted: it is renamed ``progress.sqlite.corrupt-<time>``, the
  attempts still readable in it are copied into a fresh database, and ``notice`` carries the
  one-line message for the CLI to show.

Each attempt has a random ``uid`` with a UNIQUE constraint, so merging pending files or salvaging a
corrupt database twice never duplicates an answer.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from coach.errors import CoachError

DB_NAME = "progress.sqlite"
PENDING_NAME = "progress.pending.jsonl"
SCHEMA_VERSION = 1
#: How long one SQLite call waits for another process's write lock. A coach write transaction is
#: one INSERT (well under a millisecond), so 5 s only runs out when something holds a transaction
#: open deliberately.
BUSY_TIMEOUT_S = 5.0
#: Extra attempts after a busy timeout, with back-off in between.
LOCK_RETRIES = 3
RETRY_BACKOFF_S = 0.2
KINDS = ("quiz", "drill", "exercise")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,
    at TEXT NOT NULL,               -- ISO 8601, UTC
    kind TEXT NOT NULL,             -- quiz | drill | exercise
    item TEXT NOT NULL,             -- question id, drill id, scenario id
    topic TEXT NOT NULL,            -- quiz topic the attempt counts for
    score REAL NOT NULL,
    max_score REAL NOT NULL,
    answer TEXT NOT NULL,
    details TEXT NOT NULL           -- JSON
);
CREATE INDEX IF NOT EXISTS attempts_topic ON attempts (topic, at);
"""
_COLUMNS = ("uid", "at", "kind", "item", "topic", "score", "max_score", "answer", "details")


class ProgressLocked(CoachError):
    """The database stayed locked; the attempt went to the pending file instead."""


def data_home() -> Path:
    """The folder that holds the progress database."""
    if home := os.environ.get("COACH_HOME"):
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg).expanduser() / "coach"


def default_path() -> Path:
    return data_home() / DB_NAME


@dataclass(frozen=True)
class Attempt:
    """One graded answer."""

    kind: str
    item: str
    topic: str
    score: float
    max_score: float
    answer: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="microseconds"))
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"attempt kind {self.kind!r} is not one of {KINDS}")
        if self.max_score < 0:
            raise ValueError("max_score must be >= 0")

    def row(self) -> tuple:
        return (self.uid, self.at, self.kind, self.item, self.topic, float(self.score), float(self.max_score),
                self.answer, json.dumps(self.details, sort_keys=True, default=str))


class ProgressStore:
    """Open (creating, repairing or merging as needed) the progress database at ``path``."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.pending_path = self.path.with_name(PENDING_NAME)
        self.notice: str | None = None  # one line for the user, set when something was repaired
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = self._open()
        self._merge_pending()

    # -- opening -------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = None
        try:
            conn = self._connect()
            problem = _integrity_problem(conn)
            if problem is None:
                if not _initialised(conn):  # a fresh file: the only time opening writes
                    self._retrying(lambda: _init(conn))
                return conn
        except sqlite3.DatabaseError as err:
            if _is_lock(err):
                raise ProgressLocked(f"{self.path}: locked by another coach process; try again in a moment") from None
            problem = str(err)
        if conn is not None:
            conn.close()
        return self._set_aside(problem)

    def _set_aside(self, problem: str) -> sqlite3.Connection:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        kept = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            os.replace(self.path, kept)
        except FileNotFoundError:  # another process set it aside first and started a new one
            conn = self._connect()
            self._retrying(lambda: _init(conn))
            return conn
        for suffix in ("-wal", "-shm"):  # the journal belongs to the damaged file: keep it with it
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                os.replace(side, kept.with_name(kept.name + suffix))
        conn = self._connect()
        self._retrying(lambda: _init(conn))
        rescued = list(_salvage(kept))
        if rescued:
            self._retrying(lambda: _insert(conn, rescued))
        self.notice = (f"progress database {self.path} was unreadable ({problem}); kept it as {kept.name} and "
                       f"started a new one with the {len(rescued)} attempts that could be read")
        return conn

    def _merge_pending(self) -> None:
        """Move attempts that a locked database could not take into the database."""
        claimed = []
        candidates = [self.pending_path, *self.path.parent.glob(PENDING_NAME + ".*.merging")]
        for p in candidates:
            target = p if p.suffix == ".merging" else p.with_name(f"{p.name}.{os.getpid()}.{time.time_ns()}.merging")
            try:
                if p != target:
                    os.replace(p, target)  # atomic: exactly one process claims a pending file
                claimed.append(target)
            except FileNotFoundError:
                continue
        if not claimed:
            return
        rows = [Attempt(**json.loads(line)).row() for p in claimed
                for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        try:
            self._retrying(lambda: _insert(self._conn, rows))
        except ProgressLocked:
            return  # the claimed files stay and are merged next time (uids keep it idempotent)
        for p in claimed:
            p.unlink(missing_ok=True)

    # -- writing -------------------------------------------------------------------------------
    def record(self, attempt: Attempt) -> None:
        """Commit one attempt in its own transaction (or keep it in the pending file, see module doc)."""
        try:
            self._retrying(lambda: _insert(self._conn, [attempt.row()]))
        except ProgressLocked:
            keep_pending(self.path, [attempt])
            raise _locked(self.path) from None

    def _retrying(self, op) -> Any:
        for attempt_no in range(LOCK_RETRIES + 1):
            try:
                return op()
            except sqlite3.OperationalError as err:
                if not _is_lock(err) or attempt_no == LOCK_RETRIES:
                    if _is_lock(err):
                        raise ProgressLocked(f"{self.path}: locked") from None
                    raise
                time.sleep(RETRY_BACKOFF_S * (2 ** attempt_no))
        raise AssertionError("unreachable")

    # -- reading -------------------------------------------------------------------------------
    def attempts(self) -> pl.DataFrame:
        """Every attempt, oldest first, with ``fraction`` (score / max, clipped to 0..1)."""
        rows = self._conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM attempts ORDER BY at, id").fetchall()
        frame = pl.DataFrame(rows, schema=ATTEMPT_SCHEMA, orient="row")
        return frame.with_columns(
            fraction=pl.when(pl.col("max_score") > 0)
            .then((pl.col("score").clip(lower_bound=0) / pl.col("max_score")).clip(upper_bound=1.0))
            .otherwise(0.0)
        )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ProgressStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def save(attempts: list[Attempt], path: Path | None = None) -> str | None:
    """Record ``attempts`` (each in its own transaction) and return the store's notice, if any.

    If the database stays locked, the attempts not yet saved go to the pending file and
    ``ProgressLocked`` says so: an answer is never dropped.
    """
    path = Path(path) if path is not None else default_path()
    try:
        store = ProgressStore(path)
    except ProgressLocked:
        keep_pending(path, attempts)
        raise _locked(path) from None
    with store:
        for i, attempt in enumerate(attempts):
            try:
                store.record(attempt)
            except ProgressLocked:
                keep_pending(path, attempts[i + 1:])
                raise
        return store.notice


def keep_pending(path: Path, attempts: list[Attempt]) -> None:
    """Append attempts to the pending file beside the database (one JSON line each, fsync'ed)."""
    if not attempts:
        return
    lines = "".join(json.dumps({k: getattr(a, k) for k in ("kind", "item", "topic", "score", "max_score", "answer",
                                                            "details", "at", "uid")}, default=str) + "\n"
                    for a in attempts)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(PENDING_NAME), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, lines.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _locked(path: Path) -> ProgressLocked:
    return ProgressLocked(f"{path}: locked by another process for over {BUSY_TIMEOUT_S * (LOCK_RETRIES + 1):.0f} s; "
                          f"the answer was kept in {PENDING_NAME} and will be added next time")


ATTEMPT_SCHEMA = {"uid": pl.Utf8, "at": pl.Utf8, "kind": pl.Utf8, "item": pl.Utf8, "topic": pl.Utf8,
                  "score": pl.Float64, "max_score": pl.Float64, "answer": pl.Utf8, "details": pl.Utf8}


def _is_lock(err: sqlite3.Error) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


def _integrity_problem(conn: sqlite3.Connection) -> str | None:
    """None when the file is a healthy SQLite database (or empty), else what is wrong."""
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        return "; ".join(str(r[0]) for r in rows[:3])
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if tables and "attempts" not in tables:
        return "not a coach progress database"
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise CoachError(f"progress database written by a newer coach (schema {version}); upgrade coach")
    return None


def _initialised(conn: sqlite3.Connection) -> bool:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    return version == SCHEMA_VERSION and wal


def _init(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        for stmt in filter(str.strip, _SCHEMA.split(";")):
            conn.execute(stmt)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _insert(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(f"INSERT OR IGNORE INTO attempts ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                         rows)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _salvage(path: Path) -> Iterator[tuple]:
    """Attempts still readable from a damaged database, row by row, stopping at the damage."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return
    try:
        cursor = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM attempts ORDER BY id")
        while True:
            try:
                row = cursor.fetchone()
            except sqlite3.Error:
                return
            if row is None:
                return
            yield row
    except sqlite3.Error:
        return
    finally:
        conn.close()


# -- summaries -----------------------------------------------------------------------------------

#: A topic counts as weak when its recent answers average below this share of the rubric: an
#: interview answer that misses more than about a third of the strong signals reads as a gap.
WEAK_FRACTION = 0.6
#: How many of the latest attempts per topic decide whether it is weak, so that old failures stop
#: counting once the user has improved.
RECENT_ATTEMPTS = 5


def summary(attempts: pl.DataFrame, by: str = "topic") -> pl.DataFrame:
    """Per ``by`` (topic or item) and kind: attempts, best, last and recent mean fraction."""
    ordered = attempts.sort("at")
    return (
        ordered.group_by("kind", by, maintain_order=True)
        .agg(
            attempts=pl.len(),
            best=pl.col("fraction").max(),
            last=pl.col("fraction").last(),
            recent=pl.col("fraction").tail(RECENT_ATTEMPTS).mean(),
            last_at=pl.col("at").last(),
        )
        .sort("kind", by)
    )


def topic_strength(attempts: pl.DataFrame, topics: list[str]) -> pl.DataFrame:
    """For every topic: attempts and the recent mean fraction over all kinds (null if never tried)."""
    recent = (
        attempts.sort("at")
        .group_by("topic")
        .agg(attempts=pl.len(), recent=pl.col("fraction").tail(RECENT_ATTEMPTS).mean())
    )
    return (
        pl.DataFrame({"topic": topics}, schema={"topic": pl.Utf8})
        .join(recent, on="topic", how="left", maintain_order="left")
        .with_columns(pl.col("attempts").fill_null(0), weak=pl.col("recent") < WEAK_FRACTION)
    )
