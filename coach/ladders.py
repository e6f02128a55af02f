"""Version ladders: their definitions (``kernels/<name>/ladder.toml``) and their recorded results
(``traces/<gpu>/ladders/<name>/results.json``), typed, for the CLI, the dashboard and the runner.

A ladder's name is its folder under ``kernels/``, one or two levels deep: ``reduction``, or
``matmul/fp32`` for one track of a family (``kernels/matmul/`` then holds ladders without being one).

A ladder takes one operation from a correct, naive kernel (rung 00) to a fast one, one change per
rung. Its ``ladder.toml`` says, for every rung, the single change, the reason for it and the
prediction written before measuring; after a run on the GPU, the measured outcome and, where it
differs from the prediction, why. The runner (``coach.capture.ladder``) checks and times every rung
and writes ``results.json``; ``kernels/README.md`` documents both formats.

This module needs only the standard library: it is read on the GPU machine too (by the runner and
by ``coach ladder --live``), where Polars is not installed. A ladder has a handful of rungs, so
plain lists of frozen dataclasses are the right container; ``rung_table`` derives the columns that
the CLI and the dashboard show.

A memory-bound ladder is measured in bytes per second against a DRAM bandwidth ceiling; a
compute-bound one in FLOP per second against a measured matmul ceiling. The ceiling's name says
which (``CEILING_UNITS``), and every rate, goal and percentage follows that unit.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from coach import best_rates
from coach.errors import InputError
from coach.paths import hardware_dir, kernels_dir, traces_dir

DEFINITION_SCHEMA = "coach-ladder/1"
RESULTS_SCHEMA = "coach-ladder-results/1"
DEFINITION_FILE = "ladder.toml"
RESULTS_FILE = "results.json"
BYTES = "bytes/s"
FLOPS = "FLOP/s"
#: The measured ceilings a ladder may be compared against (the keys of hardware/measured/<gpu>.json,
#: written by coach.capture.calibrate) and the unit of each: DRAM bandwidth for memory-bound ladders,
#: the library matmul rate of one pipe for compute-bound ones (FP32 FMA on the CUDA cores with TF32
#: off, TF32, BF16 or FP8 e4m3 on the tensor cores).
CEILING_UNITS: dict[str, str] = {
    "dram_copy_bandwidth_bytes_per_s": BYTES,
    "dram_read_bandwidth_bytes_per_s": BYTES,
    "fp32_simt_matmul_flop_per_s": FLOPS,
    "tf32_tensor_matmul_flop_per_s": FLOPS,
    "bf16_tensor_matmul_flop_per_s": FLOPS,
    "fp8_tensor_matmul_flop_per_s": FLOPS,
}
CEILINGS = tuple(CEILING_UNITS)
#: The goal key of a ladder.toml for each unit: exactly one of them, matching the ceiling's unit.
GOAL_KEYS = {BYTES: "goal_bytes_per_s", FLOPS: "goal_flop_per_s"}
#: The size a ladder is measured at when its ladder.toml names none (every problem.py has it).
MAIN_SIZE = "h200"
#: A rung file is ``NN_<technique>.cu`` (CUDA C++, built with NVRTC) or ``NN_<technique>.py`` (Triton).
RUNG_FILE = re.compile(r"^(?P<id>\d\d)_(?P<technique>[a-z0-9_]+)\.(?P<ext>cu|py)$")
#: A ladder name: a folder under kernels/, or a folder in a folder (``matmul/fp32``).
LADDER_NAME = re.compile(r"^[a-z0-9_]+(/[a-z0-9_]+)?$")
#: A CUDA architecture a rung may ask NVRTC for: ``sm_90``, or ``sm_90a`` for the features of that
#: GPU alone (wgmma, setmaxnreg, TMA multicast: PTX that only the "a" target accepts).
ARCH = re.compile(r"^sm_\d{2,3}a?$")
#: An Nsight Compute section identifier (``ncu --list-sections`` names them so).
SECTION = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

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
    arch: str | None = None  # CUDA: the target NVRTC and nvcc build for ("sm_90a"); None: the device's
    emulate: bool = True  # whether tests/ladder_emu can run it (inline PTX it lacks: mma, wgmma, TMA)
    emulate_why: str = ""  # why not, when emulate is false

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
    goal_bytes_per_s: float | None  # the bandwidth goal (memory-bound ladders)
    baseline: str  # the peer the "vs PyTorch" column compares with (a key of peers)
    peers: tuple[str, ...]  # reference implementations timed in the same run
    rungs: tuple[RungDef, ...]
    folder: Path
    goal_flop_per_s: float | None = None  # the FLOP-rate goal (compute-bound ladders)
    goal_ratio_to_baseline: float | None = None  # and/or at least this fraction of the baseline's speed
    sizes: tuple[str, ...] = (MAIN_SIZE,)  # keys of problem.SIZES measured; the first is the main one
    ncu_sections: tuple[str, ...] = ()  # Nsight Compute sections beyond the runner's default ones

    @property
    def unit(self) -> str:
        """``bytes/s`` or ``FLOP/s``: what the ladder's rates, goal and ceiling are counted in."""
        return CEILING_UNITS[self.ceiling]

    @property
    def compute_bound(self) -> bool:
        return self.unit == FLOPS

    @property
    def goal_rate(self) -> float:
        """The rate goal in the ladder's unit."""
        goal = self.goal_flop_per_s if self.compute_bound else self.goal_bytes_per_s
        assert goal is not None  # the loader requires the goal of the ceiling's unit
        return goal

    @property
    def main_size(self) -> str:
        return self.sizes[0]

    @property
    def kernels_root(self) -> Path:
        """The ``kernels/`` folder this ladder was loaded from (one level up per part of its name)."""
        return self.folder.parents[self.name.count("/")]

    @property
    def include_dir(self) -> Path:
        """``kernels/common``: the headers every CUDA rung may include, however deep its ladder sits."""
        return self.kernels_root / "common"

    def rung(self, key_or_id: str) -> RungDef:
        for r in self.rungs:
            if key_or_id in (r.key, r.id):
                return r
        raise KeyError(key_or_id)

    def path(self, rung: RungDef) -> Path:
        return self.folder / rung.file


