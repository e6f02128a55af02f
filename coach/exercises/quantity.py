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
