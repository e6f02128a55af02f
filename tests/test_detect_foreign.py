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


def test_exports_saved_as_utf16_on_windows_read_as_the_originals(data_dir, tmp_path):
    """PowerShell's ``>`` writes UTF-16 with a byte-order mark: the same numbers must come out."""
    for original in (data_dir / "ncu_strided_copy" / "nvidia" / "raw.csv",
                     data_dir / "kineto_torch_softmax" / "torch_softmax_kineto.json"):
        copy = tmp_path / original.name
        copy.write_bytes(original.read_text().encode("utf-16"))
        a, b = load(original), load(copy)
        first = "launches" if a.kind == "kernel-profile" else "kernels"
        assert getattr(a, first).equals(getattr(b, first))
