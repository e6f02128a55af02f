"""Read a PyTorch-profiler (Kineto) Chrome-trace JSON, plain or gzipped, into a ``Timeline``.

``torch.profiler`` writes one JSON object: ``traceEvents`` (the events), ``deviceProperties`` (one
entry per GPU), ``baseTimeNanoseconds`` and version metadata. Every duration event has ``ph: "X"``,
a category ``cat``, ``ts`` and ``dur`` in microseconds (written with three decimals, so nanosecond
resolution) and an ``args`` object whose keys depend on the category. Category and argument names
changed across torch versions ("Kernel" became "kernel", "Runtime" "cuda_runtime", "external id"
"External id"); the mapping from every raw name coach knows to its canonical name is data, not
code: ``kineto_fields.csv`` beside this module, one row per raw name with the era it comes from.

How the trace becomes the canonical tables:

- ``kernels``, ``memcpy``, ``memset``: GPU rows. Kineto puts the device id in ``pid`` and the stream
  in ``tid`` of those rows, so ``pid`` (the host process) is filled from the API call that launched
  the work, through the correlation id. Memcpy kind and pageable/pinned come from the event name,
  ``Memcpy DtoH (Device -> Pageable)``; Kineto reports only the sum of static and dynamic shared
  memory, which goes to ``shared_mem_bytes``. ``name`` is the kernel's bare function name (what
  Nsight Systems calls the short name), ``demangled_name`` the full signature Kineto prints.
- ``api``: ``cuda_runtime`` and ``cuda_driver`` rows; Kineto records no return codes.
- ``sync``: ``cuda_sync`` rows (CUPTI synchronisation records, recorded by newer torch when
  ``enable_cuda_sync_events`` is set). Their host thread comes from the API call they belong to.
  Without them, synchronisation is still visible as ``cudaStreamSynchronize`` and friends in ``api``.
- ``nvtx``: ``user_annotation`` ranges (``record_function``, ``ProfilerStep#N``) with domain
  ``user_annotation``, **and** ``cpu_op`` ranges (aten operators) with domain ``cpu_op``. A PyTorch
  user reaches for operator ranges the way an Nsight Systems user reaches for NVTX: they are what
  ``torch.autograd.profiler.emit_nvtx`` turns into NVTX ranges under nsys, and projecting them onto
  the GPU answers "which operator launched this time". Filter on ``domain`` to separate them.
  ``depth`` counts nesting across both domains on a thread, as Nsight Systems nests ranges by
  containment. ``python_function`` frames (``with_stack``) are left out: they are a call stack, not
  annotations, and can outnumber everything else. ``gpu_user_annotation`` rows are Kineto's own
  projection of annotations onto a stream; coach projects every range from correlation ids instead
  (``coach.analyze.timeline.nvtx_projection``), so they are dropped.
- ``devices``: from ``deviceProperties`` (``computeProperties`` in torch 1.8-1.9 traces).

Times become integer nanoseconds relative to the first duration event of the trace (the profiler's
own ``Trace`` span starts it). Current Kineto writes ``ts`` relative to ``baseTimeNanoseconds`` (a
Unix time in ns) to keep doubles exact; older versions wrote absolute microseconds. Both are kept
in ``Source.meta`` (``base_time_ns``, ``trace_start_us``) so absolute times can be recovered.

The file is parsed by Polars against a schema built from ``kineto_fields.csv``, which reads only
the fields coach uses; when that fails, the standard library re-parses it to name the problem.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Callable, TypeVar

import polars as pl

from coach.errors import InputError
from coach.ingest.text import as_utf8
from coach.model import Source, Timeline, make_timeline

FIELDS_TABLE = Path(__file__).with_name("kineto_fields.csv")

_T = TypeVar("_T")

GZIP_MAGIC = b"\x1f\x8b"
_US_TO_NS = 1000.0
_MEMCPY_NAME = r"^Memcpy (\S+) \((.+?) -> (.+?)\)$"
_MEMSET_NAME = r"^Memset \((.+?)\)$"
_PROFILER_STEP = "ProfilerStep#"

_TOP_LEVEL_TEXT = ("schemaVersion", "baseTimeNanoseconds", "trace_id", "traceName", "cuda_driver_version",
                   "cuda_runtime_version", "cupti_version")


# --------------------------------------------------------------------------------------------
# The mapping table
# --------------------------------------------------------------------------------------------


@cache
def fields() -> pl.DataFrame:
    """``kineto_fields.csv``: kind, raw, canonical, dtype, era, note."""
    return pl.read_csv(FIELDS_TABLE, schema_overrides={k: pl.Utf8 for k in ("kind", "raw", "canonical", "dtype", "era", "note")})


def _mapping(kind: str) -> dict[str, str]:
    rows = fields().filter(pl.col("kind") == kind)
    return dict(zip(rows["raw"].to_list(), rows["canonical"].to_list(), strict=True))


def _canonical_fields(kind: str) -> dict[str, tuple[str, list[str]]]:
    """canonical name -> (dtype, raw names that carry it, in table order)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for raw, canonical, dtype in fields().filter(pl.col("kind") == kind).select("raw", "canonical", "dtype").iter_rows():
        out.setdefault(canonical, (dtype, []))[1].append(raw)
    return out


