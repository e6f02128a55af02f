"""How Nsight Systems SQLite exports name things, from nsys 2021 to 2026, kept as data.

Two tables beside this module hold everything that differs between nsys versions, so that a new
layout is a new row, not new code:

``nsys_columns.csv``
    One row per (canonical table, column, raw table, raw column). Rows sharing a canonical table
    list its raw tables in priority order: the first one the export holds is read (``TARGET_INFO_GPU``
    before the 2021 ``TARGET_INFO_CUDA_GPU``). Rows sharing a canonical column list alternatives:
    the column takes the first non-null of those the export has (``syncType``, then
    ``deprecatedSyncType``). ``scale`` converts units (kHz to Hz); ``seen_in`` records the nsys
    versions checked to have the column (real exports of 2022.4 and 2025.3, NVIDIA's schema
    reference for 2026.4, public readers of 2021.x exports).

``nsys_enums.csv``
    Enumerations. When the export carries its own ``ENUM_*`` table, its ids are matched to ours by
    symbol name, so a renumbering cannot mislead; older exports without the table get the built-in
    ids, taken from CUPTI's headers and NVIDIA's own report scripts (each row names its source). A
    table that names none of our symbols (renamed by a newer nsys) gets the built-in ids too, and the
    reader notes it in ``Source.meta["assumed"]``, which the timeline's warnings repeat.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Mapping

import polars as pl

_HERE = Path(__file__).resolve().parent
COLUMNS_CSV = _HERE / "nsys_columns.csv"
ENUMS_CSV = _HERE / "nsys_enums.csv"


@cache
def columns() -> pl.DataFrame:
    """The raw -> canonical column table, in file order (which is priority order)."""
    return pl.read_csv(COLUMNS_CSV, schema_overrides={"scale": pl.Int64}).with_row_index("priority")


@cache
def enums() -> pl.DataFrame:
    """The enumeration table: enum, raw_table, id, raw_name, value, source."""
    return pl.read_csv(ENUMS_CSV, schema_overrides={"id": pl.Int64})


@dataclass(frozen=True)
class TablePlan:
    """What to select from one export for one canonical table."""

    raw_table: str
    select: dict[str, str]  # staging column -> SQL expression over the raw table
    text_columns: frozenset[str]  # staging columns selected as BLOB, to be decoded leniently

    def sql(self) -> str:
        cols = ", ".join(f"{expr} AS {quote(name)}" for name, expr in self.select.items())
        return f"SELECT {cols} FROM {quote(self.raw_table)}"


def plan(table: str, present: Mapping[str, frozenset[str]], needs: tuple[str, ...] = ()) -> TablePlan | None:
    """See ``_plan``; planned once per process for each layout (exports of one nsys version share theirs)."""
    return _plan(table, tuple((t, present[t]) for t in _raw_tables(table) if t in present), tuple(needs))


@functools.cache
def _raw_tables(table: str) -> tuple[str, ...]:
    return tuple(columns().filter(pl.col("table") == table)["raw_table"].unique(maintain_order=True))


@functools.cache
def _plan(table: str, held: tuple[tuple[str, frozenset[str]], ...], needs: tuple[str, ...]) -> TablePlan | None:
    """The raw table and column expressions for canonical ``table``, given the export's tables and
    their columns; None when the export holds none of the raw tables (an empty canonical table).

    Of the raw tables the export holds, the first (in priority order) that provides every staging
    column of ``needs`` is read: an export of 2020-2021 may hold a ``TARGET_INFO_GPU`` of another
    layout beside the ``TARGET_INFO_CUDA_GPU`` that carries the device ids. Where none provides them
    all, the first is planned, and the caller names what it lacks."""
    present = dict(held)
    rows = columns().filter(pl.col("table") == table)
    raw_tables = [t for t in rows["raw_table"].unique(maintain_order=True) if t in present]
    if not raw_tables:
        return None
    plans = [_plan_of(rows, raw, present[raw]) for raw in raw_tables]
    return next((p for p in plans if all(c in p.select for c in needs)), plans[0])


def _plan_of(rows: pl.DataFrame, raw_table: str, have: frozenset[str]) -> TablePlan:
    select: dict[str, list[str]] = {}
    text: set[str] = set()
    for row in rows.filter(pl.col("raw_table") == raw_table).iter_rows(named=True):
        if row["raw_column"] not in have:
            continue
        expr = quote(row["raw_column"])
        if row["type"] == "text":
            expr = f"CAST({expr} AS BLOB)"
            text.add(row["column"])
        elif row["scale"] is not None:
            expr = f"({expr} * {int(row['scale'])})"
        select.setdefault(row["column"], []).append(expr)
    exprs = {name: (alts[0] if len(alts) == 1 else f"coalesce({', '.join(alts)})") for name, alts in select.items()}
    return TablePlan(raw_table=raw_table, select=exprs, text_columns=frozenset(text))


def enum_values(enum: str, export_rows: pl.DataFrame | None) -> pl.DataFrame:
    """``(id, value)`` for ``enum``. ``export_rows`` is the export's own ``(id, name)`` enum table,
    or None where the export lacks it; its names are matched to ours, unknown names map to
    ``"unknown"``. An export table that names none of ours (symbols renamed by a newer nsys, or
    left empty) is not used: the built-in ids are (``enum_names_known`` tells the caller, who says so).

    Worked out once per process for each distinct export table (exports of one nsys version share
    theirs, and a folder of per-rank reports is read as dozens of exports)."""
    return _enum_values(enum, _rows_key(export_rows))


def enum_names_known(enum: str, export_rows: pl.DataFrame) -> bool:
    """Whether the export's ``(id, name)`` table for ``enum`` names at least one symbol coach knows."""
    return _enum_names_known(enum, _rows_key(export_rows))


