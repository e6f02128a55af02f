"""Debugging scenarios: ``scenarios/scenario-NN-<slug>/scenario.toml`` loaded into typed dataclasses.

A scenario is a planted performance problem with its slow and fixed programs, the diagnosis the
coach must reach, the evidence that proves it, and how to profile it. ``scenarios/README.md``
documents the format field by field; this module is its single reader. Everything is validated once,
here, so that a bad file fails with one line naming the file and the field::

    scenarios/scenario-01-aos/scenario.toml: field 'expected.bottleneck': 'dram' is not a bottleneck
    class (one of dram-bandwidth, memory-access-pattern, ...)

Only the standard library is used: ``coach.capture`` reads scenarios on a GPU machine where nothing
but the GPU stack is installed. Checks that need the canonical schemas (does an evidence metric name
a column?) happen where the profiles are read, in ``coach.recordings``.
"""

from __future__ import annotations

import functools
import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from coach import arith, best_rates
from coach.analyze.findings import Bottleneck
from coach.errors import CoachError, InputError
from coach.paths import hardware_dir, scenarios_dir

SCENARIO_FILE = "scenario.toml"
NARRATIVE_FILE = "narrative.md"
NOTES_FILE = "notes.md"

FOLDER_RE = re.compile(r"^(scenario-(\d{2}))-([a-z0-9]+(?:-[a-z0-9]+)*)$")
RULE_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")

#: What a scenario teaches: a slow program made fast (this module), or a wrong one made right
#: (``coach.correctness``, which reads the scenario.toml files whose ``kind`` is "correctness").
KINDS = ("performance", "correctness")
LEVELS = ("beginner", "intermediate", "advanced")
TOOLS = ("ncu", "nsys", "kineto")
VARIANTS = ("slow", "fixed")
DIRECTIONS = ("down", "up", "same")
AGGREGATIONS = ("sum", "mean", "min", "max", "count")
#: Which profile each canonical table comes from: Nsight Compute's kernel profile, or a timeline.
KERNEL_TABLES = ("launches",)
TIMELINE_TABLES = ("kernels", "memcpy", "memset", "api", "sync", "nvtx")
#: The column an evidence entry's ``kernel`` expression is matched against, per table.
NAME_COLUMNS = {"launches": "kernel_name", "kernels": "name", "api": "name", "nvtx": "text"}
#: Kernels are matched against their full signature as well: PyTorch's element-wise kernels share a
#: few short names (``elementwise_kernel``, ``vectorized_elementwise_kernel``), and only the
#: signature tells a copy (``direct_copy_kernel_cuda``) from an addition.
SIGNATURE_COLUMNS = {"launches": "demangled_name", "kernels": "demangled_name"}
#: Which ceiling the bytes of the model count against.
BOUNDS = ("dram", "pcie", "compute")

#: Nsight Compute replays each profiled kernel once per pass (~38 passes for ``--set full`` on
#: Hopper), so a scenario profiles few launches by default.
DEFAULT_NCU_LAUNCH_COUNT = 1
#: Wall-clock limit per program run, profiled or not; a scenario sized to fill the H200 runs in
#: seconds, and a full Nsight Compute replay of one launch in well under a minute.
DEFAULT_TIMEOUT_S = 300.0


# --------------------------------------------------------------------------------------------
# The typed form
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """One program to run: ``python SCRIPT ARGS...`` from the scenario's folder."""

    variant: str
    script: Path  # absolute
    args: tuple[str, ...] = ()

    def argv(self, python: str) -> list[str]:
        return [python, str(self.script), *self.args]


@dataclass(frozen=True)
class ProfileSpec:
    """How ``coach record`` profiles the programs."""

    nsys: bool
    ncu: bool
    kineto: bool
    nsys_timed_only: bool  # Nsight Systems records only the timed repetitions (harness.time_cuda)
    ncu_set: str
    ncu_kernel: str | None  # a regular expression on kernel names, given to ncu as -k regex:...
    ncu_launch_count: int | Mapping[str, int]  # one count for both variants, or one per variant
    keep_ncu_rep: tuple[str, ...]  # variants whose full .ncu-rep is kept (for the source view)
    timeout_s: float

    def launch_count(self, variant: str) -> int:
        """The launches Nsight Compute profiles for ``variant`` (``-c N``): a slow chain of four
        kernels and its fused replacement each profile one pass of the work."""
        count = self.ncu_launch_count
        return count if isinstance(count, int) else count[variant]


