"""Export layouts of other nsys versions. Each test derives a synthetic export from the real nsys
2025.3.2 export by rewriting it (in tmp_path) into the layout that NVIDIA's schema documentation and
public readers describe for that version, then checks that coach reads the same timeline from it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from coach.ingest import nsys_sqlite


@pytest.fixture(scope="module")
def reference(softmax_nsys_sqlite):
    return nsys_sqlite.read(softmax_nsys_sqlite)


@pytest.fixture
def rewrite(copy_to_tmp, softmax_nsys_sqlite):
    """A copy of the real export with ``sql`` applied."""

    def _rewrite(sql: str, name: str = "synthetic.sqlite") -> Path:
        path = copy_to_tmp(softmax_nsys_sqlite, name)
        con = sqlite3.connect(path)
        con.executescript(sql)
        con.commit()
        con.close()
        return path

    return _rewrite


def _enum_tables(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ENUM_%'")]
    con.close()
    return names


# nsys 2021.1-2021.3.0 (synthetic): GPU properties in TARGET_INFO_CUDA_GPU, named as in CUPTI's
# CUpti_ActivityDevice (clock in kHz, bandwidth in kB/s); no ENUM_* tables (NVIDIA's 2022.4 report
# scripts carry the enum values themselves for such exports); no NVTX textId, no mangledName, no
# eventClass on API rows, no deprecatedSyncType, export metadata under EXPORT_META_DATA.
LAYOUT_2021 = """
CREATE TABLE TARGET_INFO_CUDA_GPU AS SELECT
    id AS deviceId, name, computeMajor AS computeCapabilityMajor, computeMinor AS computeCapabilityMinor,
    smCount AS numMultiprocessors, clockRate / 1000 AS coreClockRate, totalMemory AS globalMemorySize,
    memoryBandwidth / 1000 AS globalMemoryBandwidth, l2CacheSize, maxShmemPerSm AS maxSharedMemoryPerMultiprocessor,
    maxRegistersPerSm AS maxRegistersPerMultiprocessor, maxWarpsPerSm AS maxWarpsPerMultiprocessor,
    maxBlocksPerSm AS maxBlocksPerMultiprocessor, maxThreadsPerBlock
    FROM TARGET_INFO_GPU;
