"""Tell what a file is by its content, not its name.

Each profiler output has a signature in its first bytes: ``.ncu-rep`` files start with ``NVR\\0``;
``.nsys-rep`` (and the older ``.qdrep``) with ``NVIDIA Tegra Profiler Report``; SQLite databases
with ``SQLite format 3\\0``; gzip with ``1f 8b``. JSON is told apart by its first non-blank
character; ncu's text report (the terminal output) by a launch line with a "Section:" line under
it; an ``ncu --csv`` export by its header line, found past any ``==PROF==`` lines and program
output printed before it. compute-sanitizer's text report by its '=========' lines, its XML by the
root element ``ComputeSanitizerOutput``. A folder written by ``coach.model.save`` holds
``coach-profile.json``.
"""

from __future__ import annotations

import gzip
import re
import sqlite3
import zlib
from pathlib import Path

from coach.errors import InputError
from coach.ingest.ncu_csv import header_offset as ncu_header_offset
from coach.ingest.text import as_utf8, is_utf16
from coach.model import SAVED_MARKER, Format

NCU_MAGIC = b"NVR\x00"
NSYS_MAGIC = b"NVIDIA Tegra Profiler Report"
SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
#: A zstd frame (RFC 8878); Nsight Compute 2025.4 added .ncu-repz, "zstd compressed report files".
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# Tables that only an Nsight Systems export has; any one of them is enough to recognise one.
NSYS_MARKER_TABLES = {"StringIds", "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS",
                      "TARGET_INFO_GPU", "META_DATA_EXPORT", "ThreadNames"}

_HEAD = 4096

_NCU_TEXT_PROCESS = re.compile(r"\s*\[\d+\] \S")

#: nvprof's own lines ("==1234== NVPROF is profiling process 1234", "==1234== Profiling result:").
_NVPROF_TEXT = re.compile(rb"==\d+== (NVPROF is profiling|Profiling result|Profiling application|Warning: .*nvprof)")


