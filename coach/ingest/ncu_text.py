"""Read Nsight Compute's text report (what ``ncu`` prints on the terminal without ``--csv``) into the
canonical model, through the same details-page reader as ``ncu --csv`` exports.

The text report is the form most often kept from a run: pasted into notes, saved with ``> log.txt``
or ``--log-file``. It holds the details page as tables, one per section, under each launch::

    [243320] profile_adamw@127.0.0.1
      void adamw_kernel3<float, float>(T1 *, ...) (2048, 1, 1)x(512, 1, 1), Context 1, Stream 7, Device 0, CC 7.5
        Section: GPU Speed Of Light Throughput
        ----------------------- ----------- ------------
        Metric Name             Metric Unit Metric Value
        ----------------------- ----------- ------------
        DRAM Frequency                  Ghz         3.49
        Waves Per SM                               73.14
        ----------------------- ----------- ------------

        INF   This workload is utilizing greater than 80.0% of ...

The dashed line gives the columns' widths, so a row is cut where its columns are: a metric name
may hold spaces and a unit may be blank. Versions before 2021.2 print no header row inside the
table and identify a launch as ``name, 2020-May-29 12:02:46, Context 1, Stream 7`` (no launch
shape, device or compute capability: those stay unknown). Each launch header starts a new launch,
numbered in order as ncu numbers them in its CSV ID column.

``--print-summary per-kernel`` / ``per-gpu`` prints one table per kernel and section over all its
invocations (``name, Block Size 256, Grid Size 8192, 3 invocations``, under a ``Device 0`` line), with
``Minimum``, ``Maximum`` and ``Average`` columns after the unit and the header row above the dashes
(2023 and later: ``name (grid)x(block), Device 0, CC 8.6, Invocations 1`` and the header row between
dashed lines, as in the details report);
each kernel is then one "launch" holding the averages, as ``coach.ingest.ncu_csv`` reads the CSV form
of the same summary (``Source.meta["summary"]`` says so). With ``--details-all`` the labels are raw
metric names (``gpu__time_duration.sum``), read as such.

Only a section's first table is read: ``--print-details all`` adds chart tables after it ("GPU
Throughput Chart", "Achieved Traffic") that repeat numbers of the first. Rule results (the
``OPT``/``INF``/``WRN`` paragraphs) carry no rule name in this form and are not read; the
measurements are. Lines that are neither (``==PROF==`` lines, the program's own output, shell
prompts, ``...`` where someone cut the paste short) are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from coach.errors import InputError
from coach.ingest import ncu_csv
from coach.ingest.text import as_utf8
from coach.model import KernelProfile, Source, make_kernel_profile

#: How much of a file is searched for a launch header and a section when telling the format.
_SNIFF_BYTES = 1 << 20

_PROCESS = re.compile(r"^\s*\[(?P<pid>\d+)\]\s+(?P<name>.+?)@(?P<host>\S+)\s*$")
# 2021.2 and later: "name (gx, gy, gz)x(bx, by, bz), Context 1, Stream 7[, Device 0, CC 8.0]"
_LAUNCH = re.compile(r"^\s*(?P<name>\S.*?) \((?P<grid>\d+, \d+, \d+)\)x\((?P<block>\d+, \d+, \d+)\), "
                     r"Context (?P<ctx>\d+), Stream (?P<stream>\d+)(?:, Device (?P<dev>\d+), CC (?P<cc>\d+\.\d+))?")
# 2019.x-2021.1: "name, 2020-May-29 12:02:46, Context 1, Stream 7"
_LAUNCH_OLD = re.compile(r"^\s*(?P<name>\S.*?), \d{4}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2}, "
                         r"Context (?P<ctx>\d+), Stream (?P<stream>\d+)\s*$")
# --print-summary: "name, Block Size 256, Grid Size 8192, 1 invocations" (under "Device 0")
_SUMMARY_LAUNCH = re.compile(r"^\s*(?P<name>\S.*?), Block Size (?P<block>\d+), Grid Size (?P<grid>\d+), "
                             r"(?P<n>\d+) invocations?\s*$")
# --print-summary of 2023 and later: "name (gx, gy, gz)x(bx, by, bz), Device 0, CC 8.6, Invocations 1"
_SUMMARY_LAUNCH_CC = re.compile(r"^\s*(?P<name>\S.*?) \((?P<grid>\d+, \d+, \d+)\)x\((?P<block>\d+, \d+, \d+)\), "
                                r"Device (?P<dev>\d+), CC (?P<cc>\d+\.\d+), Invocations (?P<n>\d+)\s*$")
_DEVICE = re.compile(r"^\s*Device (?P<dev>\d+)\s*$")
_SUMMARY_HEADER = re.compile(r"^\s*Metric Name\s+Metric Unit\s+Minimum\s+Maximum\s+Average\s*$")
_SECTION = re.compile(r"^\s*Section: (?P<name>.+?)\s*$")
_DASHES = re.compile(r"^\s*-+(?: -+)+\s*$")
_HEADER_ROW = re.compile(r"^\s*Metric Name\s+Metric Unit\s+Metric Value\s*$")

_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value")


def looks_like(path: Path) -> bool:
    """Whether ``path`` holds an ncu text report: a launch header and a "Section:" line under it."""
    try:
        with Path(path).open("rb") as fh:
            text = as_utf8(fh.read(_SNIFF_BYTES)).decode("utf-8", errors="replace")
    except OSError:
        return False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if any(p.match(line) for p in (_LAUNCH, _LAUNCH_OLD, _SUMMARY_LAUNCH, _SUMMARY_LAUNCH_CC)):
            return any(_SECTION.match(nxt) for nxt in lines[i + 1:i + 4])
    return False


def read(path: Path) -> KernelProfile:
    """Read an ncu text report into a ``KernelProfile`` (see the module doc)."""
    path = Path(path)
    size = path.stat().st_size
    if size > ncu_csv.MAX_CSV_BYTES:
        raise InputError(path, f"is {size / 2**20:,.0f} MiB; coach reads ncu reports up to "
                               f"{ncu_csv.MAX_CSV_BYTES / 2**20:,.0f} MiB (profile fewer launches with -k/-c)")
    text = as_utf8(path.read_bytes()).decode("utf-8", errors="replace")
    rows, launches, summary = _rows(text)
    if launches == 0:
        raise InputError(path, "holds no profiled kernel launches (no line like 'kernel(...) (grid)x(block), Context 1, "
                               "Stream 7')")
    if not rows:
        raise InputError(path, "names kernel launches but holds no section table under them (was the output cut "
                               "before the tables?)")
    df = pl.DataFrame(rows, schema=dict.fromkeys(_COLUMNS, pl.Utf8), orient="row")
    tables = ncu_csv.details_tables(path, df)
    meta: dict[str, object] = {"page": "text"}
    if summary:
        meta["summary"] = ("one launch per kernel: each metric is the average over the kernel's invocations "
                           "(ncu --print-summary)")
    unread = tables.pop("unread_sections", None)
    if unread:
        meta["unread_sections"] = unread
    measured = df.select(pl.col("ID").n_unique()).item()
    if measured < launches:
        meta["launches_without_tables"] = launches - measured
    source = Source(path=str(path), format="ncu-text", tool="Nsight Compute", meta=meta)
    return make_kernel_profile(source, **tables)


def _rows(text: str) -> tuple[list[tuple[str | None, ...]], int, bool]:
    """(one tuple of ``_COLUMNS`` per metric row, the number of launches, whether it is a summary)."""
    rows: list[tuple[str | None, ...]] = []
    process: tuple[str | None, str | None, str | None] = (None, None, None)
    launch: tuple[str | None, ...] | None = None
    launches = 0
    section: str | None = None
    device: str | None = None
    summary_ids: dict[tuple[str, str, str, str | None], str] = {}  # a summary's kernel -> its launch ID
    lines = [line.expandtabs(8).rstrip() for line in text.splitlines()]
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if m := _PROCESS.match(line):
            process = (m["pid"], m["name"], m["host"])
            continue
        if m := _DEVICE.match(line):
            device = m["dev"]
            continue
        if m := _SUMMARY_LAUNCH.match(line):  # one table per section follows; the kernel's rows are one launch
            key = (m["name"], m["block"], m["grid"], device)
            if key not in summary_ids:
                summary_ids[key] = str(launches)
                launches += 1
            launch = (summary_ids[key], *process, m["name"], None, None, None, None, device, None)
            section = None
            continue
        if m := _SUMMARY_LAUNCH_CC.match(line):
            key = (m["name"], m["block"], m["grid"], m["dev"])
            if key not in summary_ids:
                summary_ids[key] = str(launches)
                launches += 1
            launch = (summary_ids[key], *process, m["name"], None, None, _paren(m["block"]), _paren(m["grid"]),
                      m["dev"], m["cc"])
            section = None
            continue
        if (m := _LAUNCH.match(line)) or (m := _LAUNCH_OLD.match(line)):
            groups = m.groupdict()
            launch = (str(launches), *process, m["name"], m["ctx"], m["stream"],
                      _paren(groups.get("block")), _paren(groups.get("grid")), groups.get("dev"), groups.get("cc"))
            launches += 1
            section = None
            continue
        if m := _SECTION.match(line):
            section = m["name"] if launch is not None else None
            continue
        if section is not None and launch is not None and _SUMMARY_HEADER.match(line) and i < len(lines) \
                and _DASHES.match(lines[i]):
            table, i = _summary_table(lines, i)
            rows.extend((*launch, section, name, unit, value) for name, unit, value in table)
            section = None
            continue
        if section is None or launch is None or not _DASHES.match(line):
            continue
        table, i = _table(lines, i - 1)
        rows.extend((*launch, section, name, unit, value) for name, unit, value in table)
        section = None  # later tables of the section are charts of the same numbers
    return rows, launches, bool(summary_ids)  # (either summary launch line makes it a summary)


def _paren(dims: str | None) -> str | None:
    return f"({dims})" if dims else None


def _table(lines: list[str], at: int) -> tuple[list[tuple[str, str, str]], int]:
    """The (name, unit, value) rows of the table whose top dashed line is ``lines[at]``, and the index after it."""
    starts = [m.start() for m in re.finditer(r"-+", lines[at])]
    i = at + 1
    summary = False  # a --print-summary table: Minimum, Maximum, Average after the unit; the average is read
    if i + 1 < len(lines) and _DASHES.match(lines[i + 1]) and (_HEADER_ROW.match(lines[i]) or _SUMMARY_HEADER.match(lines[i])):
        summary = bool(_SUMMARY_HEADER.match(lines[i]))
        i += 2
    out: list[tuple[str, str, str]] = []
    while i < len(lines) and not _DASHES.match(lines[i]):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1])]
        if summary and len(cells) == 5:
            out.append((cells[0], cells[1], cells[4]))
        elif len(cells) >= 3:
            out.append((cells[0], cells[1], " ".join(cells[2:])))
        elif len(cells) == 2:
            out.append((cells[0], "", cells[1]))
    return out, i + 1


def _summary_table(lines: list[str], at: int) -> tuple[list[tuple[str, str, str]], int]:
    """(name, unit, average) rows of a --print-summary table whose dashed line (under its header row)
    is ``lines[at]``; the table ends at a blank line or a line that is not a row of it."""
    starts = [m.start() for m in re.finditer(r"-+", lines[at])]
    i = at + 1
    out: list[tuple[str, str, str]] = []
    while i < len(lines) and lines[i].strip() and not _DASHES.match(lines[i]):
        line = lines[i]
        if _SECTION.match(line) or _SUMMARY_LAUNCH.match(line) or len(starts) < 5:
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1])]
        out.append((cells[0], cells[1], cells[4]))
        i += 1
    return out, i
