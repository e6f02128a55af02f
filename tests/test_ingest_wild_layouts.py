"""Exports in layouts met in public reports and not recordable here (tests/data/nsys_layouts_synthetic,
synthetic rewrites of a real H200 export): each loads, or fails in one line with the true reason."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.analyze.timeline_summary import summarize_timeline
from coach.errors import InputError
from coach.ingest import load


@pytest.fixture(scope="module")
def synthetic(data_dir):
    return data_dir / "nsys_layouts_synthetic"


def test_an_export_without_activity_says_no_gpu_activity_was_recorded(synthetic):
    with pytest.raises(InputError) as info:
        load(synthetic / "no_activity.sqlite")
    message = str(info.value)
    assert "\n" not in message and "cannot concat" not in message
    assert "no GPU activity was recorded" in message and "was it profiled with --trace=cuda?" in message
    assert "ProcessStreams" in message  # what the export does hold


def test_the_cli_fails_in_one_line_with_a_non_zero_exit(synthetic):
    done = subprocess.run([sys.executable, "-m", "coach", "load", str(synthetic / "no_activity.sqlite")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "no GPU activity was recorded" in done.stderr


def test_a_2020_5_export_reads_its_devices_from_the_cuda_gpu_table(synthetic, softmax_nsys_sqlite):
    tl = load(synthetic / "layout_2020_5.sqlite")
    reference = load(softmax_nsys_sqlite)
    assert tl.source.tool_version == "2020.5.1.85"
    assert tl.kernels.select("start_ns", "end_ns", "name").equals(reference.kernels.select("start_ns", "end_ns", "name"))
    assert tl.devices.select("device_id", "name", "sm_count", "sm_clock_hz").rows() == \
        reference.devices.select("device_id", "name", "sm_count", "sm_clock_hz").rows()
    assert "unread" not in tl.source.meta


def test_an_unknown_device_table_is_left_out_and_said_so(synthetic):
    tl = load(synthetic / "gpu_table_unknown.sqlite")
    assert tl.kernels.height == 11 and tl.devices.height == 0
    assert "TARGET_INFO_GPU has no column for device_id" in tl.source.meta["unread"]["devices"]
    summary = summarize_timeline(tl)
    assert summary["counts"]["devices"] == 1  # GPU 0 ran the work, though its properties were not read
    assert summary["devices"].height == 1
    assert any("devices table was left out" in w for w in summary["warnings"])


def test_api_calls_without_gpu_records_warn_and_diagnose_nothing_about_the_gpu(synthetic):
    tl = load(synthetic / "api_without_gpu.sqlite")
    assert tl.api.height == 64 and tl.kernels.height == 0
    warnings = summarize_timeline(tl)["warnings"]
    assert len(warnings) == 1 and "no kernel, copy or memset records" in warnings[0]
    findings = diagnose(tl)
    assert len(findings) == 1 and is_not_checked(findings[0])
    assert "the GPU side was not captured" in findings[0].message


def test_a_complete_trace_has_no_warnings(softmax_nsys_sqlite):
    assert summarize_timeline(load(softmax_nsys_sqlite))["warnings"] == []


def test_an_nvtx_table_of_an_unknown_layout_is_left_out(copy_to_tmp, softmax_nsys_sqlite):
    """Synthetic: the real export with NVTX_EVENTS rebuilt without its eventType column."""
    import sqlite3  # noqa: PLC0415

    path = copy_to_tmp(softmax_nsys_sqlite, "nvtx_unknown.sqlite")
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE n AS SELECT start, end, text, globalTid FROM NVTX_EVENTS; DROP TABLE NVTX_EVENTS; "
                      "ALTER TABLE n RENAME TO NVTX_EVENTS;")
    con.close()
    tl = load(path)
    assert tl.kernels.height == 11 and tl.nvtx.height == 0
    assert "NVTX_EVENTS has no column for event_type" in tl.source.meta["unread"]["nvtx"]


def _without_kernel_columns(copy_to_tmp, softmax_nsys_sqlite, name, *columns):
    """Synthetic: the real export with the named columns of its kernel table dropped."""
    import sqlite3  # noqa: PLC0415

    path = copy_to_tmp(softmax_nsys_sqlite, name)
    con = sqlite3.connect(path)
    con.executescript("".join(f"ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN {c};" for c in columns))
    con.close()
    return path


def test_a_kernel_table_with_only_demangled_names_reads_their_base_names(copy_to_tmp, softmax_nsys_sqlite):
    """Public readers of 2021-era exports take kernel names from demangledName (NVIDIA's 2021.1 report
    scripts join StringIds on it); an export without shortName must give the same short names, taken
    from the signatures (``void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<...>
    (...)`` -> ``distribution_elementwise_grid_stride_kernel``), not the whole signatures."""
    path = _without_kernel_columns(copy_to_tmp, softmax_nsys_sqlite, "demangled_only.sqlite", "shortName", "mangledName")
    tl, reference = load(path), load(softmax_nsys_sqlite)
    assert tl.kernels.equals(reference.kernels)
    assert sorted(set(tl.kernels["name"])) == ["cunn_SoftMaxForwardReg", "distribution_elementwise_grid_stride_kernel",
                                              "reduce_kernel", "vectorized_elementwise_kernel"]
    assert [f.rule_id for f in diagnose(tl)] == [f.rule_id for f in diagnose(reference)]


def test_a_kernel_table_without_any_name_fails_in_one_line_naming_the_columns(copy_to_tmp, softmax_nsys_sqlite):
    """Before, its null names reached the loop search and the table printer: an internal error (exit 70)."""
    path = _without_kernel_columns(copy_to_tmp, softmax_nsys_sqlite, "no_names.sqlite", "shortName", "mangledName",
                                   "demangledName")
    done = subprocess.run([sys.executable, "-m", "coach", "load", str(path)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "CUPTI_ACTIVITY_KIND_KERNEL lacks the columns for name_id (shortName or demangledName)" in done.stderr
