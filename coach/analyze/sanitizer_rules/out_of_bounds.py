"""Out-of-bounds and misaligned accesses: memcheck's "Invalid __global__ write of size 4 bytes".

memcheck knows every allocation's exact size (cudaMalloc's, not the 2 MB page behind it) and
reports each thread whose access falls outside all of them, with the nearest allocation and the
distance to it. The distance says what kind of mistake made the index:

- starting exactly at the end (less than one access size after: compute-sanitizer 2025.3.1 counts from
  the allocation's last byte and prints "1 bytes after" for it): the index is one element
  past the last, an off-by-one in a bound (``<=`` for ``<``, ``c + 1`` checked as ``c``) or a grid
  rounded up with no check;
- a little past the end or before the start (up to ``NEAR_BYTES``): a few elements out, a stencil's
  halo or a negative index (``i - 1`` at ``i = 0``);
- far away (more than the allocation's own size and more than ``FAR_BYTES``): no small error in a
  bound gets there; a garbage or sentinel index (-1 read as unsigned, a padding id), an index
  product that overflowed 32 bits, or a pointer to another buffer.

What memcheck cannot see: an overrun that lands inside another allocation, or inside the same one
(the next row of an image), is a valid address to it. Only the accesses that leave every allocation
are reported, so a row-wise off-by-one shows up once, at the last row. ``--padding N`` adds N bytes
of no-man's-land after each allocation.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import (RANK_DEVICE, ReportContext, ev, finding, fmt_bytes, groups, plural,
                                                   thread_text, where)

SPEC = RuleSpec(
    id="out-of-bounds-access",
    name="Out-of-bounds or misaligned access",
    category=BugClass.OUT_OF_BOUNDS,
    table="records",
    requires=("kind",),
    optional=("allocation_distance_bytes", "allocation_bytes", "allocation_relation", "size_bytes", "file", "line"),
    doc="memcheck's invalid accesses, grouped by source line, read by their distance to the nearest allocation.",
)
KINDS = ("memory-access",)
#: A few elements of the widest access (16 bytes) times a stencil's reach: beyond 4 KiB no halo or
#: small off-by-one explains the distance.
NEAR_BYTES = 4096
#: 1 MiB: far beyond any halo, and beyond a row of most images; an index this far out is not a
#: bound that is one too loose.
FAR_BYTES = 1 << 20


def apply(ctx: ReportContext) -> list[Finding]:
    out = []
    for g in groups(ctx.records, KINDS, keys=("kernel", "file", "line", "access", "space", "address_problem")):
        out.append(_one(g, ctx))
    return out


def _reading(g: dict[str, Any], xml: bool = False) -> tuple[str, str]:
    """(what the distance says, the fix it points to). ``xml``: the report is compute-sanitizer's
    --xml file, which names no nearest allocation (the text report does), so a missing one says nothing."""
    rel, size = g.get("allocation_relation"), g.get("size_bytes") or 1
    d_min, d_max, alloc = g.get("distance_min"), g.get("distance_max"), g.get("allocation_bytes")
    problem = (g.get("address_problem") or "").lower()
    if "misaligned" in problem:
        return (f"the address is not a multiple of the {size}-byte access: a pointer cast to a wider type "
                "(float4*, double*, int2*) from an address that is not aligned to it",
                "align the buffer or the offset to the access size, or load narrower values")
    if rel is None and xml:
        return ("how far the address lies from an allocation is not checked: the --xml file does not say (the "
                "text report of the same run does, on its 'nearest allocation' line)",
                "read the distance in the text report; check that the pointer is a live device allocation and the "
                "index is inside it")
    if rel is None:
        return ("the address lies outside every allocation the tool knows of: a null or freed pointer, a host "
                "pointer passed to the kernel, or an index far out",
                "check that the pointer is a live device allocation and the index is inside it")
    if rel == "inside":
        return ("the address is inside an allocation but the access is still invalid (its end runs past, or the "
                "memory space is wrong)", "check the access width against the allocation's end")
    far = max(FAR_BYTES, alloc or 0)
    if d_min is not None and d_min > far:
        return (f"{fmt_bytes(d_min)} {rel} the nearest allocation ({fmt_bytes(alloc)}): no loose bound reaches "
                "that far; the index is garbage: a sentinel or padding value (-1, 0xFFFFFFFF) used as an index, "
                "an index product that overflowed 32 bits, or the wrong base pointer",
                "check the index's value where it comes from (the data, an int32 product) and reject or clamp "
                "sentinels before they are used to address memory")
    if rel == "after" and d_min is not None and d_min < size:
        span = "" if d_max == d_min else f" (the printed ones run to {fmt_bytes(d_max)} past it)"
        return (f"the access starts at the end of the {fmt_bytes(alloc)} allocation{span}: the index is one "
                "element past the last, an off-by-one in a bound (<= for <, c + 1 checked as c) or a grid "
                "rounded up without a check",
                "make the bound test the index the thread actually writes or reads (c + 1 < width, not c < width)")
    if rel == "before" and d_min is not None and d_min <= NEAR_BYTES:
        return (f"{fmt_bytes(d_min)} before the start of a {fmt_bytes(alloc)} allocation: a negative index "
                "(i - 1 at i = 0, a halo to the left)", "clamp or guard the index at the start of the range")
    return (f"{fmt_bytes(d_min)} {rel} the nearest allocation ({fmt_bytes(alloc)}): a few elements out, a halo "
            "or a bound that is too loose", "guard the index against the size of the buffer it addresses")


def _one(g: dict[str, Any], ctx: ReportContext) -> Finding:
    space = g.get("space") or "memory"
    access = g.get("access") or "access"
    misaligned = "misaligned" in (g.get("address_problem") or "").lower()
    line = where(g.get("file"), g.get("line"))
    kernel = g.get("kernel") or "an unnamed kernel"
    reading, fix = _reading(g, xml=ctx.report.source.format == "sanitizer-xml")
    count = g["count"]
    who = thread_text(g)
    adjective = "Misaligned" if misaligned else "Out-of-bounds"
    title = f"{adjective} {space} {access} at {line} in {kernel}"
    first = f"The first is {who}: " if who else "The tool could not name the thread: "
    message = (f"{plural(count, 'thread')} made an invalid {space} {access} of {g.get('size_bytes') or '?'} bytes at "
               f"{line} ({kernel}){ctx.not_printed_note()}. {first}{reading}.")
    if not misaligned and g.get("allocation_relation") in ("after", "before"):
        message += (" Only accesses that leave every allocation are reported: the same overrun landing in the "
                    "next row or in another buffer is invisible to memcheck, so other threads may be writing where "
                    "they should not without a report.")
    evidence = [ev("invalid_accesses", count, "thread", "0 (every access inside its allocation)", 1)]
    if g.get("distance_min") is not None:
        evidence.append(ev("allocation_distance_bytes", g["distance_min"], "byte",
                           f"{g.get('allocation_relation')} an allocation of {fmt_bytes(g.get('allocation_bytes'))}"))
    if g.get("size_bytes"):
        evidence.append(ev("access_size_bytes", g["size_bytes"], "byte"))
    host = g.get("host_function")
    next_step = (f"At {line}: {fix}. " + (f"The kernel was launched from {host}. " if host else "")
                 + "Rerun memcheck until it reports 0 errors, and check the results of the threads next to the "
                 "reported ones, whose overruns memcheck cannot see (or run with --padding 64).")
    return finding(SPEC, title=title, message=message, next_step=next_step, evidence=evidence, scope=g.get("kernel"),
                   rank=RANK_DEVICE, first_record=g["first_record"],
                   category=BugClass.MISALIGNED if misaligned else BugClass.OUT_OF_BOUNDS,
                   details={"file": g.get("file"), "line": g.get("line"), "lines": [g.get("line")],
                            "kernel": kernel, "records": g["record_ids"], "tool": "memcheck",
                            "allocation_relation": g.get("allocation_relation"),
                            "allocation_distance_bytes": g.get("distance_min"),
                            "allocation_bytes": g.get("allocation_bytes"), "severity": g.get("severity")})
