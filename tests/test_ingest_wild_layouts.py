"""Exports in layouts met in public reports and not recordable here (tests/data/nsys_layouts_synthetic,
synthetic rewrites of a real H200 export): each loads, or fails in one line with the true reason."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
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
    assert "CUPTI_ACTIVITY_KIND_KERNEL lacks the columns for name_id (shortName or demangledName or mangledName)" in done.stderr
    assert "written by nsys 2025.3.2.0, export schema 3.20.3" in done.stderr


def test_a_kernel_table_with_only_mangled_names_reads_their_base_names(synthetic, softmax_nsys_sqlite):
    """names_mangled_only.sqlite: the kernels named only by mangledName. Before, it was refused for lacking
    shortName or demangledName; the base names taken from the Itanium names must be nsys's own shortNames."""
    tl, reference = load(synthetic / "names_mangled_only.sqlite"), load(softmax_nsys_sqlite)
    assert tl.kernels["name"].to_list() == reference.kernels["name"].to_list()
    assert all(n.startswith("_ZN2at6native") for n in tl.kernels["demangled_name"])  # the mangled name, as recorded
    assert [f.rule_id for f in diagnose(tl)] == [f.rule_id for f in diagnose(reference)]


@pytest.mark.parametrize(("mangled", "base"), [
    ("_Z10vector_addPfS_i", "vector_add"),
    ("_ZN2at6native13reduce_kernelILi512ELi1EEEvT1_", "reduce_kernel"),
    ("_ZN2at6native43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6322cunn_SoftMaxForwardRegIfEEvPT1_", "cunn_SoftMaxForwardReg"),
    ("_ZN12_GLOBAL__N_16kernelEv", "kernel"),
    ("_ZN3abc", None),  # cut short: no template arguments or end after the name
    ("_Z99short", None),  # a length past the end
])
def test_the_base_name_of_a_mangled_kernel_name(mangled, base):
    from coach.ingest.nsys_sqlite import _itanium_base_name  # noqa: PLC0415

    assert _itanium_base_name(mangled) == base


