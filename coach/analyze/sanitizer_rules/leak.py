"""Leaks: memcheck with ``--leak-check full`` lists every allocation still alive when the context
was destroyed ("Leaked 1,024 bytes at 0x...", then "LEAK SUMMARY: B bytes leaked in A allocations").
A leak costs memory, not correctness; in a long-running process it ends in out-of-memory errors."""

from __future__ import annotations

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import RANK_LEAK, ReportContext, ev, finding, fmt_bytes, plural

SPEC = RuleSpec(id="memory-leak", name="Device memory leak", category=BugClass.LEAK, table="records",
                requires=("kind",), optional=("leaked_bytes", "host_function"),
                doc="Allocations never freed, summed per allocating host function.")


def apply(ctx: ReportContext) -> list[Finding]:
    leaks = ctx.records.filter(ctx.records["kind"] == "leak")
    if not leaks.height:
        return []
    total = ctx.summary.get("leaked_bytes") or int(leaks["leaked_bytes"].sum() or 0)
    where_from = sorted({h for h in leaks["host_function"].to_list() if h})
    message = (f"{plural(leaks.height, 'allocation')} of {fmt_bytes(total)} in all were never freed"
               + (f" (allocated in {', '.join(where_from)})" if where_from else "") + ".")
    return [finding(SPEC, title=f"{fmt_bytes(total)} of device memory leaked", message=message,
                    next_step="Free each allocation when its owner is done with it (cudaFree), or let an RAII wrapper "
                              "or the framework's allocator own it.",
                    evidence=[ev("leaked_bytes", total, "byte", "0")], scope=where_from[0] if where_from else None,
                    rank=RANK_LEAK, first_record=int(leaks["record_id"].min()),
                    details={"records": leaks["record_id"].to_list(), "lines": [], "tool": "memcheck"})]
