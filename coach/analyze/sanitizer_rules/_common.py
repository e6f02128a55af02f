"""What every correctness rule shares: the report's context, grouping records by source line, the
finding builder and number formatting.

Not a rule itself (no ``SPEC``): the registry in ``__init__`` lists the rule modules by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import polars as pl

from coach.analyze.findings import BugClass, Evidence, Finding, RuleSpec
from coach.model import SanitizerReport

SOURCE = "compute-sanitizer"  # Evidence.source
#: details keys the registry ranks by: a device error before the API errors it causes, an error
#: before a warning, the first thing the tool printed first.
RANK = "rank"
FIRST_RECORD = "first_record"
#: Ranks, smallest first.
RANK_DEVICE, RANK_CAUSED, RANK_API, RANK_LEAK, RANK_NOTE = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class ReportContext:
    """What a rule sees besides the records: the totals, the tool, and the other tables."""

    report: SanitizerReport
    summary: dict[str, Any]

    @property
    def tool(self) -> str | None:
        return self.summary.get("tool")

    @property
    def records(self) -> pl.DataFrame:
        return self.report.records

    def not_printed_note(self) -> str:
        """' (N more were not printed: --print-limit)' where the tool held some back."""
        n = self.summary.get("errors_not_printed")
        return f" ({n:,} more errors were not printed: raise --print-limit to see them)" if n else ""


def context(report: SanitizerReport) -> ReportContext:
    summary = report.summary.row(0, named=True) if report.summary.height else {}
    return ReportContext(report, summary)


def groups(records: pl.DataFrame, kinds: Sequence[str], keys: Sequence[str] = ("kernel", "file", "line", "access",
                                                                              "space")) -> list[dict[str, Any]]:
    """Records of ``kinds`` grouped by source location: one dict per group, in print order, with the
    group's count, its first record's fields, the range of allocation distances, how many blocks and
    threads it spans."""
    if not records.height:
        return []
    threads = pl.struct("block_x", "block_y", "block_z", "thread_x", "thread_y", "thread_z")
    blocks = pl.struct("block_x", "block_y", "block_z")
    first_cols = [c for c in records.columns if c not in keys and c != "record_id"]
    return (records.lazy()
            .filter(pl.col("kind").is_in(list(kinds)))
            .sort("record_id")
            .group_by(list(keys), maintain_order=True)
            .agg(pl.len().alias("count"),
                 pl.col("record_id").alias("record_ids"),
                 pl.col("record_id").min().alias(FIRST_RECORD),
                 *(pl.col(c).first() for c in first_cols),
                 pl.col("allocation_distance_bytes").min().alias("distance_min"),
                 pl.col("allocation_distance_bytes").max().alias("distance_max"),
                 pl.col("hazard_count").sum().alias("hazards"),
                 blocks.drop_nulls().n_unique().alias("blocks"),
                 threads.drop_nulls().n_unique().alias("threads"),
                 (pl.col("severity") == "error").any().alias("any_error"))
            .sort(FIRST_RECORD)
            .collect()
            .to_dicts())


def where(file: str | None, line: int | None) -> str:
    """'transpose.cu:31' (the file's name, not its path), or what is missing."""
    if not file:
        return "an unknown line (build with -lineinfo for source lines)"
    name = PurePosixPath(file).name
    return f"{name}:{line}" if line is not None else name


def thread_text(g: dict[str, Any]) -> str:
    if g.get("thread_x") is None:
        return ""
    t = f"({g['thread_x']},{g['thread_y']},{g['thread_z']})"
    b = f"({g['block_x']},{g['block_y']},{g['block_z']})" if g.get("block_x") is not None else "?"
    return f"thread {t} of block {b}"


def ev(metric: str, value: float | None, unit: str = "", healthy: str = "", threshold: float | None = None) -> Evidence:
    return Evidence(metric=metric, value=None if value is None else float(value), unit=unit, healthy=healthy,
                    threshold=threshold, source=SOURCE)


def finding(spec: RuleSpec, *, title: str, message: str, next_step: str, evidence: Iterable[Evidence],
            scope: str | None, rank: int, first_record: int | None, category: BugClass | None = None,
            details: dict[str, Any] | None = None) -> Finding:
    """A correctness finding: no time saving (a wrong answer is not made faster), ranked by ``rank``."""
    return Finding(
        rule_id=spec.id,
        category=category or spec.category,
        title=title,
        message=message,
        next_step=next_step,
        evidence=tuple(evidence),
        scope=scope or "",
        gain_model="",
        details={RANK: rank, FIRST_RECORD: first_record, **(details or {})},
    )


def plural(n: int | None, word: str, words: str | None = None) -> str:
    if n is None:
        return f"? {words or word + 's'}"
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def fmt_bytes(b: float | None) -> str:
    """Exact below 10 kB (an off-by-one is 4 bytes, not '0 KB'), scaled above."""
    if b is None:
        return "?"
    if abs(b) < 10_000:
        return f"{b:,.0f} bytes"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= size:
            return f"{b / size:.3g} {unit}"
    return f"{b:,.0f} bytes"