@dataclass(frozen=True)
class Evidence:
    """A number measured on the recorded profiles, and how it must move from slow to fixed.

    The value is ``agg(metric)`` over the rows of ``table`` that pass the filters, or
    ``sum(metric) / sum(per)`` when ``per`` is given (a ratio of totals: sectors per request,
    bytes per nanosecond = GB/s), times ``scale``.
    """

    name: str
    label: str
    table: str
    metric: str
    per: str | None
    agg: str
    where: tuple[tuple[str, Any], ...]
    kernel: str | None  # regular expression on the name column (NAME_COLUMNS) or the signature (SIGNATURE_COLUMNS)
    direction: str
    slow_range: tuple[float, float] | None
    scale: float
    unit: str

    @property
    def profile_kind(self) -> str:
        return "kernel-profile" if self.table in KERNEL_TABLES else "timeline"


@dataclass(frozen=True)
class Model:
    """The first-principles model: named sizes and expressions over them. Every per-variant
    quantity a presenter shows (floor, rate, % of floor) is one method here."""

    bound: str
    sizes: Mapping[str, float]
    useful_bytes: str  # the fewest bytes the work must move (per unit of work; the slow variant's)
    flops: str
    moved_bytes: Mapping[str, str]  # variant -> bytes that variant is predicted to move
    bytes_per_s: float  # the ceiling the bytes count against (``bound``)
    flop_per_s: float | None  # the arithmetic ceiling, where arithmetic matters
    ceiling_source: str  # where those ceilings come from (a measurement or a datasheet)
    #: variant -> the fewest bytes that variant's work must move, where the fix changes the work per
    #: unit (batching: one read of the weights serves many tokens); else every variant's is useful_bytes
    useful_by_variant: Mapping[str, str] = field(default_factory=dict)
    flop_unit: str = "FLOP"  # what ``flops`` counts: FLOPs, or e.g. hardware sines
    bytes_source: str = ""  # where the bandwidth ceiling comes from
    flops_source: str = ""  # where the arithmetic ceiling comes from
    bytes_ceiling_name: str | None = None  # the calibration measurement the bandwidth ceiling is, if measured
    flops_ceiling_name: str | None = None
    #: variant -> the bytes of its useful bytes that are written (the rest are read); "slow" stands for
    #: every variant not named; empty where the model does not say
    written_by_variant: Mapping[str, str] = field(default_factory=dict)

    def value(self, expr: str) -> float:
        return evaluate(expr, self.sizes)

    def useful(self, variant: str = "slow") -> float:
        """The fewest bytes ``variant``'s work must move, per unit of work."""
        return self.value(self.useful_by_variant.get(variant, self.useful_bytes))

    def write_share(self, variant: str = "slow") -> float | None:
        """The share of ``variant``'s useful bytes that are written (``written_bytes`` over
        ``useful_bytes``); None where the model does not say. It decides which DRAM ceiling a rate of
        this work can stand for: a copy's mix of reads and writes, or reads alone."""
        expr = self.written_by_variant.get(variant, self.written_by_variant.get("slow"))
        useful = self.useful(variant)
        return None if expr is None or useful <= 0 else self.value(expr) / useful

    def bytes_s(self, variant: str = "slow") -> float:
        """The useful bytes over the bandwidth ceiling."""
        return self.useful(variant) / self.bytes_per_s

    def flops_s(self) -> float | None:
        """The arithmetic over the arithmetic ceiling (None where arithmetic is not modelled)."""
        return self.value(self.flops) / self.flop_per_s if self.flop_per_s else None

    def floor_s(self, bytes_expr: str | None = None, variant: str = "slow") -> float:
        """The least time the work can take: bytes over the bandwidth ceiling, or FLOPs over the
        arithmetic ceiling, whichever is larger. ``variant`` picks the work (see ``useful``)."""
        t_bytes = (self.value(bytes_expr) / self.bytes_per_s) if bytes_expr else self.bytes_s(variant)
        return max(t_bytes, self.flops_s() or 0.0)

    @property
    def rate_kind(self) -> str:
        """What a rate of this work counts, by the bound: "bytes" for DRAM- and link-bound work,
        "flops" for compute-bound work (in ``flop_unit``)."""
        return "flops" if self.bound == "compute" and self.flop_per_s else "bytes"

    def rate(self, variant: str, seconds: float) -> float:
        """The rate that fits the bound, for ``variant`` taking ``seconds`` per unit of work: useful
        bytes per second (DRAM, the host link) or ``flop_unit`` per second (compute)."""
        if self.rate_kind == "flops":
            return self.value(self.flops) / seconds
        return self.useful(variant) / seconds

    @property
    def rate_label(self) -> str:
        """How the rate of ``rate`` reads: "useful bytes/s", "host-to-device bytes/s", "FLOP/s", "sines/s"."""
        if self.rate_kind == "flops":
            return "FLOP/s" if self.flop_unit == "FLOP" else f"{self.flop_unit}s/s"
        return "host-to-device bytes/s" if self.bound == "pcie" else "useful bytes/s"

    @property
    def rate_unit(self) -> str:
        """The unit of ``rate`` for an SI prefix: "B/s", "FLOP/s", "sine/s"."""
        return f"{self.flop_unit}/s" if self.rate_kind == "flops" else "B/s"

    @property
    def rate_ceiling(self) -> float:
        """The ceiling ``rate`` is measured against."""
        return float(self.flop_per_s) if self.rate_kind == "flops" else self.bytes_per_s


