"""Read compute-sanitizer's text report into a ``SanitizerReport``.

The text is what the tool prints on stdout (or writes with ``--log-file``): every line of its own
starts with the prefix ``=========``, the program's output runs in between. A record starts with a
headline ("Invalid __global__ write of size 4 bytes", "Error: Race reported between ...", "Barrier
error detected. ...", "Uninitialized __global__ memory read ...", "Program hit ... on CUDA API call
to ...") and continues with indented detail lines until a blank prefixed line or the next headline::

    ========= Invalid __global__ write of size 4 bytes
    =========     at buggy::shift_right(const float *, float *, int, int, float)+0x1f0 in shift.cu:33
    =========     by thread (231,0,0) in block (3,999,0)
    =========     Access to 0x7f2a6e3d0900 is out of bounds
    =========     and is 0 bytes after the nearest allocation at 0x7f2a6e000000 of size 4,000,000 bytes
    =========     Saved host backtrace up to driver entry point at kernel launch time
    =========         Host Frame: main [0x9a9e] in shift
    =========
    ========= ERROR SUMMARY: 1 error

The grammar of each line is in ``coach.ingest.sanitizer_common``. A report without any summary line
was cut short (the run timed out or crashed); it is read all the same and its summary says
``complete = false``. At most ``MAX_RECORDS`` records are kept (a run with ``--print-limit 0`` can
print millions); the rest are counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from coach.errors import InputError
from coach.ingest import sanitizer_common as g
from coach.model import (SANITIZER_HOST_FRAMES, SANITIZER_LOCATIONS, SANITIZER_RECORDS, SANITIZER_SUMMARY,
                         SanitizerReport, Source, make_sanitizer_report)

TOOL_NAME = "Compute Sanitizer"
#: The tool's own lines: three or more '=' (9 by default; --prefix changes them), then the text.
PREFIX = re.compile(r"^(?P<prefix>={3,})(?:[ \t](?P<body>.*))?$")
BANNERS = ("COMPUTE-SANITIZER", "CUDA-MEMCHECK")
MAX_RECORDS = 100_000
#: Lines longer than this are cut (a binary file that slipped past detection, a runaway message).
MAX_LINE_CHARS = 8192

_ERROR_SUMMARY = re.compile(r"^ERROR SUMMARY:\s*(?P<n>\d[\d,]*) errors?(?P<rest>.*)$")
_RACE_SUMMARY = re.compile(r"^RACECHECK SUMMARY:\s*(?P<n>\d[\d,]*) hazards? displayed\s*"
                           r"\((?P<e>\d[\d,]*) errors?,\s*(?P<w>\d[\d,]*) warnings?\)")
_LEAK_SUMMARY = re.compile(r"^LEAK SUMMARY:\s*(?P<b>\d[\d,]*) bytes? leaked in (?P<a>\d[\d,]*) allocations?")
_TARGET_ERROR = re.compile(r"^(Target application returned an error|Error: process didn't terminate successfully)")

_AT = re.compile(r"^at\s+(?P<loc>.+)$")
_BY_THREAD = re.compile(r"^by thread\s*(?P<t>\([^)]*\))\s*in block\s*(?P<b>\([^)]*\))")
_ADDRESS = re.compile(r"^(?:Address|Access to|Access at)\s+(?P<a>0x[0-9a-fA-F]+)(?:\s+is\s+(?P<problem>.+?))?\.?$")
_ALLOCATION = re.compile(r"^and is (?:(?P<d>\d[\d,]*) bytes? (?P<rel>after|before)|(?P<inside>inside)) the nearest "
                         r"allocation at (?P<a>0x[0-9a-fA-F]+)(?:\s+of size (?P<s>\d[\d,]*) bytes?)?")
_OF_SIZE = re.compile(r"^of size (?P<s>\d[\d,]*) bytes?")
_DEVICE_FRAME = re.compile(r"^Device Frame:\s*(?P<loc>.+)$")
_OLD_DEVICE_FRAME = re.compile(r"^(?P<f>.+?) \((?P<g>.+) : (?P<pc>0x[0-9a-fA-F]+)\)$")
_SAVED = re.compile(r"^Saved host backtrace up to driver entry point(?: at (?P<at>.+?))?\.?$")
_HOST_FRAME = re.compile(r"^Host Frame:\s*(?P<frame>.*)$")
_MODULE_LINE = re.compile(r"^in (?P<module>\S+)$")
_RACE_WITH = re.compile(r"^and (?P<access>Read|Write) access at\s*(?P<loc>.*)$")
_HAZARDS_ONLY = re.compile(r"^\[(?P<n>\d[\d,]*) hazards?\]$")
_HAZARD_THREAD = re.compile(r"^(?P<access>Read|Write) Thread\s*(?P<t>\([^)]*\))\s*at\s+(?P<loc>.+)$")
_COPY_ACCESS = re.compile(r"^Uninitiali[sz]ed access at (?P<a>0x[0-9a-fA-F]+) on access by (?P<call>\w+)")


def looks_like(text: str) -> bool:
    """Whether ``text`` (the first few KB of a file) is a compute-sanitizer text report."""
    for line in text.splitlines():
        m = PREFIX.match(line.rstrip())
        if not m or not m.group("body"):
            continue
        body = m.group("body").strip()
        if body in BANNERS or body.startswith(("ERROR SUMMARY:", "RACECHECK SUMMARY:", "LEAK SUMMARY:")):
            return True
        headline = g.classify(body)
        if headline is not None and headline.kind != "sanitizer-error":
            return True
    return False


def read(path: Path) -> SanitizerReport:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            parsed = parse(fh)
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    if not parsed.saw_tool_line:
        raise InputError(path, "has no compute-sanitizer lines (none starts with '=========')")
    return parsed.report(Source(path=str(path), format="sanitizer-text", tool=TOOL_NAME,
                                meta={"prefix": parsed.prefix}))


def parse(lines: Iterable[str]) -> _Parsed:
    parsed = _Parsed()
    for raw in lines:
        parsed.feed(raw.rstrip("\r\n")[:MAX_LINE_CHARS])
    parsed.close()
    return parsed


class _Record:
    """One record being read: its headline fields, its locations and host frames."""

    def __init__(self, record_id: int, headline: g.Headline, text: str):
        self.id = record_id
        self.kind = headline.kind
        self.severity = headline.severity
        self.fields: dict[str, Any] = dict(headline.fields)
        self.lines = [text]
        self.at: g.Location | None = None
        self.at_access: str | None = None
        self.races: list[tuple[str, g.Location]] = []
        self.device_frames: list[g.Location] = []
        self.hazard_threads: list[tuple[str, tuple[int, int, int] | None, g.Location]] = []
        self.host_frames: list[g.HostFrame] = []
        self.values: dict[str, Any] = {}
        self.awaiting_location = False
        if self.kind == "shared-race":
            self.at_access = self.fields.get("access", "").lower() or None
            loc = self.fields.get("location", "").strip()
            if loc:
                self.at = g.location(loc)
            else:
                self.awaiting_location = True  # the location is wrapped onto the next line

    def detail(self, body: str) -> None:
        self.lines.append(body)
        v = self.values
        if self.awaiting_location:
            self.awaiting_location = False
            if not _RACE_WITH.match(body):
                self.at = g.location(body)
                return
        if m := _AT.match(body):
            if self.at is None:
                self.at = g.location(m.group("loc"))
        elif m := _BY_THREAD.match(body):
            v["thread"], v["block"] = g.triple(m.group("t")), g.triple(m.group("b"))
        elif m := _ADDRESS.match(body):
            v["address"] = g.hex_number(m.group("a"))
            if m.group("problem"):
                v["address_problem"] = m.group("problem").strip()
        elif m := _ALLOCATION.match(body):
            v["allocation_address"] = g.hex_number(m.group("a"))
            v["allocation_relation"] = "inside" if m.group("inside") else m.group("rel")
            v["allocation_distance_bytes"] = 0 if m.group("inside") else g.number(m.group("d"))
            if m.group("s"):
                v["allocation_bytes"] = g.number(m.group("s"))
        elif (m := _OF_SIZE.match(body)) and "allocation_address" in v and "allocation_bytes" not in v:
            v["allocation_bytes"] = g.number(m.group("s"))
        elif m := _DEVICE_FRAME.match(body):
            text = m.group("loc")
            old = _OLD_DEVICE_FRAME.match(text)
            self.device_frames.append(g.Location(old.group("f"), g.hex_number(old.group("pc")), None, None)
                                      if old else g.location(text))
        elif m := _SAVED.match(body):
            v["backtrace_at"] = (m.group("at") or "").strip() or None
        elif m := _HOST_FRAME.match(body):
            self.host_frames.append(g.host_frame(m.group("frame")))
        elif (m := _MODULE_LINE.match(body)) and self.host_frames and self.host_frames[-1].module is None:
            f = self.host_frames[-1]
            self.host_frames[-1] = g.HostFrame(f.function, m.group("module"), f.file, f.line, f.pc)
        elif m := _RACE_WITH.match(body):
            loc_text = m.group("loc").strip()
            self.races.append((m.group("access").lower(), g.location(loc_text) if loc_text else
                               g.Location(None, None, None, None)))
        elif (m := _HAZARDS_ONLY.match(body)) and self.races:
            access, loc = self.races[-1]
            self.races[-1] = (access, g.Location(loc.function, loc.pc_offset, loc.file, loc.line,
                                                 g.number(m.group("n"))))
        elif m := _HAZARD_THREAD.match(body):
            self.hazard_threads.append((m.group("access").lower(), g.triple(m.group("t")), g.location(m.group("loc"))))
        elif m := _COPY_ACCESS.match(body):
            v["address"] = g.hex_number(m.group("a"))
            v["api_call"] = m.group("call")
        elif self.kind == "shared-race" and self.races and not self.races[-1][1].function:
            access, _ = self.races[-1]  # "and Read access at" wrapped: the location follows
            self.races[-1] = (access, g.location(body))

    def rows(self) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        f, v = self.fields, self.values
        locs: list[dict[str, Any]] = []

        def add(role: str, loc: g.Location, access: str | None = None, thread=None) -> None:
            locs.append({"record_id": self.id, "position": len(locs), "role": role, "access": access,
                         "function": loc.function, "kernel": loc.kernel, "pc_offset": loc.pc_offset,
                         "file": loc.file, "line": loc.line, "hazards": loc.hazards,
                         "thread_x": thread[0] if thread else None, "thread_y": thread[1] if thread else None,
                         "thread_z": thread[2] if thread else None})

        if self.at is not None:
            add("at", self.at, self.at_access)
        for access, loc in self.races:
            add("race", loc, access)
        for loc in self.device_frames:
            add("device-frame", loc)
        for access, thread, loc in self.hazard_threads:
            add("hazard", loc, access, thread)
        ordered = [loc for loc in [self.at, *self.device_frames, *(h[2] for h in self.hazard_threads)] if loc]
        user = next((loc for loc in ordered if g.is_user_file(loc.file)), ordered[0] if ordered else None)
        first = self.at or (self.hazard_threads[0][2] if self.hazard_threads else None)
        outer = self.device_frames[-1] if self.device_frames else first
        hazards = None
        if self.kind == "shared-race":
            counts = [loc.hazards for _, loc in self.races if loc.hazards is not None]
            counts += [self.at.hazards] if self.at is not None and self.at.hazards is not None else []
            hazards = sum(counts) if counts else None
        elif self.kind == "shared-hazard":
            hazards = 1
        thread = v.get("thread") or (self.hazard_threads[-1][1] if self.hazard_threads else None)
        block = v.get("block") or g.triple(f.get("block", ""))
        host_user = next((fr for fr in self.host_frames if g.is_user_frame(fr)), None)
        problem = f.get("problem")
        record = {
            "record_id": self.id,
            "tool": g.KIND_TOOL.get(self.kind),
            "kind": self.kind,
            "severity": self.severity,
            "headline": self.lines[0],
            "space": f.get("space"),
            "access": (f.get("access") or "").split(" ")[0].lower() or None,
            "size_bytes": g.number(f.get("size")),
            "address": v.get("address", g.hex_number(f.get("address"))),
            "address_problem": v.get("address_problem"),
            "allocation_address": v.get("allocation_address"),
            "allocation_bytes": v.get("allocation_bytes"),
            "allocation_relation": v.get("allocation_relation"),
            "allocation_distance_bytes": v.get("allocation_distance_bytes"),
            "barrier_problem": _barrier_problem(problem) if self.kind == "barrier" else None,
            "hazard_type": f.get("hazard"),
            "hazard_count": hazards,
            "function": first.function if first else None,
            "kernel": outer.kernel if outer else None,
            "pc_offset": first.pc_offset if first else None,
            "file": user.file if user else None,
            "line": user.line if user else None,
            "thread_x": thread[0] if thread else None,
            "thread_y": thread[1] if thread else None,
            "thread_z": thread[2] if thread else None,
            "block_x": block[0] if block else None,
            "block_y": block[1] if block else None,
            "block_z": block[2] if block else None,
            "api_call": f.get("call") or v.get("api_call"),
            "api_error": f.get("error"),
            "api_error_code": int(f["code"]) if f.get("code") else None,
            "api_message": f.get("message") or (problem if self.kind in ("hardware-exception", "device-malloc",
                                                                          "sanitizer-error") else None),
            "backtrace_at": v.get("backtrace_at"),
            "host_function": g.qualified_name(host_user.function) if host_user else None,
            "leaked_bytes": g.number(f.get("leaked")),
            "text": "\n".join(self.lines),
        }
        frames = [{"record_id": self.id, "depth": i, "function": fr.function, "module": fr.module, "file": fr.file,
                   "line": fr.line, "pc": fr.pc} for i, fr in enumerate(self.host_frames)]
        return record, locs, frames


def _barrier_problem(text: str | None) -> str | None:
    """'Divergent thread(s) in block' -> 'divergent threads in block'."""
    if not text:
        return None
    return re.sub(r"\(s\)", "s", text.strip().rstrip(".")).lower() or None


class _Parsed:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.locations: list[dict[str, Any]] = []
        self.frames: list[dict[str, Any]] = []
        self.current: _Record | None = None
        self.next_id = 0
        self.dropped = 0
        self.errors: int | None = None
        self.not_printed: int | None = None
        self.race: tuple[int, int, int] | None = None
        self.leak: tuple[int, int] | None = None
        self.target_error = False
        self.program_lines = 0
        self.saw_tool_line = False
        self.prefix: str | None = None

    def feed(self, line: str) -> None:
        m = PREFIX.match(line)
        if not m:
            if line.strip():
                self.program_lines += 1
            return
        self.saw_tool_line = True
        self.prefix = self.prefix or m.group("prefix")
        body = (m.group("body") or "").strip()
        if not body:
            self.close()
            return
        if body in BANNERS:
            return
        if self._summary(body):
            self.close()
            return
        headline = g.classify(body)
        if headline is not None:
            self.close()
            self.current = _Record(self.next_id, headline, body)
            self.next_id += 1
            return
        if self.current is not None:
            self.current.detail(body)

    def _summary(self, body: str) -> bool:
        if m := _ERROR_SUMMARY.match(body):
            n = g.number(m.group("n"))
            if "not printed" in m.group("rest"):
                self.not_printed = (self.not_printed or 0) + (n or 0)
            else:
                self.errors = (self.errors or 0) + (n or 0)  # one summary per process the tool followed
            return True
        if m := _RACE_SUMMARY.match(body):
            prev = self.race or (0, 0, 0)
            self.race = (prev[0] + g.number(m.group("n")), prev[1] + g.number(m.group("e")),
                         prev[2] + g.number(m.group("w")))
            return True
        if m := _LEAK_SUMMARY.match(body):
            prev = self.leak or (0, 0)
            self.leak = (prev[0] + g.number(m.group("b")), prev[1] + g.number(m.group("a")))
            return True
        if _TARGET_ERROR.match(body):
            self.target_error = True
            return True
        return False

    def close(self) -> None:
        if self.current is None:
            return
        record, self.current = self.current, None
        if len(self.records) >= MAX_RECORDS:
            self.dropped += 1
            return
        row, locs, frames = record.rows()
        self.records.append(row)
        self.locations += locs
        self.frames += frames

    def summary(self) -> dict[str, Any]:
        kinds_tools = {r["tool"] for r in self.records if r["tool"]}
        tool = "racecheck" if self.race is not None else (next(iter(kinds_tools)) if len(kinds_tools) == 1 else None)
        return {
            "tool": tool,
            "errors": self.errors,
            "errors_not_printed": self.not_printed,
            "hazards_displayed": self.race[0] if self.race else None,
            "race_errors": self.race[1] if self.race else None,
            "race_warnings": self.race[2] if self.race else None,
            "leaked_bytes": self.leak[0] if self.leak else None,
            "leaked_allocations": self.leak[1] if self.leak else None,
            "records": len(self.records),
            "records_dropped": self.dropped,
            "target_error": self.target_error,
            "complete": self.errors is not None or self.race is not None,
            "program_lines": self.program_lines,
        }

    def report(self, source: Source) -> SanitizerReport:
        return make_sanitizer_report(
            source,
            records=_frame(self.records, SANITIZER_RECORDS),
            locations=_frame(self.locations, SANITIZER_LOCATIONS),
            host_frames=_frame(self.frames, SANITIZER_HOST_FRAMES),
            summary=_frame([self.summary()], SANITIZER_SUMMARY),
        )


def _frame(rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.from_dicts(rows, schema=schema)