def ladder_names(root: Path | None = None) -> list[str]:
    """Every ladder under ``kernels/`` (folders one or two levels down holding a ladder.toml), sorted;
    a nested one is named by its path, ``matmul/fp32``."""
    root = root or kernels_dir()
    found = [*root.glob(f"*/{DEFINITION_FILE}"), *root.glob(f"*/*/{DEFINITION_FILE}")]
    return sorted(p.parent.relative_to(root).as_posix() for p in found)


def ladders_under(group: str, root: Path | None = None) -> list[str]:
    """The ladders in folder ``group`` (``matmul`` -> ``matmul/bf16``, ``matmul/fp32``), sorted."""
    return [n for n in ladder_names(root) if n.startswith(f"{group.strip('/')}/")]


def load_definition(name: str, root: Path | None = None) -> LadderDef:
    """Read and validate ``kernels/<name>/ladder.toml``."""
    root = root or kernels_dir()
    path = root / name / DEFINITION_FILE
    if not LADDER_NAME.match(name) or not path.is_file():
        known = ", ".join(ladder_names(root)) or "none"
        raise InputError(path, f"no ladder named {name!r} (known: {known})")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(path, f"cannot be read as TOML ({err})") from None
    return _definition(path, doc, name)


def _definition(path: Path, doc: Mapping[str, Any], folder: str) -> LadderDef:
    """The ladder of ``doc``, read from ``path`` = ``kernels/<folder>/ladder.toml``."""
    if doc.get("schema") != DEFINITION_SCHEMA:
        raise InputError(path, f"schema must be {DEFINITION_SCHEMA!r}, found {doc.get('schema')!r}")
    text = {k: _text(path, doc, k) for k in ("name", "title", "operation", "size", "ceiling", "goal", "baseline")}
    if text["name"] != folder:
        raise InputError(path, f"name {text['name']!r} differs from its folder {folder!r}")
    if text["ceiling"] not in CEILINGS:
        raise InputError(path, f"ceiling must be one of {', '.join(CEILINGS)}")
    peers = _names(path, doc, "peers", required=True)
    if text["baseline"] not in peers:
        raise InputError(path, f"baseline {text['baseline']!r} is not one of the peers")
    goals = _goals(path, doc, CEILING_UNITS[text["ceiling"]])
    sizes = _names(path, doc, "sizes") or (MAIN_SIZE,)
    sections = _names(path, doc, "ncu_sections")
    if bad := [s for s in sections if not SECTION.match(s)]:
        raise InputError(path, f"ncu_sections: {', '.join(bad)} are not Nsight Compute section identifiers")
    raw_rungs = doc.get("rungs")
    if not isinstance(raw_rungs, list) or not raw_rungs:
        raise InputError(path, "has no [[rungs]]")
    rungs = tuple(_rung(path, i, r) for i, r in enumerate(raw_rungs))
    ids = [r.id for r in rungs]
    if ids != [f"{i:02d}" for i in range(len(rungs))]:
        raise InputError(path, f"rung ids must run 00, 01, ... in order; found {', '.join(ids)}")
    return LadderDef(**text, **goals, peers=peers, rungs=rungs, folder=path.parent, sizes=sizes,
                     ncu_sections=sections)