@dataclass(frozen=True)
class Fix:
    summary: str
    details: str
    wrong_fix: str  # a plausible fix that does not help, and why; may be empty
    id: str = ""  # the planted fix: an id of coach/analyze/fixes.toml (what `coach diff` must credit)
    gain_misses: str = ""  # why the fix's gain model misses the recorded speed-up, where it does ([gain] misses)
    gain_params: Mapping[str, str] = field(default_factory=dict)  # [gain] batch, workers: expressions over the sizes


@dataclass(frozen=True)
class Rubric:
    strong: tuple[str, ...]
    red_flags: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    id: str  # "scenario-01"
    number: int
    slug: str
    folder: Path
    title: str
    level: str
    tool: str
    symptom: str
    question: str
    bottleneck: Bottleneck
    first_rule: str
    min_speedup: float
    unit: str | None  # what one timing covers (a launch, a step, a token); both programs must report it
    evidence: tuple[Evidence, ...]
    fix: Fix
    rubric: Rubric
    hints: tuple[str, ...]
    model: Model
    programs: Mapping[str, Program]
    profile: ProfileSpec

    @property
    def path(self) -> Path:
        return self.folder / SCENARIO_FILE

    @property
    def narrative_path(self) -> Path:
        return self.folder / NARRATIVE_FILE


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load(path: str | Path) -> Scenario:
    """Read and validate one scenario (its folder or its scenario.toml)."""
    p = Path(path)
    folder = p if p.is_dir() else p.parent
    file = folder / SCENARIO_FILE
    if not file.is_file():
        raise InputError(file, "is missing (every scenario folder holds a scenario.toml)")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise InputError(file, f"is not valid TOML ({err})") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(file, f"cannot be read ({err})") from None
    return _scenario(_Fields(file, data), folder.resolve())


def discover(root: str | Path | None = None, kind: str | None = "performance") -> list[Path]:
    """The scenario folders under ``root`` (default: the project's scenarios/) of ``kind`` (every kind
    when None), in id order."""
    base = Path(root) if root is not None else scenarios_dir()
    if not base.is_dir():
        return []
    found = sorted(d for d in base.iterdir() if d.is_dir() and FOLDER_RE.match(d.name))
    return [d for d in found if kind is None or kind_of(d) == kind]


