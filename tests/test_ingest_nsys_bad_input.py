"""Damaged and wrong-kind SQLite input: one-line ``InputError`` naming the file, from the reader and
from ``coach.ingest.load`` alike. The damaged files are made in tmp_path from the real export."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from coach.errors import InputError
from coach.ingest import load, nsys_sqlite

PAGE_HEADER_SIZE_OFFSET = 16  # SQLite file format: the page size is a big-endian u16 at byte 16


def _page_of(path: Path, table: str) -> tuple[int, int]:
    """(page size, byte offset of the root page of ``table``)."""
    con = sqlite3.connect(path)
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    con.close()
    raw = path.read_bytes()
    size = int.from_bytes(raw[PAGE_HEADER_SIZE_OFFSET:PAGE_HEADER_SIZE_OFFSET + 2], "big")
    return size, (root - 1) * size


def _error(reader, path: Path) -> str:
    with pytest.raises(InputError) as info:
        reader(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.fixture(params=[nsys_sqlite.read, load], ids=["nsys_sqlite.read", "ingest.load"])
def reader(request):
    return request.param


def test_truncated_export(reader, copy_to_tmp, softmax_nsys_sqlite):
    path = copy_to_tmp(softmax_nsys_sqlite)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    assert "damaged SQLite database" in _error(reader, path)


def test_corrupt_bytes_in_the_kernel_table(reader, copy_to_tmp, softmax_nsys_sqlite):
    path = copy_to_tmp(softmax_nsys_sqlite)
    size, offset = _page_of(path, "CUPTI_ACTIVITY_KIND_KERNEL")
    raw = bytearray(path.read_bytes())
    raw[offset:offset + size] = b"\xab" * size
    path.write_bytes(bytes(raw))
    assert "malformed" in _error(reader, path)


def test_empty_file(reader, tmp_path):
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    assert _error(reader, path).endswith("is empty")


def test_sqlite_that_is_not_an_nsys_export(reader, tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    assert "not an Nsight Systems export" in _error(reader, path)


def test_sqlite_without_tables(reader, tmp_path):
    path = tmp_path / "blank.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA user_version = 1")  # writes the header, creates no table
    con.commit()
    con.close()
    assert "no tables" in _error(reader, path)


def test_kernel_table_of_an_unknown_layout(reader, copy_to_tmp, softmax_nsys_sqlite):
    path = copy_to_tmp(softmax_nsys_sqlite)
    con = sqlite3.connect(path)
    con.execute('ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN "start" TO "begin"')
    con.commit()
    con.close()
    message = _error(reader, path)
    assert "CUPTI_ACTIVITY_KIND_KERNEL lacks the columns for start_ns" in message and "nsys 2025.3.2.0" in message


def test_string_ids_table_missing(reader, copy_to_tmp, softmax_nsys_sqlite):
    path = copy_to_tmp(softmax_nsys_sqlite)
    con = sqlite3.connect(path)
    con.execute("DROP TABLE StringIds")
    con.commit()
    con.close()
    assert "no StringIds table" in _error(reader, path)


def test_missing_file(tmp_path):
    _error(nsys_sqlite.read, tmp_path / "nowhere.sqlite")
