"""The fast paths read what the simple ones read, frame for frame, on the recorded traces.

- A large PyTorch trace is read in pieces on every core, each run of pieces classified on the thread
  that read it (coach.ingest.kineto ``_read_pieces``); a small one, or one the pieces cannot read, in
  one piece after which the whole frame is classified. Here every recorded Kineto trace is read both
  ways: the pieces made 4 KB (tens to hundreds of pieces, several runs per thread), against the
  whole document.
- A folder of reports is read by worker processes forked from the fork server
  (coach.analyze.parallel) into the cache; with ``COACH_SERIAL=1`` one after another in this
  process. Here the 8 recorded ranks are cached both ways and every cached table compared, and the
  side-by-side table made from each.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from coach.analyze import multi, parallel
from coach.ingest import kineto
from coach.ingest.saved import read as read_saved

DATA = Path(__file__).parent / "data"
KINETO = sorted({*(DATA / "wild_kineto").glob("**/*.json.gz"), *DATA.glob("kineto_*/**/*.json.gz"),
                 *DATA.glob("kineto_*/**/*.json")} - {DATA / "kineto_timeline_cases" / "recording.json"})
RANKS = sorted((DATA / "nsys_ranks").glob("rank*.sqlite"))


def _same_tables(a, b, *, where_read: bool = True) -> list[str]:
    """The tables (and the source, with or without the path it was read from) in which two profiles differ."""
    differ = [t for t in a.TABLES if not getattr(a, t).equals(getattr(b, t))]
    sa, sb = (a.source, b.source) if where_read else (replace(a.source, path=""), replace(b.source, path=""))
    return differ + (["source"] if sa != sb else [])


def test_the_recorded_traces_are_there():
    assert len(KINETO) >= 25 and len(RANKS) == 8


@pytest.mark.parametrize("trace", KINETO, ids=lambda p: str(p.relative_to(DATA)))
def test_a_trace_read_in_pieces_gives_the_frames_of_one_read(trace, monkeypatch):
    monkeypatch.setattr(kineto, "_PIECES_FROM_BYTES", 1 << 62)
    whole = kineto.read(trace)

    taken = []
    read_pieces = kineto._read_pieces

    def spy(*args, **kwargs):
        out = read_pieces(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(kineto, "_PIECES_FROM_BYTES", 0)
    monkeypatch.setattr(kineto, "_PIECE_BYTES", 4096)
    monkeypatch.setattr(kineto, "_read_pieces", spy)
    pieces = kineto.read(trace)
    assert taken == [True], "the trace was not read in pieces"
    assert _same_tables(whole, pieces) == []
    assert whole.kernels.height == pieces.kernels.height > 0 or whole.memcpy.height > 0


def test_reports_cached_by_the_workers_are_those_read_in_this_process(tmp_path, monkeypatch):
    if parallel.cores() < 2:
        pytest.skip("needs 2 cores: on one, the reports are read in this process either way")
    monkeypatch.setenv(parallel.SERIAL_ENV, "1")
    serial = multi.cache_reports(RANKS, tmp_path / "serial")
    monkeypatch.delenv(parallel.SERIAL_ENV)
    workers = multi.cache_reports(RANKS, tmp_path / "workers")
    assert [f.parent for f in serial] == [tmp_path / "serial" / "reports"] * 8
    assert [f.parent for f in workers] == [tmp_path / "workers" / "reports"] * 8
    for a, b in zip(serial, workers):
        assert _same_tables(read_saved(a), read_saved(b), where_read=False) == [], a.name  # two cache folders
        assert multi.report_name(a) == multi.report_name(b) == a.name.split("-")[0]
        assert (a / multi.ROW_FILE).read_text() == (b / multi.ROW_FILE).read_text()
    ours, theirs = multi.side_by_side(serial), multi.side_by_side(workers)
    assert ours.table.equals(theirs.table) and ours.verdict == theirs.verdict
    assert ours.slowest == "rank5"


def test_a_row_from_the_report_in_memory_is_the_row_from_its_parquet_tables(tmp_path, monkeypatch):
    """The side-by-side row a worker writes beside a cached report (from the report it has just read)
    is the row computed later from the cached Parquet tables, where a saved profile has no row file."""
    monkeypatch.setenv(parallel.SERIAL_ENV, "1")
    for folder in multi.cache_reports(RANKS, tmp_path / "cache"):
        written = json.loads((folder / multi.ROW_FILE).read_text())
        (folder / multi.ROW_FILE).unlink()
        again = multi._report_row((folder, "r"))
        assert again == {"report": "r", **written}, folder.name
        assert written["kernels"] > 0 and written["wall_ns"] > 0 and written["steps"] >= 3


@pytest.mark.parametrize("dtype, values", [
    ("int", ["7", "-3", None, "18446744073709551615"]),                     # every value an integer (or too big for one)
    ("int", ["7", "1.5", "1e3", "inf", "abc", None, "-2.5"]),               # some read only as floats, some not at all
    ("int_list", [["32768", "1", "1"], None, [], ["4", "2"]]),               # launch grids as Kineto writes them
    ("int_list", [["32768", "1", "1"], ["grid(100,)"], ["grid(s0,)"], ["1", None, "2"], [], None, ["(8, 1, 1)"]]),
], ids=["ints", "floats and text", "grids", "grids as text"])
def test_an_argument_converted_the_cheap_way_is_what_the_expression_gives(dtype, values):
    """Synthetic values: ``_arg_values`` (the shortcuts where every value is an integer) against
    ``_as``, the expression every value goes through otherwise."""
    import polars as pl

    raw = pl.Series("a", values, dtype=pl.List(pl.Utf8) if dtype == "int_list" else pl.Utf8)
    assert kineto._arg_values(raw, dtype).to_list() == pl.select(kineto._as(dtype, pl.lit(raw))).to_series().to_list()


def test_a_thread_named_as_a_stream_is_read_as_its_number():
    import polars as pl

    tids = pl.Series("tid", ["7", None, "stream 3", "main"])
    assert kineto._tid(tids).to_list() == [7, None, 3, None]
    assert kineto._tid(pl.Series("tid", ["1", "2"])).to_list() == [1, 2]


@pytest.mark.parametrize("export", [*sorted((DATA / "nsys_torch_softmax").glob("*.sqlite")), RANKS[5]],
                         ids=lambda p: p.name)
def test_an_export_read_in_rowid_ranges_on_parallel_connections_is_the_export_read_whole(export, monkeypatch):
    """A large export's tables are read in rowid ranges on parallel connections; here ranges of 5
    rows make every table of a recorded export with more rows read that way."""
    from coach.ingest import nsys_sqlite

    whole = nsys_sqlite.read(export)
    split = []
    ranges = nsys_sqlite._Export._ranges

    def spy(self, plans):
        out = ranges(self, plans)
        split.extend(table for table, parts in out.items() if len(parts) > 1)
        return out

    monkeypatch.setattr(nsys_sqlite, "PARALLEL_READ_ROWS", 5)
    monkeypatch.setattr(nsys_sqlite._Export, "_ranges", spy)
    in_ranges = nsys_sqlite.read(export)
    assert {"kernels", "api"} <= set(split)
    assert whole.kernels.height > 5
    assert _same_tables(whole, in_ranges) == []


@pytest.mark.parametrize("export", [DATA / "hygiene_clean" / "clean.sqlite", RANKS[0]], ids=lambda p: p.name)
def test_columns_with_one_value_per_kernel_are_read_once_per_name_and_the_rest_row_by_row(export, monkeypatch):
    """A large export's launch configuration (and device, stream, process) is read once per kernel
    name where the export holds one value per name, and row by row where it does not: the recorded
    hygiene run launches one kernel with several grids, so its grid is read row by row; either way
    the kernels are those of the export read whole."""
    from coach.ingest import nsys_sqlite

    whole = nsys_sqlite.read(export)
    looked = {}
    per_name = nsys_sqlite._Export._per_name

    def spy(self, table, plan):
        looked[table] = per_name(self, table, plan)
        return looked[table]

    monkeypatch.setattr(nsys_sqlite, "PARALLEL_READ_ROWS", 5)
    monkeypatch.setattr(nsys_sqlite._Export, "_per_name", spy)
    in_ranges = nsys_sqlite.read(export)
    assert looked["kernels"] is not None
    once = set(looked["kernels"].columns)
    grids = whole.kernels.group_by("demangled_name").agg(pl.col("grid_x").n_unique())["grid_x"].max()
    assert ("grid_x" in once) == (grids == 1)
    assert {"block_x", "registers_per_thread", "device_id"} <= once
    assert _same_tables(whole, in_ranges) == []


def test_a_kernel_table_of_more_distinct_launch_configurations_than_the_limit_is_read_row_by_row(monkeypatch):
    """Past ``_PER_NAME_MAX`` distinct (name, configuration) rows the per-name reading gives up and
    every column is fetched row by row: the same kernels."""
    from coach.ingest import nsys_sqlite

    export = DATA / "hygiene_clean" / "clean.sqlite"
    whole = nsys_sqlite.read(export)
    looked = []
    per_name = nsys_sqlite._Export._per_name
    monkeypatch.setattr(nsys_sqlite._Export, "_per_name", lambda self, t, p: looked.append(per_name(self, t, p)) or looked[-1])
    monkeypatch.setattr(nsys_sqlite, "PARALLEL_READ_ROWS", 5)
    monkeypatch.setattr(nsys_sqlite, "_PER_NAME_MAX", 1)
    in_ranges = nsys_sqlite.read(export)
    assert looked == [None]
    assert _same_tables(whole, in_ranges) == []
