"""Read ``ncu --csv`` exports into the canonical model, the same tables the ``.ncu-rep`` reader fills.

Two layouts, told apart by the header:

``--page raw``
    One row per profiled launch, one column per metric (``gpu__time_duration.sum``, ...), after the
    launch identity columns. A second row gives each metric's unit ("ms", "Gbyte", or base units
    with ``--print-units base``).
``--page details`` (the default page)
    One row per section metric: "Section Name", "Metric Name" (a display label such as "Duration";
    a raw metric name in the "Command line profiler metrics" section that ``--metrics`` adds),
    "Metric Unit", "Metric Value"; where rules ran, also one row per rule result ("Rule Name",
    "Rule Type", "Rule Description", and in recent versions "Estimated Speedup Type" and
    "Estimated Speedup").

Values carry thousands separators ("2,335,800") and display units; both are normalised. Waves per
SM, printed with two decimals, is recomputed from the integers it is the quotient of. Lines
ncu prints around the table when run live ("==PROF==", "==WARNING==", the program's own output)
are skipped. Display labels reach canonical columns through ``ncu_details_names.csv`` (label ->
the metric NVIDIA's section files show under it) and then the same metric mapping as raw pages.

Identity columns changed over versions: 2019.x to 2021.x print "Kernel Time" (a launch timestamp)
and no "Block Size", "Grid Size", "Device", "CC"; ``--nvtx`` adds columns named after the NVTX
domain ("thread Domain:Push/Pop_Range:..."). Any of them may be absent; what a file lacks is null.

An instanced metric (``sass__inst_executed_per_opcode``: a count per executed SASS opcode) prints
as its aggregate only, unless ncu is asked for ``--print-metric-instances``; its per-opcode rows
(``instance`` in the model) come from the ``.ncu-rep`` reader alone.
"""

from __future__ import annotations

import io
import mmap
import re
from functools import lru_cache
from pathlib import Path

import polars as pl

from coach.errors import InputError
from coach.ingest.text import as_utf8, is_utf16
from coach.ingest.ncu_common import RULE_TYPE_SEVERITY, canonical_metrics, devices, launch_config, to_base_units
from coach.model import KernelProfile, Source, make_kernel_profile

# The canonical model keeps every cell of the export as a row of the long metric table, about 10
# times the bytes the cell takes in the file (a 45-character metric name, a float, a unit, a
# text per cell). Measured: the H200 raw page (--set full, 2,227 metrics, ~15 KB a launch)
# replicated to 6,600 launches is 100 MiB of CSV and reads in 8.5 s with a peak of 1.7 GB, its
# metric table 1.06 GB; the peak grows ~15 MB per MiB. 100 MiB keeps the peak within the 2 GB a
# laptop can spare; larger exports are refused with advice rather than left to exhaust memory.
MAX_CSV_BYTES = 100 * 1024 * 1024

DETAILS_NAMES_FILE = Path(__file__).with_name("ncu_details_names.csv")

# The header line: "ID" first and a kernel-name column ("Function Name" in some versions); or the
# header of --print-summary per-kernel, which has no "ID" and ends in "Minimum","Maximum","Average".
_HEADER = re.compile(rb'^(?:\xef\xbb\xbf)?(?:"ID","[^\r\n]*"(?:Kernel|Function) Name"'
                     rb'|"Process ID","[^\r\n]*"(?:Kernel|Function) Name"[^\r\n]*"Minimum","Maximum","Average")',
                     re.MULTILINE)
# --print-summary per-kernel: one row per kernel (not per launch) and metric, with the minimum, maximum
# and average over its "Invocations"; identity columns that tell kernels apart.
_SUMMARY = ("Minimum", "Maximum", "Average")
_SUMMARY_KEY = ("Process ID", "Process Name", "Kernel Name", "Function Name", "Block Size", "Grid Size", "Device",
                "Context", "Stream")
# Lines ncu itself writes (==PROF==, ==WARNING==, ==ERROR==): skipped wherever they appear.
_TOOL_LINE = re.compile(rb"^==[A-Z]+==[^\n]*(?:\n|$)", re.MULTILINE)