def detect(path: str | Path) -> Format:
    """Return the format of ``path`` or raise ``InputError`` saying why it is not one we read."""
    p = Path(path)
    if not p.exists():
        raise InputError(p, "no such file or folder")
    if p.is_dir():
        if (p / SAVED_MARKER).is_file():
            return "coach-profile"
        raise InputError(p, "is a folder without a coach-profile.json (pass the report files inside it)")
    try:
        with p.open("rb") as fh:
            head = fh.read(_HEAD)
    except OSError as err:
        raise InputError(p, f"cannot be read ({err.strerror or err})") from None
    if not head:
        raise InputError(p, "is empty")
    if head.startswith(NCU_MAGIC):
        return "ncu-rep"
    if head.startswith(NSYS_MAGIC):
        return "nsys-rep"
    if head.startswith(SQLITE_MAGIC):
        _check_nsys_sqlite(p)
        return "nsys-sqlite"
    if head.startswith(ZSTD_MAGIC):
        raise InputError(p, "is zstd-compressed, which coach does not read as it is"
                            + (" (an .ncu-repz: the zstd-compressed report format of Nsight Compute 2025.4 and later)"
                               if p.name.endswith(".ncu-repz") else "")
                            + ": save the report uncompressed (.ncu-rep) from Nsight Compute, or decompress the file "
                              "(zstd -d) and pass what it holds")
    if head.startswith(GZIP_MAGIC):
        text = _gunzip_head(p)
        if _looks_like_json(text):
            return "kineto-json"
        raise InputError(p, "is gzip-compressed but does not hold a JSON trace")
    if is_utf16(head):  # saved on Windows through PowerShell's redirection
        head = as_utf8(head[: len(head) // 2 * 2])
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if _binary(head, text):
        raise InputError(p, "holds binary data, not text (NUL bytes or invalid UTF-8 in its first 4 KiB), and no "
                            f"report format coach knows by its first bytes: {_READS}")
    sanitizer = _sanitizer_format(text)
    if sanitizer is not None:
        return sanitizer
    from coach.ingest import ncu_text  # noqa: PLC0415 - its grammar only

    # ncu's text report opens with "[pid] process@host" when saved with --log-file: a "[" that is not JSON
    if _NCU_TEXT_PROCESS.match(text) and ncu_text.looks_like(p):
        return "ncu-text"
    nsys_log = _nsys_run_log(p)
    if nsys_log is not None:  # (before JSON: a program's own first line may be a JSON object)
        raise InputError(p, nsys_log)
    if _looks_like_json(text):
        return "kineto-json"
    if ncu_header_offset(p) is not None:
        return "ncu-csv"
    if ncu_text.looks_like(p):
        return "ncu-text"
    if (why := ncu_text.other_page_reason(p) or ncu_text.run_log_reason(p)) is not None:
        raise InputError(p, why)
    if _NVPROF_TEXT.search(head):
        raise InputError(p, "is output of nvprof, the profiler before Nsight Compute and Nsight Systems, which coach "
                            "does not read: profile with ncu (kernels) or nsys (timeline), or nsys import the nvprof "
                            "database (nvprof -o FILE.nvvp) into an .nsys-rep")
    stats = _nsys_stats(text)
    if stats is not None:
        raise InputError(p, f"is output of nsys stats ({stats}), a table Nsight Systems computes from a report, not the "
                            "report: coach reads the report itself; pass the .nsys-rep, or its SQLite export "
                            "(nsys export --type sqlite FILE.nsys-rep)")
    rocprof = _rocprof_csv(text)
    if rocprof is not None:
        raise InputError(p, f"is {rocprof}, which coach does not read: record the run with torch.profiler "
                            "(its ROCm build writes the JSON trace coach reads) and pass that")
    if _TRIMMED_NCU_CSV.search(text):
        raise InputError(p, 'is a CSV of Nsight Compute metrics without ncu\'s "ID" column (a summary or a trimmed copy '
                            "of ncu's CSV): coach reads the export as ncu writes it (ncu --csv --page details or --page "
                            "raw, or the .ncu-rep), whose ID column tells the launches apart")
    raise InputError(p, f"is not a profile coach reads (expected {_READS.removeprefix('coach reads ')})")


#: What nsys profile prints as it writes its report: "Generating '/tmp/nsys-report-53df.qdstrm'", then
#: "Generated:" and the report's path on the next line
_NSYS_GENERATING = re.compile(r"^Generating '[^'\n]*\.qdstrm'", re.MULTILINE)
_NSYS_GENERATED = re.compile(r"^Generated:\s*\n\s*(?P<path>\S.*?\.(?:nsys-rep|qdrep))\s*$", re.MULTILINE)
#: nsys 2022 and later print a progress line per file written ("[1/8] [====...100%] run.nsys-rep"): a log cut
#: before "Generated:" still names its report there
_NSYS_PROGRESS = re.compile(r"^\[\d+/\d+\] \[=+\s*100%\] (?P<path>\S.*?\.(?:nsys-rep|qdrep))\s*$", re.MULTILINE)
#: how much of a log is searched for them (nsys's progress bar fills a line per report)
_LOG_BYTES = 1 << 20


def _nsys_run_log(p: Path) -> str | None:
    """Why ``p``, the terminal output of an ``nsys profile`` run, is not its report (None if it is not one)."""
    with p.open("rb") as fh:
        text = as_utf8(fh.read(_LOG_BYTES)).decode("utf-8", errors="replace").replace("\r\n", "\n")
    if not _NSYS_GENERATING.search(text):
        return None
    done = _NSYS_GENERATED.search(text) or _NSYS_PROGRESS.search(text)
    where = f"wrote its report to a file ({done['path']})" if done else "was writing its report to a file"
    stats = ("; the tables it printed (--stats=true) are nsys stats summaries of that report"
             if _NSYS_STATS_TITLE.search(text) else "")
    return (f"is the log of an nsys profile run that {where}, not the report{stats}: pass that file, or its SQLite "
            "export (nsys export --type sqlite FILE.nsys-rep)")


#: What coach reads, for the message on a file it cannot tell
_READS = ("coach reads .ncu-rep, ncu CSV or text output, nsys .sqlite/.nsys-rep, PyTorch-profiler JSON or "
          "compute-sanitizer output")
#: More than this share of a text's first 4 KiB undecodable as UTF-8 makes it binary
_INVALID_SHARE = 0.05


def _binary(head: bytes, text: str) -> bool:
    """Whether the first bytes are not text: a NUL byte, or much that is not UTF-8 (a cut multi-byte
    character at the end of the 4 KiB does not count)."""
    return b"\x00" in head or text[:-4].count("\ufffd") > _INVALID_SHARE * max(1, len(text))


#: "** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):", the title nsys profile --stats=true prints above each table
#: and "[3/8] Executing 'nvtx_sum' stats report", the line 2023 and later print there instead
_NSYS_STATS_TITLE = re.compile(r"^\s*(?:\*\* (?P<title>[^\n(]+?) \((?P<report>[a-z0-9_]+)\):?"
                               r"|\[\d+/\d+\] Executing '(?P<executed>[a-z0-9_]+)' stats report)\s*$", re.MULTILINE)
#: What an nsys stats table holds, by the columns of its header line (CSV or the text table; the
#: report names of 2023 and later, then the older ones of 2020-2022, e.g. gpukernsum)
_NSYS_STATS_TABLES: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"Start (ns)", "Duration (ns)"}), "a trace table such as cuda_gpu_trace: one row per operation"),
    (frozenset({"Instances", "Name"}), "a kernel summary such as cuda_gpu_kern_sum, gpukernsum before: totals per kernel"),
    (frozenset({"Num Calls", "Name"}), "an API summary such as cuda_api_sum or osrt_sum: totals per call"),
    (frozenset({"Operation"}), "a memory-operation summary such as cuda_gpu_mem_time_sum: totals per copy kind"),
    (frozenset({"Range"}), "an NVTX range summary such as nvtx_sum: totals per range"),
)
_NSYS_STATS_TIME = re.compile(r"Time ?\(%\)|Total Time \((?:ns|us|ms|s)\)|Duration \(ns\)")


