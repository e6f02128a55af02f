"""Where every number in a scenario's narrative comes from.

A narrative teaches with numbers; each must be traceable, or a re-recording leaves it stale. A
number a recording measures is written as a placeholder (``{slow_ms:.2f}``) and filled from the
recording; what remains typed in the text must be one of:

- the scenario's own number, or a size of its ``[model.sizes]``;
- a hardware constant of the recording's GPU: a value of ``hardware/gpus/<gpu>.toml``, of its
  compute capability in ``hardware/compute_capabilities.toml``, or a ceiling measured on it
  (``hardware/measured/<gpu>.json``, raised to the best rate recorded on it as every floor is);
- a named constant of CUDA or of the programs, listed with its reason in ``scenarios/numbers.toml``
  (warp size, sector bytes, the harness's sample count) or in the scenario's own ``numbers.toml``;
- arithmetic derived from those or from the recording's values (the placeholders' names), declared
  in the scenario's ``numbers.toml`` as an expression (``"36" = "particle_bytes + float_bytes"``,
  ``"80" = "-(-slow_registers // 8) * 8"``), which is evaluated and must give the printed number at
  its printed precision: a re-recording that changes the result fails the check.

Any of these may be printed in other units: the value divided by a power of 1000 (Hz as GHz, byte/s
as TB/s, seconds as us) or, for a size in bytes, of 1024 (MiB), or times 100 (a percentage), where
it prints as at least 1 there. Nothing else passes:
a number that matches only a measurement must become a placeholder. Only the standard library is
used (the scenarios load on a machine without coach's analysis stack).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from coach import best_rates, scenarios
from coach.errors import InputError
from coach.paths import hardware_dir, scenarios_dir

NUMBERS_FILE = "numbers.toml"
#: Units a typed number may be printed in: the value over 1000^k or 1024^k (bytes, Hz, byte/s, FLOP/s
#: printed as kB .. PB, KiB .. PiB, GHz, TB/s, TFLOP/s, and the reverse for seconds as ms, us, ns),
#: or times 100 (a share as a percentage).
DECIMAL_SCALES = tuple([1000.0**k for k in range(-5, 6)] + [1e-2])
#: Binary units (KiB .. PiB) only for sizes in bytes (names with "bytes" in them), so that a rate
#: in FLOP/s is not read as 1024-based.
BINARY_SCALES = tuple(1024.0**k for k in range(1, 6))
#: A value is read in another unit only where it prints as at least this much there.
MIN_RESCALED = 1.0

_PLACEHOLDER = re.compile(r"\{[a-z_][a-z0-9_]*(?::[^{}]*)?\}")
# A number standing alone: not part of a word (H200, fp32, sm_90, x16), a version (2025.3.1) or a
# date (2026-11-30). Thousands separators, decimals, exponents (4.8e12) and powers (2^27, 2**27) are
# one number; a power of ten (10^9, 10**9) is a unit factor and no number.
_NUMBER = re.compile(r"(?<![\w.^*])(?:(?P<base>\d+)(?:\^|\*\*)(?P<exp>\d+)"
                     r"|(?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?P<frac>\.\d+)?(?P<sci>[eE][-+]?\d+)?)"
                     r"(?![\d_^]|\.\d|\*\*)")
UNTRACED = ("traces to no size, hardware constant, declared constant or derivation: a measurement must be a "
            "{placeholder}")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_VERSION = re.compile(r"\b\d+(?:\.\d+){2,}\b")
_LIST_MARKER = re.compile(r"^\s*\d+\.\s", re.M)


@dataclass(frozen=True)
class Printed:
    """A number as the text prints it: its characters, its value, half a unit of its last printed
    digit (what rounding to that digit may have moved), and its line."""

    text: str
    value: float
    tolerance: float
    line: int

    def matches(self, value: float, binary: bool = False) -> bool:
        """Whether ``value``, printed to this number's last digit in some unit, reads as this number
        (``binary``: a size in bytes, which may be printed in 1024-based units too)."""
        if not math.isfinite(value):
            return False
        slack = self.tolerance * (1 + 1e-9) + 1e-12 * abs(self.value)
        if abs(value - self.value) <= slack:
            return True
        # in another unit only where the printed number is a readable size in it (0.47 GB, 4.19 TB/s),
        # so that 32 threads do not pass as "0.032"
        scales = DECIMAL_SCALES + (BINARY_SCALES if binary else ())
        return abs(self.value) >= MIN_RESCALED and any(abs(value / scale - self.value) <= slack for scale in scales)


def printed_numbers(text: str) -> list[Printed]:
    """Every number ``text`` prints outside its placeholders, in order."""
    blanked = _PLACEHOLDER.sub(lambda m: " " * len(m.group(0)), text)
    for pattern in (_DATE, _VERSION, _LIST_MARKER):
        blanked = pattern.sub(lambda m: " " * len(m.group(0)), blanked)
    out = []
    for m in _NUMBER.finditer(blanked):
        line = blanked.count("\n", 0, m.start()) + 1
        if m.group("base"):
            if m.group("base") == "10":
                continue  # 10^9, 10**9: a unit factor, not a quantity
            out.append(Printed(m.group(0), float(int(m.group("base")) ** int(m.group("exp"))), 0.0, line))
            continue
        whole, frac, sci = m.group("int"), m.group("frac") or "", m.group("sci") or ""
        value = float(whole.replace(",", "") + frac + sci)
        digits = len(frac) - 1 if frac else 0
        exponent = int(sci[1:]) if sci else 0
        out.append(Printed(m.group(0), value, 0.5 * 10.0 ** (exponent - digits), line))
    return out


@dataclass
class Sources:
    """The names a narrative's typed numbers may come from, with their values: ``names`` a typed
    number may be directly (sizes, hardware, constants), ``recorded`` ones that only a declared
    derivation may use (a measurement itself is written as a placeholder)."""

    names: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # constant name -> why it is a constant
    recorded: dict[str, float] = field(default_factory=dict)

    def traced(self, number: Printed) -> str | None:
        """The name this number is, in some unit; None when it is none of them."""
        return next((name for name, value in self.names.items() if number.matches(value, "bytes" in name)), None)


@dataclass(frozen=True)
class Declared:
    """A scenario's ``numbers.toml``: printed number -> expression over the source names."""

    path: Path
    derived: Mapping[str, str]