# header -> what it identifies; None: read but not kept (host name, launch timestamp)
_IDENTITY = {
    "ID": "launch_id", "Process ID": "process_id", "Process Name": "process_name", "Host Name": None,
    "Kernel Name": "kernel", "Function Name": "kernel", "Kernel Time": None, "Context": "context_id",
    "Stream": "stream_id", "Block Size": "block", "Grid Size": "grid", "Device": "device_id", "CC": "cc",
}
_DETAILS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")
_RULE = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup")

# A number as ncu prints it in the C locale: digits grouped by commas, optional fraction, exponent.
_NUMBER = r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?$"
# A number printed in a decimal-comma locale ("65,77", "27.595.520"), which cannot be read safely.
_DECIMAL_COMMA = r"^[+-]?(?:\d+,\d{1,2}|\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?)$"
# A raw metric name: unit__counter with optional suffixes ("Command line profiler metrics" rows).
_RAW_METRIC = r"^[a-z][a-z0-9_]*__[A-Za-z0-9_.]+$"
_NO_LAUNCHES = "holds no profiled kernel launches (did the ncu filter -k/-c match any kernel?)"
_COLUMNS_PER_PASS = 256  # raw-page metric columns unpivoted together (a --set full page has ~2,200)
_TEMPLATE_DEPTH = 8  # nesting of template arguments stripped from demangled kernel names

# Waves per SM is printed with two decimals on both pages ("248.24"; Nsight Compute 2025.3, with or
# without --print-fp), and the tail estimate turns on the fraction above a whole number: 265 blocks
# on 132 SMs of 2 blocks are 1.0038 waves, printed "1.00", which reads as no tail at all. The tool's
# value is grid size / (SMs x the blocks an SM holds, the least of the occupancy limits), all printed
# as exact integers: the quotient equals ncu_report's value on all 128 launches of the recorded
# H200 reports (traces/h200, tests/data). It replaces the printed number where it rounds to it.
_WAVE_BLOCK_LIMITS = ("launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
                      "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
                      "launch__occupancy_limit_barriers")
# Half the last printed digit of waves per SM, with slack for the float quotient of a value on a
# rounding boundary (x.xx5).
_WAVES_PRINTED_HALF_STEP = 0.005 + 1e-9


def read(path: Path) -> KernelProfile:
    """Read an ``ncu --csv`` export (raw or details page) into a ``KernelProfile``."""
    path = Path(path)
    body, first_line = _table_bytes(path)
    meta: dict[str, object] = {}
    if not _is_utf8(body):
        # Names are decoded leniently (U+FFFD for each bad byte): ncu writes the process and
        # kernel names it is given, and a stray byte in a name does not spoil the measurements.
        meta["text"] = "not valid UTF-8: undecodable bytes in names were replaced by U+FFFD"
    df = _parse(path, body)
    if "ID" not in df.columns and set(_SUMMARY) <= set(df.columns):
        df, meta["summary"] = _summary_as_details(df)
    cols = set(df.columns)
    if cols & set(_DETAILS):
        missing = [c for c in ("Metric Name", "Metric Value") if c not in cols]
        if missing:
            raise InputError(path, f"looks like an ncu --page details export but has no {' or '.join(repr(c) for c in missing)} column")
        page, tables = "details", _details(path, df, first_line)
    else:
        page, tables = "raw", _raw(path, df, first_line)
    if "summary" in meta:
        page = "summary"
    unread = tables.pop("unread_sections", None)
    if unread:
        meta["unread_sections"] = unread
    if nan := tables.pop("unmeasured", None):
        meta["unmeasured"] = nan
    source = Source(path=str(path), format="ncu-csv", tool="Nsight Compute", meta={"page": page, **meta})
    return make_kernel_profile(source, **tables)


# --------------------------------------------------------------------------------------------
# Bytes to a frame of strings
# --------------------------------------------------------------------------------------------