def _goals(path: Path, doc: Mapping[str, Any], unit: str) -> dict[str, float | None]:
    """The rate goal of the ceiling's unit (required, alone) and the optional ratio to the baseline."""
    present = [k for k in GOAL_KEYS.values() if k in doc]
    wanted = GOAL_KEYS[unit]
    if present != [wanted]:
        raise InputError(path, f"a ladder against a {unit} ceiling needs {wanted} and no other rate goal "
                               f"(found {', '.join(present) or 'none'})")
    goal = doc[wanted]
    if not isinstance(goal, (int, float)) or isinstance(goal, bool) or goal <= 0:
        raise InputError(path, f"{wanted} must be a positive number")
    ratio = doc.get("goal_ratio_to_baseline")
    if ratio is not None and (not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or ratio <= 0):
        raise InputError(path, "goal_ratio_to_baseline must be a positive number (0.8: 80% of the baseline's speed)")
    return {"goal_bytes_per_s": None, "goal_flop_per_s": None, wanted: float(goal),
            "goal_ratio_to_baseline": None if ratio is None else float(ratio)}


def _names(path: Path, doc: Mapping[str, Any], key: str, *, required: bool = False) -> tuple[str, ...]:
    """An optional (or required, non-empty) list of distinct non-empty names."""
    value = doc.get(key, None if required else [])
    if (not isinstance(value, list) or (required and not value)
            or not all(isinstance(v, str) and v.strip() for v in value) or len(set(value)) != len(value)):
        raise InputError(path, f"{key} must be a {'non-empty ' if required else ''}list of distinct names")
    return tuple(v.strip() for v in value)


def problem_sizes(defn: LadderDef) -> tuple[str, ...]:
    """The size names of the ladder's ``problem.py`` (the keys of its ``SIZES`` literal), read
    without importing it (importing needs torch): what ``--size`` and ``sizes`` may name."""
    path = defn.folder / "problem.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError) as err:
        raise InputError(path, f"cannot be read ({err})") from None
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and target.id == "SIZES" and isinstance(node.value, ast.Dict):
            keys = node.value.keys
            if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
                return tuple(k.value for k in keys)  # type: ignore[union-attr]
    raise InputError(path, "has no SIZES = {\"name\": {...}, ...} dict with string keys")


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
    flags = {k: raw.get(k, True if k == "emulate" else False) for k in ("spills", "emulate")}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise InputError(path, f"{where}: spills and emulate must be true or false")
    arch = raw.get("arch")
    if arch is not None and (not isinstance(arch, str) or not ARCH.match(arch)):
        raise InputError(path, f"{where}: arch must name a CUDA target such as \"sm_90a\", found {arch!r}")
    if arch is not None and not required["file"].endswith(".cu"):
        raise InputError(path, f"{where}: arch applies to CUDA rungs only")
    emulate_why = raw.get("emulate_why", "")
    if not isinstance(emulate_why, str):
        raise InputError(path, f"{where}: emulate_why must be text")
    if not flags["emulate"] and not emulate_why.strip():
        raise InputError(path, f"{where}: emulate = false needs emulate_why (what the CPU emulator cannot run)")
    if flags["emulate"] and emulate_why.strip():
        raise InputError(path, f"{where}: emulate_why is only for a rung with emulate = false")
    return RungDef(**required, **optional, **flags, arch=arch, emulate_why=emulate_why.strip())


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
    sass: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # kernel -> opcode -> count

    @property
    def bytes_per_s(self) -> float | None:
        return self.bytes / self.time_s if self.time_s else None

    @property
    def flop_per_s(self) -> float | None:
        return self.flops / self.time_s if self.time_s and self.flops else None

    def rate(self, unit: str) -> float | None:
        """The achieved rate in ``unit`` (``BYTES`` or ``FLOPS``): the work model over the median time."""
        return self.flop_per_s if unit == FLOPS else self.bytes_per_s


