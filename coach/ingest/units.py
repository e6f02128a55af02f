"""Normalise the units Nsight tools print to coach's base units.

Nsight Compute reports values in base units through its Python module (``ns``, ``byte``, ``hz``),
but its CSV pages print display units unless run with ``--print-units base``: ``ms``, ``us``,
``Kbyte``, ``Tbyte/s``, ``Ghz`` in 2023 and later versions; ``msecond``, ``usecond``,
``Gbyte/second`` and clock rates as ``cycle/nsecond`` or ``cycle/usecond`` in earlier ones. A
clock rate in cycles per unit of time is a frequency, so it normalises to ``hz``. Prefixes are
decimal (1 Kbyte = 1000 bytes), as Nsight Compute documents for its auto-scaled units.

``normalise(unit)`` returns ``(canonical_unit, factor)``: multiply a value by ``factor`` to express
it in ``canonical_unit``.
"""

from __future__ import annotations

import polars as pl

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_NS = {"second": 1e9, "msecond": 1e6, "usecond": 1e3, "nsecond": 1.0, "s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


def _scale(base: str, unit: str) -> tuple[str, float] | None:
    """'Kbyte' -> ('byte', 1e3) when base is 'byte'."""
    if unit == base:
        return base, 1.0
    if unit.endswith(base) and unit[: -len(base)] in _PREFIX:
        return base, _PREFIX[unit[: -len(base)]]
    return None


def normalise(unit: str | None) -> tuple[str, float]:
    """Canonical unit and the factor to reach it, for one unit string."""
    u = (unit or "").strip()
    if not u:
        return "", 1.0
    low = u.lower()
    if low in {"%", "pct"}:
        return "%", 1.0
    if u in _TIME_NS:
        return "ns", _TIME_NS[u]
    if low.endswith("hz"):  # hz, Khz, Mhz, Ghz
        prefix = u[:-2].upper()
        if prefix in _PREFIX:
            return "hz", _PREFIX[prefix]
    if "/" in u:
        num, den = u.split("/", 1)
        n_unit, n_factor = normalise(num)
        if den in _TIME_NS:  # a rate: express per second
            per_s = 1e9 / _TIME_NS[den]
            return ("hz" if n_unit == "cycle" else f"{n_unit}/s"), n_factor * per_s
        # Nsight Compute scales the printed value and writes the prefix on whichever part of the
        # unit it scales, the denominator included: "2.614 %/Kbyte" is its display of 2,614 %/byte
        # (derived__pct_occupancy_per_shared_mem_size on the H200 report, raw and base-unit pages).
        # So a denominator's prefix multiplies, like a numerator's.
        d_unit, d_factor = normalise(den)
        return f"{n_unit}/{d_unit}", n_factor * d_factor
    for base in ("byte", "inst", "cycle", "sector", "request", "warp", "thread", "block", "register"):
        hit = _scale(base, u)
        if hit:
            return hit
    return u, 1.0


def unit_table(units: pl.Series) -> pl.DataFrame:
    """A lookup frame (raw_unit, unit, factor) for the distinct raw units in ``units``."""
    distinct = units.fill_null("").unique().to_list()
    rows = [(u, *normalise(u)) for u in distinct]
    return pl.DataFrame(rows, schema={"raw_unit": pl.Utf8, "unit": pl.Utf8, "factor": pl.Float64}, orient="row")
