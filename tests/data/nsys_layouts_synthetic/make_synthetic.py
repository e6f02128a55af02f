"""Write the synthetic Nsight Systems exports of this folder from the real 2025.3 export.

    python tests/data/nsys_layouts_synthetic/make_synthetic.py [FILE.sqlite ...]

Each file is tests/data/nsys_torch_softmax/torch_softmax_nvtx.sqlite (recorded on the H200, see its
PROVENANCE.md) rewritten with SQL into a layout that cannot be recorded here: what the timing rows
hold stays the real recording's. The rewrites are listed below; PROVENANCE.md says what each is for.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"

#: Every table but the bookkeeping ones a capture without CUDA or NVTX leaves.
NO_ACTIVITY = """
DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME; DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE NVTX_EVENTS;
DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; DROP TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET; DROP TABLE TARGET_INFO_GPU; DROP TABLE TARGET_INFO_CUDA_DEVICE;
DROP TABLE TARGET_INFO_CUDA_CONTEXT_INFO; DROP TABLE TARGET_INFO_CUDA_STREAM; DROP TABLE ANALYSIS_FILE;
"""

#: A TARGET_INFO_GPU of another layout: the OS-level GPU description without the device id that
#: CUPTI's deviceId refers to (nor cuDevice), and the CUDA properties in TARGET_INFO_CUDA_GPU, named
#: as in CUPTI's CUpti_ActivityDevice (the table public readers of 2020-2021 exports join on deviceId).
GPU_TABLE_WITHOUT_ID = """
CREATE TABLE gpu_old AS SELECT vmId, name, busLocation, isDiscrete, l2CacheSize, totalMemory, memoryBandwidth,
    clockRate, smCount, pwGpuId, uuid, luid, chipName FROM TARGET_INFO_GPU;
"""
CUDA_GPU_TABLE = """
CREATE TABLE TARGET_INFO_CUDA_GPU AS SELECT
    id AS deviceId, name, computeMajor AS computeCapabilityMajor, computeMinor AS computeCapabilityMinor,
    smCount AS numMultiprocessors, clockRate / 1000 AS coreClockRate, totalMemory AS globalMemorySize,
    memoryBandwidth / 1000 AS globalMemoryBandwidth, l2CacheSize, maxShmemPerSm AS maxSharedMemoryPerMultiprocessor,
    maxRegistersPerSm AS maxRegistersPerMultiprocessor, maxWarpsPerSm AS maxWarpsPerMultiprocessor,
    maxBlocksPerSm AS maxBlocksPerMultiprocessor, maxThreadsPerBlock
    FROM TARGET_INFO_GPU;
