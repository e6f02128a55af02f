"""Read a number the way a person types it in an estimate: "160 us", "0.16ms", "1.6e-4 s",
"274 tok/s", "42%", "21.5 GB", "20 GiB", "3,350". Units convert to the unit a drill asks for;
a bare number is taken in that unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coach.exercises.grading import fold

# Each unit: dimension and factor to the dimension's base unit (seconds, bytes, tokens/s, percent,
# FLOP/byte). Decimal prefixes for bytes as datasheets print them; binary ones where spelled KiB...
_UNITS: dict[str, tuple[str, float]] = {
    "s": ("time", 1.0), "sec": ("time", 1.0), "second": ("time", 1.0), "seconds": ("time", 1.0),
    "ms": ("time", 1e-3), "us": ("time", 1e-6), "usec": ("time", 1e-6), "ns": ("time", 1e-9),
    "microsecond": ("time", 1e-6), "microseconds": ("time", 1e-6), "millisecond": ("time", 1e-3),
    "milliseconds": ("time", 1e-3),
    "min": ("time", 60.0), "minute": ("time", 60.0), "minutes": ("time", 60.0),
    "h": ("time", 3600.0), "hour": ("time", 3600.0), "hours": ("time", 3600.0),
    "d": ("time", 86400.0), "day": ("time", 86400.0), "days": ("time", 86400.0),
    "b": ("bytes", 1.0), "byte": ("bytes", 1.0), "bytes": ("bytes", 1.0),
    "kb": ("bytes", 1e3), "mb": ("bytes", 1e6), "gb": ("bytes", 1e9), "tb": ("bytes", 1e12),
    "kib": ("bytes", 2.0**10), "mib": ("bytes", 2.0**20), "gib": ("bytes", 2.0**30), "tib": ("bytes", 2.0**40),
    "tokens/s": ("rate", 1.0), "token/s": ("rate", 1.0), "tok/s": ("rate", 1.0), "t/s": ("rate", 1.0),
    "tokens per second": ("rate", 1.0), "tokens/sec": ("rate", 1.0), "/s": ("rate", 1.0),
    "%": ("percent", 1.0), "percent": ("percent", 1.0), "pct": ("percent", 1.0),
    "flop/byte": ("intensity", 1.0), "flop/b": ("intensity", 1.0), "flops/byte": ("intensity", 1.0),
}
_NUMBER = re.compile(r"(?<![\w.])([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?|[-+]?\.\d+(?:e[-+]?\d+)?)")
_SCALE = re.compile(r"(k|thousand|million|billion)\b")  # "80k tok/s"; "kb" is a unit, not k x b
_SCALE_WORDS = {"k": 1e3, "thousand": 1e3, "million": 1e6, "billion": 1e9}


class QuantityError(ValueError):
    """The text holds no number, or a unit of the wrong kind."""


@dataclass(frozen=True)
class Unit:
    """The unit a drill answers in: its name as shown and its dimension and factor."""

    name: str
    dimension: str
    factor: float


def unit(name: str) -> Unit:
    dimension, factor = _UNITS[name.lower()]
    return Unit(name, dimension, factor)


def parse(text: str, want: Unit) -> float:
    """The first number in ``text``, converted to ``want``; a bare number is already in ``want``."""
    folded = fold(text).replace("µ", "u").strip()
    m = _NUMBER.search(folded)
    if m is None:
        raise QuantityError(f"no number in {text!r}")
    value = float(m.group(1).replace(",", ""))
    rest = folded[m.end():].strip()
    if scale := _SCALE.match(rest):
        value *= _SCALE_WORDS[scale.group(1)]
        rest = rest[scale.end():].strip()
    for name in sorted(_UNITS, key=len, reverse=True):  # longest first: "ms" before "s"
        if re.match(re.escape(name) + r"(?![a-z])", rest):
            dimension, factor = _UNITS[name.lower()]
            if dimension != want.dimension:
                raise QuantityError(f"{text!r} is in {name}, but the answer is in {want.name}")
            return value * factor / want.factor
    return value


# --------------------------------------------------------------------------------------------
# Numbers inside free text: "265 blocks on 132 SMs", "about 1.4x", "~57 KB", "3,350 GB/s"
# --------------------------------------------------------------------------------------------

#: Counted things and ratios, by the dimension a claim compares them in (besides ``_UNITS``).
_COUNTS = {
    "x": "ratio", "times": "ratio", "fold": "ratio",
    "block": "blocks", "blocks": "blocks", "cta": "blocks", "ctas": "blocks",
    "sm": "sms", "sms": "sms", "wave": "waves", "waves": "waves", "warp": "warps", "warps": "warps",
    "thread": "threads", "threads": "threads", "register": "registers", "registers": "registers",
    "sector": "sectors", "sectors": "sectors", "kernel": "kernels", "kernels": "kernels",
    "launch": "launches", "launches": "launches", "tile": "tiles", "tiles": "tiles", "bank": "banks",
    "banks": "banks", "way": "ways", "bit": "bits", "bits": "bits", "stage": "stages", "stages": "stages", "flop/b": "intensity", "gb/s": "bandwidth", "tb/s": "bandwidth",
    "tflop/s": "flops", "tflops": "flops",
}
_MENTION = re.compile(
    r"(?<![\w.])(?:~|about |around |roughly |approx\.? |nearly |almost )?"
    r"((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)\s*(k\b|thousand\b|million\b|billion\b)?\s*"
    r"(x(?![a-z0-9])|×|times\b|fold\b|%|percent\b|[a-z]+/[a-z]+|[a-z]+)?")


def dimension(name: str) -> str:
    """The dimension of a unit or counted thing ("ms" -> time, "blocks" -> blocks); "" if unknown."""
    key = fold(name).strip().lower().replace("×", "x")
    if key in _COUNTS:
        return _COUNTS[key]
    if key in _UNITS:
        return _UNITS[key][0]
    if key.endswith("s") and key[:-1] in _COUNTS:
        return _COUNTS[key[:-1]]
    return ""


def mentions(text: str) -> list[tuple[float, str, int, int]]:
    """Every number in ``text`` with the unit or counted thing after it: (value in that unit, unit, start, end).

    Values of units in ``_UNITS`` are given in the dimension's base unit (seconds, bytes, ...), so
    "57 KB" and "57,000 bytes" compare equal; counted things ("265 blocks") and ratios ("1.4x") as
    written. A number without a unit comes back with unit "".
    """
    out = []
    for m in _MENTION.finditer(fold(text)):
        value = float(m.group(1).replace(",", ""))
        if m.group(2):
            value *= _SCALE_WORDS[m.group(2)]
        unit = (m.group(3) or "").replace("×", "x")
        end = m.end() if unit else m.end(2) if m.group(2) else m.end(1)
        if unit and unit not in _UNITS and not dimension(unit):
            unit, end = "", m.end(2) if m.group(2) else m.end(1)
        if unit in _UNITS:
            value *= _UNITS[unit][1]
        out.append((value, unit, m.start(), end))
    return out
