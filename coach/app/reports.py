"""The profiles the app has open: uploaded ones and the traces shipped in ``traces/``.

A browser session holds only a token (in a ``dcc.Store``); the profile itself stays in the server's
memory, a few at a time, most recently used kept. Views derived for display (a timeline's event
frame, say) are cached beside the profile so that zooming does not rebuild them.
"""

from __future__ import annotations

import gzip
import secrets
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from coach.errors import InputError
from coach.ingest import SUFFIXES, load
from coach.ingest.detect import detect
from coach.model import SAVED_MARKER, Profile

#: Profiles kept in memory at once. A million-event timeline is a few hundred MB of Polars frames
#: (several times that while a reader builds it); four fit a 16 GB laptop with room to spare.
KEEP_OPEN = 4

#: How deep under traces/ to look for profiles: traces/<gpu>/<scenario>/<variant>/<file>.
SHIPPED_DEPTH = 4


@dataclass
class OpenReport:
    token: str
    name: str  # what the user knows it by: the uploaded file's name or the path under traces/
    profile: Profile
    views: dict[str, Any] = field(default_factory=dict)

    def view(self, key: str, build: Callable[[], Any]) -> Any:
        """A display view of the profile, built once."""
        if key not in self.views:
            self.views[key] = build()
        return self.views[key]


class Reports:
    """Open profiles by token, at most ``capacity`` of them (least recently used dropped first)."""

    def __init__(self, capacity: int = KEEP_OPEN):
        self._capacity = capacity
        self._open: OrderedDict[str, OpenReport] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, name: str, profile: Profile, token: str | None = None) -> OpenReport:
        report = OpenReport(token=token or secrets.token_urlsafe(12), name=name, profile=profile)
        with self._lock:
            self._open[report.token] = report
            self._open.move_to_end(report.token)
            while len(self._open) > self._capacity:
                self._open.popitem(last=False)
        return report

    def all(self) -> list[OpenReport]:
        """The open reports, most recently used last."""
        with self._lock:
            return list(self._open.values())

    def get(self, token: str | None) -> OpenReport | None:
        if not token:
            return None
        with self._lock:
            report = self._open.get(token)
            if report is not None:
                self._open.move_to_end(token)
            return report


@dataclass(frozen=True)
class ShippedTrace:
    id: str  # path relative to the traces folder, with forward slashes
    path: Path


def shipped_traces(root: Path) -> list[ShippedTrace]:
    """Every profile under ``root``: files coach reads (by suffix) and saved-profile folders."""
    if not root.is_dir():
        return []
    found: list[ShippedTrace] = []

    def walk(folder: Path, depth: int) -> None:
        for p in sorted(folder.iterdir()):
            if p.name.startswith("."):
                continue
            if p.is_dir():
                if (p / SAVED_MARKER).is_file():
                    found.append(ShippedTrace(p.relative_to(root).as_posix(), p))
                elif depth < SHIPPED_DEPTH:
                    walk(p, depth + 1)
            elif p.name.endswith(KEPT_SUFFIX):  # a full report kept xz-compressed (load unpacks it)
                found.append(ShippedTrace(p.relative_to(root).as_posix(), p))
            elif p.suffix in SUFFIXES and p.name != SAVED_MARKER and is_trace(p):
                found.append(ShippedTrace(p.relative_to(root).as_posix(), p))

    walk(root, 1)
    return found


#: The full Nsight Compute reports traces/ keeps beside a recording's saved tables.
KEPT_SUFFIX = ".ncu-rep.xz"

#: How far into a JSON file to look for a PyTorch-profiler trace's event list: the trace starts with
#: a few kB of device properties and metadata before ``traceEvents``.
JSON_HEAD_BYTES = 1 << 20


def is_trace(path: Path) -> bool:
    """Whether a file beside the traces is one (by content): JSON files there are mostly a
    recording's results and provenance, which ``detect`` alone would take for PyTorch traces."""
    try:
        fmt = detect(path)
    except InputError:
        return False
    if fmt != "kineto-json":
        return True
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as fh:
            return b'"traceEvents"' in fh.read(JSON_HEAD_BYTES)
    except (OSError, EOFError, zlib.error):
        return False


def open_shipped(reports: Reports, root: Path, trace_id: str) -> OpenReport:
    """Open a trace under ``root`` by its id; only ids that ``shipped_traces`` lists are accepted,
    so a crafted id cannot name a file elsewhere."""
    token = f"trace:{trace_id}"
    report = reports.get(token)
    if report is not None:
        return report
    match = next((t for t in shipped_traces(root) if t.id == trace_id), None)
    if match is None:
        raise InputError(trace_id, "is not one of the traces shipped with coach")
    try:
        profile = load(match.path)
    except InputError as err:
        raise InputError(trace_id, err.problem.replace(str(root) + "/", "")) from None
    return reports.add(trace_id, profile, token=token)
