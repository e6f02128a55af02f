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
dashed lines, as in the details report; per-gpu of 2025: ``Device 0, CC 9.0`` on a line of its own and
``name (grid)x(block), Invocations 1`` under it);
each kernel is then one "launch" holding the averages, as ``coach.ingest.ncu_csv`` reads the CSV form
of the same summary (``Source.meta["summary"]`` says so). With ``--details-all`` (before 2023) or
``--print-metric-name name`` the labels are raw metric names (``gpu__time_duration.sum``), read as such;
``--print-metric-name label-name`` prints ``Duration (gpu__time_duration.sum)``, read by the name in
parentheses; ``--print-metric-instances values`` a value followed by its instances', ``262,144 (262,144)``,
of which the value is read. The raw page (``--page raw``) is one table a launch, every metric by its
name, right under the launch line.

Only a section's first table is read: ``--print-details all`` adds its body after it, chart tables
under ``Table Name : ...`` ("GPU Throughput Chart", "Achieved Traffic") that repeat or break down
the numbers of the first, which are skipped; a print of the bodies alone (``--print-details body``)
is refused, as are the pages that hold no metrics per launch (``--page session``, ``--page source``,
a summary with no kernel in it): ``other_page_reason`` says which page it is and what to print.

Rule results are the paragraphs under a section, one per result, each opened by its type (``OPT``,
``WRN``, ``INF``, ``ERR``) and, since 2023, a first line with Nsight Compute's estimate::

    OPT   Est. Speedup: 77.39%
          This kernel has uncoalesced global accesses resulting in a total of 58720256 excessive sectors
          (78% of the total 75497472 sectors). ...
    ----- --------------------------------------------------------------------------------------------
    OPT   Est. Local Speedup: 95.24%
          All compute pipelines are under-utilized. ...