@dataclass(frozen=True)
class LadderResults:
    """A ladder's ``results.json`` (or ``results.<size>.json``)."""

    ladder: str
    title: str
    gpu: str
    ceiling_name: str
    ceiling_value: float | None  # the measured ceiling, if one was found for this GPU, in ceiling_unit
    provenance: Mapping[str, Any]
    rungs: tuple[Measured, ...]
    peers: tuple[Measured, ...]
    baseline: str
    path: Path
    extra: Mapping[str, Any] = field(default_factory=dict)  # size, timing method, ncu, ...
    ceiling_unit: str = BYTES
    size_name: str = MAIN_SIZE  # the key of problem.SIZES measured
    #: the calibration's value as the run wrote it; ``ceiling_value`` is that, raised to the best rate
    #: recorded on the GPU where one is higher (``coach.best_rates``: a measured ceiling is never below a
    #: recorded rate), and ``ceiling_note`` says so ("" when the calibration stands)
    ceiling_calibrated: float | None = None
    ceiling_note: str = ""

    @property
    def synthetic(self) -> bool:
        """True for a hand-made fixture (tests), never for a recorded run."""
        return bool(self.provenance.get("synthetic"))

    @property
    def ceiling_bytes_per_s(self) -> float | None:
        """The ceiling of a memory-bound ladder (None for a compute-bound one)."""
        return self.ceiling_value if self.ceiling_unit == BYTES else None

    def peer(self, name: str) -> Measured | None:
        return next((p for p in self.peers if p.key == name), None)


def results_file(size: str, main: str = MAIN_SIZE) -> str:
    """``results.json`` for the ladder's main size, ``results.<size>.json`` for any other."""
    return RESULTS_FILE if size == main else f"results.{size}.json"


def results_path(name: str, gpu: str = "h200", root: Path | None = None, size: str | None = None,
                 main: str = MAIN_SIZE) -> Path:
    """Where a ladder's recorded results live: ``traces/<gpu>/ladders/<name>/results.json`` (nested
    names nest: ``ladders/matmul/fp32/``), or ``results.<size>.json`` for a size other than ``main``."""
    return (root or traces_dir()) / gpu / "ladders" / name / results_file(size or main, main)


