"""Numbers as people read them: SI prefixes, units, and a dash for what was not measured.

Every number the app shows passes through here, so a page never prints ``1179872.0`` or ``None``.
"""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_SMALL = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))

MISSING = "–"
#: A metric the report lacks, in tables of a report's numbers (coach.analyze.quantities.NOT_IN_REPORT).
NOT_IN_REPORT = "not in report"


def missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def number(value: float | None, digits: int = 3) -> str:
    """``digits`` significant digits, thousands separated, no exponent below 1e15."""
    if missing(value):
        return MISSING
    v = float(value)
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits or (v.is_integer() and abs(v) >= 1):
        return f"{v:,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


def si(value: float | None, unit: str, digits: int = 3) -> str:
    """``4.28e12, "B/s"`` -> ``"4.28 TB/s"``; ``1.18e-3, "s"`` -> ``"1.18 ms"``."""
    if missing(value):
        return MISSING
    v = float(value)
    scales = _SMALL if unit == "s" and abs(v) < 1 else _PREFIXES
    for scale, prefix in scales:
        if abs(v) >= scale or scale == scales[-1][0]:
            return f"{number(v / scale, digits)} {prefix}{unit}"
    return f"{number(v, digits)} {unit}"  # pragma: no cover - the loop always returns


def duration_ns(ns: float | None) -> str:
    """A duration given in nanoseconds: ``1179872`` -> ``"1.18 ms"``."""
    return MISSING if missing(ns) else si(float(ns) * 1e-9, "s")


def pct(value: float | None, digits: int = 3) -> str:
    return MISSING if missing(value) else f"{number(value, digits)}%"


def ratio(value: float | None) -> str:
    """A speed-up or slow-down factor: ``5.96`` -> ``"5.96×"``."""
    return MISSING if missing(value) else f"{number(value)}×"