def shared_constants(root: Path | None = None) -> tuple[dict[str, float], dict[str, str]]:
    """``scenarios/numbers.toml`` [constants]: name -> value, and name -> reason."""
    return _constants(Path(root or scenarios_dir()) / NUMBERS_FILE)


def _constants(path: Path) -> tuple[dict[str, float], dict[str, str]]:
    values, reasons = {}, {}
    for name, entry in (_read_toml(path).get("constants") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), (int, float)) \
                or not str(entry.get("why", "")).strip():
            raise InputError(path, f"constant '{name}' needs a numeric value and a reason (why)")
        values[name], reasons[name] = float(entry["value"]), str(entry["why"])
    return values, reasons


def hardware_constants(gpu: str) -> dict[str, float]:
    """The numeric values of ``gpu``'s hardware table, of its compute capability's limits, and of the
    ceilings measured on it, by name (``sm_count``, ``max_warps_per_sm``, ``measured_<name>``)."""
    base = hardware_dir()
    table = _read_toml(base / "gpus" / f"{gpu}.toml")
    out = _numeric_fields(table)
    cc = str(table.get("compute_capability", ""))
    if re.fullmatch(r"\d+\.\d+", cc):
        out["compute_capability"] = float(cc)
    limits = (_read_toml(base / "compute_capabilities.toml").get("cc") or {}).get(cc) or {}
    out.update(_numeric_fields(limits))
    measured = base / "measured" / f"{gpu}.json"
    if measured.is_file():
        # the measured ceiling as the floors use it: the calibration raised to the best rate recorded
        # on the GPU (coach.best_rates), so a text cannot quote the calibration where the floor it
        # states was computed with a higher ceiling
        data = json.loads(measured.read_text())
        best = best_rates.read(gpu)
        for name, m in (data.get("measurements") or {}).items():
            if isinstance(m, dict) and isinstance(m.get("value"), (int, float)):
                value, _ = best_rates.measured_ceiling(name, float(m["value"]), best)
                out[f"measured_{name}"] = float(value)
    return out


