"""Version ladders: their definitions (``kernels/<op>/ladder.toml``) and their recorded results
(``traces/<gpu>/ladders/<op>/results.json``), typed, for the CLI, the dashboard and the runner.

A ladder takes one operation from a correct, naive kernel (rung 00) to a fast one, one change per
rung. Its ``ladder.toml`` says, for every rung, the single change, the reason for it and the
prediction written before measuring; after a run on the GPU, the measured outcome and, where it
differs from the prediction, why. The runner (``coach.capture.ladder``) checks and times every rung
and writes ``results.json``; ``kernels/README.md`` documents both formats.

This module needs only the standard library: it is read on the GPU machine too (by the runner and
by ``coach ladder --live``), where Polars is not installed. A ladder has a handful of rungs, so
plain lists of frozen dataclasses are the right container; ``rung_table`` derives the columns that
the CLI and the dashboard show.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from coach.errors import InputError
from coach.paths import kernels_dir, traces_dir

DEFINITION_SCHEMA = "coach-ladder/1"
RESULTS_SCHEMA = "coach-ladder-results/1"
DEFINITION_FILE = "ladder.toml"
RESULTS_FILE = "results.json"
#: The measured ceilings a ladder may be compared against (names from coach.capture.calibrate).
CEILINGS = ("dram_copy_bandwidth_bytes_per_s", "dram_read_bandwidth_bytes_per_s")
#: A rung file is ``NN_<technique>.cu`` (CUDA C++, built with NVRTC) or ``NN_<technique>.py`` (Triton).
RUNG_FILE = re.compile(r"^(?P<id>\d\d)_(?P<technique>[a-z0-9_]+)\.(?P<ext>cu|py)$")

Language = Literal["cuda", "triton"]
Status = Literal["ok", "wrong", "error"]


# --------------------------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RungDef:
    """One rung as its ladder.toml declares it."""

    id: str  # "03"
    file: str  # "03_warp_shuffle.cu"
    title: str  # a few words: "warp shuffles"
    change: str  # the single change against the previous rung
    reason: str  # why that change should help
    prediction: str  # written before measuring
    measured: str = ""  # after the run: what was measured, in words
    why: str = ""  # where the measurement differs from the prediction: why
    spills: bool = False  # CUDA: whether the compiler is allowed to spill registers in this rung

    @property
    def key(self) -> str:
        """The rung's name everywhere (results, NVTX ranges, tables): its file name without suffix."""
        return Path(self.file).stem

    @property
    def language(self) -> Language:
        return "cuda" if self.file.endswith(".cu") else "triton"


@dataclass(frozen=True)
class LadderDef:
    """A ladder as ``kernels/<name>/ladder.toml`` declares it."""

    name: str
    title: str
    operation: str  # what is computed, as a formula
    size: str  # the size measured on the H200, in words
    ceiling: str  # which measured ceiling the "% of ceiling" column uses (one of CEILINGS)
    goal: str  # the goal of the last rung, in words
    goal_bytes_per_s: float  # the bandwidth goal of the last rung
    baseline: str  # the peer the "vs PyTorch" column compares with (a key of peers)
    peers: tuple[str, ...]  # reference implementations timed in the same run
    rungs: tuple[RungDef, ...]
    folder: Path

    def rung(self, key_or_id: str) -> RungDef:
        for r in self.rungs:
            if key_or_id in (r.key, r.id):
                return r
        raise KeyError(key_or_id)

    def path(self, rung: RungDef) -> Path:
        return self.folder / rung.file


def ladder_names(root: Path | None = None) -> list[str]:
    """Every ladder under ``kernels/`` (folders holding a ladder.toml), sorted."""
    root = root or kernels_dir()
    return sorted(p.parent.name for p in root.glob(f"*/{DEFINITION_FILE}"))


def load_definition(name: str, root: Path | None = None) -> LadderDef:
    """Read and validate ``kernels/<name>/ladder.toml``."""
    root = root or kernels_dir()
    path = root / name / DEFINITION_FILE
    if not path.is_file():
        known = ", ".join(ladder_names(root)) or "none"
        raise InputError(path, f"no ladder named {name!r} (known: {known})")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(path, f"cannot be read as TOML ({err})") from None
    return _definition(path, doc)