def header_offset(path: Path) -> int | None:
    """Byte offset of the ncu CSV header in ``path``, past any program output before it, or None.

    The search runs over a memory map of the first ``MAX_CSV_BYTES``, so a large file that is not
    an export costs one pass of the regular-expression engine, not a read into memory.
    """
    with path.open("rb") as fh:
        size = path.stat().st_size
        if size == 0:
            return None
        if is_utf16(fh.read(2)):  # saved on Windows: search the transcoded text
            fh.seek(0)
            m = _HEADER.search(as_utf8(fh.read(MAX_CSV_BYTES)))
            return m.start() if m else None
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            m = _HEADER.search(mm, 0, min(size, MAX_CSV_BYTES))
            return m.start() if m else None


def _table_bytes(path: Path) -> tuple[bytes, int]:
    """The CSV table (header onwards, ncu's own message lines removed) and the header's line number."""
    size = path.stat().st_size
    if size == 0:
        raise InputError(path, "is empty")
    if size > MAX_CSV_BYTES:
        raise InputError(path, f"is {size / 2**20:,.0f} MiB; coach reads ncu CSV exports up to {MAX_CSV_BYTES / 2**20:,.0f} MiB "
                               "(profile fewer launches with -k/-c, or read the .ncu-rep)")
    data = as_utf8(path.read_bytes())
    found = _HEADER.search(data, 0, MAX_CSV_BYTES)
    if found is None:
        raise InputError(path, 'is not an ncu CSV export: no header line starting "ID",...,"Kernel Name"')
    offset = found.start()
    first_line = data.count(b"\n", 0, offset) + 1
    body = data[offset:]
    if b"\x00" in body:
        raise InputError(path, "holds NUL bytes: binary data, not CSV (a damaged file?)")
    if b"\n==" in body:
        body = _TOOL_LINE.sub(b"", body)
    return body, first_line


