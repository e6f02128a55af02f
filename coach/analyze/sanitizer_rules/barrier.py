"""Barriers that only part of a block reaches: synccheck's "Barrier error detected. Divergent
thread(s) in block".

``__syncthreads()`` waits until every thread of the block has arrived at it. The CUDA C++
Programming Guide allows it in conditional code only when the condition is the same for the whole
block. Written inside ``if (tid < s)``, in a loop whose trip count differs between threads, or after
an early ``return`` of some threads, it is reached by some threads and not others: the behaviour is
undefined. In practice the threads that skip it run ahead and read shared memory the others have
not finished writing, or the block hangs; which one depends on the GPU and the compiler, and a run
that happens to give the right answer proves nothing. synccheck reports every thread that arrives
at a barrier its block (or warp) does not reach together. "Divergent thread(s) in warp" is the
same mistake within one warp; "Invalid arguments" is a ``__syncwarp(mask)`` called by a thread the
mask leaves out.

The fix keeps the barrier unconditional and moves the condition onto the work:
``if (tid < s) partial[tid] += partial[tid + s]; __syncthreads();``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import RANK_DEVICE, ReportContext, ev, finding, groups, plural, where

SPEC = RuleSpec(
    id="divergent-barrier",
    name="Barrier in divergent code",
    category=BugClass.DIVERGENT_BARRIER,
    table="records",
    requires=("kind",),
    optional=("barrier_problem", "file", "line"),
    doc="synccheck's barrier errors, grouped by source line and kind of divergence.",
)


def apply(ctx: ReportContext) -> list[Finding]:
    return [_one(g, ctx) for g in groups(ctx.records, ("barrier",), keys=("kernel", "file", "line", "barrier_problem"))]


def _callers(ctx: ReportContext, record_id: int) -> list[str]:
    frames = ctx.report.locations.filter((pl.col("record_id") == record_id) & (pl.col("role") == "device-frame"))
    return [f"{r['kernel']} at {where(r['file'], r['line'])}" for r in frames.to_dicts() if r.get("kernel")]


def _one(g: dict[str, Any], ctx: ReportContext) -> Finding:
    line = where(g.get("file"), g.get("line"))
    kernel = g.get("kernel") or "an unnamed kernel"
    problem = g.get("barrier_problem") or "a barrier error"
    count = g["count"]
    callers = _callers(ctx, g["first_record"])
    via = f" (called from {'; '.join(callers)})" if callers else ""
    blocks = g.get("blocks") or None
    spread = f" in {plural(blocks, 'block')}" if blocks else ""
    if "invalid argument" in problem:
        title = f"__syncwarp() with a mask that leaves out a calling thread, at {line} in {kernel}"
        message = (f"synccheck: {plural(count, 'thread')}{spread} called a warp barrier at {line}{via} with a mask "
                   "that does not include them. Every thread that calls __syncwarp(mask) must be in the mask.")
        fix = ("Compute the mask from the same condition that decides who calls it (__ballot_sync of that "
               "condition), or call it from the whole warp with the full mask.")
    else:
        title = f"Barrier reached by part of the block at {line} in {kernel}"
        message = (f"synccheck: {plural(count, 'thread')}{spread} reached the barrier at {line}{via} while other "
                   f"threads of their {'warp' if 'warp' in problem else 'block'} did not ({problem})"
                   f"{ctx.not_printed_note()}. __syncthreads() must be reached by every thread of the block; inside "
                   "a branch or a loop whose condition differs between threads its behaviour is undefined: threads "
                   "that skip it run ahead and read shared memory the others have not finished writing, or the "
                   "block hangs. A right answer from such code is luck.")
        fix = (f"Move the barrier at {line} out of the condition: keep the condition on the work and let every "
               "thread of the block reach every barrier (if (tid < s) x[tid] += x[tid + s]; __syncthreads();). "
               "For an early return, let the out-of-range threads skip the work but not the barriers. Rerun "
               "synccheck until it reports 0 errors.")
    evidence = [ev("divergent_barrier_threads", count, "thread", "0 (every thread of the block at every barrier)", 1)]
    return finding(SPEC, title=title, message=message, next_step=fix, evidence=evidence, scope=g.get("kernel"),
                   rank=RANK_DEVICE, first_record=g["first_record"],
                   details={"file": g.get("file"), "line": g.get("line"), "lines": [g.get("line")], "kernel": kernel,
                            "records": g["record_ids"], "tool": "synccheck", "barrier_problem": problem,
                            "callers": callers, "severity": g.get("severity")})