def _definition(path: Path, doc: Mapping[str, Any]) -> LadderDef:
    if doc.get("schema") != DEFINITION_SCHEMA:
        raise InputError(path, f"schema must be {DEFINITION_SCHEMA!r}, found {doc.get('schema')!r}")
    text = {k: _text(path, doc, k) for k in ("name", "title", "operation", "size", "ceiling", "goal", "baseline")}
    if text["name"] != path.parent.name:
        raise InputError(path, f"name {text['name']!r} differs from its folder {path.parent.name!r}")
    if text["ceiling"] not in CEILINGS:
        raise InputError(path, f"ceiling must be one of {', '.join(CEILINGS)}")
    peers = doc.get("peers")
    if not isinstance(peers, list) or not peers or not all(isinstance(p, str) and p for p in peers):
        raise InputError(path, "peers must be a non-empty list of names")
    if text["baseline"] not in peers:
        raise InputError(path, f"baseline {text['baseline']!r} is not one of the peers")
    goal = doc.get("goal_bytes_per_s")
    if not isinstance(goal, (int, float)) or goal <= 0:
        raise InputError(path, "goal_bytes_per_s must be a positive number")
    raw_rungs = doc.get("rungs")
    if not isinstance(raw_rungs, list) or not raw_rungs:
        raise InputError(path, "has no [[rungs]]")
    rungs = tuple(_rung(path, i, r) for i, r in enumerate(raw_rungs))
    ids = [r.id for r in rungs]
    if ids != [f"{i:02d}" for i in range(len(rungs))]:
        raise InputError(path, f"rung ids must run 00, 01, ... in order; found {', '.join(ids)}")
    return LadderDef(**text, goal_bytes_per_s=float(goal), peers=tuple(peers), rungs=rungs, folder=path.parent)


def _rung(path: Path, i: int, raw: Any) -> RungDef:
    if not isinstance(raw, dict):
        raise InputError(path, f"rung {i} is not a table")
    where = f"rung {i}"
    required = {k: _text(path, raw, k, where) for k in ("id", "file", "title", "change", "reason", "prediction")}
    m = RUNG_FILE.match(required["file"])
    if m is None:
        raise InputError(path, f"{where}: file {required['file']!r} is not named NN_<technique>.cu or .py")
    if m["id"] != required["id"]:
        raise InputError(path, f"{where}: file {required['file']!r} does not start with its id {required['id']}")
    if not (path.parent / required["file"]).is_file():
        raise InputError(path, f"{where}: file {required['file']} does not exist")
    optional = {k: raw.get(k, "") for k in ("measured", "why")}
    if not all(isinstance(v, str) for v in optional.values()):
        raise InputError(path, f"{where}: measured and why must be text")
    spills = raw.get("spills", False)
    if not isinstance(spills, bool):
        raise InputError(path, f"{where}: spills must be true or false")
    return RungDef(**required, **optional, spills=spills)


def _text(path: Path, doc: Mapping[str, Any], key: str, where: str = "") -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, f"{where + ': ' if where else ''}{key!r} must be non-empty text")
    return value.strip()


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One correctness trial: fresh random inputs, outputs poisoned with NaN before the run."""

    name: str  # the input distribution ("integers, exact", "normal")
    passed: bool
    rel_err: float | None  # ||out - ref|| / ||ref||, in float64
    tolerance: float  # 0 for an exact comparison
    unwritten: int  # output elements still holding the poison


@dataclass(frozen=True)
class Measured:
    """A rung or a peer, checked and (if correct) timed."""

    key: str  # the rung's file stem, or the peer's name
    status: Status
    checks: tuple[Check, ...]
    time_s: float | None = None  # median
    p20_s: float | None = None
    p80_s: float | None = None
    bytes: int = 0  # the bytes model's DRAM traffic per call
    flops: int = 0
    error: str = ""  # why status is not "ok"
    kernels: tuple[str, ...] = ()  # kernel names, as Nsight Compute shows them

    @property
    def bytes_per_s(self) -> float | None:
        return self.bytes / self.time_s if self.time_s else None


@dataclass(frozen=True)
class LadderResults:
    """A ladder's ``results.json``."""

    ladder: str
    title: str
    gpu: str
    ceiling_name: str
    ceiling_bytes_per_s: float | None  # the measured ceiling, if one was found for this GPU
    provenance: Mapping[str, Any]
    rungs: tuple[Measured, ...]
    peers: tuple[Measured, ...]
    baseline: str
    path: Path
    extra: Mapping[str, Any] = field(default_factory=dict)  # size, timing method, ncu, ...

    @property
    def synthetic(self) -> bool:
        """True for a hand-made fixture (tests), never for a recorded run."""
        return bool(self.provenance.get("synthetic"))

    def peer(self, name: str) -> Measured | None:
        return next((p for p in self.peers if p.key == name), None)