def kind_of(folder: Path) -> str:
    """The ``kind`` a scenario folder's scenario.toml declares ("performance" when it names none, or
    when the file cannot be read: loading it then says what is wrong)."""
    try:
        data = tomllib.loads((Path(folder) / SCENARIO_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "performance"
    kind = data.get("kind", "performance")
    return kind if kind in KINDS else "performance"


def all_scenarios(root: str | Path | None = None) -> list[Scenario]:
    return [load(d) for d in discover(root)]


def normalise_id(ident: str) -> str:
    """'7', '07', 'scenario-07' and 'scenario-07-tail-effect' all name scenario-07."""
    m = re.fullmatch(r"(?:scenario-)?(\d{1,2})(?:-[a-z0-9-]+)?", ident.strip())
    if not m:
        raise CoachError(f"'{ident}' is not a scenario id (scenario-NN, or just NN)")
    return f"scenario-{int(m.group(1)):02d}"


def find(ident: str, root: str | Path | None = None) -> Scenario:
    """The scenario with this id, or an error that lists the known ones."""
    sid = normalise_id(ident)
    folders = discover(root)
    for d in folders:
        if FOLDER_RE.match(d.name).group(1) == sid:  # type: ignore[union-attr]
            return load(d)
    if any(FOLDER_RE.match(d.name).group(1) == sid for d in discover(root, "correctness")):  # type: ignore[union-attr]
        raise CoachError(f"{sid} is a correctness scenario (a bug to find, not a slow program): coach run and "
                         "coach exercise take it, coach record does not (scripts/record-sanitizer.sh records it)")
    known = ", ".join(FOLDER_RE.match(d.name).group(1) for d in folders) or "none"  # type: ignore[union-attr]
    raise CoachError(f"unknown scenario '{sid}'; known scenarios: {known}")


def parse_only(text: str) -> list[str]:
    """``--only 01,2,scenario-15`` -> ['scenario-01', 'scenario-02', 'scenario-15']."""
    return [normalise_id(part) for part in text.split(",") if part.strip()]


# --------------------------------------------------------------------------------------------
# Text with {placeholders}
# --------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)(?::([^{}]*))?\}")


def placeholders(text: str) -> set[str]:
    return {m.group(1) for m in _PLACEHOLDER.finditer(text)}


def render(text: str, values: Mapping[str, Any]) -> str:
    """Fill ``{name}`` and ``{name:.2f}`` from ``values``; unknown names are left as written."""

    def fill(m: re.Match[str]) -> str:
        name, spec = m.group(1), m.group(2) or ""
        if name not in values or values[name] is None:
            return m.group(0)
        try:
            return format(values[name], spec)
        except (ValueError, TypeError):
            return str(values[name])

    return _PLACEHOLDER.sub(fill, text)


#: What a placeholder reads as where its value is not recorded.
NOT_RECORDED = "[not recorded]"


def fill(text: str, values: Mapping[str, Any], missing: str = NOT_RECORDED) -> str:
    """``render``, then every placeholder ``values`` cannot fill reads as ``missing``: a learner never
    sees a format string."""
    return _PLACEHOLDER.sub(missing, render(text, values))


def filled(scenario: Any, values: Mapping[str, Any], missing: str = NOT_RECORDED) -> Any:
    """``scenario`` (performance or correctness: both carry these fields) with every text a learner
    reads filled from ``values`` (``coach.recordings.placeholder_values``, or a correctness recording's
    values): the symptom, the question, the hints, the rubric and the fix. Every presenter (``coach
    run``, its ``--json``, the dashboard's walkthrough, the exercises) prints these, not the templates."""
    def text(t: str) -> str:
        return fill(t, values, missing)

    return replace(scenario, symptom=text(scenario.symptom), question=text(scenario.question),
                   hints=tuple(text(h) for h in scenario.hints),
                   rubric=Rubric(tuple(text(t) for t in scenario.rubric.strong),
                                 tuple(text(t) for t in scenario.rubric.red_flags)),
                   fix=replace(scenario.fix, summary=text(scenario.fix.summary), details=text(scenario.fix.details),
                               wrong_fix=text(scenario.fix.wrong_fix), gain_misses=text(scenario.fix.gain_misses)))


# --------------------------------------------------------------------------------------------
# Arithmetic over named sizes
# --------------------------------------------------------------------------------------------

_FUNCTIONS = {"min": min, "max": max}


def evaluate(expr: str, names: Mapping[str, float]) -> float:
    """Evaluate arithmetic (+ - * / // % **, min, max, parentheses) over ``names``.

    Raises ``ValueError`` naming what is wrong; no Python beyond that arithmetic is run.
    """
    try:
        value = float(arith.evaluate(expr, lambda parts: names[parts[0]], operators=arith.EXTENDED,
                                     functions=_FUNCTIONS))
    except arith.NotParsed as err:
        raise ValueError(f"'{expr}' is not an arithmetic expression ({err.detail})") from None
    except arith.UnknownName as err:
        raise ValueError(f"'{expr}' uses '{err.parts[0]}', which is not a named size") from None
    except arith.NotAllowed:
        raise ValueError(f"'{expr}' may use only numbers, named sizes, + - * / // % **, min and max") from None
    except arith.DividesByZero:
        raise ValueError(f"'{expr}' divides by zero") from None
    except OverflowError:
        raise ValueError(f"'{expr}' overflows") from None
    if not math.isfinite(value):
        raise ValueError(f"'{expr}' is not finite")
    return value


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


_REQUIRED = object()


class _Fields:
    """A TOML table being read: typed getters whose errors name the file and the dotted field."""

    def __init__(self, path: Path, data: Mapping[str, Any], prefix: str = ""):
        self.path, self.data, self.prefix = path, data, prefix
        self.seen: set[str] = set()

    def error(self, key: str, problem: str) -> InputError:
        return InputError(self.path, f"field '{self.prefix}{key}': {problem}")

    def _get(self, key: str, kind: type | tuple[type, ...], what: str, default: Any) -> Any:
        self.seen.add(key)
        if key not in self.data:
            if default is _REQUIRED:
                raise self.error(key, "is missing")
            return default
        value = self.data[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
            raise self.error(key, f"must be {what}, not {_describe(value)}")
        return value

    def text(self, key: str, default: str | None = None, *, required: bool = True) -> Any:
        value = self._get(key, str, "text", _REQUIRED if required else default)
        if isinstance(value, str):
            value = value.strip()
            if required and not value:
                raise self.error(key, "is empty")
        return value

    def choice(self, key: str, options: tuple[str, ...], default: Any = None) -> str:
        value = self._get(key, str, "text", _REQUIRED if default is None else default)
        if value not in options:
            raise self.error(key, f"'{value}' is not one of {', '.join(options)}")
        return value

    def number(self, key: str, default: Any = None, *, minimum: float | None = None) -> float:
        value = self._get(key, (int, float), "a number", _REQUIRED if default is None else default)
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be at least {minimum:g}, not {value:g}")
        return float(value)

    def integer(self, key: str, default: Any = None, *, minimum: int | None = None) -> int:
        value = self._get(key, int, "an integer", _REQUIRED if default is None else default)
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be at least {minimum}, not {value}")
        return int(value)

    def flag(self, key: str, default: bool) -> bool:
        return bool(self._get(key, bool, "true or false", default))

    def texts(self, key: str, *, required: bool = True, nonempty: bool = True) -> tuple[str, ...]:
        value = self._get(key, list, "a list of text", _REQUIRED if required else [])
        if nonempty and required and not value:
            raise self.error(key, "is an empty list")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise self.error(f"{key}[{i}]", "must be non-empty text")
        return tuple(item.strip() for item in value)

    def table(self, key: str, *, required: bool = True) -> _Fields:
        value = self._get(key, dict, "a table", _REQUIRED if required else {})
        return _Fields(self.path, value, f"{self.prefix}{key}.")

    def tables(self, key: str) -> list[_Fields]:
        value = self._get(key, list, "an array of tables ([[...]])", _REQUIRED)
        if not value:
            raise self.error(key, "is an empty list")
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.error(f"{key}[{i}]", f"must be a table, not {_describe(item)}")
            out.append(_Fields(self.path, item, f"{self.prefix}{key}[{i}]."))
        return out

    def done(self) -> None:
        """Refuse keys nobody read: a typo in a field name must not pass silently."""
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            raise self.error(unknown[0], f"is not a known field (known here: {', '.join(sorted(self.seen))})")


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    names = {str: "text", bool: "a boolean", int: "an integer", float: "a number"}
    return f"{names.get(type(value), type(value).__name__)} ({value!r})"


def _scenario(f: _Fields, folder: Path) -> Scenario:
    m = FOLDER_RE.match(folder.name)
    if not m:
        raise InputError(folder, "is not named scenario-NN-<slug> (lower-case words joined by '-')")
    if f.choice("kind", KINDS, "performance") != "performance":
        raise f.error("kind", "is 'correctness': coach.correctness reads this scenario, not coach.scenarios")
    sid = f.text("id")
    if sid != m.group(1):
        raise f.error("id", f"'{sid}' does not match the folder name {folder.name}")

    expected = f.table("expected")
    bottleneck_text = expected.text("bottleneck")
    try:
        bottleneck = Bottleneck(bottleneck_text)
    except ValueError:
        raise expected.error("bottleneck", f"'{bottleneck_text}' is not a bottleneck class (one of "
                                           f"{', '.join(b.value for b in Bottleneck)})") from None
    first_rule = expected.text("first_rule")
    if not RULE_ID_RE.match(first_rule):
        raise expected.error("first_rule", f"'{first_rule}' is not a rule id (lower-case words joined by '-')")
    min_speedup = expected.number("min_speedup", minimum=1.0)
    unit = expected.text("unit", None, required=False) or None
    expected.done()

    fix_t = f.table("fix")
    fix_id = fix_t.text("id")
    known = fix_ids()
    if fix_id not in known:
        raise fix_t.error("id", f"'{fix_id}' is not a fix of coach/analyze/fixes.toml (one of {', '.join(sorted(known))})")
    gain_t = f.table("gain", required=False)
    gain_misses = gain_t.text("misses", "", required=False) or ""
    gain_params = {k: gain_t.text(k) for k in GAIN_PARAMS if k in gain_t.data}
    gain_t.done()
    fix = Fix(summary=fix_t.text("summary"), details=fix_t.text("details"),
              wrong_fix=fix_t.text("wrong_fix", "", required=False) or "", id=fix_id, gain_misses=gain_misses,
              gain_params=gain_params)
    fix_t.done()

    rub = f.table("rubric")
    rubric = Rubric(strong=rub.texts("strong"), red_flags=rub.texts("red_flags"))
    rub.done()

    tool = f.choice("tool", TOOLS)
    model = _model(f.table("model"))
    for key, text in fix.gain_params.items():
        try:
            evaluate(text, model.sizes)
        except ValueError as err:
            raise InputError(f.path, f"field 'gain.{key}': {err}") from None
    programs = _programs(f.table("programs"), folder)
    profile = _profile(f.table("profile"), tool)
    evidence = tuple(_evidence(e) for e in f.tables("evidence"))
    names = [e.name for e in evidence]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise f.error("evidence", f"two entries are named '{dupes[0]}'")
    kinds = {e.profile_kind for e in evidence}
    if "kernel-profile" in kinds and not profile.ncu:
        raise f.error("profile.ncu", "is false, but the evidence reads Nsight Compute's launches table")
    if "timeline" in kinds and not (profile.nsys or profile.kineto):
        raise f.error("profile.nsys", "is false (and so is profile.kineto), but the evidence reads timeline tables")

    scenario = Scenario(
        id=sid,
        number=int(m.group(2)),
        slug=m.group(3),
        folder=folder,
        title=f.text("title"),
        level=f.choice("level", LEVELS),
        tool=tool,
        symptom=f.text("symptom"),
        question=f.text("question"),
        bottleneck=bottleneck,
        first_rule=first_rule,
        min_speedup=min_speedup,
        unit=unit,
        evidence=evidence,
        fix=fix,
        rubric=rubric,
        hints=f.texts("hints"),
        model=model,
        programs=programs,
        profile=profile,
    )
    f.done()
    return scenario


def _model(f: _Fields) -> Model:
    bound = f.choice("bound", BOUNDS)
    sizes_t = f.table("sizes")
    sizes: dict[str, float] = {}
    for key in sizes_t.data:
        if not NAME_RE.match(key):
            raise sizes_t.error(key, "is not a valid size name (lower-case letters, digits, '_')")
        value = sizes_t.number(key, minimum=0)
        sizes[key] = int(value) if isinstance(sizes_t.data[key], int) else value
    if not sizes:
        raise f.error("sizes", "is empty (name the sizes the programs and the model use)")

    def expr(fields: _Fields, key: str) -> str:
        text = fields.text(key)
        try:
            evaluate(text, sizes)
        except ValueError as err:
            raise fields.error(key, str(err)) from None
        return text

    def variant_table(key: str, what: str) -> dict[str, str] | None:
        """``key`` given as a table of expressions by variant (the slow variant's required), or None
        where it is given as one expression or not at all."""
        if not isinstance(f.data.get(key), dict):
            return None
        table = f.table(key)
        out = {}
        for variant in table.data:
            if variant not in VARIANTS:
                raise table.error(variant, f"is not a variant (one of {', '.join(VARIANTS)})")
            out[variant] = expr(table, variant)
        if "slow" not in out:
            raise table.error("slow", f"is missing (the slow variant's {what})")
        table.done()
        return out

    by_variant = variant_table("useful_bytes", "useful bytes")
    useful = by_variant["slow"] if by_variant is not None else expr(f, "useful_bytes")
    written = variant_table("written_bytes", "written bytes")
    if written is None:
        written = {"slow": expr(f, "written_bytes")} if f.data.get("written_bytes") is not None else {}
    flops = expr(f, "flops")
    flop_unit = f.text("flop_unit", "FLOP", required=False) or "FLOP"
    bytes_per_s, bytes_src = _ceiling(f, "bytes_per_s", required=True)
    flop_per_s, flops_src = _ceiling(f, "flop_per_s", required=False)
    measured_src = "; ".join(x for x in (bytes_src, flops_src) if x)
    given = f.text("ceiling_source", required=not measured_src)
    source = "; ".join(x for x in (given, measured_src) if x)
    moved_t = f.table("moved_bytes")
    moved = {}
    for variant in moved_t.data:
        if variant not in VARIANTS:
            raise moved_t.error(variant, f"is not a variant (one of {', '.join(VARIANTS)})")
        moved[variant] = expr(moved_t, variant)
    f.done()
    return Model(bound=bound, sizes=sizes, useful_bytes=useful, flops=flops, moved_bytes=moved,
                 bytes_per_s=bytes_per_s, flop_per_s=flop_per_s, ceiling_source=source, useful_by_variant=by_variant or {},
                 flop_unit=flop_unit, bytes_source=bytes_src or given, flops_source=flops_src or given,
                 bytes_ceiling_name=_measured_name(f, "bytes_per_s"), flops_ceiling_name=_measured_name(f, "flop_per_s"),
                 written_by_variant=written)


def _measured_name(f: _Fields, key: str) -> str | None:
    raw = f.data.get(key)
    return raw[len(MEASURED_PREFIX):] if isinstance(raw, str) and raw.startswith(MEASURED_PREFIX) else None


FIXES_FILE = Path(__file__).resolve().parent / "analyze" / "fixes.toml"
#: What a gain model may need that no profile holds (coach.analyze.gain): the requests one batched
#: call serves, the workers that prepare the input; each an expression over the scenario's sizes.
GAIN_PARAMS = ("batch", "workers")


@functools.cache
def fix_ids() -> frozenset[str]:
    """The ids of the fix table (coach/analyze/fixes.toml), read with the standard library: a
    scenario names its planted fix by one of them."""
    with FIXES_FILE.open("rb") as fh:
        return frozenset(tomllib.load(fh))


MEASURED_PREFIX = "measured:"


def _ceiling(f: _Fields, key: str, *, required: bool) -> tuple[float | None, str]:
    """A ceiling given as a number (with ``ceiling_source`` saying where it comes from), or as
    ``"measured:<measurement>"``: a value of the H200 calibration kept in hardware/measured/h200.json
    (written by coach.capture.calibrate), raised to the best rate recorded on the H200 where a
    recording went faster (``coach.best_rates``: a measured ceiling is never below a recorded rate),
    so every scenario's floor uses the measured ceiling."""
    raw = f.data.get(key)
    if isinstance(raw, str) and raw.startswith(MEASURED_PREFIX):
        name = raw[len(MEASURED_PREFIX):]
        measured = measured_ceilings()
        if name not in measured["measurements"]:
            known = ", ".join(sorted(measured["measurements"]))
            raise f.error(key, f"names no measurement in {measured['path']} (known: {known})")
        m = measured["measurements"][name]
        prov = measured["provenance"]
        f.seen.add(key)
        calibrated = float(m["value"])
        value, raised = best_rates.ceiling_for(CALIBRATED_GPU, name, calibrated)
        text = (f"{m.get('detail', name)} measured on the {prov.get('gpu_name')} on "
                f"{str(prov.get('date', ''))[:10]} ({measured['path']})")
        if raised:
            text = f"measured: {raised}; the calibration: {text}"
        return float(value or calibrated), text
    value = f.number(key, minimum=1) if required else (f.number(key, 0.0, minimum=0) or None)
    return value, ""


#: The GPU whose calibration and recordings the scenarios' measured ceilings come from.
CALIBRATED_GPU = "h200"


def measured_ceilings(gpu: str = "h200") -> dict[str, Any]:
    """The calibration recorded for ``gpu`` (hardware/measured/<gpu>.json), read with the standard
    library so that scenarios load on a GPU machine without coach's analysis stack."""
    path = hardware_dir() / "measured" / f"{gpu}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(path, f"cannot be read as a calibration ({err})") from None
    return {"path": f"hardware/measured/{path.name}", "measurements": data.get("measurements", {}),
            "provenance": data.get("provenance", {})}


def _programs(f: _Fields, folder: Path) -> dict[str, Program]:
    out = {}
    for variant in VARIANTS:
        p = f.table(variant)
        script = p.text("script")
        path = (folder / script).resolve()
        if folder.resolve() not in path.parents or path.suffix != ".py":
            raise p.error("script", f"'{script}' must be a .py file inside the scenario folder")
        if not path.is_file():
            raise p.error("script", f"'{script}' does not exist in {folder.name}")
        args = p.texts("args", required=False, nonempty=False)
        p.done()
        out[variant] = Program(variant=variant, script=path, args=args)
    f.done()
    return out


def _profile(f: _Fields, tool: str) -> ProfileSpec:
    spec = ProfileSpec(
        nsys=f.flag("nsys", False),
        ncu=f.flag("ncu", False),
        kineto=f.flag("kineto", False),
        nsys_timed_only=f.flag("nsys_timed_only", False),
        ncu_set=f.text("ncu_set", "full", required=False),
        ncu_kernel=f.text("ncu_kernel", None, required=False),
        ncu_launch_count=_launch_count(f),
        keep_ncu_rep=f.texts("keep_ncu_rep", required=False, nonempty=False),
        timeout_s=f.number("timeout_s", DEFAULT_TIMEOUT_S, minimum=1),
    )
    for v in spec.keep_ncu_rep:
        if v not in VARIANTS:
            raise f.error("keep_ncu_rep", f"'{v}' is not a variant (one of {', '.join(VARIANTS)})")
    if spec.ncu_kernel is not None:
        try:
            re.compile(spec.ncu_kernel)
        except re.error as err:
            raise f.error("ncu_kernel", f"is not a regular expression ({err})") from None
    if spec.nsys_timed_only and not spec.nsys:
        raise f.error("nsys_timed_only", "is true, but nsys is false (it limits what Nsight Systems records)")
    if spec.ncu and not spec.ncu_kernel:
        raise f.error("ncu_kernel", "is missing (profile only the scenario's kernels: Nsight Compute replays each one)")
    primary = {"ncu": spec.ncu, "nsys": spec.nsys, "kineto": spec.kineto}[tool]
    if not primary:
        raise f.error(tool, f"must be true: the scenario's tool is {tool}")
    f.done()
    return spec


def _launch_count(f: _Fields) -> int | dict[str, int]:
    """``ncu_launch_count``: one integer, or a table with one for each variant."""
    if not isinstance(f.data.get("ncu_launch_count"), dict):
        return f.integer("ncu_launch_count", DEFAULT_NCU_LAUNCH_COUNT, minimum=1)
    t = f.table("ncu_launch_count")
    counts = {variant: t.integer(variant, minimum=1) for variant in VARIANTS}
    t.done()
    return counts


def _evidence(f: _Fields) -> Evidence:
    name = f.text("name")
    if not NAME_RE.match(name):
        raise f.error("name", f"'{name}' is not a valid name (lower-case letters, digits, '_')")
    table = f.choice("table", KERNEL_TABLES + TIMELINE_TABLES)
    metric = f.text("metric")
    per = f.text("per", None, required=False)
    agg = f.choice("agg", AGGREGATIONS, "sum")
    where_t = f.table("where", required=False)
    where = []
    for key, value in where_t.data.items():
        if not isinstance(value, (str, int, float, bool)):
            raise where_t.error(key, f"must be text, a number or a boolean, not {_describe(value)}")
        where.append((key, value))
        where_t.seen.add(key)
    kernel = f.text("kernel", None, required=False)
    if kernel is not None and table not in NAME_COLUMNS:
        raise f.error("kernel", f"cannot filter the {table} table by name (only {', '.join(NAME_COLUMNS)})")
    if kernel is not None:
        try:
            re.compile(kernel)
        except re.error as err:
            raise f.error("kernel", f"is not a regular expression ({err})") from None
    slow_range = None
    if "slow_range" in f.data:
        raw = f._get("slow_range", list, "a list [low, high]", None)
        if (len(raw) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in raw)
                or raw[0] > raw[1]):
            raise f.error("slow_range", f"must be [low, high] with low <= high, not {raw!r}")
        slow_range = (float(raw[0]), float(raw[1]))
    ev = Evidence(
        name=name,
        label=f.text("label"),
        table=table,
        metric=metric,
        per=per,
        agg=agg,
        where=tuple(where),
        kernel=kernel,
        direction=f.choice("direction", DIRECTIONS),
        slow_range=slow_range,
        scale=f.number("scale", 1.0),
        unit=f.text("unit", "", required=False) or "",
    )
    f.done()
    return ev
