"""Profiles of other tools (synthetic files in their formats' shapes): one line naming the tool and the
way out, never a reader's error about a layout."""

from __future__ import annotations

import sqlite3

import pytest

from coach.errors import InputError
from coach.ingest import load


def _message(path) -> str:
    with pytest.raises(InputError) as info:
        load(path)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_nvprof_text_output(tmp_path):
    p = tmp_path / "nvprof.csv"
    p.write_text('==4242== NVPROF is profiling process 4242, command: ./a.out\n==4242== Profiling application: ./a.out\n'
                 '"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"\n')
    assert "is output of nvprof" in _message(p)


def test_nvprof_database(tmp_path):
    p = tmp_path / "run.nvvp"
    con = sqlite3.connect(p)
    con.executescript("CREATE TABLE StringTable (_id_ INTEGER, value TEXT); "
                      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, name INTEGER);")
    con.close()
    assert "is an nvprof database" in _message(p)


def test_rocprof_database(tmp_path):
    p = tmp_path / "results.db"
    con = sqlite3.connect(p)
    con.executescript("CREATE TABLE rocpd_kernel_dispatch (id INTEGER, start INTEGER, end INTEGER);")
    con.close()
    assert "ROCm profiler database" in _message(p)