def _json_dtype(dtype: str, tolerant: bool = False) -> pl.DataType:
    # Scalars are read as text and cast afterwards: a JSON number reads into a string column, while a
    # numeric column refuses the occasional string Kineto writes (e.g. "inf" for blocks per SM). Lists
    # are read as lists of text: torch.compile's Inductor writes its launch grid as a string
    # ("grid": "grid(100,)"), which a list of text takes as one element (``_int_list`` parses it).
    # The tolerant schema, tried when the first refuses a file, reads every argument as a list of
    # text, which also takes an array where a scalar was expected.
    return pl.List(pl.Utf8) if dtype == "int_list" or tolerant else pl.Utf8


def _file_schema(tolerant: bool = False) -> dict[str, pl.DataType]:
    args = {raw: _json_dtype(dtype, tolerant) for _, (dtype, raws) in _canonical_fields("arg").items() for raw in raws}
    event = pl.Struct({"ph": pl.Utf8, "cat": pl.Utf8, "name": pl.Utf8, "pid": pl.Utf8, "tid": pl.Utf8,
                       "ts": pl.Float64, "dur": pl.Float64, "args": pl.Struct(args)})
    device = pl.Struct({raw: pl.Utf8 for raw in _mapping("device")})
    # torch 1.8-1.9 wrote the devices as "computeProperties", with cudaDeviceProp's field names
    return {"traceEvents": pl.List(event), "deviceProperties": pl.List(device), "computeProperties": pl.List(device),
            **{k: pl.Utf8 for k in _TOP_LEVEL_TEXT}}


def _as(dtype: str, expr: pl.Expr) -> pl.Expr:
    if dtype == "int":
        return pl.coalesce(expr.cast(pl.Int64, strict=False), expr.cast(pl.Float64, strict=False).cast(pl.Int64, strict=False))
    if dtype == "int_list":
        return _int_list(expr)
    return expr


#: A launch grid written as text: "grid(100,)", "(128, 4, 1)", "[8, 1, 1]".
_GRID_TEXT_PREFIX = r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*"


def _int_list(expr: pl.Expr) -> pl.Expr:
    """A list of text (``[32768, 1, 1]`` as read, or one text element such as ``"grid(100,)"``) as a
    list of integers; null where an element is not an integer (a symbolic grid like "grid(s0,)")."""
    return _int_list_text(expr.list.join(","))


def _int_list_text(joined: pl.Expr) -> pl.Expr:
    """``_int_list`` of the list's elements joined by commas."""
    text = joined.str.replace(_GRID_TEXT_PREFIX, "").str.strip_chars("()[] ")
    parts = text.str.split(",").list.eval(pl.element().str.strip_chars().filter(pl.element().str.strip_chars() != ""))
    ints = parts.list.eval(pl.element().cast(pl.Int64, strict=False))
    return pl.when(ints.list.eval(pl.element().is_null()).list.any() | (ints.list.len() == 0)).then(None).otherwise(ints)


def _canonical_args(kind: str, struct: str) -> list[pl.Expr]:
    """One expression per canonical field, coalescing the raw names of every era."""
    return [
        pl.coalesce([_as(dtype, pl.col(struct).struct.field(raw)) for raw in raws]).alias(canonical)
        for canonical, (dtype, raws) in _canonical_fields(kind).items()
    ]


def _with_canonical_args(frame: pl.DataFrame, kind: str, struct: str) -> pl.DataFrame:
    """``frame`` with ``_canonical_args(kind, struct)`` in place of ``struct``: the scalar fields, then
    the integer lists (launch grids), each coalesced over the raw names of every era.

    Each raw field is converted the cheap way where that gives what ``_as`` gives: an integer field
    whose every value reads as an integer is not read again as a float; a list field whose every
    element reads as an integer (the launch grids of a trace without text grids) is cast element by
    element, an empty list null. Otherwise the lists are parsed as text (``_int_list_text``), once per
    distinct text rather than once per row: a trace launches the same few grids again and again."""
    fields_ = _canonical_fields(kind)
    args = frame.get_column(struct)
    scalars, lists = {}, {}
    for canonical, (dtype, raws) in fields_.items():
        values = [_arg_values(args.struct.field(raw), dtype) for raw in raws]
        column = values[0] if len(values) == 1 else pl.select(pl.coalesce(values)).to_series()
        (lists if dtype == "int_list" else scalars)[canonical] = column.alias(canonical)
    return frame.drop(struct).with_columns(*scalars.values(), *lists.values())


