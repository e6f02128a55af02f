"""Read an Nsight Systems report (``.nsys-rep``, or the older ``.qdrep``).

The report format is NVIDIA's own and changes between releases, so coach does not parse it: it asks
``nsys export --type sqlite`` for the SQLite export into a temporary folder, reads that with
``coach.ingest.nsys_sqlite``, and removes the folder. The ``nsys`` used is ``$COACH_NSYS`` if set,
else the one on ``PATH``.

An nsys older than the report cannot open it. What it prints depends on both versions ("Version not
supported: 36398880" from 2022.4 on a 2025.3 report, "Version number is invalid: 2025@5@1@..." or a
``ProtobufParseException`` on later ones), so coach does not rely on the message: whenever the export
fails, it reads which Nsight Systems recorded the report (``recorded_version``) and, where that is newer
than the local nsys, says so in one line with the way out: that Nsight Systems or newer, or the
report's ``.sqlite`` export made where the report was recorded.

Where the report was recorded is kept apart from where it was exported: ``tool_version`` is the
recording version (a ``.qdrep`` of 2021 exported by nsys 2022.4 is a 2021 report), and
``meta["exported_by"]`` / ``meta["export_product_version"]`` name the nsys that exported it; where the
report does not say which version recorded it, ``tool_version`` is None rather than the exporter's.

Where the version is in the file: a report ends with a protobuf footer (before the ``[END]`` marker)
that holds the file name, a UUID, the capture date, the host name, then the product version as field
6, a length-prefixed string: ``"2025.3.1.0"`` in the H200 reports of tests/data (Nsight Systems
2025.3.1), ``"2022.4.2.1-df9881f"`` in the report Debian's nsys 2022.4 wrote
(tests/data/nsys_nvtx_cpu_2022). The first line of the file, ``NVIDIA Tegra Profiler Report N``, holds
a format or build number (1 in 2022.4, the build 36398880 in 2025.3), which is all that is left when
the footer is missing.
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

from coach.errors import CoachError, InputError, ToolError
from coach.ingest import nsys_sqlite
from coach.ingest.detect import NSYS_MAGIC
from coach.model import Timeline

#: Seconds allowed for one export. Exporting runs at roughly a million events per few seconds on a
#: laptop core; ten minutes covers reports far larger than coach's 1M-kernel benchmark.
EXPORT_TIMEOUT_S = 600

#: How far from the end of the report its footer is looked for: the footer is a few hundred bytes
#: (file name, UUID, dates, host, versions, the command line, the section table), the command line
#: is the only part that can be long.
_FOOTER_SCAN_BYTES = 1 << 16
#: Field 6 of the footer: tag 0x32 (field 6, length-delimited), a one-byte length, the version.
_FOOTER_VERSION = re.compile(rb"\x32([\x06-\x40])(20\d\d\.\d+(?:\.\d+){0,2}(?:-[0-9a-f]{4,12})?)")
#: The first line of a report, and a version where a release writes one there.
_HEADER = re.compile(re.escape(NSYS_MAGIC) + rb" ([^\s.]+(?:[.@][^\s.@]+)*)")
_VERSION = re.compile(r"(20\d\d)[.@](\d+)(?:[.@](\d+))?(?:[.@](\d+))?")

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
    recorded = recorded_version(path)
    try:
        nsys = nsys_executable()
    except ToolError as err:
        if recorded is None:
            raise
        raise ToolError(f"{path}: recorded by Nsight Systems {recorded}; {err} (Nsight Systems {recorded} or newer "
                        "opens it)") from None
    with tempfile.TemporaryDirectory(prefix="coach-nsys-export-") as folder:
        exported = Path(folder) / f"{path.stem}.sqlite"
        command = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(exported),
                   str(path)]
        code, stderr = _run(command, path)
        if code != 0 or not exported.is_file():
            raise _export_failed(path, nsys, recorded, code, stderr)
        try:
            timeline = nsys_sqlite.read(exported)
        except nsys_sqlite.NothingRecorded as err:  # true of the report itself: say it of the report
            raise InputError(path, err.problem) from None
        except InputError as err:  # about a temporary file the user never saw: name the report instead
            raise InputError(path, f"nsys export of it gave an unreadable SQLite file: {err.problem}") from None
    meta = {**timeline.source.meta, "exported_by": nsys}
    if timeline.source.tool_version:
        meta["export_product_version"] = timeline.source.tool_version
    source = dataclasses.replace(timeline.source, path=str(path), format="nsys-rep",
                                 tool_version=recorded, meta=meta)
    return dataclasses.replace(timeline, source=source)


def recorded_version(path: Path) -> str | None:
    """The Nsight Systems version that recorded ``path`` ("2025.3.1.0"), from the report's footer or,
    where a release writes it there, its first line; None where the file does not tell."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(256)
            fh.seek(max(0, size - _FOOTER_SCAN_BYTES))
            tail = fh.read()
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    found = [m.group(2) for m in _FOOTER_VERSION.finditer(tail) if m.group(1)[0] == len(m.group(2))]
    if found:
        return found[-1].decode()
    header = _HEADER.match(head)
    if header and _VERSION.fullmatch(header.group(1).decode(errors="replace").split("-")[0]):
        return _dotted(header.group(1).decode(errors="replace"))
    return None


def _export_failed(path: Path, nsys: str, recorded: str | None, code: int, stderr: str) -> CoachError:
    """The one-line error for a failed export: the report is newer than this nsys (whatever nsys
    said), or nsys's own last words."""
    local = _nsys_version(nsys)
    newer = recorded is not None and (local is None or _key(recorded) > _key(local))
    said = _tail(stderr)
    version_trouble = any(k in stderr for k in _VERSION_COMPLAINTS)
    if newer or (version_trouble and recorded is None):
        what = f"Nsight Systems {recorded}" if recorded else _report_format(path)
        here = f"nsys {local}" if local else "this nsys"
        return ToolError(f"{path}: recorded by {what}, which {here} ({nsys}) cannot open: open it with Nsight Systems "
                         f"{recorded or 'of that version'} or newer (nsys export --type sqlite {path.name}), or pass the "
                         f"report's .sqlite export made where it was recorded")
    if version_trouble:  # the report is not newer: an old or damaged report this nsys refuses
        return ToolError(f"{path}: nsys {local or ''} ({nsys}) cannot open this report, recorded by Nsight Systems "
                         f"{recorded}: {said}; export it with the Nsight Systems that recorded it")
    return ToolError(f"nsys export failed on {path} (exit {code}): {said}")


#: What nsys prints when it cannot parse a report's format (seen from 2022.4 on 2025.x reports).
_VERSION_COMPLAINTS = ("Version not supported", "Version number is invalid", "ProtobufParseException",
                       "incompatible version", "Unsupported version")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("-")[0])[:4])


def _dotted(text: str) -> str:
    return ".".join(p for p in re.split(r"[.@]", text.split("-")[0]) if p)


def _report_format(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            head = fh.read(256)
    except OSError:
        return "an unknown Nsight Systems"
    fmt = re.match(re.escape(NSYS_MAGIC) + rb" (\d+)", head)
    return f"report format {fmt.group(1).decode()}" if fmt else "an unknown Nsight Systems"


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


def _nsys_version(nsys: str) -> str | None:
    """``nsys --version`` in short, e.g. "2022.4.2.1"; None where it does not say."""
    try:
        out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=30, errors="replace").stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)", out)
    return found.group(1) if found else None


def _tail(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return " | ".join(lines[-_STDERR_LINES:]) or "it printed nothing on stderr"
