"""Hardware exceptions and device-side malloc/free errors: "Warp Illegal Address", "Malloc/Free error
encountered : Double free".

memcheck attributes most faults precisely (an out-of-bounds record names the thread and address).
Some the GPU reports itself, without saying which access: an illegal instruction, a stack
overflow, a misaligned program counter, an assert. Those records name the kernel and often the
warp; the CUDA context is destroyed afterwards.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import RANK_DEVICE, ReportContext, ev, finding, groups, plural, where

SPEC = RuleSpec(id="device-fault", name="Hardware exception on the device", category=BugClass.DEVICE_FAULT,
                table="records", requires=("kind",), doc="Faults the GPU raised and device-side malloc/free errors.")

_MEANING = {
    "illegal address": "an access to an address no allocation covers",
    "misaligned address": "an access at an address that is not a multiple of its size",
    "illegal instruction": "an instruction the GPU cannot run (code built for another architecture, a trap)",
    "hardware stack overflow": "deep recursion or large local arrays overflowed the thread's stack",
    "assert": "a device-side assert() failed",
    "invalid pc": "a jump to an invalid address (a corrupted function pointer)",
}


def apply(ctx: ReportContext) -> list[Finding]:
    return [_one(g, ctx) for g in groups(ctx.records, ("hardware-exception", "device-malloc"),
                                         keys=("kind", "kernel", "file", "line", "api_message"))]


def _one(g: dict[str, Any], ctx: ReportContext) -> Finding:
    what = (g.get("api_message") or g.get("headline") or "a fault").strip()
    kernel = g.get("kernel") or "a kernel"
    line = where(g.get("file"), g.get("line"))
    meaning = next((v for k, v in _MEANING.items() if k in what.lower()), "")
    if g.get("kind") == "device-malloc":
        meaning = "a device-side free() of a pointer that malloc() did not return, or freed twice"
    message = (f"{plural(g['count'], 'report')} of {what} in {kernel} near {line}"
               + (f": {meaning}" if meaning else "") + ". The GPU raised it; the CUDA context is destroyed, so every "
               "later call fails with the same error.")
    return finding(SPEC, title=f"{what} in {kernel}", message=message,
                   next_step=(f"Look at {line} in {kernel}. Run memcheck (with -lineinfo) for the precise access where "
                              "the fault is a memory one; for an assert, the message printed before it."),
                   evidence=[ev("device_faults", g["count"], "report", "0")], scope=g.get("kernel"), rank=RANK_DEVICE,
                   first_record=g["first_record"],
                   details={"file": g.get("file"), "line": g.get("line"), "lines": [g.get("line")], "kernel": kernel,
                            "records": g["record_ids"], "tool": "memcheck", "fault": what})
