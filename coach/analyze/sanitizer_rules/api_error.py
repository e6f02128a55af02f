"""CUDA API errors, and the kernel errors that surface through them: "Program hit
cudaErrorIllegalAddress (error 700) ... on CUDA API call to cudaMemcpy".

A kernel launch returns as soon as the launch is queued: cudaGetLastError() right after it reports
a bad launch (configuration, resources), never what the kernel then does. An error during the
kernel (an illegal address, a trap, an assert) is returned by the next call that waits for the GPU,
a cudaMemcpy or a cudaDeviceSynchronize perhaps many lines later, and by every call after it: the
context is unusable until the process exits ("sticky" errors: codes 700 and 702-719 of the runtime).
So the call that reports such an error is almost never its cause. Under memcheck the faulting
access is printed first, as a device record; the API error that follows is its consequence. Without
one (another tool, a kernel the filters skipped), the kernel is found by making the launches
synchronous (CUDA_LAUNCH_BLOCKING=1) and checking after each launch, then located with memcheck.

Other API errors are the call's own: a bad argument, out of memory, a launch that asks too much.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import (RANK_API, RANK_CAUSED, RANK_DEVICE, ReportContext, ev, finding,
                                                   groups, plural, where)

SPEC = RuleSpec(
    id="asynchronous-error",
    name="Kernel error reported by a later call",
    category=BugClass.ASYNC_ERROR,
    table="records",
    requires=("kind",),
    optional=("api_call", "api_error", "api_error_code", "host_function"),
    doc="API errors: a sticky kernel error traced to the device record that caused it, or the way to find it.",
)
API_SPEC = RuleSpec(id="cuda-api-error", name="CUDA API error", category=BugClass.API_ERROR, table="records",
                    requires=("kind",), doc="An API call that failed for its own reasons.")
#: The runtime's execution errors (driver CUDA_ERROR_* share the numbers): each one leaves the context
#: unusable, and each is reported by whichever call next waits for the GPU.
STICKY_CODES = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719})
#: Device records that can cause a sticky error.
DEVICE_KINDS = ("memory-access", "hardware-exception", "device-malloc", "barrier")
LAUNCH_CODES = {9: "the launch configuration is invalid (grid or block dimensions, or shared memory per block)",
                701: "the launch needs more registers or shared memory per block than an SM has: smaller blocks or "
                     "fewer registers (__launch_bounds__)"}


def apply(ctx: ReportContext) -> list[Finding]:
    out = []
    device = ctx.records.filter(pl.col("kind").is_in(list(DEVICE_KINDS)))
    for g in groups(ctx.records, ("api-error",), keys=("api_call", "api_error", "api_error_code", "host_function")):
        code = g.get("api_error_code")
        if code in STICKY_CODES:
            cause = device.filter(pl.col("record_id") < g["first_record"]).sort("record_id")
            out.append(_sticky(g, cause.row(0, named=True) if cause.height else None, ctx))
        else:
            out.append(_plain(g))
    return out


def _name(g: dict[str, Any]) -> str:
    err = g.get("api_error") or "an error"
    code = g.get("api_error_code")
    msg = g.get("api_message")
    return f"{err}{f' ({code})' if code is not None else ''}{f': {msg}' if msg else ''}"


def _sticky(g: dict[str, Any], cause: dict[str, Any] | None, ctx: ReportContext) -> Finding:
    call = g.get("api_call") or "a CUDA call"
    host = g.get("host_function")
    at = f" in {host}" if host else ""
    evidence = [ev("api_errors", g["count"], "call", "0")]
    if cause is not None:
        line = where(cause.get("file"), cause.get("line"))
        kernel = cause.get("kernel") or "the kernel"
        message = (f"{call}{at} returned {_name(g)}, {plural(g['count'], 'time')}. The copy or wait is not the "
                   f"cause: the error is the one printed above it, in {kernel} at {line} ({cause.get('headline')}). "
                   "A kernel's errors are asynchronous: the launch returned success, the kernel faulted later, and "
                   f"the first call that waited for the GPU, {call}, reported it; every call after it fails too, "
                   "because the context is now unusable.")
        return finding(SPEC, title=f"{call} reports the fault of {kernel} at {line}, not its own", message=message,
                       next_step=(f"Fix {kernel} at {line} (the finding above); {call} needs no change. To catch such "
                                  "errors where they happen, check cudaGetLastError() and, in debug builds, "
                                  "cudaDeviceSynchronize() after every launch."),
                       evidence=evidence, scope=cause.get("kernel"), rank=RANK_CAUSED, first_record=g["first_record"],
                       details={"api_call": call, "api_error": g.get("api_error"), "caused_by": cause.get("record_id"),
                                "file": cause.get("file"), "line": cause.get("line"), "lines": [],
                                "kernel": kernel, "records": g["record_ids"], "host_function": host})
    message = (f"{call}{at} returned {_name(g)}: an error during a kernel that ran earlier, reported by the first call "
               "that waited for the GPU. The report names no faulting access (it was not memcheck, or the kernel "
               "was not checked), so which kernel it was is still open; the context is unusable from here on.")
    return finding(SPEC, title=f"{call} returned {g.get('api_error') or 'an execution error'}: a kernel failed before it",
                   message=message,
                   next_step=("Run with CUDA_LAUNCH_BLOCKING=1 and check cudaGetLastError() plus cudaDeviceSynchronize() "
                              "after every launch: the first check that fails names the kernel. Then run that program "
                              "under compute-sanitizer --tool memcheck (built with -lineinfo) for the line, thread and "
                              "address."),
                   evidence=evidence, scope=host, rank=RANK_DEVICE, first_record=g["first_record"],
                   details={"api_call": call, "api_error": g.get("api_error"), "records": g["record_ids"],
                            "host_function": host, "lines": []})


def _plain(g: dict[str, Any]) -> Finding:
    call = g.get("api_call") or "a CUDA call"
    host = g.get("host_function")
    at = f" in {host}" if host else ""
    why = LAUNCH_CODES.get(g.get("api_error_code"), "")
    message = f"{call}{at} returned {_name(g)}, {plural(g['count'], 'time')}." + (f" That is: {why}." if why else "")
    return finding(API_SPEC, title=f"{call} failed: {g.get('api_error') or 'an error'}", message=message,
                   next_step=(f"Check the return value of {call} (and of every CUDA call) where the program makes it, "
                              "and handle or report the error there."),
                   evidence=[ev("api_errors", g["count"], "call", "0")], scope=host, rank=RANK_API,
                   first_record=g["first_record"],
                   details={"api_call": call, "api_error": g.get("api_error"), "records": g["record_ids"],
                            "host_function": host, "lines": []})