def results_path(name: str, gpu: str = "h200", root: Path | None = None) -> Path:
    """Where a ladder's recorded results live: ``traces/<gpu>/ladders/<name>/results.json``."""
    return (root or traces_dir()) / gpu / "ladders" / name / RESULTS_FILE


def load_results(path: Path) -> LadderResults:
    """Read a ``results.json`` written by ``python -m coach.capture.ladder run``."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(path, f"cannot be read as JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("schema") != RESULTS_SCHEMA:
        raise InputError(path, f"is not a ladder results file (schema {RESULTS_SCHEMA!r})")
    try:
        ceiling = doc["ceiling"]
        return LadderResults(
            ladder=str(doc["ladder"]), title=str(doc["title"]), gpu=str(doc["gpu"]),
            ceiling_name=str(ceiling["name"]),
            ceiling_bytes_per_s=None if ceiling.get("bytes_per_s") is None else float(ceiling["bytes_per_s"]),
            provenance=dict(doc["provenance"]),
            rungs=tuple(_measured(m) for m in doc["rungs"]),
            peers=tuple(_measured(m) for m in doc["peers"]),
            baseline=str(doc["baseline"]), path=Path(path),
            extra={k: v for k, v in doc.items() if k in ("size", "timing", "ncu", "seed")},
        )
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(path, f"missing or bad field ({type(err).__name__}: {err})") from None


def _measured(raw: Mapping[str, Any]) -> Measured:
    status = raw["status"]
    if status not in ("ok", "wrong", "error"):
        raise ValueError(f"status {status!r}")
    checks = tuple(Check(name=str(c["name"]), passed=bool(c["passed"]),
                         rel_err=None if c.get("rel_err") is None else float(c["rel_err"]),
                         tolerance=float(c["tolerance"]), unwritten=int(c["unwritten"])) for c in raw.get("checks", []))
    opt = {k: (None if raw.get(k) is None else float(raw[k])) for k in ("time_s", "p20_s", "p80_s")}
    if status == "ok" and (opt["time_s"] is None or opt["time_s"] <= 0):
        raise ValueError(f"{raw['key']}: a correct result needs a positive time_s")
    return Measured(key=str(raw["key"]), status=status, checks=checks, **opt, bytes=int(raw["bytes"]),
                    flops=int(raw.get("flops", 0)), error=str(raw.get("error", "")),
                    kernels=tuple(str(k) for k in raw.get("kernels", ())))


# --------------------------------------------------------------------------------------------
# The rung table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of ``coach ladder NAME``: a rung's definition next to its measurement."""

    rung: RungDef
    result: Measured | None  # None: the rung was not in the recorded run
    pct_of_ceiling: float | None
    vs_previous: float | None  # previous correct rung's time over this one's (> 1: faster)
    vs_first: float | None  # rung 00's time over this one's
    vs_baseline: float | None  # the baseline peer's time over this one's (> 1: faster than PyTorch)


def rung_table(defn: LadderDef, results: LadderResults) -> list[Row]:
    """The rungs of ``defn`` in order, each with its recorded measurement and the ratios the table shows.

    Speed-ups are ratios of median times on the same work (the bytes model is the same for every
    rung), so they equal ratios of achieved bandwidth. A rung that failed its check has no time and
    no ratios; the next rung is compared with the last one that was correct.
    """
    by_key = {m.key: m for m in results.rungs}
    base = results.peer(results.baseline)
    base_t = base.time_s if base is not None and base.status == "ok" else None
    first = by_key.get(defn.rungs[0].key)
    first_t = first.time_s if first is not None and first.status == "ok" else None
    rows: list[Row] = []
    previous_t: float | None = None
    for rung in defn.rungs:
        m = by_key.get(rung.key)
        t = m.time_s if m is not None and m.status == "ok" else None
        rows.append(Row(
            rung=rung, result=m,
            pct_of_ceiling=percent_of(m.bytes_per_s, results.ceiling_bytes_per_s) if t else None,
            vs_previous=_ratio(previous_t, t), vs_first=_ratio(first_t, t), vs_baseline=_ratio(base_t, t),
        ))
        previous_t = t or previous_t
    return rows


def percent_of(rate: float | None, ceiling: float | None) -> float | None:
    return 100.0 * rate / ceiling if rate and ceiling else None


def _ratio(slower: float | None, faster: float | None) -> float | None:
    return slower / faster if slower and faster else None
