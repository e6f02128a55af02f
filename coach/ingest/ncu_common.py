"""What the Nsight Compute readers share: the raw-to-canonical metric mapping and the step that turns a
long metric table into the canonical ``launches`` table.

The mapping is data (``ncu_metrics.csv``): one row per canonical column with an expression over
Nsight Compute metric names. ``|`` separates alternatives, tried in order per launch (newer names
first, older versions' names after); ``+`` adds terms; ``*`` multiplies a term's factors, each a
metric name or a number. An alternative counts only where all its metrics are present.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl

from coach.model import LAUNCH_METRICS

MAPPING_FILE = Path(__file__).with_name("ncu_metrics.csv")


@dataclass(frozen=True)
class Term:
    factor: float
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class Mapping:
    column: str
    alternatives: tuple[tuple[Term, ...], ...]

    @property
    def metrics(self) -> set[str]:
        return {m for alt in self.alternatives for t in alt for m in t.metrics}


def _parse_term(text: str) -> Term:
    factor, metrics = 1.0, []
    for part in (p.strip() for p in text.split("*")):
        try:
            factor *= float(part)
        except ValueError:
            metrics.append(part)
    return Term(factor, tuple(metrics))


@lru_cache(maxsize=1)
def mappings() -> tuple[Mapping, ...]:
    with MAPPING_FILE.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        if row["column"] not in LAUNCH_METRICS:
            raise ValueError(f"{MAPPING_FILE.name}: {row['column']} is not a canonical launch metric")
        alts = tuple(tuple(_parse_term(t) for t in alt.split("+")) for alt in row["expression"].split("|"))
        out.append(Mapping(row["column"], alts))
    return tuple(out)


def referenced_metrics() -> set[str]:
    """Every Nsight Compute metric name the mapping can use."""
    return set().union(*(m.metrics for m in mappings()))


def canonical_metrics(metrics: pl.DataFrame) -> pl.DataFrame:
    """From a long table (launch_id, metric, value) to one row per launch with the canonical columns.

    Only the metrics the mapping references are pivoted; everything else stays in the long table.
    """
    wanted = referenced_metrics()
    wide = (
        metrics.lazy()
        .filter(pl.col("metric").is_in(wanted) & pl.col("value").is_not_null())
        .group_by("launch_id", "metric")
        .agg(pl.col("value").first())
        .collect()
        .pivot(on="metric", index="launch_id", values="value")
    )
    launch_ids = metrics.select(pl.col("launch_id").unique().sort())
    wide = launch_ids.join(wide, on="launch_id", how="left") if wide.height else launch_ids
    present = set(wide.columns)
    exprs = []
    for m in mappings():
        alts = []
        for alt in m.alternatives:
            if not all(x in present for t in alt for x in t.metrics):
                continue
            terms = []
            for t in alt:
                e = pl.lit(t.factor, dtype=pl.Float64)
                for x in t.metrics:
                    e = e * pl.col(x)
                terms.append(e)
            alts.append(pl.sum_horizontal(terms, ignore_nulls=False) if len(terms) > 1 else terms[0])
        expr = pl.coalesce(alts) if alts else pl.lit(None, dtype=pl.Float64)
        exprs.append(expr.cast(pl.Float64).alias(m.column))
    return wide.select("launch_id", *exprs)