def _arg_values(raw: pl.Series, dtype: str) -> pl.Series:
    """One raw argument's values as ``_as(dtype, ...)`` gives them."""
    if dtype == "int":
        ints = raw.cast(pl.Int64, strict=False)
        if ints.null_count() == raw.null_count():
            return ints
        return pl.select(pl.coalesce(ints, raw.cast(pl.Float64, strict=False).cast(pl.Int64, strict=False))).to_series()
    if dtype != "int_list":
        return raw
    ints = raw.list.eval(pl.element().cast(pl.Int64, strict=False))
    if not ints.list.eval(pl.element().is_null()).list.any().fill_null(False).any():  # no element null, or not an integer
        return pl.select(pl.when(ints.list.len() > 0).then(ints)).to_series()
    texts = raw.list.join(",")
    distinct = pl.DataFrame({"text": texts}).unique("text").with_columns(parsed=_int_list_text(pl.col("text")))
    # the one column joined, not the frame: the other columns are not copied
    return (pl.DataFrame({"text": texts}).join(distinct, on="text", how="left", maintain_order="left", nulls_equal=True)
            .get_column("parsed"))


# --------------------------------------------------------------------------------------------
# Reading and parsing
# --------------------------------------------------------------------------------------------


def read(path: str | Path) -> Timeline:
    """Read a PyTorch-profiler trace (``.json`` or ``.json.gz``) into the canonical ``Timeline``."""
    path = Path(path)
    raw = _read_bytes(path)
    rocprof = _rocprof_lanes(raw)
    if rocprof:
        raise InputError(path, f"is a rocprof JSON trace (AMD ROCm's rocprof v1 with --hip-trace, --hsa-trace or --sys-trace; "
                               f"lanes {', '.join(repr(r) for r in rocprof)}), which coach does not read: record the run "
                               "with torch.profiler (its ROCm build writes the JSON trace coach reads) and pass that")
    read_whole = len(raw) < _PIECES_FROM_BYTES or raw.lstrip()[:1] == b"["
    pieces = None if read_whole else _read_pieces(raw, each=_classified_piece)
    if pieces is not None and any(_read_any(part) for part, _ in pieces[1]):
        # a large trace: each piece's events classified on the thread that read it, timed once joined
        doc, parts = pieces
        t0 = min(piece_t0 for part, piece_t0 in parts if piece_t0 is not None)
        ev = _timed(pl.concat([part for part, _ in parts]), t0)
    else:  # a small trace, or one the pieces did not read (the whole read names what is wrong)
        doc, events = _parse(raw, path, pieces=read_whole)
        if events.is_empty():
            raise InputError(path, "holds no trace events (an empty profile: was anything run inside the profiler?)")
        t0 = events["ts"].min()
        ev = _canonical_events(events, t0)
        if not _read_any(ev):
            raise _foreign_trace(path, events)
    corr = _launching_thread(ev)
    return make_timeline(
        _source(path, doc, t0),
        kernels=_kernels(ev, corr),
        memcpy=_memcpy(ev, corr),
        memset=_memset(ev, corr),
        api=_api(ev),
        sync=_sync(ev, corr),
        nvtx=_nvtx(ev),
        devices=_devices(doc),
    )


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    if raw.startswith(GZIP_MAGIC):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(path, f"is a damaged gzip file ({err})") from None
    raw = as_utf8(raw)
    if not raw[:4096].strip() and not raw.strip():  # the whole file copied only when it starts blank
        raise InputError(path, "is empty")
    return raw


#: Where torch 1.7 and older (``torch.autograd.profiler``, before Kineto) put their events: ``pid`` is
#: one of these words, ``tid`` the thread or the device, and the events have no category.
_AUTOGRAD_PIDS = ("CPU functions", "CUDA functions")