def _rows_key(export_rows: pl.DataFrame | None) -> tuple[tuple, ...] | None:
    """An export's ``(id, name)`` rows as a hashable key (enum tables hold a few dozen rows)."""
    if export_rows is None:
        return None
    return tuple(export_rows.select(pl.col("id").cast(pl.Int64), pl.col("name").cast(pl.String)).iter_rows())


@functools.cache
def _enum_values(enum: str, rows: tuple[tuple, ...] | None) -> pl.DataFrame:
    ours = enums().filter(pl.col("enum") == enum)
    if rows is None or not _enum_names_known(enum, rows):
        return ours.select("id", "value")
    by_name = ours.select(pl.col("raw_name").alias("name"), "value").unique("name", keep="first")
    return (_rows_frame(rows)
            .join(by_name, on="name", how="left", maintain_order="left")
            .select("id", pl.col("value").fill_null("unknown")))


@functools.cache
def _enum_names_known(enum: str, rows: tuple[tuple, ...]) -> bool:
    ours = set(enums().filter(pl.col("enum") == enum)["raw_name"].to_list())
    return any(name in ours for _, name in rows)


def _rows_frame(rows: tuple[tuple, ...]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema={"id": pl.Int64, "name": pl.String}, orient="row")


@functools.cache
def enum_table(enum: str) -> str:
    """The export's ``ENUM_*`` table that describes ``enum``."""
    return enums().filter(pl.col("enum") == enum)["raw_table"][0]


@functools.cache
def staging_columns(table: str) -> tuple[tuple[str, str], ...]:
    """``(column, type)`` of every staging column ``nsys_columns.csv`` names for canonical ``table``,
    in file order, each once."""
    wanted = columns().filter(pl.col("table") == table).unique("column", maintain_order=True)
    return tuple(wanted.select("column", "type").iter_rows())


def quote(identifier: str) -> str:
    """An SQL identifier in double quotes."""
    return '"' + identifier.replace('"', '""') + '"'