def _nsys_stats(text: str) -> str | None:
    """What nsys stats table ``text`` holds (its report's name where the title gives it), or None."""
    title = _NSYS_STATS_TITLE.search(text)
    for line in text.splitlines()[:40]:
        if not _NSYS_STATS_TIME.search(line):
            continue
        cells = {c.strip().strip('"') for c in (line.split(",") if "," in line else re.split(r"\s{2,}", line.strip()))}
        what = next((w for needs, w in _NSYS_STATS_TABLES if needs <= cells), None)
        if what is None and not title:
            continue
        if title and title["executed"]:
            return f"{title['executed']}" + (f", {what}" if what else "")
        if title:
            return f"{title['report']}, {title['title']}"
        return what
    return None


#: The header of a table with Nsight Compute's metric columns but not its first, "ID": what a
#: spreadsheet or a script keeps of ``ncu --csv`` output ("Kernel Name","Metric Name","Metric Unit","Metric Value").
_TRIMMED_NCU_CSV = re.compile(r'^(?![^\n]*"ID")[^\n]*"Metric Name"[^\n]*"Metric Value"', re.MULTILINE)


#: rocprof's CSV outputs by the columns of their header line: what each one is.
_ROCPROF_HEADERS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"KernelName", "BeginNs", "EndNs"}), "a rocprof kernel trace (AMD ROCm; results.csv of rocprof v1/v2)"),
    # rocprofv2's file plugin spells the correlation column Correlation_ID, rocprofv3 Correlation_Id
    (frozenset({"Domain", "Function", "Start_Timestamp", "End_Timestamp", "Correlation_ID"}),
     "a rocprofv2 API trace (AMD ROCm; the file plugin's HIP/HSA API CSV)"),
    (frozenset({"Dispatch_ID", "Kernel_Name", "Start_Timestamp", "End_Timestamp", "Correlation_ID"}),
     "a rocprofv2 kernel trace (AMD ROCm; the file plugin's results CSV)"),
    (frozenset({"Kernel_Name", "Start_Timestamp", "End_Timestamp", "Correlation_Id"}),
     "a rocprofv3 kernel trace (AMD ROCm; kernel_trace.csv)"),
    # Omniperf (rocprof-compute) keeps rocprof v1's dispatch columns under rocprofv2's names
    # (DispatchNs and CompleteNs beside Start_Timestamp; its workloads' timestamps.csv)
    (frozenset({"Kernel_Name", "Start_Timestamp", "End_Timestamp"}),
     "a rocprof kernel trace (AMD ROCm; dispatches with start and end times, as rocprof or Omniperf's timestamps.csv "
     "keep them)"),
    (frozenset({"Start_Timestamp", "End_Timestamp", "Correlation_Id"}), "a rocprofv3 trace CSV (AMD ROCm)"),
    (frozenset({"Name", "Calls", "TotalDurationNs"}), "a rocprof summary of calls (AMD ROCm; a *stats.csv)"),
)


