"""Reads of memory nothing wrote: initcheck's "Uninitialized __global__ memory read of size 4 bytes".

initcheck marks every byte of a new allocation as unwritten and clears the mark when a kernel, a
cudaMemcpy or a cudaMemset writes it. A read of a marked byte is reported, whatever the byte holds.
That matters because of what it holds: cudaMalloc (like torch.empty) does not clear memory, and a
buffer freed a moment ago usually comes back at the same address with its old contents. So the
bug hides: in a fresh process the memory is often zero and the test passes; in the pipeline the
allocation is recycled and the result is off by whatever was there before.

The usual causes: an accumulator (``acc[i] += ...``, a histogram, a gradient buffer) that was
never set to zero; a cudaMemset given elements where it wants bytes; a kernel that writes only
part of its output (the tail of a partial block) before another reads all of it. With
``--initcheck-address-space shared`` the same check covers shared memory (a tile read before it
was loaded). A host copy of unwritten bytes ("Host API memory access error ... on access by
cudaMemcpy source") is often harmless padding in a struct, and worth a memset all the same.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import (RANK_API, RANK_DEVICE, ReportContext, ev, finding, fmt_bytes,
                                                   groups, plural, where)

SPEC = RuleSpec(
    id="uninitialized-read",
    name="Read of uninitialised memory",
    category=BugClass.UNINITIALIZED,
    table="records",
    requires=("kind",),
    optional=("space", "file", "line", "api_call"),
    doc="initcheck's uninitialised reads by kernels, and host copies of unwritten bytes.",
)


def apply(ctx: ReportContext) -> list[Finding]:
    out = [_kernel_read(g, ctx) for g in groups(ctx.records, ("uninitialized-read",), keys=("kernel", "file", "line",
                                                                                             "space"))]
    out += [_copy(g, ctx) for g in groups(ctx.records, ("uninitialized-copy",), keys=("api_call", "host_function"))]
    return out


def _kernel_read(g: dict[str, Any], ctx: ReportContext) -> Finding:
    line = where(g.get("file"), g.get("line"))
    kernel = g.get("kernel") or "an unnamed kernel"
    space = g.get("space") or "global"
    count = g["count"]
    message = (f"{plural(count, 'thread')} read {space} memory at {line} ({kernel}) that nothing had written: no "
               f"kernel, cudaMemcpy or cudaMemset set those bytes since they were allocated{ctx.not_printed_note()}. "
               "The value read is whatever the memory held: often zero in a fresh process, the previous user's data "
               "once the allocator hands back a freed buffer. So the result can be right in a test and wrong in the "
               "pipeline, and change with unrelated allocations.")
    if space == "shared":
        message += " In shared memory: a slot read before the thread that loads it ran, or before a barrier."
        fix = (f"Make every slot read at {line} written first: load the whole tile (padding the edge with a "
               "neutral value) and put __syncthreads() between the loads and the reads.")
    else:
        fix = (f"Find the buffer read at {line} and give it a value before the kernel: cudaMemset(ptr, 0, bytes) "
               "(bytes, not elements) for an accumulator, torch.zeros instead of torch.empty, or let the first pass "
               "assign (=) where the others add (+=). Then rerun initcheck until it reports 0 errors.")
    evidence = [ev("uninitialized_reads", count, "thread", "0 (every byte written before it is read)", 1)]
    if g.get("size_bytes"):
        evidence.append(ev("access_size_bytes", g["size_bytes"], "byte"))
    return finding(SPEC, title=f"Read of uninitialised {space} memory at {line} in {kernel}", message=message,
                   next_step=fix, evidence=evidence, scope=g.get("kernel"), rank=RANK_DEVICE,
                   first_record=g["first_record"],
                   details={"file": g.get("file"), "line": g.get("line"), "lines": [g.get("line")], "kernel": kernel,
                            "records": g["record_ids"], "tool": "initcheck", "severity": g.get("severity")})


def _copy(g: dict[str, Any], ctx: ReportContext) -> Finding:
    call = g.get("api_call") or "a CUDA copy"
    host = g.get("host_function")
    at = f" in {host}" if host else ""
    message = (f"{plural(g['count'], 'call')} of {call}{at} copied bytes that nothing had written "
               f"({fmt_bytes(g.get('size_bytes'))} in the first). Harmless if those bytes are never used (padding "
               "in a struct, the unused tail of a buffer); a wrong result if they are.")
    return finding(SPEC, title=f"{call} copies uninitialised bytes{at}", message=message,
                   next_step="Initialise the source buffer (cudaMemset) or copy only the bytes that were written.",
                   evidence=[ev("uninitialized_copies", g["count"], "call", "0", 1)], scope=host, rank=RANK_API,
                   first_record=g["first_record"],
                   details={"api_call": call, "host_function": host, "records": g["record_ids"], "tool": "initcheck",
                            "lines": []})
