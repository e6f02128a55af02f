"""Read an Nsight Systems report (``.nsys-rep``, or the older ``.qdrep``).

The report format is NVIDIA's own and changes between releases, so coach does not parse it: it asks
``nsys export --type sqlite`` for the SQLite export into a temporary folder, reads that with
``coach.ingest.nsys_sqlite``, and removes the folder. The ``nsys`` used is ``$COACH_NSYS`` if set,
else the one on ``PATH``.

An nsys older than the report cannot open it (it says "Version not supported"); the error then
names both versions, and the way out: a newer Nsight Systems, or the report's ``.sqlite`` export
made where the report was recorded.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from coach.errors import InputError, ToolError
from coach.ingest import nsys_sqlite
from coach.ingest.detect import NSYS_MAGIC
from coach.model import Timeline

#: Seconds allowed for one export. Exporting runs at roughly a million events per few seconds on a
#: laptop core; ten minutes covers reports far larger than coach's 1M-kernel benchmark.
EXPORT_TIMEOUT_S = 600

#: What nsys prints when the report is newer than it can read.
_TOO_NEW = "Version not supported"

#: Where to look for the product version that wrote a report: it is stored as plain text, near the
#: start in recent reports and near the end in older ones.
_VERSION_SCAN_BYTES = 1 << 16
_PRODUCT_VERSION = re.compile(rb"(20\d\d\.\d+\.\d+(?:\.\d+)?)")

#: How many of nsys's last stderr lines an error message quotes.
_STDERR_LINES = 3


def nsys_executable() -> str:
    """The nsys to run: ``$COACH_NSYS``, else ``nsys`` on ``PATH``; ``ToolError`` when there is none."""
    configured = os.environ.get("COACH_NSYS")
    if configured:
        if shutil.which(configured) is None:
            raise ToolError(f"COACH_NSYS={configured} is not an executable nsys")
        return configured
    found = shutil.which("nsys")
    if found is None:
        raise ToolError("reading an .nsys-rep needs Nsight Systems' nsys, which is not on PATH: install Nsight Systems "
                        "(or set COACH_NSYS), or pass the report's SQLite export (nsys export --type sqlite)")
    return found


def read(path: str | Path) -> Timeline:
    """Export ``path`` to SQLite with nsys and read the export."""
    path = Path(path)
    nsys = nsys_executable()
    with tempfile.TemporaryDirectory(prefix="coach-nsys-export-") as folder:
        exported = Path(folder) / f"{path.stem}.sqlite"
        command = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(exported),
                   str(path)]
        code, stderr = _run(command, path)
        if _TOO_NEW in stderr:
            raise ToolError(f"{path}: written by {_report_version(path)}, which {_nsys_version(nsys)} ({nsys}) cannot "
                            f"open: install that Nsight Systems or newer, or pass the report's .sqlite export made "
                            f"where it was recorded")
        if code != 0 or not exported.is_file():
            raise ToolError(f"nsys export failed on {path} (exit {code}): {_tail(stderr)}")
        try:
            timeline = nsys_sqlite.read(exported)
        except InputError as err:  # about a temporary file the user never saw: name the report instead
            raise InputError(path, f"nsys export of it gave an unreadable SQLite file: {err.problem}") from None
    source = dataclasses.replace(timeline.source, path=str(path), format="nsys-rep",
                                 meta={**timeline.source.meta, "exported_by": nsys})
    return dataclasses.replace(timeline, source=source)


def _run(command: list[str], path: Path) -> tuple[int, str]:
    """Run ``command`` in its own process group, so that a timeout ends nsys and all it started."""
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    except OSError as err:
        raise ToolError(f"cannot run {command[0]}: {err.strerror or err}") from None
    try:
        _, stderr = process.communicate(timeout=EXPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise ToolError(f"nsys export of {path} took longer than {EXPORT_TIMEOUT_S} s and was stopped; export it "
                        f"yourself (nsys export --type sqlite) and pass the .sqlite") from None
    return process.returncode, stderr


def _report_version(path: Path) -> str:
    """The Nsight Systems version that wrote ``path``, as far as its bytes tell."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_VERSION_SCAN_BYTES)
            fh.seek(max(0, path.stat().st_size - _VERSION_SCAN_BYTES))
            tail = fh.read()
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    found = _PRODUCT_VERSION.search(head) or _PRODUCT_VERSION.search(tail)
    if found:
        return f"Nsight Systems {found.group(1).decode()}"
    fmt = re.match(re.escape(NSYS_MAGIC) + rb" (\d+)", head)
    return f"report format {fmt.group(1).decode()}" if fmt else "an unknown Nsight Systems"


def _nsys_version(nsys: str) -> str:
    """``nsys --version`` in short, e.g. "nsys 2022.4.2.1"."""
    try:
        out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=30, errors="replace").stdout
    except (OSError, subprocess.TimeoutExpired):
        return "this nsys"
    found = re.search(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)", out)
    return f"nsys {found.group(1)}" if found else "this nsys"


def _tail(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return " | ".join(lines[-_STDERR_LINES:]) or "it printed nothing on stderr"