def load_results(path: Path, size: str | None = None) -> LadderResults:
    """Read a ``results.json`` written by ``python -m coach.capture.ladder run``; with ``size``, the
    results of that size: the file itself if it holds them, else ``results.<size>.json`` beside it."""
    doc = _read_results(path)
    recorded = str(doc.get("size_name", MAIN_SIZE))
    if size is not None and size != recorded:
        path = Path(path).with_name(results_file(size, recorded))
        if not path.is_file():
            others = sorted(p.name for p in Path(path).parent.glob("results*.json"))
            raise InputError(path, f"no results recorded at size {size!r} (files there: {', '.join(others) or 'none'})")
        doc = _read_results(path)
    try:
        ceiling = doc["ceiling"]
        unit = str(ceiling.get("unit", BYTES))  # files written before compute ladders: bytes/s
        if unit not in (BYTES, FLOPS):
            raise ValueError(f"ceiling unit {unit!r}")
        value = ceiling.get("value", ceiling.get("bytes_per_s"))
        if value is None:  # the GPU's calibration lacked it when the ladder ran: the stored one, if measured since
            value = _calibration_beside(Path(path), str(ceiling["name"]))
        calibrated = None if value is None else float(value)
        raised, note = best_rates.measured_ceiling(str(ceiling["name"]), calibrated, _best_rates_beside(Path(path)))
        return LadderResults(
            ladder=str(doc["ladder"]), title=str(doc["title"]), gpu=str(doc["gpu"]),
            ceiling_name=str(ceiling["name"]), ceiling_value=raised,
            ceiling_calibrated=calibrated, ceiling_note=note,
            ceiling_unit=unit, size_name=str(doc.get("size_name", MAIN_SIZE)),
            provenance=dict(doc["provenance"]),
            rungs=tuple(_measured(m) for m in doc["rungs"]),
            peers=tuple(_measured(m) for m in doc["peers"]),
            baseline=str(doc["baseline"]), path=Path(path),
            extra={k: v for k, v in doc.items() if k in ("size", "timing", "ncu", "seed")},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise InputError(path, f"missing or bad field ({type(err).__name__}: {err})") from None


def _gpu_folder(path: Path) -> Path | None:
    """The traces GPU folder a results file lives in (``<traces>/<gpu>/ladders/<name>/results.json``
    -> ``<traces>/<gpu>``), or None."""
    return next((parent.parent for parent in path.resolve().parents if parent.name == "ladders"), None)


def _best_rates_beside(path: Path) -> dict[str, Any]:
    """The best-rates file of the traces GPU folder a results file lives in (``<traces>/<gpu>/best-rates.json``)."""
    gpu = _gpu_folder(path)
    return best_rates.read_file(gpu / best_rates.BEST_RATES_FILE) if gpu else {"rates": {}, "rejected": [], "not_used": []}


def _calibration_beside(path: Path, name: str) -> float | None:
    """The value of measurement ``name`` in the stored calibration of the traces GPU folder a results
    file lives in (``<traces>/<gpu>/...`` -> ``hardware/measured/<gpu>.json``), or None."""
    gpu = _gpu_folder(path)
    if gpu is None:
        return None
    try:
        value = json.loads((hardware_dir() / "measured" / f"{gpu.name}.json").read_text(encoding="utf-8"))["measurements"][name]["value"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _read_results(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(path, f"cannot be read as JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("schema") != RESULTS_SCHEMA:
        raise InputError(path, f"is not a ladder results file (schema {RESULTS_SCHEMA!r})")
    return doc


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
    sass = raw.get("sass") or {}
    histograms = {str(k): {str(op): int(n) for op, n in h.items()} for k, h in sass.get("kernels", {}).items()}
    return Measured(key=str(raw["key"]), status=status, checks=checks, **opt, bytes=int(raw["bytes"]),
                    flops=int(raw.get("flops", 0)), error=str(raw.get("error", "")),
                    kernels=tuple(str(k) for k in raw.get("kernels", ())), sass=histograms)


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
    rate: float | None = None  # the achieved rate in the ladder's unit (bytes/s or FLOP/s)


def rung_table(defn: LadderDef, results: LadderResults) -> list[Row]:
    """The rungs of ``defn`` in order, each with its recorded measurement and the ratios the table shows.

    Speed-ups are ratios of median times on the same work (the bytes and FLOP models are the same
    for every rung), so they equal ratios of achieved rates. A rung that failed its check has no
    time and no ratios; the next rung is compared with the last one that was correct.
    """
    if results.ceiling_unit != defn.unit:
        raise InputError(results.path, f"is measured in {results.ceiling_unit} but ladder {defn.name!r} in "
                                       f"{defn.unit} (its ceiling changed since): record it again")
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
        rate = m.rate(defn.unit) if t else None
        rows.append(Row(
            rung=rung, result=m, rate=rate, pct_of_ceiling=percent_of(rate, results.ceiling_value),
            vs_previous=_ratio(previous_t, t), vs_first=_ratio(first_t, t), vs_baseline=_ratio(base_t, t),
        ))
        previous_t = t or previous_t
    return rows


@dataclass(frozen=True)
class GoalVerdict:
    """Whether a ladder reaches its goal: the rate goal and, where set, the ratio to the baseline
    peer measured in the same run; judged for the last correct rung and for the fastest one."""

    rate_goal: float  # in the ladder's unit
    ratio_goal: float | None  # e.g. 0.8: at least 80% of the baseline's speed
    last: Row | None  # the last correct rung
    best: Row | None  # the correct rung with the highest rate (the shortest time)

    def meets(self, row: Row | None) -> bool:
        if row is None or row.rate is None or row.rate < self.rate_goal:
            return False
        return self.ratio_goal is None or (row.vs_baseline is not None and row.vs_baseline >= self.ratio_goal)

    def needs(self, show_rate: Callable[[float], str], baseline: str, times: str = "x") -> str:
        """What a rung must reach, in words: "580.0 TFLOP/s and x0.85 of cublas.bf16" (the rate term
        left out where only the share of the baseline is judged)."""
        terms = ([show_rate(self.rate_goal)] if self.rate_goal else []) + (
            [f"{times}{self.ratio_goal:.2f} of {baseline}"] if self.ratio_goal is not None else [])
        return " and ".join(terms)

    @property
    def last_met(self) -> bool:
        return self.meets(self.last)

    @property
    def best_met(self) -> bool:
        return self.meets(self.best)


def goal_verdict(defn: LadderDef, rows: list[Row], size: str | None = None) -> GoalVerdict:
    """The goal at ``size`` (default the main one). The rate goal is a number for the main size;
    at another size of a ladder whose goal is a share of the baseline peer (attention's causal and
    D64 sizes), only that share is judged: the library's rate, and so the rate worth reaching,
    differs from size to size."""
    correct = [r for r in rows if r.rate is not None]
    other_size = size is not None and size != defn.main_size and defn.goal_ratio_to_baseline is not None
    return GoalVerdict(rate_goal=0.0 if other_size else defn.goal_rate, ratio_goal=defn.goal_ratio_to_baseline,
                       last=correct[-1] if correct else None,
                       best=max(correct, key=lambda r: r.rate or 0.0) if correct else None)


def percent_of(rate: float | None, ceiling: float | None) -> float | None:
    return 100.0 * rate / ceiling if rate and ceiling else None


def _ratio(slower: float | None, faster: float | None) -> float | None:
    return slower / faster if slower and faster else None