def _parse(raw: bytes, path: Path, pieces: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The document (its ``traceEvents`` aside) and its duration events (``_DURATION``), one row each
    (the event's fields as columns). A large trace is read in pieces on every core
    (``_parse_pieces``), each piece's events picked out on its own thread; any piece that does not
    read falls back to reading the whole file, whose errors name the problem.

    A bare array of events (the Chrome trace format's other form) is read as the events of an empty
    document; one written by ``torch.autograd.profiler`` (torch 1.7 and older) is refused with that
    reason: its kernels carry no stream, launch call or correlation id, which every timeline rule needs."""
    if raw.lstrip()[:1] == b"[":
        doc, events = _parse(b'{"traceEvents": ' + raw + b"}", path)
        spans = events.filter(pl.col("ph") == "X")  # the flow arrows between them have a category of their own
        if spans.height and spans["cat"].null_count() == spans.height and spans["pid"].is_in(_AUTOGRAD_PIDS).any():
            raise InputError(path, "is a torch.autograd.profiler trace of torch 1.7 or older (events under 'CPU functions' "
                                   "and 'CUDA functions', before the Kineto profiler): its kernels carry no stream, launch "
                                   "call or correlation id, which coach's timeline needs; record it again with "
                                   "torch.profiler.profile (torch 1.8 or later)")
        if events["cat"].null_count() == events.height:
            raise InputError(path, f"is a JSON array of {events.height:,} events none of which has a category: not a "
                                   "PyTorch-profiler trace")
        return doc, events
    parsed = _parse_pieces(raw) if pieces and len(raw) >= _PIECES_FROM_BYTES else None
    if parsed is not None:
        return parsed
    try:
        doc = pl.read_json(raw, schema=_file_schema())
    except pl.exceptions.PolarsError:
        try:  # an argument in a shape other traces do not have (an array where a number was expected)
            doc = _scalar_args(pl.read_json(raw, schema=_file_schema(tolerant=True)))
        except pl.exceptions.PolarsError as err:
            raise _explain(raw, path, err) from None
    if doc.height != 1 or doc["traceEvents"][0] is None:
        raise _no_trace_events(raw, path)
    return doc, doc.select(pl.col("traceEvents").explode()).unnest("traceEvents").filter(_DURATION)


#: The lanes rocprof v1 names in the results.json it writes (ROCm's rocprofiler, bin/tblextr.py and
#: sqlitedb.py): one process-name metadata event each, written first, as
#: ``{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name","sort_index":0}``.
_ROCPROF_V1_LANE = re.compile(rb'\{\s*"args"\s*:\s*\{\s*"name"\s*:\s*"(CPU HIP API|CPU HSA API|COPY|GPU\d+|GPU Barriers\d+|'
                              rb'Markers and Ranges)"\s*\}\s*,\s*"ph"\s*:\s*"M"\s*,\s*"pid"\s*:\s*\d+\s*,\s*"name"\s*:\s*'
                              rb'"process_name"')
_ROCPROF_V1_HEAD = 1 << 16


def _rocprof_lanes(raw: bytes) -> list[str]:
    """The lanes of a rocprof v1 results.json (empty for any other trace), from its first bytes."""
    return list(dict.fromkeys(m.group(1).decode() for m in _ROCPROF_V1_LANE.finditer(raw[:_ROCPROF_V1_HEAD])))


#: rocprofv3's JSON output (ROCm's rocprofiler-sdk) opens with this key.
ROCPROFV3_KEY = b'"rocprofiler-sdk-tool"'


def _no_trace_events(raw: bytes, path: Path) -> InputError:
    """Why a JSON file without ``traceEvents`` is not read: a rocprofv3 JSON output, or some other JSON."""
    if ROCPROFV3_KEY in raw[:4096]:
        return InputError(path, "is rocprofv3 JSON output (AMD ROCm's rocprofiler-sdk), which coach does not read: "
                                "record the run with torch.profiler (its ROCm build writes the JSON trace coach reads) "
                                "and pass that")
    return InputError(path, "is JSON but not a PyTorch-profiler trace (no traceEvents list)")


#: Traces from this size on are read in pieces of about ``_PIECE_BYTES`` each: Polars reads one JSON
#: document on one thread, and a large document slower per byte than small ones (47 ms of CPU per MB
#: for one 32 MB document, 5.4 ms in 1 MiB pieces: benchmarks/results/profile_scale.md). Smaller
#: pieces read a little faster alone (4.2-4.5 ms/MB at 64-512 KiB), but with their events classified
#: the whole read of the 202 MB trace was no cheaper in 512 KiB or 2 MiB pieces than in 1 MiB ones.
_PIECES_FROM_BYTES = 16 * 2**20
_PIECE_BYTES = 2**20
#: The pieces go to the threads in this many runs per core: each run's pieces are read one after
#: another and joined, and what is done to their events (``each``) is done once per run, so that its
#: Python-side cost (building the expressions) is paid a few times, not once per piece.
_RUNS_PER_CORE = 4
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BETWEEN_EVENTS = re.compile(rb"\}\s*,\s*\{")
_TAIL_BYTES = 1 << 16


def _parse_pieces(raw: bytes, piece_bytes: int = _PIECE_BYTES) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """``_parse`` of a large trace, its event array cut into pieces read in parallel, or None where
    the cuts cannot be placed or a piece does not read (then the caller reads the whole file)."""
    pieces = _read_pieces(raw, piece_bytes)
    if pieces is None:
        return None
    doc, parts = pieces
    return doc, pl.concat(parts)


def _read_pieces(raw: bytes, piece_bytes: int = _PIECE_BYTES,
                 each: Callable[[pl.DataFrame], _T] | None = None) -> tuple[pl.DataFrame, list] | None:
    """The document (its event array empty) and, run by run of pieces in order, the duration events
    (``_DURATION``) of each run, or what ``each`` makes of them; None where the cuts cannot be placed
    or a piece does not read. ``each`` runs on the thread that read the run, as the reading does
    (Polars works without holding the GIL), so on every core.

    A cut goes between two events, at a ``}`` followed by a comma and a ``{``. Placed anywhere else
    (inside a string, or between two objects nested in an event) it leaves the piece before it with
    an open string or brace, which does not read as JSON: a wrong cut falls back, it never splits an
    event. The array's end is found by decoding the last events with the standard library."""
    key = _EVENTS_KEY.search(raw)
    if key is None:
        return None
    first = key.end()  # just after the array's [
    end = _array_end(raw, first)
    if end is None:
        return None
    cuts = [first]
    for target in range(first + piece_bytes, end - piece_bytes // 2, piece_bytes):
        m = _BETWEEN_EVENTS.search(raw, max(target, cuts[-1]), end)
        if m is None:
            break
        cuts.append(m.start() + 1)  # the piece ends just after the }
    cuts.append(end)
    view = memoryview(raw)
    starts = [raw.find(b"{", a, b) for a, b in zip(cuts, cuts[1:])]  # past the comma (and blanks) after a cut
    bodies = [view[a if a >= 0 else b:b] for a, b in zip(starts, cuts[1:])]
    schema = pl.Schema(_file_schema()["traceEvents"].inner.to_schema())
    head = raw[:first] + raw[end:]  # the document with an empty event array
    workers = _cores()
    runs = min(len(bodies), workers * _RUNS_PER_CORE)
    bounds = [len(bodies) * i // runs for i in range(runs + 1)]

    def read(run: int):
        events = [pl.read_json(b"".join((b"[", body, b"]")), schema=schema) for body in bodies[bounds[run]:bounds[run + 1]]]
        events = (pl.concat(events) if len(events) > 1 else events[0]).filter(_DURATION)
        return events if each is None else each(events)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:  # Polars reads without holding the GIL
            parts = list(pool.map(read, range(runs)))
        doc = pl.read_json(head, schema=_file_schema())
    except pl.exceptions.PolarsError:
        return None
    if doc.height != 1:
        return None
    return doc, parts


def _array_end(raw: bytes, first: int) -> int | None:
    """The offset of the ``]`` that closes the event array opening at ``first``: the last events are
    decoded one by one from a cut near the end of the file."""
    search_from = max(first, len(raw) - _TAIL_BYTES)
    last = None
    for last in _BETWEEN_EVENTS.finditer(raw, search_from):
        pass
    if last is None and len(raw) - first > _TAIL_BYTES:
        return None  # no cut near the end: decoding the whole array here would be slower than reading it
    start = last.start() + 1 if last else first
    try:
        tail = raw[start:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder, i = json.JSONDecoder(), 0
    while True:
        while i < len(tail) and tail[i] in " \t\r\n,":
            i += 1
        if i < len(tail) and tail[i] == "]":
            return start + len(tail[:i].encode("utf-8"))
        try:
            _, i = decoder.raw_decode(tail, i)
        except json.JSONDecodeError:
            return None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _scalar_args(doc: pl.DataFrame) -> pl.DataFrame:
    """A document read with the tolerant schema, in the shape of the strict one: each scalar argument
    is the first element of what was read (a scalar reads as a one-element list)."""
    strict = _file_schema()["traceEvents"].inner.to_schema()["args"]
    args = [(pl.element().struct.field("args").struct.field(f.name).list.first() if f.dtype == pl.Utf8
             else pl.element().struct.field("args").struct.field(f.name)).alias(f.name) for f in strict.fields]
    rest = [pl.element().struct.field(n) for n in ("ph", "cat", "name", "pid", "tid", "ts", "dur")]
    return doc.with_columns(pl.col("traceEvents").list.eval(pl.struct(*rest, pl.struct(args).alias("args"))))


def _explain(raw: bytes, path: Path, err: Exception) -> InputError:
    """Name what is wrong with a file Polars could not read, using the standard library's parser."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return InputError(path, f"is not UTF-8 text (byte {bad.start})")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as bad:
        where = f"line {bad.lineno} column {bad.colno}"
        if bad.pos >= len(text.rstrip()) or bad.msg.startswith("Unterminated string"):
            return InputError(path, f"ends before its JSON is complete ({bad.msg} at {where}): a truncated trace?")
        return InputError(path, f"is not valid JSON ({bad.msg} at {where})")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return _no_trace_events(raw, path)
    where = _first_odd_field(doc["traceEvents"])
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return InputError(path, f"has traceEvents in a shape coach does not read ({where or first})")


#: Events looked at to name the field a file holds in an unexpected shape (the error path only).
_EXPLAIN_EVENTS = 100_000


def _first_odd_field(events: list) -> str | None:
    """Which field of which event has a shape the schema refuses, e.g. 'event 3 (cat kernel): ts is
    "soon", not a number'; None where none of the first events shows it."""
    args = {raw for _, (_, raws) in _canonical_fields("arg").items() for raw in raws}
    for i, e in enumerate(events[:_EXPLAIN_EVENTS]):
        if not isinstance(e, dict):
            return f"event {i} is {type(e).__name__}, not an object"
        for key in ("ts", "dur"):
            v = e.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                return f"event {i} (cat {e.get('cat')}): {key} is {json.dumps(v)[:40]}, not a number"
        a = e.get("args")
        if a is not None and not isinstance(a, dict):
            return f"event {i} (cat {e.get('cat')}): args is {type(a).__name__}, not an object"
        for key in args & set(a or {}):
            if isinstance(a[key], dict) or (isinstance(a[key], list) and any(isinstance(x, (dict, list)) for x in a[key])):
                return f"event {i} (cat {e.get('cat')}): args.{key} is {json.dumps(a[key])[:40]}"
    return None


#: The events read: complete events (Chrome-trace writers other than Kineto may leave ph out of them)
#: with a time.
_DURATION = ((pl.col("ph") == "X") | (pl.col("ph").is_null() & pl.col("dur").is_not_null())) & pl.col("ts").is_not_null()


#: Categories named in the error for a Chrome trace of another tool.
_FOREIGN_CATEGORIES = 5


def _foreign_trace(path: Path, events: pl.DataFrame) -> InputError:
    """A Chrome trace whose complete events use none of the categories PyTorch's profiler writes
    (TensorFlow's or JAX's profiler, a hand-made trace; rocprof v1's results.json is named before, by its lanes)."""
    cats = events.group_by("cat").len().sort("len", descending=True)["cat"].head(_FOREIGN_CATEGORIES).to_list()
    named = ", ".join("(none)" if c is None else repr(c) for c in cats)
    return InputError(path, f"is a Chrome trace, but none of its {events.height:,} events has a category PyTorch's "
                            f"profiler writes (kernel, cuda_runtime, cpu_op, ...; it has {named}): a trace from "
                            "another tool, which coach does not read")


def _canonical_events(events: pl.DataFrame, t0: float) -> pl.DataFrame:
    """Canonical activity class, integer ns times, and canonical argument columns; the events of
    categories coach does not read are left out: ``_timed(_classified(events), t0)``."""
    return _timed(_classified(events), t0)


def _classified(events: pl.DataFrame) -> pl.DataFrame:
    """The events with their activity class (null for a category coach does not read), duration,
    process, thread and canonical arguments; ``ts`` as read. Row by row: the classes of a trace's
    pieces are those of the whole trace. No row is left out here: each table picks its activities'
    rows, and only the columns it uses, once (``_of``)."""
    return (
        events.with_columns(activity=pl.col("cat").replace_strict(_mapping("category"), default=None,
                                                                  return_dtype=pl.String))
        .with_columns(
            activity=pl.when((pl.col("cat") == "Operator") & pl.col("name").str.starts_with(_PROFILER_STEP))
            .then(pl.lit("user_annotation"))
            .otherwise(pl.col("activity")),
            dur_ns=(pl.col("dur") * _US_TO_NS).round().cast(pl.Int64).clip(lower_bound=0).fill_null(0),
            pid=pl.col("pid").cast(pl.Int64, strict=False),
            tid=_tid(events.get_column("tid")),
        )
        .drop("dur", "ph", "cat")
        .pipe(_with_canonical_args, "arg", "args")
    )


def _read_any(ev: pl.DataFrame) -> bool:
    """Whether ``_classified`` events hold any of a category coach reads."""
    return ev.height > ev["activity"].null_count()


def _tid(tid: pl.Series) -> pl.Series:
    """The thread (or, on GPU rows, stream) as a number: torch 1.8-era GPU rows name their stream in tid
    ("stream 7"), later ones write the number; the text is searched only where some tid is not one."""
    ints = tid.cast(pl.Int64, strict=False)
    if ints.null_count() == tid.null_count():
        return ints
    return pl.select(pl.coalesce(ints, tid.str.extract(r"^stream (\d+)$", 1).cast(pl.Int64))).to_series()


def _classified_piece(events: pl.DataFrame) -> tuple[pl.DataFrame, float | None]:
    """``_classified`` of a piece's duration events, and the earliest ``ts`` among all of them (the
    trace's first event may be of a category left out: the profiler's own span)."""
    return _classified(events), events["ts"].min()


def _timed(frame: pl.DataFrame, t0: float) -> pl.DataFrame:
    """``_classified`` events with integer ns times from ``t0`` (``start_ns``, ``end_ns``), in the
    order they were read. Each table's rows are put in start order where they are picked out
    (``_of``): a trace interleaves its kinds of events out of order (the GPU's after the host's), but
    each kind is mostly in order already, and a stable sort of each kind's rows gives the rows, in the
    order, that a stable sort of all of them would."""
    return frame.with_columns(start_ns=((pl.col("ts") - t0) * _US_TO_NS).round().cast(pl.Int64)).with_columns(
        end_ns=pl.col("start_ns") + pl.col("dur_ns")).drop("ts")


def _of(ev: pl.DataFrame, which: pl.Expr, columns: list[str]) -> pl.DataFrame:
    """``columns`` of the events ``which`` picks, in start order (in the order read among equal
    starts); only those columns are copied."""
    rows = ev.lazy().filter(which).select(columns).collect()
    return rows if rows["start_ns"].is_sorted() else rows.sort("start_ns", maintain_order=True)


def _launching_thread(ev: pl.DataFrame) -> pl.DataFrame:
    """correlation_id -> pid, tid of the API call that launched the work (one row per id)."""
    return (
        _of(ev, pl.col("activity").is_in(["runtime", "driver"]) & pl.col("correlation_id").is_not_null(),
            ["start_ns", "correlation_id", "pid", "tid"])
        .group_by("correlation_id")
        .agg(pl.col("pid").first(), pl.col("tid").first())
    )


def _gpu_rows(ev: pl.DataFrame, activity: str, corr: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    # On GPU rows Kineto's pid is the device and tid the stream: use them only where args lack those.
    return (
        _of(ev, pl.col("activity") == activity, [*_SPAN, *_GPU_PLACE, "tid", *columns])
        .with_columns(
            device_id=pl.coalesce("device_id", "pid"),
            stream_id=pl.coalesce("stream_id", "tid"),
        )
        .drop("pid", "tid")
        .join(corr.select("correlation_id", "pid"), on="correlation_id", how="left", maintain_order="left")
    )


_SPAN = ["start_ns", "end_ns", "dur_ns"]
_GPU_PLACE = ["device_id", "context_id", "stream_id", "correlation_id", "pid"]


def _kernels(ev: pl.DataFrame, corr: pl.DataFrame) -> pl.DataFrame:
    rows = _gpu_rows(ev, "kernel", corr, ["name", "grid", "block", "registers_per_thread", "shared_mem_bytes"]).rename(
        {"name": "demangled_name"})
    short = rows.select("demangled_name").unique().with_columns(
        name=pl.col("demangled_name").map_elements(short_kernel_name, return_dtype=pl.Utf8)
    )
    return rows.join(short, on="demangled_name", how="left", maintain_order="left").select(
        *_SPAN, *_GPU_PLACE, "name", "demangled_name",
        *(pl.col("grid").list.get(i, null_on_oob=True).alias(f"grid_{a}") for i, a in enumerate("xyz")),
        *(pl.col("block").list.get(i, null_on_oob=True).alias(f"block_{a}") for i, a in enumerate("xyz")),
        "registers_per_thread", "shared_mem_bytes",
    )


def _memcpy(ev: pl.DataFrame, corr: pl.DataFrame) -> pl.DataFrame:
    copy_kind, memory_kind = _mapping("copy_kind"), _mapping("memory_kind")
    parts = pl.col("name").str.extract_groups(_MEMCPY_NAME)
    return (
        _gpu_rows(ev, "memcpy", corr, ["name", "bytes"])
        .with_columns(
            kind=parts.struct.field("1").replace_strict(copy_kind, default="unknown"),
            src_memory=parts.struct.field("2").replace_strict(memory_kind, default="unknown"),
            dst_memory=parts.struct.field("3").replace_strict(memory_kind, default="unknown"),
        )
        .with_columns(pageable=(pl.col("src_memory") == "pageable") | (pl.col("dst_memory") == "pageable"))
        .select(*_SPAN, *_GPU_PLACE, "kind", "bytes", "src_memory", "dst_memory", "pageable")
    )


def _memset(ev: pl.DataFrame, corr: pl.DataFrame) -> pl.DataFrame:
    return (
        _gpu_rows(ev, "memset", corr, ["name", "bytes"])
        .with_columns(
            memory=pl.col("name").str.extract(_MEMSET_NAME, 1).replace_strict(_mapping("memory_kind"), default="unknown")
        )
        .select(*_SPAN, *_GPU_PLACE, "bytes", "memory")
    )


def _api(ev: pl.DataFrame) -> pl.DataFrame:
    return _of(ev, pl.col("activity").is_in(["runtime", "driver"]), [*_SPAN, "pid", "tid", "correlation_id", "name", "activity"]).select(
        *_SPAN, "pid", "tid", "correlation_id", "name", api=pl.col("activity")
    )


def _sync(ev: pl.DataFrame, corr: pl.DataFrame) -> pl.DataFrame:
    return (
        _of(ev, pl.col("activity") == "sync", [*_SPAN, *_GPU_PLACE, "tid", "sync_kind", "name", "event_id"])
        .with_columns(
            # On sync rows Kineto's pid is the device and tid the stream (-1 for context syncs).
            device_id=pl.coalesce("device_id", "pid"),
            stream_id=pl.coalesce("stream_id", "tid").replace(-1, None),
            kind=pl.coalesce("sync_kind", "name").replace_strict(_mapping("sync_kind"), default="unknown"),
        )
        .drop("pid", "tid")
        .join(corr, on="correlation_id", how="left", maintain_order="left")
        .select(*_SPAN, *_GPU_PLACE, "tid", "kind", "event_id")
    )


def _nvtx(ev: pl.DataFrame) -> pl.DataFrame:
    ranges = (
        _of(ev, pl.col("activity").is_in(["user_annotation", "cpu_op"]), [*_SPAN, "pid", "tid", "name", "activity"])
        .select(*_SPAN, "pid", "tid", text=pl.col("name"), domain=pl.col("activity"), kind=pl.lit("push_pop"))
        .sort("pid", "tid", "start_ns", "end_ns", descending=[False, False, False, True], nulls_last=True)
    )
    return ranges.with_columns(depth=nesting_depth(ranges))


def _devices(doc: pl.DataFrame) -> pl.DataFrame:
    return (
        doc.select(pl.coalesce("deviceProperties", "computeProperties").explode().alias("props"))
        .select(_canonical_args("device", "props"))
        .filter(pl.col("device_id").is_not_null())
        .with_columns(max_warps_per_sm=pl.col("max_threads_per_sm") // pl.col("warp_size"))
        .drop("max_threads_per_sm", "warp_size")
    )


def _source(path: Path, doc: pl.DataFrame, t0: float) -> Source:
    top = {k: doc[k][0] for k in _TOP_LEVEL_TEXT}
    meta = {
        "schema_version": top["schemaVersion"],
        "base_time_ns": int(top["baseTimeNanoseconds"]) if top["baseTimeNanoseconds"] else None,
        "trace_start_us": t0,
        "cuda_driver_version": top["cuda_driver_version"],
        "cuda_runtime_version": top["cuda_runtime_version"],
        "cupti_version": top["cupti_version"],
        "trace_id": top["trace_id"],
    }
    version = f"Kineto schema {top['schemaVersion']}" if top["schemaVersion"] else None
    return Source(path=str(path), format="kineto-json", tool="PyTorch profiler", tool_version=version,
                  meta={k: v for k, v in meta.items() if v is not None})


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def nesting_depth(ranges: pl.DataFrame) -> pl.Series:
    """Nesting level of each range on its (pid, tid), 0 for outermost; rows must be sorted by
    pid, tid, start_ns ascending and end_ns descending (the pre-order of the nesting tree).

    In that order a range's ancestors are the earlier ranges still open at its start, so its depth
    is its position minus the number of ranges that closed at or before its start. Counting those is
    one binary search over the sorted ends, with each thread shifted onto its own stretch of the time
    axis; a zero-length range closing exactly at another's start is not counted as closed before it.
    """
    if ranges.is_empty():
        return pl.Series("depth", [], dtype=pl.Int64)
    lane = pl.struct(pl.col("pid").fill_null(-1), pl.col("tid").fill_null(-1)).rank("dense").cast(pl.Int64)
    span = 2 * (int(ranges["end_ns"].max()) + 1) + 2
    keys = ranges.select(
        closed=lane * span + 2 * pl.col("end_ns") + (pl.col("end_ns") == pl.col("start_ns")).cast(pl.Int64),
        opened=lane * span + 2 * pl.col("start_ns") + 1,
    )
    closed_before = keys["closed"].sort().search_sorted(keys["opened"], side="left").cast(pl.Int64)
    return (pl.int_range(ranges.height, dtype=pl.Int64, eager=True) - closed_before).clip(lower_bound=0).alias("depth")


def short_kernel_name(demangled: str) -> str:
    """The bare function name of a demangled kernel signature, as Nsight Systems' short name:
    ``void at::native::reduce_kernel<512, 1, ...>(...)`` -> ``reduce_kernel``."""
    s = demangled.strip()
    s = _drop_trailing_group(s, "(", ")")
    s = _drop_trailing_group(s, "<", ">")
    head = s
    depth = 0
    cut = 0
    for i, ch in enumerate(head):  # the last top-level "::" or space separates scope and return type
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0 and (ch == " " or head.startswith("::", i)):
            cut = i + (2 if ch == ":" else 1)
    return head[cut:] or demangled


def _drop_trailing_group(s: str, open_ch: str, close_ch: str) -> str:
    """Remove a balanced ``open ... close`` group at the end of ``s`` (and a trailing ``const``)."""
    t = s.removesuffix(" const").rstrip()
    if not t.endswith(close_ch):
        return s
    depth = 0
    for i in range(len(t) - 1, -1, -1):
        if t[i] == close_ch:
            depth += 1
        elif t[i] == open_ch:
            depth -= 1
            if depth == 0:
                return t[:i].rstrip() if i > 0 else s
    return s
