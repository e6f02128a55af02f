"""Read the XML file compute-sanitizer writes with ``--xml --save FILE`` into a ``SanitizerReport``.

NVIDIA publishes no schema for this file. Its documentation shows one record (the suppression
example)::

    <ComputeSanitizerOutput>
      <record>
        <kind>Api</kind>
        <what><text>Program hit cudaErrorMemoryAllocation (error 2) ... to cudaMalloc.</text>
              <api>cudaMalloc</api><error>cudaErrorMemoryAllocation</error><result>2</result></what>
        <hostStack>...</hostStack>
      </record>
    </ComputeSanitizerOutput>

and says the suppressions match on the thread and block indices, the access size and the stacks.
So this reader takes what it can name and no more: each record's ``what/text`` is read with the
same grammar as the text report (``sanitizer_common.classify``), and the fields around it are found
by their tag names, case ignored (``where``: func, pc, path or file, line; ``who``: an element whose
name starts with "thread" or "block" and holds x, y, z; ``hostStack``/``deviceStack``: frames).
Every leaf is also kept, as "tag: value" lines, in the record's ``text``. The file holds no totals
(the "ERROR SUMMARY" line is in the text report only) and does not name the tool: its summary counts
the records, and names the tool only where the records' kinds do.

Checked against the first recording (compute-sanitizer 2025.3.1 on an H200, traces/h200/scenario-2N/),
which differs from the documented example in two ways this reader handles:
- memcheck's headline carries the problem after the access, "Invalid __global__ read of size 4 bytes
  is out of bounds", with the problem alone in ``what/error``;
- racecheck's records are ``<kind>Analysis</kind>`` with ``what/text`` "Race condition", the first
  access in ``what/source`` (``direction``, ``where``) and each access it races with in a
  ``what/destination`` (``direction``, ``where``, ``count``: its hazards).
In that file ``where/func`` is the kernel's name without namespace or arguments and ``where/path`` the
absolute path the program was built from; the text report prints the qualified name and the path as given.

A file that declares a DTD or entities is refused: nothing compute-sanitizer writes needs one.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from coach.errors import InputError
from coach.ingest import sanitizer_common as g
from coach.model import (SANITIZER_HOST_FRAMES, SANITIZER_LOCATIONS, SANITIZER_RECORDS, SANITIZER_SUMMARY,
                         SanitizerReport, Source, make_sanitizer_report)

TOOL_NAME = "Compute Sanitizer"
ROOT_TAG = "computesanitizeroutput"
MAX_RECORDS = 100_000
_HEAD = 65536

#: The record kinds the file names, for records whose text the grammar does not know.
_KIND_WORDS = {"api": "api-error", "precise": "memory-access", "imprecise": "hardware-exception",
               "race": "shared-race", "hazard": "shared-hazard", "initcheck": "uninitialized-read",
               "uninitialized": "uninitialized-read", "synccheck": "barrier", "barrier": "barrier",
               "leak": "leak", "malloc": "device-malloc"}


def looks_like(text: str) -> bool:
    """Whether ``text`` (a file's first bytes) is compute-sanitizer's XML."""
    s = text.lstrip("\ufeff \t\r\n")
    if s.startswith("<![CDATA["):
        s = s[len("<![CDATA["):].lstrip()
    if not s.startswith("<"):
        return False
    return "<computesanitizeroutput" in s[:_HEAD].lower()


def read(path: Path) -> SanitizerReport:
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD).decode("utf-8", errors="replace")
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    if re.search(r"<!(DOCTYPE|ENTITY)", head):
        raise InputError(path, "declares a DTD or entities, which compute-sanitizer's XML never does: not read")
    records: list[dict[str, Any]] = []
    locations: list[dict[str, Any]] = []
    frames: list[dict[str, Any]] = []
    dropped = 0
    root_seen = False
    try:
        for event, element in ET.iterparse(path, events=("start", "end")):
            tag = _local(element.tag)
            if event == "start":
                if not root_seen:
                    root_seen = True
                    if tag != ROOT_TAG:
                        raise InputError(path, f"is XML whose root is <{element.tag}>, not <ComputeSanitizerOutput>")
                continue
            if tag == "record":
                if len(records) >= MAX_RECORDS:
                    dropped += 1
                else:
                    row, locs, fr = _record(element, len(records))
                    records.append(row)
                    locations += locs
                    frames += fr
                element.clear()
    except ET.ParseError as err:
        raise InputError(path, f"is not well-formed XML ({err})") from None
    if not root_seen:
        raise InputError(path, "holds no XML elements")
    tools = {r["tool"] for r in records if r["tool"]}
    summary = {"tool": next(iter(tools)) if len(tools) == 1 else None, "records": len(records),
               "records_dropped": dropped, "complete": True, "target_error": False}
    return make_sanitizer_report(
        Source(path=str(path), format="sanitizer-xml", tool=TOOL_NAME),
        records=_frame(records, SANITIZER_RECORDS),
        locations=_frame(locations, SANITIZER_LOCATIONS),
        host_frames=_frame(frames, SANITIZER_HOST_FRAMES),
        summary=_frame([summary], SANITIZER_SUMMARY),
    )


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


def _child(element: ET.Element | None, *names: str) -> ET.Element | None:
    if element is None:
        return None
    wanted = {n.lower() for n in names}
    return next((c for c in element if _local(c.tag) in wanted), None)


def _text(element: ET.Element | None, *names: str) -> str | None:
    c = _child(element, *names)
    if c is None or c.text is None:
        return None
    return c.text.strip() or None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    t = text.strip()
    return g.hex_number(t) if t.lower().startswith("0x") else g.number(t)


def _xyz(element: ET.Element | None, prefix: str) -> tuple[int, int, int] | None:
    if element is None:
        return None
    for c in element:
        if _local(c.tag).startswith(prefix):
            vals = [_int(_text(c, axis)) for axis in ("x", "y", "z")]
            if all(v is not None for v in vals):
                return vals[0], vals[1], vals[2]  # type: ignore[return-value]
    return None


def _leaves(element: ET.Element, prefix: str = "") -> list[str]:
    out = []
    for c in element:
        name = f"{prefix}{_local(c.tag)}"
        if len(c):
            out += _leaves(c, name + ".")
        elif c.text and c.text.strip():
            out.append(f"{name}: {c.text.strip()}")
    return out


def _location(element: ET.Element | None) -> g.Location | None:
    if element is None:
        return None
    function = _text(element, "func", "function")
    file = _text(element, "path", "file", "filename")
    line = _int(_text(element, "line"))
    pc = _int(_text(element, "pc", "offset"))
    if not any(v is not None for v in (function, file, line, pc)):
        return None
    return g.Location(function, pc, file, line)


def _record(element: ET.Element, record_id: int) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    kind_word = (_text(element, "kind") or "").lower()
    level = (_text(element, "level", "severity") or "").lower()
    what = _child(element, "what")
    text = _text(what, "text") or _text(element, "text") or ""
    problem = _text(what, "error") if kind_word != "api" else None
    headline = g.classify(text.strip())
    if headline is None and problem:  # "Invalid __global__ read of size 4 bytes is out of bounds" (2025.3)
        headline = g.classify(re.sub(rf"\s+is\s+{re.escape(problem)}\.?$", "", text.strip()))
    source = _child(what, "source")
    race = source is not None and any(_local(c.tag) == "destination" for c in what)  # type: ignore[union-attr]
    kind = "shared-race" if race else headline.kind if headline else _KIND_WORDS.get(kind_word, "other")
    fields = dict(headline.fields) if headline else {}
    severity = {"warning": "warning", "warn": "warning", "info": "info"}.get(level, headline.severity if headline else "error")
    at = _location(_child(element, "where"))
    races: list[tuple[str | None, g.Location]] = []
    at_access = None
    if race:  # racecheck's analysis record: the source access and the ones it races with
        at = _location(_child(source, "where"))
        at_access = (_text(source, "direction") or "").lower() or None
        for dest in what:  # type: ignore[union-attr]
            if _local(dest.tag) != "destination":
                continue
            loc = _location(_child(dest, "where")) or g.Location(None, None, None, None)
            races.append(((_text(dest, "direction") or "").lower() or None,
                          replace(loc, hazards=_int(_text(dest, "count")))))
    device_stack = _child(element, "deviceStack")
    device = [loc for fr in (device_stack if device_stack is not None else []) if (loc := _location(fr))]
    stack = _child(element, "hostStack")
    host = [g.HostFrame(_text(fr, "func", "function"), _text(fr, "module"), _text(fr, "path", "file"),
                        _int(_text(fr, "line")), _int(_text(fr, "pc")))
            for fr in (stack if stack is not None else []) if _local(fr.tag) == "frame"]
    who = _child(element, "who")
    who = who if who is not None else element
    thread, block = _xyz(who, "thread"), _xyz(who, "block")
    ordered = [loc for loc in [at, *device] if loc]
    user = next((loc for loc in ordered if g.is_user_file(loc.file)), ordered[0] if ordered else None)
    outer = device[-1] if device else at
    host_user = next((fr for fr in host if g.is_user_frame(fr)), None)
    space = (_text(what, "space") or fields.get("space") or "").strip("_").lower() or None
    access = (at_access or _text(what, "direction", "access", "type") or fields.get("access") or "")
    access = access.split(" ")[0].lower() or None
    counts = [loc.hazards for _, loc in races if loc.hazards is not None]
    code = _text(what, "result", "code")
    row = {
        "record_id": record_id,
        "tool": g.KIND_TOOL.get(kind),
        "kind": kind,
        "severity": severity,
        "headline": text.strip() or kind_word or None,
        "space": space,
        "access": access,
        "size_bytes": _int(_text(what, "size", "accessSize")) or g.number(fields.get("size")),
        "address": _int(_text(what, "address", "accessAddress")) or g.hex_number(fields.get("address")),
        "address_problem": problem if kind == "memory-access" else None,
        "allocation_address": None,
        "allocation_bytes": None,
        "allocation_relation": None,
        "allocation_distance_bytes": None,
        "barrier_problem": (fields.get("problem") or "").replace("(s)", "s").rstrip(".").lower() or None
        if kind == "barrier" else None,
        "hazard_type": fields.get("hazard"),
        "hazard_count": sum(counts) if counts else None,
        "function": at.function if at else None,
        "kernel": outer.kernel if outer else None,
        "pc_offset": at.pc_offset if at else None,
        "file": user.file if user else None,
        "line": user.line if user else None,
        "thread_x": thread[0] if thread else None,
        "thread_y": thread[1] if thread else None,
        "thread_z": thread[2] if thread else None,
        "block_x": block[0] if block else None,
        "block_y": block[1] if block else None,
        "block_z": block[2] if block else None,
        "api_call": _text(what, "api") or fields.get("call"),
        "api_error": _text(what, "error") if kind == "api-error" else fields.get("error"),
        "api_error_code": int(code) if code and code.isdigit() else (int(fields["code"]) if fields.get("code") else None),
        "api_message": _text(what, "message") or fields.get("message"),
        "backtrace_at": _text(stack, "saveLocation"),
        "host_function": g.qualified_name(host_user.function) if host_user else None,
        "leaked_bytes": g.number(fields.get("leaked")),
        "text": "\n".join(_leaves(element)),
    }
    locs = []
    for role, loc, loc_access in [("at", at, at_access), *(("race", r, a) for a, r in races),
                                  *(("device-frame", d, None) for d in device)]:
        if loc is None:
            continue
        locs.append({"record_id": record_id, "position": len(locs), "role": role, "access": loc_access,
                     "function": loc.function, "kernel": loc.kernel, "pc_offset": loc.pc_offset, "file": loc.file,
                     "line": loc.line, "hazards": loc.hazards})
    frames = [{"record_id": record_id, "depth": i, "function": fr.function, "module": fr.module, "file": fr.file,
               "line": fr.line, "pc": fr.pc} for i, fr in enumerate(host)]
    return row, locs, frames


def _frame(rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.from_dicts(rows, schema=schema)