def _summary_as_details(df: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """A --print-summary per-kernel table in the details layout: one "launch" per kernel (its
    identity columns), "ID" numbered in order of appearance, the "Average" over its invocations as
    the value."""
    key = [c for c in _SUMMARY_KEY if c in df.columns]
    ids = (df.select(key).unique(maintain_order=True).with_row_index("_id")
           .with_columns(pl.col("_id").cast(pl.Utf8)))
    out = (df.join(ids, on=key, how="left", maintain_order="left", nulls_equal=True)
           .with_columns(pl.col("_id").alias("ID"), pl.col("Average").alias("Metric Value"))
           .drop("_id", *_SUMMARY))
    return out, ("one launch per kernel: each metric is the average over the kernel's invocations "
                 "(ncu --print-summary per-kernel)")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse(path: Path, body: bytes) -> pl.DataFrame:
    try:
        return pl.read_csv(io.BytesIO(body), infer_schema=False, encoding="utf8-lossy", truncate_ragged_lines=False)
    except (pl.exceptions.PolarsError, ValueError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if "more fields" in detail:
            detail = "a row has more fields than the header"
        raise InputError(path, f"is damaged or truncated CSV ({detail})") from None


def _check_rows(path: Path, df: pl.DataFrame, required: list[str], first_line: int, skipped: int) -> None:
    """A row with a required field missing was cut short: refuse it, naming its line."""
    short = df.select(pl.any_horizontal(pl.col(required).is_null()).arg_true().first()).item()
    if short is not None:
        line = first_line + 1 + skipped + short
        raise InputError(path, f"is truncated or damaged: line {line} has fewer fields than the header")
    odd = df.select(pl.col("ID").str.replace_all(",", "").cast(pl.Int64, strict=False).is_null().arg_true().first()).item()
    if odd is not None:
        line = first_line + 1 + skipped + odd
        raise InputError(path, f"line {line} has no launch ID (two exports joined together, or program output inside the table?)")


def _check_locale(path: Path, df: pl.DataFrame, columns: list[str]) -> None:
    """Refuse numbers printed in a decimal-comma locale, which would otherwise read as wrong numbers."""
    bad = df.select(pl.concat_list(pl.col(columns).filter(pl.col(columns).str.contains(_DECIMAL_COMMA)).first()).list.drop_nulls().list.first()).item()
    if bad is not None:
        raise InputError(path, f'prints numbers with a decimal comma (e.g. "{bad}"): export it again with LC_ALL=C')


def _numbers(raw: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(value, text) from a printed cell: the number without separators, or the text if not a number."""
    s = raw.str.strip_chars()
    is_num = s.str.contains(_NUMBER)
    value = pl.when(is_num).then(s.str.replace_all(",", "").cast(pl.Float64, strict=False))
    text = pl.when(~is_num & (s != "")).then(s)
    return value.alias("raw_value"), text.alias("text")


# --------------------------------------------------------------------------------------------
# The two pages
# --------------------------------------------------------------------------------------------


def _is_nvtx(column: str) -> bool:
    return "Domain:" in column


def _raw(path: Path, df: pl.DataFrame, first_line: int) -> dict[str, pl.DataFrame | None]:
    identity = [c for c in df.columns if c in _IDENTITY or _is_nvtx(c)]
    metric_cols = [c for c in df.columns if c not in identity]
    if not any("__" in c for c in metric_cols):
        raise InputError(path, "has no column that is an Nsight Compute metric (unit__counter...) and no details-page "
                               "columns: an unknown ncu CSV layout")
    has_units = df.height > 0 and (df["ID"][0] or "") == ""
    units = df.head(1).select(metric_cols) if has_units else None
    rows = df.slice(1) if has_units else df
    if rows.height == 0:
        raise InputError(path, _NO_LAUNCHES)
    _check_rows(path, rows, df.columns, first_line, int(has_units))
    rows = rows.with_columns(_launch_id())
    _unique_ids(path, rows)
    _check_locale(path, rows, metric_cols)
    unit_of = (units.unpivot(variable_name="metric", value_name="raw_unit") if units is not None
               else pl.DataFrame({"metric": metric_cols, "raw_unit": [""] * len(metric_cols)}))
    value, text = _numbers(pl.col("raw"))
    # Built a slice of columns at a time: the long table's intermediate strings (metric names and
    # printed values, once per cell) then never exist for the whole page at once.
    parts = []
    for start in range(0, len(metric_cols), _COLUMNS_PER_PASS):
        cols = metric_cols[start:start + _COLUMNS_PER_PASS]
        long = (
            rows.lazy().select("launch_id", *cols)
            .unpivot(index="launch_id", variable_name="metric", value_name="raw")
            .join(unit_of.lazy(), on="metric", how="left", maintain_order="left")
            .select("launch_id", "metric", value, "raw_unit", text)
        )
        parts.append(to_base_units(long, unit_of["raw_unit"]))
    metrics = pl.concat(parts)
    launches = _launches(path, _identity(rows), metrics)
    dev = devices(metrics)
    return {"launches": launches, "metrics": metrics, "rules": None, "devices": dev if dev is not None else _header_devices(rows),
            "unmeasured": unmeasured(metrics)}


def details_tables(path: Path, df: pl.DataFrame) -> dict[str, pl.DataFrame | None]:
    """The canonical tables of a details page given as a frame of strings with the export's column
    names (``coach.ingest.ncu_text`` builds one from ncu's text report)."""
    return _details(path, df, 1)


def _details(path: Path, df: pl.DataFrame, first_line: int) -> dict[str, pl.DataFrame | None]:
    if df.height == 0:
        raise InputError(path, _NO_LAUNCHES)
    present_details = [c for c in _DETAILS if c in df.columns]
    _check_rows(path, df, ["ID", *present_details], first_line, 0)
    df = df.with_columns(_launch_id(), *[pl.lit("").alias(c) for c in (*_DETAILS, *_RULE) if c not in df.columns])
    is_rule = pl.col("Rule Name").fill_null("") != ""
    rows = df.filter(~is_rule & (pl.col("Metric Name").fill_null("") != ""))
    _check_locale(path, rows, ["Metric Value"])
    name, section = pl.col("Metric Name"), pl.col("Section Name").fill_null("")
    is_raw_name = name.str.contains(_RAW_METRIC)
    value, text = _numbers(pl.col("Metric Value"))
    long = rows.select(
        "launch_id",
        pl.when(is_raw_name).then(name).otherwise(section + "/" + name).alias("metric"),
        pl.when(is_raw_name).then(name).alias("routed"),
        section.alias("section"), name.alias("name"), value, pl.col("Metric Unit").alias("raw_unit"), text,
    )
    routed = (
        long.join(_details_names(), on=["section", "name"], how="left", maintain_order="left")
        .select("launch_id", pl.coalesce("routed", "label_metric").alias("metric"), "raw_value", "raw_unit", "text")
        .filter(pl.col("metric").is_not_null())
    )
    metrics = to_base_units(long.select("launch_id", "metric", "raw_value", "raw_unit", "text"))
    routed = to_base_units(routed)
    launches = _launches(path, _identity(df.unique("launch_id", keep="first", maintain_order=True)), routed)
    return {"launches": launches, "metrics": metrics, "rules": _rules(df.filter(is_rule)), "devices": _header_devices(df),
            "unread_sections": _unread_sections(long), "unmeasured": unmeasured(routed)}


#: The section ``--metrics`` adds: its rows carry raw metric names, read as such.
_CLI_METRICS_SECTION = "Command line profiler metrics"


def _unread_sections(long: pl.DataFrame) -> list[str]:
    """Sections of a details page that ``ncu_details_names.csv`` does not know (newer ones, such as
    2025.4's Tile section): their rows stay in the metric table under "section/label", and no rule
    reads them. Sections whose rows carry raw metric names are read as those metrics."""
    known = _details_names()["section"].unique()
    sections = long.filter(pl.col("routed").is_null() & (pl.col("section") != "") & (pl.col("section") != _CLI_METRICS_SECTION)
                           & ~pl.col("section").is_in(known.implode()))
    return sections["section"].unique(maintain_order=True).to_list()


@lru_cache(maxsize=1)
def _details_names() -> pl.DataFrame:
    """(section, name) -> label_metric: the metric NVIDIA's section files show under each label."""
    return pl.read_csv(DETAILS_NAMES_FILE, infer_schema=False).select("section", "name", pl.col("metric").alias("label_metric"))


# --------------------------------------------------------------------------------------------
# Canonical tables
# --------------------------------------------------------------------------------------------


def _launch_id() -> pl.Expr:
    return pl.col("ID").str.replace_all(",", "").cast(pl.Int64).alias("launch_id")


def _unique_ids(path: Path, rows: pl.DataFrame) -> None:
    dup = rows.filter(pl.col("launch_id").is_duplicated())["launch_id"]
    if dup.len():
        raise InputError(path, f"lists launch ID {dup[0]} more than once (two exports joined together?)")


def _int(col: str) -> pl.Expr:
    return pl.col(col).str.replace_all(",", "").cast(pl.Int64, strict=False)


def _dims(col: str, prefix: str) -> list[pl.Expr]:
    """ "(256, 1, 1)" -> prefix_x, prefix_y, prefix_z and their product prefix_size."""
    parts = pl.col(col).str.extract_all(r"\d+")
    dims = [parts.list.get(i, null_on_oob=True).cast(pl.Int64).alias(f"{prefix}_{axis}") for i, axis in enumerate("xyz")]
    size = (parts.list.get(0, null_on_oob=True).cast(pl.Int64) * parts.list.get(1, null_on_oob=True).cast(pl.Int64)
            * parts.list.get(2, null_on_oob=True).cast(pl.Int64)).alias(f"{prefix}_size")
    return [*dims, size]


def _function_name(name: pl.Expr) -> pl.Expr:
    """What ncu's --kernel-name-base function prints: no return type, namespace, template or parameters."""
    e = name.str.replace_all(r"\(anonymous namespace\)::", "")
    for _ in range(_TEMPLATE_DEPTH):
        e = e.str.replace_all(r"<[^<>]*>", "")
    return e.str.replace(r"\(.*$", "").str.strip_chars().str.extract(r"([^\s:*&]+)$")


def _identity(rows: pl.DataFrame) -> pl.DataFrame:
    cols = set(rows.columns)
    exprs: list[pl.Expr] = [pl.col("launch_id")]
    kernel = next((c for c in rows.columns if _IDENTITY.get(c) == "kernel"), None)
    if kernel:
        name = pl.col(kernel)
        mangled = name.str.starts_with("_Z")
        exprs += [
            pl.when(mangled).then(name).otherwise(_function_name(name)).alias("kernel_name"),
            pl.when(~mangled).then(name).alias("demangled_name"),
            pl.when(mangled).then(name).alias("mangled_name"),
        ]
    for col in ("Process ID", "Context", "Stream", "Device"):
        if col in cols:
            exprs.append(_int(col).alias(_IDENTITY[col]))
    if "Process Name" in cols:
        exprs.append(pl.col("Process Name").alias("process_name"))
    if "Block Size" in cols:
        exprs += _dims("Block Size", "block")
    if "Grid Size" in cols:
        exprs += _dims("Grid Size", "grid")
    nvtx = [c for c in rows.columns if _is_nvtx(c)]
    if nvtx:
        exprs.append(pl.coalesce([pl.when(pl.col(c) != "").then(pl.col(c)) for c in nvtx]).alias("nvtx_range"))
    return rows.select(exprs)


#: what ncu prints where it has no value: "(!) nan", "nan", "(!) n/a", "n/a"
_UNMEASURED = r"^(?:\(!\)\s*)?(?:nan|n/a)$"
_NCU_ERROR = re.compile(r"^==ERROR== (.+?)\s*$", re.MULTILINE)


def unmeasured(metrics: pl.DataFrame) -> dict[str, list[str]]:
    """launch id -> the canonical columns the report names but printed as nan or n/a (Nsight Compute could
    not measure them: a GPU it does not fully support, a failed launch). A rule that lacks one of them says
    so, rather than that the report does not hold it."""
    if metrics.height == 0 or "text" not in metrics.columns:
        return {}
    marked = metrics.filter(pl.col("value").is_null()
                            & pl.col("text").fill_null("").str.strip_chars().str.contains(_UNMEASURED))
    if marked.height == 0:
        return {}
    canonical = canonical_metrics(marked.with_columns(pl.lit(0.0).alias("value")))
    columns = [c for c in canonical.columns if c != "launch_id"]
    out: dict[str, list[str]] = {}
    for row in canonical.iter_rows(named=True):  # one row per launch: a handful
        cols = [c for c in columns if row[c] is not None]
        if cols:
            out[str(row["launch_id"])] = cols
    return out


def _all_unmeasured(metrics: pl.DataFrame) -> bool:
    """Every value of the report is ncu's mark for a value it could not measure."""
    if metrics.height == 0 or "text" not in metrics.columns:
        return False
    return metrics.select(pl.col("value").is_null().all()
                          & pl.col("text").fill_null("").str.strip_chars().str.contains(_UNMEASURED).all()).item()


def _ncu_errors(path: Path) -> str:
    """ncu's own error lines in the log (", which printed: LaunchFailed; ..."), the first three."""
    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 16).decode("utf-8", errors="replace")
    except OSError:
        return ""
    errors = [e.rstrip(".") for e in _NCU_ERROR.findall(head)
              if not e.startswith("An error occurred while trying to profile")][:3]
    return f" (ncu printed: {'; '.join(errors)})" if errors else ""


def _launches(path: Path, identity: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """Identity columns, launch configuration (metrics first, header as fallback), canonical metrics."""
    canonical = canonical_metrics(metrics)
    if canonical.drop("launch_id").select(pl.any_horizontal(pl.all().is_not_null()).any()).item() is not True:
        if _all_unmeasured(metrics):
            raise InputError(path, "holds no measured value: Nsight Compute printed every metric as nan or n/a, as it "
                                   "does when the profiled launch failed or could not be measured"
                                   + _ncu_errors(path) + "; fix the launch and profile again")
        raise InputError(path, "has none of the metrics coach analyses (no gpu__time_duration, dram__bytes, sm__throughput, ...): "
                               "an unsupported Nsight Compute version, or exported with too few --metrics/--section")
    config = launch_config(metrics)
    shared = [c for c in config.columns if c in identity.columns and c != "launch_id"]
    out = identity.join(config, on="launch_id", how="left", suffix="_metric")
    out = out.with_columns(pl.coalesce(f"{c}_metric", c).alias(c) for c in shared).drop(f"{c}_metric" for c in shared)
    out = out.join(canonical, on="launch_id", how="left", maintain_order="left").sort("launch_id")
    return _exact_waves(out, metrics)


def _exact_waves(launches: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """``waves_per_sm`` to full precision from the integers it is computed from (``_WAVE_BLOCK_LIMITS``).

    The printed value stays where a term is missing or the quotient does not round to it (a limit
    not exported, or a tool version that counts waves otherwise). A report without the SM count (the
    text pages of 2022 print none) gets the count that puts the printed value within its rounding: on
    torch.randn's 864 blocks at 6 per SM printed as 1.33 waves (tests/data/wild_public/
    nvfuser_playground_randn_ncu_head.log), 108 SMs, a wave of 648 blocks and a tail of 216, where
    864 / 1.33 would say 650 and 214.
    """
    if "grid_size" not in launches.columns:
        return launches
    blocks_per_sm = (
        metrics.filter(pl.col("metric").is_in(_WAVE_BLOCK_LIMITS) & pl.col("value").is_not_null())
        .group_by("launch_id").agg(pl.col("value").min().alias("_blocks_per_sm"))
    )
    inferred = (pl.col("grid_size") / pl.col("waves_per_sm") / pl.col("_blocks_per_sm")).round(0)
    sms = pl.col("sm_count") if "sm_count" in launches.columns else pl.lit(None, dtype=pl.Float64)
    slots = pl.coalesce(sms, pl.when(pl.col("waves_per_sm") > 0).then(inferred)) * pl.col("_blocks_per_sm")
    exact = pl.when(slots > 0).then(pl.col("grid_size") / slots)
    printed = pl.col("waves_per_sm")
    return (
        launches.join(blocks_per_sm, on="launch_id", how="left", maintain_order="left")
        .with_columns(pl.when((exact - printed).abs() <= _WAVES_PRINTED_HALF_STEP).then(exact).otherwise(printed).alias("waves_per_sm"))
        .drop("_blocks_per_sm")
    )


def _rules(rows: pl.DataFrame) -> pl.DataFrame | None:
    if rows.height == 0:
        return None
    empty_to_null = lambda c: pl.when(pl.col(c).fill_null("") != "").then(pl.col(c))  # noqa: E731
    return rows.select(
        "launch_id",
        pl.col("Rule Name").alias("rule_id"),
        empty_to_null("Section Name").alias("section_id"),
        pl.col("Rule Type").fill_null("").replace_strict(RULE_TYPE_SEVERITY, default=pl.col("Rule Type").str.to_lowercase()).alias("severity"),
        empty_to_null("Rule Description").alias("message"),
        empty_to_null("Estimated Speedup Type").alias("speedup_type"),
        empty_to_null("Estimated Speedup").str.replace_all(",", "").cast(pl.Float64, strict=False).alias("speedup_pct"),
    )


def _header_devices(rows: pl.DataFrame) -> pl.DataFrame | None:
    """Device ID and compute capability from the "Device" and "CC" columns, where the file has them."""
    if "Device" not in rows.columns:
        return None
    cc = pl.col("CC").str.extract_all(r"\d+") if "CC" in rows.columns else None
    exprs = [_int("Device").alias("device_id")]
    if cc is not None:
        exprs += [cc.list.get(0, null_on_oob=True).cast(pl.Int64).alias("cc_major"),
                  cc.list.get(1, null_on_oob=True).cast(pl.Int64).alias("cc_minor")]
    return rows.select(exprs).unique("device_id", keep="first", maintain_order=True)