DROP TABLE TARGET_INFO_GPU;
DROP TABLE TARGET_INFO_CUDA_DEVICE;
ALTER TABLE NVTX_EVENTS DROP COLUMN textId;
ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN mangledName;
ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME DROP COLUMN eventClass;
ALTER TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION DROP COLUMN deprecatedSyncType;
ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA;
DROP TABLE META_DATA_CAPTURE;
"""


def test_2021_layout_reads_to_the_same_timeline(rewrite, reference):
    path = rewrite(LAYOUT_2021)
    con = sqlite3.connect(path)
    con.executescript("".join(f"DROP TABLE {t};" for t in _enum_tables(path)))
    con.close()
    old = nsys_sqlite.read(path)
    for name in ("kernels", "memcpy", "memset", "api", "sync", "nvtx"):
        assert getattr(old, name).equals(getattr(reference, name)), name
    d = old.devices.row(0, named=True)
    assert d["name"] == "NVIDIA H200" and d["sm_count"] == 132 and d["cc_major"] == 9
    assert d["sm_clock_hz"] == 1.98e9 and d["memory_bandwidth_bytes_per_s"] == 4.814304e12  # kHz, kB/s scaled
    assert old.source.tool_version == "2025.3.2.0"


def test_enum_tables_are_matched_by_name_not_by_id(rewrite, reference):
    """A renumbered ENUM_CUDA_MEM_KIND must not change what the memory kinds mean."""
    path = rewrite("""
        UPDATE ENUM_CUDA_MEM_KIND SET id = id + 100;
        UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET srcKind = srcKind + 100, dstKind = dstKind + 100;
        UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET memKind = memKind + 100;
    """)
    renumbered = nsys_sqlite.read(path)
    assert renumbered.memcpy.equals(reference.memcpy)
    assert renumbered.memset.equals(reference.memset)


def test_unknown_enum_values_read_as_unknown(rewrite):
    path = rewrite("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 77, srcKind = 99;")
    m = nsys_sqlite.read(path).memcpy
    assert m["kind"].to_list() == ["unknown"] * 4 and m["src_memory"].to_list() == ["unknown"] * 4
    assert m["pageable"].to_list() == [True, True, True, False]  # the destination still says pageable


def test_sync_kind_falls_back_to_the_record_type_without_api_rows(rewrite):
    path = rewrite("DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME; "
                   "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET syncType = 4;")
    tl = nsys_sqlite.read(path)
    assert tl.api.height == 0
    assert tl.sync["kind"].to_list() == ["context"] * 4 and tl.sync["tid"].null_count() == 4


def test_deprecated_sync_type_is_used_when_sync_type_is_null(rewrite):
    path = rewrite("""
        DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME;
        CREATE TABLE s AS SELECT * FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        DROP TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, deviceId INTEGER,
            contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
            deprecatedSyncType INTEGER, syncType INTEGER, eventId INTEGER);
        INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
            SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, 1, NULL, 7 FROM s;
    """)
    sync = nsys_sqlite.read(path).sync
    assert sync["kind"].to_list() == ["event"] * 4 and sync["event_id"].to_list() == [7] * 4


def test_non_utf8_string_ids_decode_with_replacement(rewrite):
    path = rewrite("UPDATE StringIds SET value = CAST(x'7265647563655fff6b65726e656c' AS TEXT) "
                   "WHERE value = 'reduce_kernel';")
    names = nsys_sqlite.read(path).kernels["name"]
    assert "reduce_\ufffdkernel" in names.to_list() and "reduce_kernel" not in names.to_list()


def test_missing_tables_give_empty_tables_not_errors(rewrite):
    path = rewrite("""
        DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET;
        DROP TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; DROP TABLE NVTX_EVENTS; DROP TABLE TARGET_INFO_GPU;
        DROP TABLE TARGET_INFO_CUDA_DEVICE; DROP TABLE META_DATA_EXPORT; DROP TABLE TARGET_INFO_SESSION_START_TIME;
    """)
    tl = nsys_sqlite.read(path)
    assert {name: df.height for name, df in tl.tables().items()} == {
        "kernels": 11, "memcpy": 0, "memset": 0, "api": 64, "sync": 0, "nvtx": 0, "devices": 0}
    assert tl.source.tool_version is None


def test_cuda_device_map_alone_gives_device_ids(rewrite):
    """2026.4 keeps a per-process CUDA device map with SM counts; with no TARGET_INFO_GPU it is used."""
    path = rewrite("DROP TABLE TARGET_INFO_GPU; ALTER TABLE TARGET_INFO_CUDA_DEVICE ADD COLUMN numMultiprocessors "
                   "INTEGER; UPDATE TARGET_INFO_CUDA_DEVICE SET numMultiprocessors = 132;")
    devices = nsys_sqlite.read(path).devices
    assert devices.select("device_id", "sm_count", "name").rows() == [(0, 132, None)]


def test_nvtx_nesting_is_per_thread_and_back_to_back_ranges_do_not_nest(rewrite):
    """Synthetic NVTX rows: two threads; ranges that touch; a range left open at the end."""
    path = rewrite("""
        DELETE FROM NVTX_EVENTS;
        INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES
            (100, 200, 59, 'a', 1, 0), (200, 300, 59, 'b', 1, 0), (200, 250, 59, 'b.1', 1, 0),
            (200, 220, 59, 'b.1.1', 1, 0), (150, NULL, 59, 'open', 2, 0), (160, 170, 59, 'open.1', 2, 0),
            (210, NULL, 34, 'mark', 1, 0), (300, NULL, 34, 'after', 1, 0);
    """)
    depth = dict(nsys_sqlite.read(path).nvtx.select("text", "depth").rows())
    assert depth == {"a": 0, "b": 0, "b.1": 1, "b.1.1": 2, "open": 0, "open.1": 1, "mark": 3, "after": 0}


def test_large_frames_stay_columnar(rewrite):
    """10,000 replicated kernels read with the same names and totals as the 11 they copy."""
    path = rewrite("""
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL
            SELECT start + k.i * 1000000000, end + k.i * 1000000000, deviceId, contextId, greenContextId, streamId,
                   correlationId + k.i * 1000, globalPid, demangledName, shortName, mangledName, launchType,
                   cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
                   dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted,
                   graphNodeId, sharedMemoryLimitConfig
            FROM CUPTI_ACTIVITY_KIND_KERNEL,
                 (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 908) SELECT i FROM n) AS k;
    """)
    k = nsys_sqlite.read(path).kernels
    assert k.height == 11 * 909
    assert k.group_by("name").agg(pl.len()).sort("name")["len"].to_list() == [3 * 909, 909, 909, 6 * 909]
    assert k["dur_ns"].sum() == 433888 * 909
    assert k["start_ns"].is_sorted()


def test_2026_layout_prefers_graph_id_and_the_gpu_table(rewrite, reference):
    """nsys 2026.4 (synthetic, after NVIDIA's 3.28.1 schema reference): kernels carry graphId beside
    graphNodeId, and TARGET_INFO_CUDA_DEVICE gains numMultiprocessors; TARGET_INFO_GPU still wins."""
    path = rewrite("""
        ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN graphId INTEGER;
        UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = 9, graphId = 5 WHERE correlationId IN (349, 311);
        UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = 9 WHERE correlationId = 157;
        ALTER TABLE TARGET_INFO_CUDA_DEVICE ADD COLUMN numMultiprocessors INTEGER;
        UPDATE TARGET_INFO_CUDA_DEVICE SET numMultiprocessors = 1;
    """)
    tl = nsys_sqlite.read(path)
    graph = dict(tl.kernels.select("correlation_id", "graph_id").rows())
    assert (graph[349], graph[311], graph[157], graph[178]) == (5, 5, 9, None)
    assert tl.devices.equals(reference.devices)
