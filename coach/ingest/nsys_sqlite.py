"""Read an Nsight Systems SQLite export (``nsys export --type sqlite``) into a ``Timeline``.

Reading is columnar end to end, because real exports hold millions of kernel and API rows: each
raw table is one SELECT of only the columns coach uses (``nsys_schema`` says which, for each nsys
version), fetched through ADBC's Arrow stream straight into Arrow (ADBC's statements themselves, not
its DB-API layer, whose import of ``pyarrow.dataset`` alone is 0.07 s of every run), large tables in
parallel, the columns of a large kernel table that hold one value per kernel name once per name
(``PER_NAME``); string ids are looked up in only the ``StringIds`` rows referenced; enumerations,
process ids and NVTX nesting are Polars expressions. No Python code runs per row.

Timestamps stay as nsys records them: integer nanoseconds of session time, counted from the start
of the capture session (whose wall-clock time is ``Source.meta["session_start_utc"]``).

Strings are whatever bytes the profiled program passed (an NVTX message can be any ``char*``), so
text is fetched as bytes and decoded as UTF-8, with U+FFFD for bytes that are not.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import adbc_driver_manager
import adbc_driver_sqlite
import polars as pl
import pyarrow as pa

from coach.errors import InputError
from coach.ingest import nsys_schema as schema
from coach.ingest.detect import NSYS_MARKER_TABLES
from coach.model import Source, Timeline, make_table, make_timeline

#: Staging columns a raw table must have to be read at all. A table without them is a layout coach
#: does not know, and guessing would give wrong numbers.
REQUIRED: dict[str, tuple[str, ...]] = {
    "kernels": ("start_ns", "end_ns", "name_id"),
    "graphs": ("start_ns", "end_ns", "correlation_id"),
    "memcpy": ("start_ns", "end_ns"),
    "memset": ("start_ns", "end_ns"),
    "api": ("start_ns", "end_ns", "name_id"),
    "sync": ("start_ns", "end_ns"),
    "nvtx": ("start_ns", "event_type"),
    "devices": ("device_id",),
}

class NothingRecorded(InputError):
    """A readable export that holds nothing to analyse: the capture recorded no CUDA activity."""


#: Tables a timeline is still right without: a device-properties, synchronisation or NVTX table of a layout
#: coach does not know is left out (and said so in ``Source.meta["unread"]``) rather than failing the
#: whole report; the kernels, copies and API calls are what every number rests on.
OPTIONAL_TABLES = frozenset({"devices", "sync", "nvtx", "graphs"})

#: Tables that hold CUDA activity or annotations; an export with none of them has nothing to analyse.
ACTIVITY_TABLES = ("kernels", "memcpy", "memset", "api", "nvtx")

#: Rows per parallel read of a large table: big enough that a read's fixed cost (a connection, a
#: statement) is negligible, small enough to spread a million-row table over a laptop's cores.
PARALLEL_READ_ROWS = 250_000

#: Columns that most programs record with one value per kernel: the launch configuration, and in a
#: program of one process on one GPU and stream the device, context, stream and process too. Of a
#: large table, each column that the export shows to hold one value per name (key) is read once per
#: distinct name (one ``SELECT DISTINCT`` that SQLite answers without the driver fetching every row,
#: which is most of the cost of a column: about 0.06 s per million rows) and gathered into the rows;
#: the rest are fetched row by row. The rows are the same either way. (The API calls' thread, kind
#: and return code read so made no difference that four alternating reads of a million could see.)
PER_NAME: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kernels": (("name_id", "demangled_name_id"),
                ("device_id", "context_id", "stream_id", "global_pid", "grid_x", "grid_y", "grid_z", "block_x",
                 "block_y", "block_z", "registers_per_thread", "shared_mem_static_bytes", "shared_mem_dynamic_bytes",
                 "graph_id")),
}

#: Rows the first look at a table's per-name columns reads: the columns with one value per name there
#: are the candidates the whole table is checked for.
_PER_NAME_SAMPLE_ROWS = 10_000

#: Distinct (name, per-name columns) rows above which a table is read row by row after all: so many
#: that the columns are not one per name.
_PER_NAME_MAX = 50_000

#: Rows per Arrow batch the driver returns: one batch per parallel read (the driver's default, 1024,
#: leaves a million-row table in a thousand chunks that every later step would walk).
_BATCH_ROWS_OPTION = "adbc.sqlite.query.batch_rows"
_BATCH_ROWS = PARALLEL_READ_ROWS

#: globalPid / globalTid pack the process id in bits 24-47 and the thread id in bits 0-23
#: (NVIDIA, Nsight Systems "SQLite examples: serialized process and thread identifiers").
_ID_BITS = 24
_ID_MASK = (1 << _ID_BITS) - 1

#: CUPTI's "no id" value, CUPTI_SYNCHRONIZATION_INVALID_VALUE, stored as an unsigned 32-bit -1: the
#: event id of a synchronisation record that did not wait on an event.
_CUPTI_INVALID_ID = 0xFFFFFFFF

#: CUDA function names carry the version they appeared in (``cudaLaunchKernel_v7000``); the suffix is
#: dropped so that names read as in CUDA's documentation, as ``nsys stats`` does.
_API_VERSION_SUFFIX = r"_v\d+$"

#: ``TARGET_INFO_SYSTEM_ENV`` entries worth keeping as provenance.
_SYSTEM_KEYS = ("NvDriverVersion", "CudaDriverVersion", "OsDescription", "CpuDescription", "CpuCores")

_ENUMS = ("memcpy_kind", "memory_kind", "sync_kind", "nvtx_kind", "api_kind")

_NVTX_KINDS = ("push_pop", "start_end", "mark")

#: Sort key for a range still open when the capture ended: it encloses everything after it.
_OPEN_END = (1 << 63) - 1


def read(path: str | Path) -> Timeline:
    """Read the export at ``path``; raise ``InputError`` for a file that is not a readable one."""
    path = Path(path)
    with _Export.open(path) as export:
        meta = export.meta()
        version = meta.get("export", {}).get("EXPORT_PRODUCT_VERSION")
        raw = export.read(REQUIRED)
        if export.unread:
            meta["unread"] = export.unread
        if export.variants:
            meta["table_variants"] = export.variants
        if all(raw[t] is None or raw[t].is_empty() for t in ACTIVITY_TABLES):
            raise NothingRecorded(path, "no GPU activity was recorded: no CUDA kernel, copy, API or NVTX records (was it "
                                   "profiled with --trace=cuda?)" + _tables_note(export.held()) + f" ({export.written_by})")
        strings = export.strings(raw)
        enums = {name: export.enum(name) for name in _ENUMS}
        if export.assumed:
            meta["assumed"] = export.assumed
        newer = _newer_schema(meta.get("export", {}))
        if newer:
            meta["schema_newer"] = newer
    # each staging frame is let go as soon as its table is built (pop), so that memory holds the
    # staging frames and the tables of one table at a time, not of all of them
    api = _large_constants(_api(raw.pop("api"), strings, enums["api_kind"]))
    source = Source(path=str(path), format="nsys-sqlite", tool="Nsight Systems", tool_version=version, meta=meta)
    tables = {
        "kernels": _large_constants(make_table("kernels", _with_graphs(_kernels(raw.pop("kernels"), strings),
                                                                       raw.pop("graphs")))),
        "memcpy": _memcpy(raw.pop("memcpy"), enums["memcpy_kind"], enums["memory_kind"]),
        "memset": _memset(raw.pop("memset"), enums["memory_kind"]),
        "sync": _sync(raw.pop("sync"), api, enums["sync_kind"]),
        "nvtx": _nvtx(raw.pop("nvtx"), strings, enums["nvtx_kind"]),
    }
    devices = raw.pop("devices")
    return make_timeline(
        source, api=make_table("api", api), **tables,
        devices=None if devices is None else devices.unique("device_id", keep="first").sort("device_id"),
    )


_VERSIONED = re.compile(r"^(?P<name>.+)_V(?P<n>\d+)$")


def _versioned_variants(tables: dict[str, frozenset[str]]) -> dict[str, str]:
    """Documented table name -> the highest ``_V<n>`` variant of it, for each table coach reads that
    the export holds only under versioned names (``CUPTI_ACTIVITY_KIND_KERNEL_V3``; public readers of
    nsys exports meet such names, though NVIDIA's schema reference documents the plain ones). A plain
    name, where the export has it, is read instead."""
    known = set(schema.columns()["raw_table"]) | set(schema.enums()["raw_table"].drop_nulls())
    best: dict[str, tuple[int, str]] = {}
    for table in tables:
        m = _VERSIONED.match(table)
        if m and m["name"] in known and m["name"] not in tables:
            n = int(m["n"])
            if n > best.get(m["name"], (-1, ""))[0]:
                best[m["name"]] = (n, table)
    return {name: actual for name, (_, actual) in best.items()}


def _written_by(export_meta: dict, tables: dict[str, frozenset[str]]) -> str:
    """Which nsys wrote the export and in which schema, as META_DATA_EXPORT (EXPORT_META_DATA before
    2023) records it: "written by nsys 2025.3.2.0, export schema 3.20.3"."""
    product, schema_version = export_meta.get("EXPORT_PRODUCT_VERSION"), export_meta.get("EXPORT_SCHEMA_VERSION")
    if not product and not schema_version:
        held = "META_DATA_EXPORT" in tables or "EXPORT_META_DATA" in tables
        return "written by an nsys of unknown version: " + ("its export metadata names none" if held else
                                                             "it has no META_DATA_EXPORT table")
    return f"written by nsys {product or 'of unknown version'}" + (f", export schema {schema_version}" if schema_version else "")


#: The export schema's major version of every export coach was checked against: 3.0.0 (nsys 2022.4),
#: 3.20.3 (2025.3); NVIDIA's schema reference of 2026.4 lists the same tables and columns coach reads.
SCHEMA_MAJOR_CHECKED = 3


def _newer_schema(export_meta: dict) -> str | None:
    """A sentence where the export's schema has a major version newer than ``SCHEMA_MAJOR_CHECKED``."""
    version = str(export_meta.get("EXPORT_SCHEMA_VERSION") or "")
    major = version.split(".")[0]
    if not major.isdigit() or int(major) <= SCHEMA_MAJOR_CHECKED:
        return None
    product = export_meta.get("EXPORT_PRODUCT_VERSION")
    return (f"The export's schema, {version}" + (f" (nsys {product})" if product else "") + ", is newer than any coach "
            f"was checked against (major version {SCHEMA_MAJOR_CHECKED}: nsys 2022.4 to 2026.4): it was read by the table "
            "and column names coach knows, and a table or column renamed in it would be missing.")


#: How many of an unknown enumeration's names a note shows.
_ENUM_NAMES_SHOWN = 3

#: How many of an empty export's tables its error names.
_TABLES_SHOWN = 12


def _tables_note(tables: dict[str, frozenset[str]]) -> str:
    """A short list of the tables an export without activity holds, so the user sees what was recorded."""
    names = sorted(t for t in tables if not t.startswith("ENUM_"))
    more = len(names) - _TABLES_SHOWN
    shown = ", ".join(names[:_TABLES_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return f"; it holds only {shown}" if names else ""


# --------------------------------------------------------------------------------------------
# The export: what it holds, and reading it
# --------------------------------------------------------------------------------------------


_LISTING = ("SELECT m.name AS t, p.name AS c FROM sqlite_master AS m, pragma_table_info(m.name) AS p "
            "WHERE m.type IN ({types})")


class _Export:
    """An open export: its tables and columns, and columnar reads that fail as ``InputError``."""

    def __init__(self, path: Path, connection: _Connection):
        self.path = path
        self._con = connection
        #: canonical table -> why it was left out (an optional table of a layout coach does not know)
        self.unread: dict[str, str] = {}
        #: raw table -> what coach assumed in its place (an enumeration whose names it does not know)
        self.assumed: dict[str, str] = {}
        #: which nsys wrote the export, for every refusal to name (set by ``meta``)
        self.written_by = "written by an nsys of unknown version"
        try:
            listing = self._arrow(_LISTING.format(types="'table', 'view'"))
        except InputError:  # a view over a table that is gone (added after the export) cannot be listed
            listing = self._arrow(_LISTING.format(types="'table'"))
        grouped = pl.from_arrow(listing).group_by("t").agg("c")
        self.tables: dict[str, frozenset[str]] = {t: frozenset(c) for t, c in grouped.iter_rows()}
        #: documented table name -> the versioned name this export holds it under (``..._V3``)
        self.variants = _versioned_variants(self.tables)
        for name, actual in self.variants.items():
            self.tables[name] = self.tables[actual]
        if not self.tables:
            raise InputError(path, "is an SQLite database with no tables (an empty or failed nsys export?)")
        if not self.tables.keys() & NSYS_MARKER_TABLES:
            raise InputError(path, "is an SQLite database but not an Nsight Systems export (no StringIds, "
                                   "TARGET_INFO_* or CUPTI_* tables)")

    def held(self) -> dict[str, frozenset[str]]:
        """The export's tables under the names it holds them by."""
        return {t: c for t, c in self.tables.items() if t not in self.variants}

    def _plan(self, table: str, needs: tuple[str, ...] = ()) -> schema.TablePlan | None:
        """``schema.plan`` for this export, reading a table held under a versioned name from there."""
        plan = schema.plan(table, self.tables, needs=needs)
        if plan is not None and plan.raw_table in self.variants:
            plan = dataclasses.replace(plan, raw_table=self.variants[plan.raw_table])
        return plan

    @classmethod
    @contextmanager
    def open(cls, path: Path) -> Iterator[_Export]:
        if not path.is_file():
            raise InputError(path, "no such file")
        if path.stat().st_size == 0:
            raise InputError(path, "is empty")
        connection = cls._connect(path)
        try:
            yield cls(path, connection)
        finally:
            connection.close()

    def read(self, tables: Iterable[str]) -> dict[str, pl.DataFrame | None]:
        """Each canonical table's staging frame (every column ``nsys_columns.csv`` names for it, null
        where the export lacks it), or None where the export holds none of its raw tables.

        Large tables are read in rowid ranges on parallel connections (SQLite decodes rows on one
        core per statement; the driver releases the GIL while it does), in rowid order."""
        plans: dict[str, schema.TablePlan] = {}
        for table in tables:
            plan = self._plan(table, needs=REQUIRED[table])
            if plan is None:
                continue
            missing = [c for c in REQUIRED[table] if c not in plan.select]
            if missing and table in OPTIONAL_TABLES:
                self.unread[table] = (f"{plan.raw_table} has no column for {', '.join(missing)} (columns: "
                                      f"{', '.join(sorted(self.tables[plan.raw_table]))})")
                continue
            if missing:
                documented = next((k for k, v in self.variants.items() if v == plan.raw_table), plan.raw_table)
                raw = schema.columns().filter((pl.col("table") == table) & (pl.col("raw_table") == documented))
                named = [f"{c} ({' or '.join(raw.filter(pl.col('column') == c)['raw_column'].unique(maintain_order=True))})"
                         for c in missing]
                raise InputError(self.path, f"table {plan.raw_table} lacks the columns for {', '.join(named)}: an "
                                            f"export layout coach does not know ({self.written_by})")
            plans[table] = plan
        jobs = self._ranges(plans)
        if all(len(ranges) == 1 for ranges in jobs.values()):  # a small export: threads would cost more than they save
            frames = {table: self._frame(plans[table].sql(), text=plans[table].text_columns) for table in jobs}
            return {table: (self._with_all_columns(table, frames[table]) if table in frames else None)
                    for table in tables}
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            # the per-name columns looked at first, while the other tables are read
            looks = {table: pool.submit(self._per_name, table, plans[table]) for table, ranges in jobs.items()
                     if table in PER_NAME and len(ranges) > 1}

            def submit(table: str, plan: schema.TablePlan) -> list:
                return [pool.submit(self._frame, plan.sql() + where, params, text=plan.text_columns, own_connection=True)
                        for where, params in jobs[table]]

            parts = {table: submit(table, plans[table]) for table in jobs if table not in looks}
            by_name = {}
            for table, look in looks.items():
                by_name[table] = look.result()
                narrow = plans[table]
                if by_name[table] is not None:
                    held = set(by_name[table].columns) - set(PER_NAME[table][0])
                    narrow = dataclasses.replace(narrow, select={c: e for c, e in narrow.select.items() if c not in held})
                parts[table] = submit(table, narrow)
            frames = {table: pl.concat([f.result() for f in futures], rechunk=False)
                      for table, futures in parts.items()}
        for table, values in by_name.items():
            if values is not None:
                frames[table] = _gathered(frames[table], values, PER_NAME[table][0])
        frames = {table: _constants_as_scalars(frame) for table, frame in frames.items()}
        return {table: (self._with_all_columns(table, frames[table]) if table in frames else None) for table in tables}

    def _per_name(self, table: str, plan: schema.TablePlan) -> pl.DataFrame | None:
        """The columns of ``PER_NAME[table]`` that hold one value per name throughout the table, with
        that value: one row per distinct name (the key columns and those columns); None where none
        does, or the names cannot serve as a key (ids beyond 31 bits, or too many of them)."""
        key, candidates = PER_NAME[table]
        if not all(k in plan.select for k in key):
            return None
        columns = [c for c in candidates if c in plan.select and c not in plan.text_columns]

        def distinct(cols: list[str], source: str, limit: int | None = None) -> pl.DataFrame:
            selected = ", ".join(f"{plan.select[c]} AS {schema.quote(c)}" for c in (*key, *cols))
            return self._frame(f"SELECT DISTINCT {selected} FROM {source}" + (f" LIMIT {limit}" if limit else ""),
                               own_connection=True)

        raw = schema.quote(plan.raw_table)
        sample = distinct(columns, f"(SELECT * FROM {raw} LIMIT {_PER_NAME_SAMPLE_ROWS})")
        columns = _one_per_name(sample, key, columns)
        if not columns:
            return None
        whole = distinct(columns, raw, limit=_PER_NAME_MAX + 1)
        columns = _one_per_name(whole, key, columns)
        if not columns or whole.height > _PER_NAME_MAX or not _key_fits(whole, key):
            return None
        return whole.select(*key, *columns).unique(list(key), maintain_order=True)

    def _ranges(self, plans: dict[str, schema.TablePlan]) -> dict[str, list[tuple[str, tuple]]]:
        """For each table, WHERE clauses (with parameters) that split its raw table into rowid ranges;
        the bounds of every table from one query (a small export's reading is mostly such fixed costs)."""
        if not plans:
            return {}
        # Two subqueries per table: SQLite answers a lone min() or max() of the rowid from the b-tree's
        # ends, but scans the whole table for both in one SELECT.
        columns = ", ".join(f'(SELECT min(rowid) FROM "{plan.raw_table}") AS "first{i}", '
                            f'(SELECT max(rowid) FROM "{plan.raw_table}") AS "last{i}"'
                            for i, plan in enumerate(plans.values()))
        bounds = self._arrow(f"SELECT {columns}").to_pylist()[0]
        return {table: _rowid_ranges(bounds[f"first{i}"], bounds[f"last{i}"]) for i, table in enumerate(plans)}

    @staticmethod
    def _with_all_columns(table: str, frame: pl.DataFrame) -> pl.DataFrame:
        absent = [pl.lit(None, pl.String if kind == "text" else pl.Int64).alias(name)
                  for name, kind in schema.staging_columns(table) if name not in frame.columns]
        return frame.with_columns(absent) if absent else frame

    def strings(self, raw: dict[str, pl.DataFrame | None]) -> pl.DataFrame:
        """``(id, value)`` for every string id the staging frames refer to."""
        columns = [frame.get_column(col) for frame, col in ((raw["kernels"], "name_id"),
                                                            (raw["kernels"], "demangled_name_id"),
                                                            (raw["api"], "name_id"),
                                                            (raw["nvtx"], "text_id")) if frame is not None]
        ids = pl.concat(columns).drop_nulls().unique() if columns else pl.Series("id", [], pl.Int64)
        if not len(ids):
            return pl.DataFrame(schema={"id": pl.Int64, "value": pl.String})
        plan = self._plan("strings")
        if plan is None:
            raise InputError(self.path, "refers to names by string id but has no StringIds table (a damaged export, "
                                        f"or a layout coach does not know; {self.written_by})")
        sql = f"{plan.sql()} WHERE {plan.select['id']} IN (SELECT value FROM json_each(?))"
        return self._frame(sql, (json.dumps(ids.to_list()),), text=plan.text_columns)

    def enum(self, name: str) -> pl.DataFrame:
        """``(id, value)`` of enumeration ``name``, from the export's own table where it has one."""
        table = schema.enum_table(name)
        own = None
        if table in self.tables and {"id", "name"} <= self.tables[table]:
            own = self._frame(f'SELECT "id", CAST("name" AS BLOB) AS "name" FROM "{self.variants.get(table, table)}"',
                              text=frozenset({"name"}))
            if own.height and not schema.enum_names_known(name, own):
                shown = ", ".join(own["name"].drop_nulls().head(_ENUM_NAMES_SHOWN).to_list())
                self.assumed[table] = (f"names none of the values coach knows ({shown or 'no names'}): a layout coach "
                                       "does not know, so its ids were read as the nsys 2022.4 and 2025.3 exports "
                                       "number them")
        return schema.enum_values(name, own)

    def meta(self) -> dict:
        """Provenance: export and capture settings, the session's start, the machine's drivers."""
        meta: dict = {}
        for key, table in (("export", "export_meta"), ("capture", "capture_meta")):
            pairs = self._pairs(table)
            if pairs:
                meta[key] = pairs
        system = self._pairs("system_env")
        meta.update({f"system_{k}": system[k] for k in _SYSTEM_KEYS if k in system})
        self.written_by = _written_by(meta.get("export", {}), self.tables)
        plan = self._plan("session")
        if plan is not None:
            session = self._frame(plan.sql(), text=plan.text_columns)
            if session.height:
                first = session.row(0, named=True)
                meta["session_start_epoch_ns"] = first.get("utc_epoch_ns")
                meta["session_start_utc"] = first.get("utc_time")
        return meta

    def _pairs(self, table: str) -> dict:
        """A name/value table as a dict; a name that repeats (CAPTURE_EVENT_TYPE) keeps all its values."""
        plan = self._plan(table)
        if plan is None or not {"name", "value"} <= plan.select.keys():
            return {}
        rows = self._frame(plan.sql(), text=plan.text_columns)
        grouped = rows.group_by("name", maintain_order=True).agg("value")
        return {name: values[0] if len(values) == 1 else values for name, values in grouped.iter_rows()}

    def _frame(self, sql: str, params: tuple = (), *, text: frozenset[str] = frozenset(),
               own_connection: bool = False) -> pl.DataFrame:
        table = self._arrow(sql, params, own_connection=own_connection)
        columns = [_utf8(table.column(i)) if name in text else table.column(i)
                   for i, name in enumerate(table.column_names)]
        return pl.from_arrow(pa.table(columns, names=table.column_names), rechunk=False)

    def _arrow(self, sql: str, params: tuple = (), *, own_connection: bool = False) -> pa.Table:
        """Run ``sql`` (its ``?`` placeholders filled with ``params``: integers and strings, as SQL
        literals); ``own_connection`` for a call from a worker thread (a connection serves one thread)."""
        connection = self._connect(self.path) if own_connection else self._con
        try:
            statement = adbc_driver_manager.AdbcStatement(connection.connection)
            try:
                statement.set_options(**{_BATCH_ROWS_OPTION: str(_BATCH_ROWS)})
                statement.set_sql_query(_with_literals(sql, params))
                stream, _ = statement.execute_query()
                # pyarrow reads the stream without the GIL (Polars holds it), so that the parallel
                # reads of a large table run at once
                return pa.RecordBatchReader.from_stream(stream).read_all()
            finally:
                statement.close()
        except (adbc_driver_manager.Error, pa.ArrowException) as err:
            raise InputError(self.path, f"is a damaged SQLite database ({_first_line(err)})") from None
        finally:
            if own_connection:
                connection.close()

    @staticmethod
    def _connect(path: Path) -> _Connection:
        try:
            return _Connection.open(path.resolve().as_uri() + "?mode=ro")
        except adbc_driver_manager.Error as err:
            raise InputError(path, f"cannot be opened as SQLite ({_first_line(err)})") from None


@dataclasses.dataclass
class _Connection:
    """An ADBC SQLite database handle and its one connection."""

    database: adbc_driver_manager.AdbcDatabase
    connection: adbc_driver_manager.AdbcConnection

    @classmethod
    def open(cls, uri: str) -> _Connection:
        database = adbc_driver_sqlite.connect(uri)
        try:
            return cls(database, adbc_driver_manager.AdbcConnection(database))
        except BaseException:
            database.close()
            raise

    def close(self) -> None:
        try:
            self.connection.close()
        finally:
            self.database.close()


def _with_literals(sql: str, params: tuple) -> str:
    """``sql`` with each ``?`` replaced by the next of ``params`` as an SQL literal (an integer, or a
    string in single quotes); the statements here have no ``?`` inside a string or a name."""
    if not params:
        return sql
    parts = sql.split("?")
    if len(parts) != len(params) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders for {len(params)} parameters")
    literals = [str(int(p)) if isinstance(p, int) else "'" + str(p).replace("'", "''") + "'" for p in params]
    return "".join(part + literal for part, literal in zip(parts, literals)) + parts[-1]


def _one_per_name(distinct: pl.DataFrame, key: tuple[str, ...], columns: list[str]) -> list[str]:
    """Of ``columns``, those with one value (null counting as one) for each key in ``distinct``."""
    if not columns:
        return []
    counts = distinct.group_by(list(key)).agg(pl.col(c).n_unique() for c in columns)
    return [c for c in columns if (counts[c].max() or 0) <= 1]


#: Name ids, as StringIds numbers them (from 0), fit in 31 bits; two of them make one 63-bit key.
_KEY_BITS = 31


def _key_fits(by_name: pl.DataFrame, key: tuple[str, ...]) -> bool:
    """Whether ``key`` (one or two id columns of ``by_name``) makes one integer code (``_key_code``)."""
    return len(key) <= 2 and all(by_name[k].is_null().all() or (by_name[k].min() >= 0 and by_name[k].max() < (1 << _KEY_BITS) - 1)
                                 for k in key)


def _key_code(key: tuple[str, ...]) -> pl.Expr:
    """The key columns as one integer (null as its own value), for ``_key_fits`` keys."""
    code = pl.lit(0, pl.Int64)
    for k in key:
        code = code * (1 << _KEY_BITS) + (pl.col(k).fill_null(-1) + 1)
    return code


def _gathered(frame: pl.DataFrame, by_name: pl.DataFrame, key: tuple[str, ...]) -> pl.DataFrame:
    """``frame`` with the columns of ``by_name`` (one row per key) gathered into its rows by key."""
    codes = by_name.select(_key_code(key)).to_series()
    at = frame.select(_key_code(key).replace_strict(codes, pl.int_range(by_name.height, dtype=pl.UInt32, eager=True),
                                                    return_dtype=pl.UInt32)).to_series()  # once, for every column
    return frame.with_columns(by_name[c].gather(at) for c in by_name.columns if c not in key)


def _large_constants(frame: pl.DataFrame | None) -> pl.DataFrame | None:
    """``_constants_as_scalars`` of a table of more rows than one read reads (the columns made from
    others, such as the process id from the packed thread id, are one value too where those are)."""
    return frame if frame is None or frame.height < PARALLEL_READ_ROWS else _constants_as_scalars(frame)


def _constants_as_scalars(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each integer column that holds one value in every row (or none) as that value
    repeated: a column Polars keeps as one value, not a million (a program on one GPU runs every
    kernel on one device, context and process). The values are the same."""
    ints = [c for c, t in frame.schema.items() if t.is_integer()]
    if not ints or not frame.height:
        return frame
    stats = frame.select(*(pl.col(c).min().alias(f"{c}\0min") for c in ints),
                         *(pl.col(c).max().alias(f"{c}\0max") for c in ints),
                         *(pl.col(c).null_count().alias(f"{c}\0nulls") for c in ints)).row(0, named=True)
    constant = [pl.lit(stats[f"{c}\0min"], frame.schema[c]).alias(c) for c in ints
                if stats[f"{c}\0nulls"] in (0, frame.height) and stats[f"{c}\0min"] == stats[f"{c}\0max"]]
    return frame.with_columns(constant) if constant else frame


def _rowid_ranges(first: int | None, last: int | None) -> list[tuple[str, tuple]]:
    """WHERE clauses (with parameters) for the rowid ranges of ``PARALLEL_READ_ROWS`` rows between
    ``first`` and ``last``; one clause reading everything where there are fewer."""
    if first is None or last - first < PARALLEL_READ_ROWS:
        return [("", ())]
    bounds = list(range(first - 1, last, PARALLEL_READ_ROWS)) + [last]
    return [(" WHERE rowid > ? AND rowid <= ?", (lo, hi)) for lo, hi in zip(bounds, bounds[1:])]


def _utf8(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Text fetched as bytes, as UTF-8; invalid bytes become U+FFFD instead of failing the read."""
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        return column.cast(pa.string())  # all null (typed int64 by the driver) or a number stored as text
    try:
        return column.cast(pa.string())
    except pa.ArrowInvalid:
        # Rare (a program passed non-UTF-8 bytes), so this slower path runs only for such a column.
        decoded = [None if b is None else b.decode("utf-8", errors="replace") for b in column.to_pylist()]
        return pa.chunked_array([pa.array(decoded, pa.string())])


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


# --------------------------------------------------------------------------------------------
# Staging frames -> canonical tables
# --------------------------------------------------------------------------------------------


def _pid(column: str) -> pl.Expr:
    return (pl.col(column) // (1 << _ID_BITS)) & _ID_MASK


def _tid(column: str) -> pl.Expr:
    return pl.col(column) & _ID_MASK


_DUR = (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns")

#: The engine each table's query runs on. Polars' default ("auto") costs about a millisecond or more
#: per query to start, which on a small export (a folder of per-rank reports, a few thousand rows
#: each) is a third of its reading: 64 of them read in one process took 3.2-3.4 s CPU on "auto",
#: 2.1 s on "in-memory"; a million-kernel export reads as fast on either.
_ENGINE = "in-memory"


def _by_start(frame: pl.LazyFrame) -> pl.DataFrame:
    """``frame`` collected, in start order. nsys writes its tables in start order already, and
    checking that is cheaper than sorting a million rows again."""
    collected = frame.collect(engine=_ENGINE)
    return collected if collected["start_ns"].is_sorted() else collected.sort("start_ns", maintain_order=True)


def _mapped(key: str, table: pl.DataFrame) -> pl.Expr:
    """Column ``key`` mapped through ``table``'s ``(id, value)`` pairs; null where an id is not there.

    Each row becomes a position in ``table`` and the text is gathered from there, so the rows share
    the table's bytes (a Polars string column holds a 16-byte view per row): a million kernels that
    run twenty distinct functions hold twenty demangled signatures, not a million copies."""
    positions = pl.col(key).replace_strict(table["id"], pl.int_range(table.height, dtype=pl.UInt32, eager=True),
                                           default=None, return_dtype=pl.UInt32)
    return pl.lit(table["value"].cast(pl.String)).gather(positions)


def _kernels(raw: pl.DataFrame | None, strings: pl.DataFrame) -> pl.DataFrame | None:
    if raw is None:
        return None
    # the names worked out once per distinct (name, demangled name) pair of string ids, then gathered
    # (a million kernels run a few dozen functions); the pair as one integer key, so that no column
    # of the million rows is copied by a join
    width = int(raw["demangled_name_id"].max() or 0) + 2
    key = ((pl.col("name_id").fill_null(-1) + 1) * width + pl.col("demangled_name_id").fill_null(-1) + 1).alias("_key")
    pairs = (raw.select(key, "name_id", "demangled_name_id").unique("_key", maintain_order=True)
             .with_columns(_mapped("name_id", strings).alias("name"), _mapped("demangled_name_id", strings).alias("demangled_name"))
             .with_columns(name=_short_name(pl.col("name"), pl.col("demangled_name"))))
    pairs = _with_mangled_base_names(pairs)
    at = key.replace_strict(pairs["_key"], pl.int_range(pairs.height, dtype=pl.UInt32, eager=True), return_dtype=pl.UInt32)
    return _by_start(
        raw.lazy()
        .with_columns(pl.lit(pairs["name"]).gather(at).alias("name"),
                      pl.lit(pairs["demangled_name"]).gather(at).alias("demangled_name"),
                      _DUR, _pid("global_pid").alias("pid"))
        .drop("name_id", "demangled_name_id", "global_pid"))


def _with_mangled_base_names(kernels: pl.DataFrame) -> pl.DataFrame:
    """Where the only name a kernel has is the mangled one (the kernel table has ``mangledName`` alone,
    or its short and demangled names are both the mangled name), the base function name taken from
    it, as nsys's shortName has it; a name this does not parse stays as it is. Run on the distinct
    name pairs, before they are gathered into the kernels' rows."""
    mangled = kernels.filter((pl.col("name") == pl.col("demangled_name")) & pl.col("name").str.starts_with("_Z"))
    if mangled.is_empty():
        return kernels
    distinct = mangled["name"].unique()  # a few distinct functions, however many launches
    bases = pl.DataFrame({"name": distinct, "_base": [_itanium_base_name(n) for n in distinct.to_list()]},
                         schema={"name": pl.String, "_base": pl.String})
    return (kernels.join(bases, on="name", how="left", maintain_order="left")
            .with_columns(name=pl.coalesce("_base", "name")).drop("_base"))


def _itanium_base_name(mangled: str) -> str | None:
    """The unqualified function name of an Itanium-mangled name of a namespace-scope function (a
    ``__global__`` function cannot be a class member): ``_Z10vector_addPfS_i`` -> ``vector_add``;
    ``_ZN2at6native13reduce_kernelILi512E...`` -> ``reduce_kernel``, the last of the nested name's
    source names before its template arguments or its end. None for a name this does not parse."""
    i = 2
    nested = mangled.startswith("_ZN")
    if nested:
        i = 3
    last = None
    while i < len(mangled):
        if mangled.startswith("St", i):  # std::
            i += 2
            continue
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        if j == i:
            break
        end = j + int(mangled[i:j])
        if end > len(mangled):
            return None
        last = mangled[j:end]
        i = end
        if not nested:
            break
    if last is None or (nested and (i >= len(mangled) or mangled[i] not in "IE")):
        return None
    return last


def _short_name(name: pl.Expr, demangled: pl.Expr) -> pl.Expr:
    """The base function name where the export has no ``shortName`` column and the name is the
    demangled signature (``void at::native::<unnamed>::reduce_kernel<512, 1, ...>(T3)`` ->
    ``reduce_kernel``, as nsys's own shortName has it): the last identifier before the template or
    parameter list, namespaces and return type dropped. A name that is no signature stays as it is."""
    signature = (name == demangled) & name.str.contains(r"[<(]")
    base = (name.str.replace_all(r"<unnamed>::|\(anonymous namespace\)::", "")
            .str.extract(r"^([^<(]*)", 1).str.strip_chars().str.extract(r"([A-Za-z_]\w*)$", 1))
    return pl.when(signature & base.is_not_null()).then(base).otherwise(name)


def _with_graphs(kernels: pl.DataFrame | None, graphs: pl.DataFrame | None) -> pl.DataFrame | None:
    """The kernels, and each CUDA graph launch that nsys traced whole (``--cuda-graph-trace=graph``, its
    default: the graph's kernels are not in the kernel table, one GRAPH_TRACE row spans the graph's
    run) as one GPU operation named "CUDA graph N", launched by its cudaGraphLaunch. A graph launch
    whose kernels the kernel table holds (traced node by node) is not added again."""
    if graphs is None or graphs.is_empty():
        return kernels
    graphs = graphs.with_columns(_DUR, _pid("global_pid").alias("pid"))
    if kernels is not None and kernels.height:
        graphs = graphs.join(kernels.select("correlation_id").drop_nulls().unique(), on="correlation_id", how="anti")
    # an export without graphId names the graph by its executable graph, or not at all
    label = pl.coalesce(pl.format("CUDA graph {}", pl.col("graph_id")), pl.format("CUDA graph exec {}", pl.col("graph_exec_id")),
                        pl.lit("CUDA graph"))
    named = graphs.select(
        "start_ns", "end_ns", "dur_ns", "device_id", "context_id", "stream_id", "correlation_id", "pid", "graph_id",
        name=label, demangled_name=label)
    if kernels is None:
        return named.sort("start_ns")
    return pl.concat([kernels, named], how="diagonal_relaxed").sort("start_ns", maintain_order=True)


def _memcpy(raw: pl.DataFrame | None, copy_kinds: pl.DataFrame, memory_kinds: pl.DataFrame) -> pl.DataFrame | None:
    if raw is None:
        return None
    return _by_start(
        raw.lazy()
        .with_columns(_mapped("copy_kind", copy_kinds).fill_null("unknown").alias("kind"),
                      _mapped("src_kind", memory_kinds).fill_null("unknown").alias("src_memory"),
                      _mapped("dst_kind", memory_kinds).fill_null("unknown").alias("dst_memory"))
        .with_columns(_DUR, _pid("global_pid").alias("pid"),
                      pageable=(pl.col("src_memory") == "pageable") | (pl.col("dst_memory") == "pageable"))
        .drop("copy_kind", "src_kind", "dst_kind", "global_pid"))


def _memset(raw: pl.DataFrame | None, memory_kinds: pl.DataFrame) -> pl.DataFrame | None:
    if raw is None:
        return None
    return _by_start(
        raw.lazy()
        .with_columns(_mapped("memory_kind", memory_kinds).fill_null("unknown").alias("memory"), _DUR,
                      _pid("global_pid").alias("pid"))
        .drop("memory_kind", "global_pid"))


def _api(raw: pl.DataFrame | None, strings: pl.DataFrame, api_kinds: pl.DataFrame) -> pl.DataFrame | None:
    if raw is None:
        return None
    names = strings.with_columns(pl.col("value").str.replace(_API_VERSION_SUFFIX, ""))
    by_prefix = (pl.when(pl.col("name").str.starts_with("cuda")).then(pl.lit("runtime"))
                 .when(pl.col("name").str.starts_with("cu")).then(pl.lit("driver")))
    return _by_start(
        raw.lazy()
        .with_columns(_mapped("name_id", names).alias("name"), _mapped("event_class", api_kinds).alias("api"))
        .with_columns(pl.when(pl.col("api") != "unknown").then("api").otherwise(by_prefix).alias("api"))
        .with_columns(_DUR, _pid("global_tid").alias("pid"), _tid("global_tid").alias("tid"))
        .drop("name_id", "event_class", "global_tid"))


def _sync(raw: pl.DataFrame | None, api: pl.DataFrame | None, sync_kinds: pl.DataFrame) -> pl.DataFrame | None:
    """Synchronisation records. The API call that made a record (same process and correlation id)
    names its kind and thread; the record's own sync type is the fallback."""
    if raw is None:
        return None
    by_call = schema.enums().filter(pl.col("enum") == "sync_api").select(pl.col("raw_name").alias("call"),
                                                                         pl.col("value").alias("kind_by_call"))
    frame = raw.lazy().with_columns(_pid("global_pid").alias("pid"))
    if api is not None:
        calls = (api.lazy().filter(pl.col("correlation_id").is_in(raw["correlation_id"].implode()))
                 .select("pid", "correlation_id", "tid", pl.col("name").alias("call"))
                 .unique(["pid", "correlation_id"], keep="first"))
        frame = frame.join(calls, on=["pid", "correlation_id"], how="left", maintain_order="left")
    else:
        frame = frame.with_columns(tid=pl.lit(None, pl.Int64), call=pl.lit(None, pl.String))
    return _by_start(
        frame
        .join(by_call.lazy(), on="call", how="left", maintain_order="left")
        .with_columns(pl.coalesce("kind_by_call", _mapped("sync_type", sync_kinds), pl.lit("unknown")).alias("kind"),
                      pl.when(pl.col("event_id") != _CUPTI_INVALID_ID).then("event_id").alias("event_id"),
                      _DUR)
        .drop("call", "kind_by_call", "sync_type", "global_pid"))


def _nvtx(raw: pl.DataFrame | None, strings: pl.DataFrame, nvtx_kinds: pl.DataFrame) -> pl.DataFrame | None:
    if raw is None:
        return None
    events = (raw.lazy()
              .with_columns(_mapped("event_type", nvtx_kinds).alias("kind"),
                            pl.coalesce("text", _mapped("text_id", strings)).alias("text"),
                            _pid("global_tid").alias("pid"), _tid("global_tid").alias("tid")))
    # A domain is named by its create event, in the process that created it (as nvtxpptrace.py does).
    domains = (events.filter(pl.col("kind") == "domain")
               .group_by("pid", "domain_id").agg(pl.col("text").sort_by("start_ns").first().alias("domain")))
    # Materialised once: the row index below must mean the same row in both uses of ``rows``.
    rows = (events.filter(pl.col("kind").is_in(_NVTX_KINDS))
            .join(domains, on=["pid", "domain_id"], how="left", maintain_order="left")
            .with_columns(_DUR)
            .collect(engine=_ENGINE)
            .with_row_index("_row")
            .lazy())
    return (rows.join(_nesting(rows), on="_row", how="left", maintain_order="left")
            .drop("_row", "event_type", "text_id", "domain_id", "global_tid")
            .sort("start_ns", "depth", nulls_last=True)
            .collect(engine=_ENGINE))


def _nesting(rows: pl.LazyFrame) -> pl.LazyFrame:
    """``(_row, depth)``: how many push/pop ranges of the same thread enclose each push/pop range
    and mark. Walks each thread's opens and closes in time order and keeps a running count, as the
    NVTX stack would: at equal times a close comes before an open (back-to-back ranges do not nest),
    an outer range opens before an inner one that starts with it, and a mark comes last. Start/end
    ranges are not on the thread's stack: their depth is null."""
    stack = rows.filter(pl.col("kind") == "push_pop")
    opens = stack.select("_row", "global_tid", t=pl.col("start_ns"), order=pl.lit(1), delta=pl.lit(1),
                         tie=-pl.col("end_ns").fill_null(_OPEN_END))
    closes = stack.filter(pl.col("end_ns").is_not_null()).select(
        pl.lit(None).cast(pl.get_index_type()).alias("_row"), "global_tid", t=pl.col("end_ns"), order=pl.lit(0),
        delta=pl.lit(-1), tie=pl.lit(0, pl.Int64))
    marks = rows.filter(pl.col("kind") == "mark").select("_row", "global_tid", t=pl.col("start_ns"), order=pl.lit(2),
                                                          delta=pl.lit(0), tie=pl.lit(0, pl.Int64))
    return (pl.concat([opens, closes, marks], how="vertical_relaxed")
            .sort("global_tid", "t", "order", "tie")
            .with_columns(level=pl.col("delta").cum_sum().over("global_tid"))
            .filter(pl.col("_row").is_not_null())
            .select("_row", depth=pl.col("level") - pl.col("delta")))