"""
REPLACE_GPU_TABLE = """
DROP TABLE TARGET_INFO_GPU; ALTER TABLE gpu_old RENAME TO TARGET_INFO_GPU; DROP TABLE TARGET_INFO_CUDA_DEVICE;
"""
#: The rest of an older layout: no ENUM_* tables, no NVTX textId, no eventClass, export metadata
#: under EXPORT_META_DATA with an old product version.
OLDER_REST = """
ALTER TABLE NVTX_EVENTS DROP COLUMN textId;
ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN mangledName;
ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME DROP COLUMN eventClass;
ALTER TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION DROP COLUMN deprecatedSyncType;
ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA;
UPDATE EXPORT_META_DATA SET value = '2020.5.1.85' WHERE name = 'EXPORT_PRODUCT_VERSION';
DROP TABLE META_DATA_CAPTURE;
"""

#: The runtime calls are there, the GPU records are not (CUPTI activity lost or not flushed).
API_WITHOUT_GPU = """
DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET;
DROP TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
"""

#: Only the raw Itanium name of each kernel (no shortName, no demangledName): not a layout seen in a
#: public export, kept so that the last fallback for kernel names is exercised.
NAMES_MANGLED_ONLY = """
ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN shortName;
ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName;
"""

#: ENUM_* tables whose symbols are renamed (as a newer nsys could): names coach does not know.
ENUMS_RENAMED = """
UPDATE ENUM_CUDA_MEMCPY_OPER SET name = 'RENAMED_MEMCPY_OPER_' || id;
UPDATE ENUM_CUDA_MEM_KIND SET name = 'RENAMED_MEM_KIND_' || id;
UPDATE ENUM_NSYS_EVENT_TYPE SET name = 'RENAMED_EVENT_TYPE_' || id;
"""

#: What newer exports add, in the shapes they add it: unknown columns on every activity table, an
#: unknown activity table, NVTX messages held only as registered strings (textId, no text column), and
#: a view (as a user may add) over a table that was dropped since.
NEWER_ADDITIONS = """
ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN futureKernelField INTEGER;
ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY ADD COLUMN futureCopyField TEXT;
ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME ADD COLUMN futureApiField REAL;
ALTER TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ADD COLUMN futureSyncField INTEGER;
CREATE TABLE CUPTI_ACTIVITY_KIND_FUTURE_KIND (start INTEGER NOT NULL, end INTEGER NOT NULL, payload BLOB);
INSERT INTO CUPTI_ACTIVITY_KIND_FUTURE_KIND VALUES (1, 2, x'00ff');
INSERT INTO StringIds (id, value) SELECT 900000 + rowid, text FROM NVTX_EVENTS WHERE text IS NOT NULL;
UPDATE NVTX_EVENTS SET textId = 900000 + rowid WHERE text IS NOT NULL;
ALTER TABLE NVTX_EVENTS DROP COLUMN text;
CREATE TABLE scratch (a INTEGER); CREATE VIEW user_view AS SELECT a FROM scratch; DROP TABLE scratch;
"""

#: The environment strings of the capture (paths, variables): not needed, and the bulk of the file.
SCRUB = "DELETE FROM TARGET_INFO_SYSTEM_ENV WHERE name NOT IN ('NvDriverVersion', 'CudaDriverVersion'); " \
        "DELETE FROM ProcessStreams;"

#: The ENUM_* tables coach reads (coach/ingest/nsys_enums.csv).
ENUMS_READ = {"ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "ENUM_CUPTI_SYNC_TYPE", "ENUM_NSYS_EVENT_TYPE",
              "ENUM_NSYS_EVENT_CLASS"}

#: (rewrite, whether the ENUM_* tables go too: True for all of them, as exports before 2022 had none;
#: "unused" for those coach does not read, to keep the file small)
FILES = {
    "no_activity.sqlite": (NO_ACTIVITY, True),
    "layout_2020_5.sqlite": (GPU_TABLE_WITHOUT_ID + CUDA_GPU_TABLE + REPLACE_GPU_TABLE + OLDER_REST, True),
    "gpu_table_unknown.sqlite": (GPU_TABLE_WITHOUT_ID + REPLACE_GPU_TABLE + OLDER_REST, True),
    "api_without_gpu.sqlite": (API_WITHOUT_GPU, False),
    "names_mangled_only.sqlite": (NAMES_MANGLED_ONLY, "unused"),
    "enums_renamed.sqlite": (ENUMS_RENAMED, "unused"),
    "newer_additions.sqlite": (NEWER_ADDITIONS, "unused"),
}


def main(names: list[str]) -> None:
    """Write the files named (all of them when none is)."""
    for name, (sql, drop_enums) in FILES.items():
        if names and name not in names:
            continue
        out = HERE / name
        shutil.copyfile(SOURCE, out)
        con = sqlite3.connect(out)
        con.executescript(sql + SCRUB)
        if drop_enums:
            for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ENUM_%'").fetchall():
                if drop_enums != "unused" or table not in ENUMS_READ:
                    con.execute(f'DROP TABLE "{table}"')
        con.commit()
        con.execute("VACUUM")
        con.close()
        print(out.name, out.stat().st_size)


if __name__ == "__main__":
    main(sys.argv[1:])