#: AMD's hardware counters as rocprof names its columns: block, underscore, event, maybe an instance
#: ("SQ_WAVES", "TCC_HIT[3]", "TCP_TCC_READ_REQ_sum", "GRBM_GUI_ACTIVE")
_ROCPROF_COUNTER = re.compile(r"^(?:SQ|SQC|TCC|TCP|TA|TD|GRBM|SPI|CPC|CPF|GDS|TCA)_[A-Z0-9_]+(?:\[\d+\]|_sum)?$")


def _rocprof_csv(text: str) -> str | None:
    """What kind of rocprof CSV ``text`` starts with, or None."""
    first = text.lstrip().split("\n", 1)[0]
    columns = {c.strip().strip('"') for c in first.split(",")}
    if columns & {"KernelName", "Kernel_Name"} and (any(_ROCPROF_COUNTER.match(c) for c in columns)
                                                    or {"Counter_Name", "Counter_Value"} <= columns):
        return ("a rocprof hardware-counter CSV (AMD ROCm; counters such as SQ_WAVES per kernel dispatch, as rocprof "
                "--pmc, Omniperf's pmc_perf.csv or rocprofv3's counter_collection.csv write them)")
    return next((what for needs, what in _ROCPROF_HEADERS if needs <= columns), None)


def _sanitizer_format(text: str) -> Format | None:
    """compute-sanitizer's text report (lines prefixed '=========') or its --xml file."""
    from coach.ingest import sanitizer_text, sanitizer_xml  # noqa: PLC0415 - only their grammar, no polars work

    if sanitizer_xml.looks_like(text):
        return "sanitizer-xml"
    if sanitizer_text.looks_like(text):
        return "sanitizer-text"
    return None


def _gunzip_head(p: Path) -> str:
    try:
        with gzip.open(p, "rb") as fh:
            return fh.read(_HEAD).decode("utf-8", errors="replace")
    except (OSError, EOFError, zlib.error) as err:
        raise InputError(p, f"is a damaged gzip file ({err})") from None


#: How a JSON array opens: a value, or the end of an empty one ("[3/8] Executing ..." does not)
_JSON_ARRAY_OPENING = re.compile(r'\[\s*(?:[{\["\]]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*[,\]]|true|false|null|$)')


def _looks_like_json(text: str) -> bool:
    s = text.lstrip()
    return s.startswith("{") or bool(_JSON_ARRAY_OPENING.match(s))


#: The tables rocprof v1 writes beside KERN (the kernel dispatches) in its results.db (ROCm's
#: rocprofiler, bin/tblextr.py): HIP and HSA API calls, HIP operations, copies, rocTX ranges.
_ROCPROF_V1_TABLES = frozenset({"HIP", "HSA", "OPS", "COPY", "rocTX"})


def _check_nsys_sqlite(p: Path) -> None:
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
        finally:
            con.close()
    except sqlite3.DatabaseError as err:
        raise InputError(p, f"is a damaged SQLite database ({err})") from None
    if not names:
        raise InputError(p, "is an SQLite database with no tables (an empty or failed nsys export?)")
    if "StringTable" in names and "StringIds" not in names and any(n.startswith("CUPTI_ACTIVITY_KIND_") for n in names):
        raise InputError(p, "is an nvprof database (StringTable and CUPTI_ACTIVITY_KIND_* tables, no StringIds), "
                            "which coach does not read: open it with `nsys import` (Nsight Systems) or profile again "
                            "with nsys")
    if any(n.startswith("rocpd_") for n in names):
        raise InputError(p, "is a ROCm profiler database (rocpd_* tables), which coach does not read: record the "
                            "run with torch.profiler (its ROCm build writes the same JSON trace) and pass that")
    if "KERN" in names and names & _ROCPROF_V1_TABLES and not names & NSYS_MARKER_TABLES:
        raise InputError(p, f"is a rocprof database (AMD ROCm's rocprof v1 results.db: tables "
                            f"{', '.join(sorted(names & ({'KERN'} | _ROCPROF_V1_TABLES)))}), which coach does not read: "
                            "record the run with torch.profiler (its ROCm build writes the JSON trace coach reads) and "
                            "pass that")
    if not names & NSYS_MARKER_TABLES:
        raise InputError(p, "is an SQLite database but not an Nsight Systems export (no StringIds, "
                            "TARGET_INFO_* or CUPTI_* tables)")
