"""The first things to see in a compute-sanitizer report, for ``coach load``.

``summarize_report(report)`` returns a dict of plain values and Polars frames:

``tool``        the tool that ran (from the report, or the recording's provenance), or None
``totals``      the summary row: errors, hazards, errors not printed, leaks, whether it finished
``by_line``     records per kind, kernel and source line (``count`` printed records, ``threads``,
                ``blocks``, ``hazards``), the ``top`` largest first
``api_errors``  per failing CUDA call: count and error
``program_lines`` how many lines the program printed between the tool's

``to_jsonable(summary)`` turns the frames into lists of row dicts for ``--json``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.model import SanitizerReport

TOP = 10


def summarize_report(report: SanitizerReport, top: int = TOP) -> dict[str, Any]:
    totals = report.summary.row(0, named=True) if report.summary.height else {}
    tool = totals.get("tool") or (report.source.meta or {}).get("sanitizer_tool")
    records = report.records
    device = records.filter(pl.col("kind") != "api-error")
    by_line = (device.group_by(["kind", "severity", "kernel", "file", "line"])
               .agg(pl.len().alias("count"),
                    pl.struct("block_x", "block_y", "block_z", "thread_x", "thread_y", "thread_z").drop_nulls()
                    .n_unique().alias("threads"),
                    pl.struct("block_x", "block_y", "block_z").drop_nulls().n_unique().alias("blocks"),
                    pl.col("hazard_count").sum().alias("hazards"),
                    pl.col("record_id").min().alias("first_record"))
               .sort(["count", "first_record"], descending=[True, False])
               .head(top))
    api = (records.filter(pl.col("kind") == "api-error")
           .group_by(["api_call", "api_error", "api_error_code"])
           .agg(pl.len().alias("count"), pl.col("record_id").min().alias("first_record"))
           .sort("first_record"))
    return {"tool": tool, "totals": totals, "by_line": by_line, "api_errors": api,
            "program_lines": totals.get("program_lines")}


def to_jsonable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.to_dicts() if isinstance(v, pl.DataFrame) else v) for k, v in summary.items()}