"Est. Speedup" is a global estimate (of the kernel's whole time), "Est. Local Speedup" a local one,
as the CSV export's "Estimated Speedup Type" column gives them. ``--print-rule-details`` adds a "Key
Performance Indicators" table under a result, read as its focus metrics. The text form prints no rule name:
the rule is recognised by the opening words of its message, from ``ncu_text_rules.csv`` (one
pattern per wording, first match wins, each with where the wording was seen); a paragraph that
matches none is kept with no rule id (``Source.meta["rules_unrecognised"]`` counts them). Lines are
joined with a space, except after a line that is one word as long as the paragraph's longest line:
a word longer than a line (a URL), which ncu cuts where the line ends.

Lines that are none of these (``==PROF==`` lines, the program's own output, shell prompts, ``...``
where someone cut the paste short) are skipped; so are terminal colour codes, a UTF-8 or UTF-16
byte-order mark and CRLF line ends. A file that ends inside a table (a paste or a log cut short)
is read up to the last whole row, and ``Source.meta["truncated"]`` says where it was cut.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import polars as pl

from coach.errors import InputError
from coach.ingest import ncu_csv
from coach.ingest.ncu_common import RULE_TYPE_SEVERITY
from coach.ingest.text import as_utf8
from coach.model import KernelProfile, Source, make_kernel_profile

#: How much of a file is searched for a launch header and a section when telling the format.
_SNIFF_BYTES = 1 << 20
#: How many lines under a launch header its first "Section:" line may come (an NVTX stack of a deep
#: range nesting and ncu's warnings come first).
_SECTION_WITHIN = 64

#: Which rule a paragraph is, by its opening words: rule_id, rule_name, section_id, pattern, says, seen_in.
RULES_TABLE = Path(__file__).with_name("ncu_text_rules.csv")

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
_DEVICE = re.compile(r"^\s*Device (?P<dev>\d+)(?:, CC (?P<cc>\d+\.\d+))?\s*$")
# --print-summary per-gpu of 2025: "name (gx, gy, gz)x(bx, by, bz), Invocations 1" under "Device 0, CC 9.0"
_SUMMARY_LAUNCH_GPU = re.compile(r"^\s*(?P<name>\S.*?) \((?P<grid>\d+, \d+, \d+)\)x\((?P<block>\d+, \d+, \d+)\), "
                                 r"Invocations (?P<n>\d+)\s*$")
_SUMMARY_HEADER = re.compile(r"^\s*Metric Name\s+Metric Unit\s+Minimum\s+Maximum\s+Average\s*$")
_SECTION = re.compile(r"^\s*Section: (?P<name>.+?)\s*$")
_DASHES = re.compile(r"^\s*-+(?: -+)+\s*$")
_HEADER_ROW = re.compile(r"^\s*Metric Name\s+Metric Unit\s+Metric Value\s*$")
# "Table Name : GPU Throughput": a table of a section's body (--print-details body|all), charts of its numbers
_BODY_TABLE = re.compile(r"^\s*Table Name : ")
# --print-metric-name label-name: "Duration (gpu__time_duration.sum)"; the metric's own name is read
_LABEL_NAME = re.compile(r"^.+ \((?P<metric>[a-z0-9]+__[A-Za-z0-9_.]+)\)$")
# --print-metric-instances values: "262,144 (262,144)", the value then its instances' values; the value is read
_WITH_INSTANCES = re.compile(r"^(?P<value>[-+]?[\d,.]+(?:[eE][-+]?\d+)?) \([^()]*\)$")
# a rule result's first line: its type, three spaces or more, then its text (the estimate, since 2023)
_RULE = re.compile(r"^(?P<lead>\s*(?P<kind>OPT|WRN|INF|ERR|OK) {3,})(?P<text>\S.*?)\s*$")
_ESTIMATE = re.compile(r"^Est\. (?P<local>Local )?Speedup: (?P<pct>[\d.,]+)%\s*(?P<rest>.*)$")
# terminal colour and cursor codes (CSI and OSC sequences), as a log of a colouring terminal keeps them
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# lines ncu itself writes (==PROF==, ==WARNING==, ==ERROR==), wherever the two streams interleaved them
_TOOL_LINE = re.compile(r"^\s*==[A-Z]+==")

_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value")


def looks_like(path: Path) -> bool:
    """Whether ``path`` holds an ncu text report: a launch header and a "Section:" line (or the raw page's
    table) under it, before the next launch header (an NVTX push/pop stack and a clock warning may stand
    between them)."""
    try:
        with Path(path).open("rb") as fh:
            lines = _lines(fh.read(_SNIFF_BYTES))
    except OSError:
        return False
    launch_lines = (_LAUNCH, _LAUNCH_OLD, _SUMMARY_LAUNCH, _SUMMARY_LAUNCH_CC, _SUMMARY_LAUNCH_GPU)
    for i, line in enumerate(lines):
        if any(p.match(line) for p in launch_lines):
            for k, nxt in enumerate(lines[i + 1:i + 1 + _SECTION_WITHIN], i + 1):
                if _SECTION.match(nxt) or (_HEADER_ROW.match(nxt) and k + 1 < len(lines) and _DASHES.match(lines[k + 1])):
                    return True  # (the raw page: its table right under the launch line)
                if any(p.match(nxt) for p in launch_lines):
                    break
    return False


# what ncu prints of a run beside (or instead of) a report
_REPORT_WRITTEN = re.compile(r"^==PROF== Report: (?P<path>\S.*?)\s*$", re.MULTILINE)
_NCU_ERROR = re.compile(r"^==ERROR== (?P<what>\S.*?)\s*$", re.MULTILINE)
_NO_KERNELS = re.compile(r"^==WARNING== No kernels were profiled", re.MULTILINE)
_NCU_LINE = re.compile(r"^==(?:PROF|ERROR|WARNING)== ", re.MULTILINE)
#: an ncu message quoted in an error is cut to this many characters
_QUOTE_CHARS = 240


# the pages of `ncu --import R` that hold no metrics per launch, by their first lines (text or --csv)
_SESSION_PAGE = re.compile(r'^Launch Settings\s*\n(?:-+ -+\s*\n)?"?Launch Attribute"?')
_SOURCE_PAGE = re.compile(r'^(?:-+ -+[- ]*\n)?"?(?P<what>Kernel Name|File Name)"?[ ,]+\S.*\n(?:-+ -+[- ]*\n)?'
                          r'"?(?:Address|Line No)"?[ ,]+"?Source"?')
_SUMMARY_NOTE = re.compile(r"^\s*Note: The shown averages are calculated as the arithmetic mean")
#: a row of `ncu --query-metrics` (name, Counter/Ratio/Throughput, unit, description); its --query-metrics-mode
#: suffix and all listings repeat each name with .avg/.sum/.pct_of_peak... suffixes
_QUERY_METRICS_ROW = re.compile(r"^[a-z0-9]+__\w[\w.]*\s{2,}(?:Counter|Ratio|Throughput)\s{2,}", re.MULTILINE)
#: its header ("Device GA104", then "Metric Name ... Metric Description", with Type and Unit columns in newer versions)
_QUERY_METRICS_HEADER = re.compile(r"^Metric Name\s+(?:Metric Type\s+)?(?:Metric Unit\s+)?Metric Description\s*$",
                                   re.MULTILINE)
_USE_DETAILS = "print the details page instead (ncu --import REPORT.ncu-rep --page details), or pass the .ncu-rep"


def other_page_reason(path: Path) -> str | None:
    """Why ``path`` is a page of an ncu report that holds no metrics per kernel launch (the session or
    the source page, or a summary with no kernel in it), or None."""
    try:
        with Path(path).open("rb") as fh:
            text = "\n".join(_lines(fh.read(_SNIFF_BYTES))).lstrip("\n")
    except OSError:
        return None
    if _SESSION_PAGE.match(text):
        return ("is the session page of an ncu report (--page session: launch settings, session, process and device "
                f"attributes), which holds no metrics per kernel; {_USE_DETAILS}")
    if m := _SOURCE_PAGE.match(text):
        what = "SASS by address" if m["what"] == "Kernel Name" else "CUDA source by line"
        return (f"is the source page of an ncu report (--page source: {what}, with the counters of each line where "
                f"the report has them), which holds no metrics per kernel; {_USE_DETAILS} (coach source shows a "
                ".ncu-rep's counters by line)")
    if len(_QUERY_METRICS_ROW.findall(text)) >= 3 or _QUERY_METRICS_HEADER.search(text):
        return ("is Nsight Compute's list of the metrics it can collect (ncu --query-metrics), not a profile: collect "
                "the ones you need on your kernel (ncu --metrics NAME,... or --set full) and pass that report")
    if _SUMMARY_NOTE.match(text):
        return ("holds only the note ncu prints under a --print-summary, no kernel (per-nvtx of a report without "
                "NVTX ranges prints nothing else); print the report per kernel (--print-summary per-kernel) or its "
                "details page (--page details)")
    return None


def run_log_reason(path: Path) -> str | None:
    """Why ``path``, ncu's own lines of a run without a report among them, holds no profile (None when
    it has no ``==PROF==`` / ``==ERROR==`` / ``==WARNING==`` line): the report ncu wrote elsewhere
    (``-o``), the error it stopped on, or a filter that matched no kernel."""
    try:
        with Path(path).open("rb") as fh:
            text = as_utf8(fh.read(_SNIFF_BYTES)).decode("utf-8", errors="replace").lstrip("\ufeff")
    except OSError:
        return None
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    if not _NCU_LINE.search(text):
        return None
    if m := _REPORT_WRITTEN.search(text):
        return (f"is the log of an ncu run that wrote its report to a file ({m['path']}), not the report: pass that "
                "file, or print it with ncu --import FILE --page details")
    if m := _NCU_ERROR.search(text):
        what = m["what"] if len(m["what"]) <= _QUOTE_CHARS else m["what"][:_QUOTE_CHARS].rstrip() + "..."
        return f"is the log of an ncu run that profiled nothing; ncu reported: {what}"
    if _NO_KERNELS.search(text):
        listed = "; ncu lists the kernels it saw under 'Available Kernels:'" if "Available Kernels:" in text else ""
        return ("is the log of an ncu run that profiled no kernel (\"No kernels were profiled\"): check the kernel "
                f"filter (-k, --kernel-name-base){listed}, or add --target-processes all where the kernels run in a "
                "child process")
    return ("holds ncu's progress lines (==PROF==) but no report: ncu printed none (it was run with -o, --csv to "
            "another file, or the output was cut before the first launch)")


def read(path: Path) -> KernelProfile:
    """Read an ncu text report into a ``KernelProfile`` (see the module doc)."""
    path = Path(path)
    size = path.stat().st_size
    if size > ncu_csv.MAX_CSV_BYTES:
        raise InputError(path, f"is {size / 2**20:,.0f} MiB; coach reads ncu reports up to "
                               f"{ncu_csv.MAX_CSV_BYTES / 2**20:,.0f} MiB (profile fewer launches with -k/-c)")
    raw = path.read_bytes()
    parsed = _Parsed.of(_lines(raw), cut_mid_line=not raw.rstrip(b"\0").endswith((b"\n", b"\n\0")))
    if parsed.body_only_sections and not parsed.rows:
        raise InputError(path, "holds only the sections' body tables (charts and breakdowns, as --print-details body "
                               "prints them), not the header tables with each section's metrics: print the report "
                               "with --print-details header (the default) or all")
    if parsed.launches == 0:
        raise InputError(path, "holds no profiled kernel launches (no line like 'kernel(...) (grid)x(block), Context 1, "
                               "Stream 7')")
    if not parsed.rows:
        raise InputError(path, "names kernel launches but holds no section table under them (was the output cut "
                               "before the tables?)")
    df = pl.DataFrame(parsed.rows, schema=dict.fromkeys(_COLUMNS, pl.Utf8), orient="row")
    tables = ncu_csv.details_tables(path, df)
    meta: dict[str, object] = {"page": "text"}
    if parsed.summary:
        meta["summary"] = ("one launch per kernel: each metric is the average over the kernel's invocations "
                           "(ncu --print-summary)")
    unread = tables.pop("unread_sections", None)
    if unread:
        meta["unread_sections"] = unread
    if nan := tables.pop("unmeasured", None):
        meta["unmeasured"] = nan
    measured = df.select(pl.col("ID").n_unique()).item()
    if measured < parsed.launches:
        meta["launches_without_tables"] = parsed.launches - measured
    if parsed.truncated:
        meta["truncated"] = parsed.truncated
    rules = _rules(parsed.rules)
    if rules is not None:
        tables["rules"] = rules
        unknown = rules.select(pl.col("rule_id").is_null().sum()).item()
        if unknown:
            meta["rules_unrecognised"] = unknown
    source = Source(path=str(path), format="ncu-text", tool="Nsight Compute", meta=meta)
    return make_kernel_profile(source, **tables)


def _lines(raw: bytes) -> list[str]:
    """The report's lines as text: UTF-16 (PowerShell's ``>``) transcoded, a byte-order mark, colour
    codes and ncu's own ``==PROF==`` lines dropped, tabs expanded, trailing line ends removed (CR too)."""
    text = as_utf8(raw).decode("utf-8", errors="replace").lstrip("\ufeff")
    text = _ANSI.sub("", text) if "\x1b" in text else text
    return [line.expandtabs(8).rstrip("\r\n") for line in text.splitlines() if not _TOOL_LINE.match(line)]


class _Parsed:
    """What one pass over the lines finds: one tuple of ``_COLUMNS`` per metric row, one dict per rule
    paragraph, the number of launches, whether it is a summary, and where a cut file ends (or None)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str | None, ...]] = []
        self.rules: list[dict[str, str | None]] = []
        self.launches = 0
        self.summary = False
        self.truncated: str | None = None
        self.body_only_sections = 0  # sections whose tables were all of their body (--print-details body)

    @classmethod
    def of(cls, lines: list[str], *, cut_mid_line: bool) -> _Parsed:
        out = cls()
        out._read(lines, cut_mid_line)
        return out

    def _read(self, lines: list[str], cut_mid_line: bool) -> None:
        process: tuple[str | None, str | None, str | None] = (None, None, None)
        launch: tuple[str | None, ...] | None = None
        section: str | None = None  # the section whose first table is still to come
        under: str | None = None  # the section the lines belong to (its rule paragraphs follow its table)
        device: str | None = None
        device_cc: str | None = None
        summary_ids: dict[tuple[str, str, str, str | None], str] = {}  # a summary's kernel -> its launch ID
        i = 0
        while i < len(lines):
            line = lines[i].rstrip()
            i += 1
            if m := _PROCESS.match(line):
                process = (m["pid"], m["name"], m["host"])
                continue
            if m := _DEVICE.match(line):
                device, device_cc = m["dev"], m["cc"]
                continue
            if m := _SUMMARY_LAUNCH_GPU.match(line):  # per-gpu: the device and its CC on the line above
                key = (m["name"], m["block"], m["grid"], device)
                if key not in summary_ids:
                    summary_ids[key] = str(self.launches)
                    self.launches += 1
                launch = (summary_ids[key], *process, m["name"], None, None, _paren(m["block"]), _paren(m["grid"]),
                          device, device_cc)
                section = under = None
                continue
            if m := _SUMMARY_LAUNCH.match(line):  # one table per section follows; the kernel's rows are one launch
                key = (m["name"], m["block"], m["grid"], device)
                if key not in summary_ids:
                    summary_ids[key] = str(self.launches)
                    self.launches += 1
                launch = (summary_ids[key], *process, m["name"], None, None, None, None, device, None)
                section = under = None
                continue
            if m := _SUMMARY_LAUNCH_CC.match(line):
                key = (m["name"], m["block"], m["grid"], m["dev"])
                if key not in summary_ids:
                    summary_ids[key] = str(self.launches)
                    self.launches += 1
                launch = (summary_ids[key], *process, m["name"], None, None, _paren(m["block"]), _paren(m["grid"]),
                          m["dev"], m["cc"])
                section = under = None
                continue
            if (m := _LAUNCH.match(line)) or (m := _LAUNCH_OLD.match(line)):
                groups = m.groupdict()
                launch = (str(self.launches), *process, m["name"], m["ctx"], m["stream"],
                          _paren(groups.get("block")), _paren(groups.get("grid")), groups.get("dev"), groups.get("cc"))
                self.launches += 1
                section = under = None
                continue
            if m := _SECTION.match(line):
                section = under = m["name"] if launch is not None else None
                continue
            if launch is not None and under is None and _HEADER_ROW.match(line) and i < len(lines) \
                    and _DASHES.match(lines[i]):  # the raw page: every metric by its name, in one table a launch
                table, i, closed = _open_table(lines, i)
                self._table(launch, "", table, closed, i >= len(lines) and cut_mid_line)
                continue
            if launch is None or under is None:
                continue
            if _BODY_TABLE.match(line):
                if section is not None:
                    self.body_only_sections += 1
                section = None
                continue
            if m := _RULE.match(line):
                i = self._rule(lines, i - 1, m, launch[0], under)
                continue
            if section is not None and _SUMMARY_HEADER.match(line) and i < len(lines) and _DASHES.match(lines[i]):
                table, i, closed = _summary_table(lines, i)
                self._table(launch, section, table, closed, i >= len(lines) and cut_mid_line)
                section = None
                continue
            if section is None or not _DASHES.match(line):
                continue
            table, i, closed = _table(lines, i - 1)
            self._table(launch, section, table, closed, cut_mid_line)
            section = None  # later tables of the section are charts of the same numbers
        self.summary = bool(summary_ids)  # (either summary launch line makes it a summary)

    def _table(self, launch: tuple[str | None, ...], section: str, table: list[tuple[str, str, str]], closed: bool,
               cut_mid_line: bool) -> None:
        if not closed:  # the file ends inside the table: its last line may be cut inside a value
            if cut_mid_line and table:
                table = table[:-1]
            self.truncated = (f"it ends inside the '{section}' table of launch {launch[0]} ({launch[4]}); the rows "
                              f"before the cut are read, what came after them is missing")
        self.rows.extend((*launch, section, m["metric"] if (m := _LABEL_NAME.match(name)) else name, unit,
                          v["value"] if (v := _WITH_INSTANCES.match(value)) else value)
                         for name, unit, value in table)

    def _rule(self, lines: list[str], at: int, first: re.Match[str], launch_id: str | None, section: str) -> int:
        """Read the rule paragraph whose first line is ``lines[at]``; the index after it."""
        col = len(first["lead"])
        raw = [lines[at]]
        i = at + 1
        while i < len(lines) and lines[i][:col].strip() == "" and lines[i][col:].strip() \
                and not _DASHES.match(lines[i]):
            raw.append(lines[i])
            i += 1
        focus, i = _focus_metrics(lines, i, col)
        if i < len(lines) and _DASHES.match(lines[i]) and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            i += 1  # the line between two results of one section
        estimate = _ESTIMATE.match(first["text"])
        texts = [estimate["rest"] if estimate else first["text"], *(r[col:].strip() for r in raw[1:])]
        # a word longer than a line (a URL) fills a line of its own and goes on in the next one
        width = max(len(t) for t in texts)
        message = texts[0]
        for before, text in zip(texts, texts[1:]):
            message += text if not message or (len(before) == width and " " not in before) else " " + text
        self.rules.append({
            "launch_id": launch_id, "kind": first["kind"], "section": section, "message": message,
            "speedup_type": None if not estimate else "local" if estimate["local"] else "global",
            "speedup_pct": estimate["pct"].replace(",", "") if estimate else None, "focus_metrics": focus,
        })
        return i


def _focus_metrics(lines: list[str], at: int, col: int) -> tuple[list[dict[str, object]] | None, int]:
    """The "Key Performance Indicators" table that ``--print-rule-details`` prints under a result (at
    its text's column, after a blank line), as focus metrics (name, value, guidance), and the index after
    it; (None, ``at``) where there is none. A name too long for its column goes on in the next line, cut
    anywhere; the guidance is wrapped between words."""
    j = at
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j + 3 >= len(lines) or not lines[j][col:].startswith("> ") or not _DASHES.match(lines[j + 1]):
        return None, at
    starts = [m.start() for m in re.finditer(r"-+", lines[j + 1])]
    out: list[dict[str, object]] = []
    j += 4  # the title, dashes, the header row, dashes
    while j < len(lines) and lines[j].strip() and lines[j][:col].strip() == "":
        line = lines[j].rstrip()
        name, value, info = ([line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1])] + ["", ""])[:3]
        if not value and out:
            out[-1]["name"] = f"{out[-1]['name']}{name}"
            out[-1]["info"] = f"{out[-1]['info']} {info}".strip()
        else:
            out.append({"name": name, "value": _number(value), "info": info})
        j += 1
    return out, j


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _paren(dims: str | None) -> str | None:
    return f"({dims})" if dims else None


def _table(lines: list[str], at: int) -> tuple[list[tuple[str, str, str]], int, bool]:
    """The (name, unit, value) rows of the table whose top dashed line is ``lines[at]``, the index after
    it, and whether its closing dashed line was there (False: the file ends inside the table)."""
    starts = [m.start() for m in re.finditer(r"-+", lines[at])]
    i = at + 1
    summary = False  # a --print-summary table: Minimum, Maximum, Average after the unit; the average is read
    if i + 1 < len(lines) and _DASHES.match(lines[i + 1]) and (_HEADER_ROW.match(lines[i]) or _SUMMARY_HEADER.match(lines[i])):
        summary = bool(_SUMMARY_HEADER.match(lines[i]))
        i += 2
    out: list[tuple[str, str, str]] = []
    # the columns of the closing dashed line, where it has as many: ncu of 2022 printed a section's top
    # line at the section's indent and its rows and closing line two columns further in
    # (tests/data/wild_public/cts_hw5_atomic_red_rtx3070_head.output)
    end = next((j for j in range(i, len(lines)) if _DASHES.match(lines[j])), None)
    if end is not None:
        closing = [m.start() for m in re.finditer(r"-+", lines[end])]
        if len(closing) == len(starts):
            starts = closing
    while i < len(lines) and not _DASHES.match(lines[i]):
        line = lines[i].rstrip()
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
    return out, i + 1, i < len(lines)


def _open_table(lines: list[str], at: int) -> tuple[list[tuple[str, str, str]], int, bool]:
    """(name, unit, value) rows of the raw page's table, whose dashed line (under its header row) is
    ``lines[at]``; it ends at a blank line (False as the third value where the file ends first)."""
    starts = [m.start() for m in re.finditer(r"-+", lines[at])]
    i = at + 1
    out: list[tuple[str, str, str]] = []
    while i < len(lines) and lines[i].strip() and not _DASHES.match(lines[i]):
        line = lines[i].rstrip()
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1])]
        if len(cells) >= 3:
            out.append((cells[0], cells[1], " ".join(cells[2:])))
        i += 1
    return out, i, i < len(lines)


def _summary_table(lines: list[str], at: int) -> tuple[list[tuple[str, str, str]], int, bool]:
    """(name, unit, average) rows of a --print-summary table whose dashed line (under its header row)
    is ``lines[at]``; the table ends at a blank line or a line that is not a row of it (False as the
    third value where the file ends first)."""
    starts = [m.start() for m in re.finditer(r"-+", lines[at])]
    i = at + 1
    out: list[tuple[str, str, str]] = []
    while i < len(lines) and lines[i].strip() and not _DASHES.match(lines[i]):
        line = lines[i].rstrip()
        if _SECTION.match(line) or _SUMMARY_LAUNCH.match(line) or len(starts) < 5:
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1])]
        out.append((cells[0], cells[1], cells[4]))
        i += 1
    return out, i, i < len(lines)


@cache
def rule_patterns() -> pl.DataFrame:
    """``ncu_text_rules.csv`` in its order (the first pattern that matches a message names its rule)."""
    return pl.read_csv(RULES_TABLE, infer_schema=False).with_row_index("order")


def name_rules(messages: pl.DataFrame) -> pl.DataFrame:
    """``messages`` (a ``message`` column) with the ``rule_id``, ``rule_name`` and ``section_id`` of the
    first pattern of ``ncu_text_rules.csv`` that opens each message (null where none does)."""
    indexed = messages.with_row_index("_paragraph")
    named = (indexed.select("_paragraph", "message").join(rule_patterns(), how="cross")
             .filter(pl.col("message").str.contains("^(?:" + pl.col("pattern") + ")"))
             .sort("order").unique("_paragraph", keep="first")
             .select("_paragraph", "rule_id", "rule_name", "section_id"))
    return indexed.join(named, on="_paragraph", how="left").sort("_paragraph").drop("_paragraph")


def _rules(found: list[dict[str, str | None]]) -> pl.DataFrame | None:
    """The rule paragraphs as the ``rules`` table, each named by the first pattern its message matches."""
    if not found:
        return None
    focus = pl.List(pl.Struct({"name": pl.Utf8, "value": pl.Float64, "info": pl.Utf8}))
    schema = {**dict.fromkeys(found[0], pl.Utf8), "focus_metrics": focus}
    return name_rules(pl.DataFrame(found, schema=schema)).select(
        pl.col("launch_id").cast(pl.Int64), "rule_id", "rule_name", "section_id",
        pl.col("kind").replace_strict(RULE_TYPE_SEVERITY, default=pl.col("kind").str.to_lowercase()).alias("severity"),
        "message", "speedup_type", pl.col("speedup_pct").cast(pl.Float64, strict=False), "focus_metrics")