def test_enumerations_with_renamed_symbols_fall_back_to_the_known_numbering_and_say_so(synthetic, softmax_nsys_sqlite):
    """enums_renamed.sqlite: ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND and ENUM_NSYS_EVENT_TYPE name symbols coach
    does not know. Before, every copy read as kind 'unknown' and every NVTX range was dropped, silently."""
    from coach.analyze.coverage import timeline_gaps  # noqa: PLC0415

    tl, reference = load(synthetic / "enums_renamed.sqlite"), load(softmax_nsys_sqlite)
    assert tl.memcpy.select("kind", "src_memory", "dst_memory").rows() == \
        reference.memcpy.select("kind", "src_memory", "dst_memory").rows()
    assert set(tl.memcpy["kind"]) == {"DtoH"}
    assert tl.nvtx.select("text", "kind", "depth").rows() == reference.nvtx.select("text", "kind", "depth").rows()
    assert sorted(tl.source.meta["assumed"]) == ["ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "ENUM_NSYS_EVENT_TYPE"]
    gaps = timeline_gaps(tl)
    assert len(gaps) == 3 and all("names none of the values coach knows" in g for g in gaps)
    assert "RENAMED_MEMCPY_OPER_0" in " ".join(gaps)
    assert "assumed" not in reference.source.meta and timeline_gaps(reference) == []


def test_what_newer_exports_add_does_not_change_what_is_read(synthetic, softmax_nsys_sqlite):
    """newer_additions.sqlite: unknown columns on the activity tables, an unknown activity table, NVTX
    messages only in textId (no text column) and a view over a dropped table (which made listing the
    tables fail: 'a damaged SQLite database')."""
    tl, reference = load(synthetic / "newer_additions.sqlite"), load(softmax_nsys_sqlite)
    for table in ("kernels", "memcpy", "memset", "api", "sync", "nvtx"):
        assert getattr(tl, table).equals(getattr(reference, table)), table
    assert tl.nvtx["text"].null_count() == 0
    assert "unread" not in tl.source.meta and "assumed" not in tl.source.meta


def test_a_graph_trace_without_graph_ids_names_the_executable_graph(copy_to_tmp, data_dir):
    """Synthetic: the real decode_graph export (graphs traced whole) with graphId dropped from its
    GRAPH_TRACE table. Before, the graph launches had no name and `coach load` failed (exit 70)."""
    import sqlite3  # noqa: PLC0415

    path = copy_to_tmp(data_dir / "wild_nsys" / "decode_graph.sqlite", "no_graph_id.sqlite")
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE DROP COLUMN graphId")
    con.commit()
    con.close()
    tl = load(path)
    graphs = tl.kernels.filter(pl.col("name").str.starts_with("CUDA graph"))
    assert graphs.height > 0 and graphs["name"].null_count() == 0
    assert set(graphs["name"]) == {"CUDA graph exec 2"}
    done = subprocess.run([sys.executable, "-m", "coach", "load", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_refusal_of_a_readable_export_names_the_nsys_and_schema_that_wrote_it(synthetic, copy_to_tmp,
                                                                                   softmax_nsys_sqlite):
    import sqlite3  # noqa: PLC0415

    with pytest.raises(InputError) as info:
        load(synthetic / "no_activity.sqlite")
    assert str(info.value).endswith("(written by nsys 2025.3.2.0, export schema 3.20.3)")
    path = copy_to_tmp(softmax_nsys_sqlite, "no_strings.sqlite")
    con = sqlite3.connect(path)
    con.executescript("DROP TABLE StringIds; DELETE FROM META_DATA_EXPORT WHERE name LIKE 'EXPORT_SCHEMA%';")
    con.close()
    with pytest.raises(InputError) as info:
        load(path)
    assert "no StringIds table" in str(info.value) and "written by nsys 2025.3.2.0)" in str(info.value)
    con = sqlite3.connect(path)
    con.executescript("DROP TABLE META_DATA_EXPORT;")
    con.close()
    with pytest.raises(InputError) as info:
        load(path)
    assert "written by an nsys of unknown version: it has no META_DATA_EXPORT table" in str(info.value)


def test_an_export_schema_newer_than_any_checked_is_read_and_said_so(copy_to_tmp, softmax_nsys_sqlite):
    """Synthetic: the real 2025.3 export (schema 3.20.3) with its schema version set to 4.0.0."""
    import sqlite3  # noqa: PLC0415

    from coach.analyze.coverage import timeline_gaps  # noqa: PLC0415

    path = copy_to_tmp(softmax_nsys_sqlite, "schema_4.sqlite")
    con = sqlite3.connect(path)
    con.execute("UPDATE META_DATA_EXPORT SET value = '4.0.0' WHERE name = 'EXPORT_SCHEMA_VERSION'")
    con.commit()
    con.close()
    tl, reference = load(path), load(softmax_nsys_sqlite)
    assert tl.kernels.equals(reference.kernels)
    gaps = timeline_gaps(tl)
    assert len(gaps) == 1 and gaps[0].startswith("The export's schema, 4.0.0 (nsys 2025.3.2.0), is newer than any coach")
    assert "schema_newer" not in reference.source.meta


def test_tables_held_under_versioned_names_are_read_from_the_highest_version(copy_to_tmp, softmax_nsys_sqlite):
    """Synthetic: the real export with its kernel, NVTX and memcpy-kind tables renamed to ``_V<n>`` names
    (public readers of nsys exports resolve such names; NVIDIA's schema reference documents the plain
    ones), a stale ``_V2`` kernel table holding two rows beside the ``_V10`` one. Before, the kernels,
    NVTX ranges and copy kinds were silently missing."""
    import sqlite3  # noqa: PLC0415

    path = copy_to_tmp(softmax_nsys_sqlite, "versioned.sqlite")
    con = sqlite3.connect(path)
    con.executescript("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO CUPTI_ACTIVITY_KIND_KERNEL_V10; "
                      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL_V2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL_V10 LIMIT 2; "
                      "ALTER TABLE NVTX_EVENTS RENAME TO NVTX_EVENTS_V3; "
                      "ALTER TABLE ENUM_CUDA_MEMCPY_OPER RENAME TO ENUM_CUDA_MEMCPY_OPER_V2; "
                      "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY ADD COLUMN unused INTEGER;")
    con.close()
    tl, reference = load(path), load(softmax_nsys_sqlite)
    for table in ("kernels", "memcpy", "nvtx", "api", "sync"):
        assert getattr(tl, table).equals(getattr(reference, table)), table
    assert tl.source.meta["table_variants"] == {"CUPTI_ACTIVITY_KIND_KERNEL": "CUPTI_ACTIVITY_KIND_KERNEL_V10",
                                                "NVTX_EVENTS": "NVTX_EVENTS_V3",
                                                "ENUM_CUDA_MEMCPY_OPER": "ENUM_CUDA_MEMCPY_OPER_V2"}
    assert [f.rule_id for f in diagnose(tl)] == [f.rule_id for f in diagnose(reference)]


def test_activity_tables_without_global_pid_load_with_the_process_unknown(copy_to_tmp, softmax_nsys_sqlite):
    """Synthetic: the real export without globalPid in its kernel, memcpy and synchronisation tables (no
    export seen has this; the column's absence must still not break reading). The process is unknown
    (null), never a made-up one, and the diagnosis is the same."""
    import sqlite3  # noqa: PLC0415

    path = copy_to_tmp(softmax_nsys_sqlite, "no_global_pid.sqlite")
    con = sqlite3.connect(path)
    con.executescript("".join(f"ALTER TABLE {t} DROP COLUMN globalPid;" for t in (
        "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")))
    con.close()
    tl, reference = load(path), load(softmax_nsys_sqlite)
    assert tl.kernels["pid"].null_count() == tl.kernels.height == reference.kernels.height
    assert tl.kernels.drop("pid").equals(reference.kernels.drop("pid"))
    assert [f.rule_id for f in diagnose(tl)] == [f.rule_id for f in diagnose(reference)]