def sources_for(scenario: scenarios.Scenario, gpu: str, recorded: Mapping[str, object] | None = None,
                root: Path | None = None) -> Sources:
    """Everything a typed number of ``scenario``'s text may be, on ``gpu``; ``recorded``: the
    recording's placeholder values, for declared derivations."""
    constants, reasons = shared_constants(root)
    names = {"scenario_number": float(scenario.number)}
    names.update({k: float(v) for k, v in scenario.model.sizes.items()})
    names.update(hardware_constants(gpu))
    names.update(constants)
    own = scenario.folder / NUMBERS_FILE
    if own.is_file():
        values, why = _constants(own)
        names.update(values)
        reasons.update(why)
    numeric = {k: float(v) for k, v in (recorded or {}).items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return Sources(names, reasons, numeric)


def declared(scenario: scenarios.Scenario) -> Declared:
    path = scenario.folder / NUMBERS_FILE
    data = _read_toml(path) if path.is_file() else {}
    derived = data.get("derived") or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in derived.items()):
        raise InputError(path, "[derived] maps a printed number (as text) to an expression (as text)")
    return Declared(path, dict(derived))


@dataclass(frozen=True)
class Untraced:
    """A number that traces to nothing (``number`` set), or a declaration that does not hold."""

    where: str  # the text it is in ("narrative.md", "fix.details", ...), or the numbers.toml
    text: str  # the number as printed, or the declaration's key
    line: int  # its line in that text (0 for a declaration)
    why: str

    def __str__(self) -> str:
        at = f"{self.where}:{self.line}" if self.line else self.where
        return f"{at}: {self.text}: {self.why}"


def texts_of(scenario: scenarios.Scenario) -> dict[str, str]:
    """The scenario's texts a learner reads, by name: the narrative, and the scenario.toml's symptom,
    question, hints, fix and rubric."""
    path = scenario.narrative_path
    out = {"narrative.md": path.read_text(encoding="utf-8")} if path.is_file() else {}
    out.update({"symptom": scenario.symptom, "question": scenario.question, "fix.summary": scenario.fix.summary,
                "fix.details": scenario.fix.details, "fix.wrong_fix": scenario.fix.wrong_fix})
    out.update({f"hints[{i}]": h for i, h in enumerate(scenario.hints)})
    out.update({f"rubric.strong[{i}]": t for i, t in enumerate(scenario.rubric.strong)})
    out.update({f"rubric.red_flags[{i}]": t for i, t in enumerate(scenario.rubric.red_flags)})
    return out


def check(texts: Mapping[str, str], sources: Sources, decl: Declared) -> list[Untraced]:
    """The numbers of ``texts`` (name -> text) that trace to nothing, and the declarations that do
    not hold: each must evaluate to its printed number and be printed in one of the texts."""
    printed = {name: printed_numbers(text) for name, text in texts.items()}
    seen = {p.text for numbers in printed.values() for p in numbers}
    derived_ok: set[str] = set()
    problems = []
    for key, expr in decl.derived.items():
        try:
            value = scenarios.evaluate(expr, {**sources.recorded, **sources.names})
        except ValueError as err:
            problems.append(Untraced(decl.path.name, key, 0, str(err)))
            continue
        target = printed_numbers(key)
        if len(target) != 1 or not target[0].matches(value, binary=True):
            problems.append(Untraced(decl.path.name, key, 0, f"{expr} evaluates to {value:.6g}"))
        elif key not in seen:
            problems.append(Untraced(decl.path.name, key, 0, "is declared but printed in none of the texts"))
        else:
            derived_ok.add(key)
    for name, numbers in printed.items():
        for p in numbers:
            if p.text not in derived_ok and sources.traced(p) is None:
                problems.append(Untraced(name, p.text, p.line, UNTRACED))
    return problems


def check_scenario(scenario: scenarios.Scenario, gpu: str,
                   recorded: Mapping[str, object] | None = None) -> list[Untraced]:
    """Every text of ``scenario`` checked against its sources on ``gpu`` and its recording's values."""
    return check(texts_of(scenario), sources_for(scenario, gpu, recorded), declared(scenario))


def _numeric_fields(table: Mapping[str, object]) -> dict[str, float]:
    out = {}
    for key, v in table.items():
        if isinstance(v, dict) and isinstance(v.get("value"), (int, float)) and not isinstance(v.get("value"), bool):
            out[key] = float(v["value"])
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[key] = float(v)
    return out


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(path, f"cannot be read ({err})") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(path, f"is not valid TOML ({err})") from None
