"""The canonical data model: every reader produces these tables, and nothing downstream sees a raw
profiler format.

Three kinds of profile exist:

``KernelProfile`` (Nsight Compute: ``.ncu-rep`` or ``ncu --csv``)
    ``launches``  one row per profiled kernel launch, with the launch configuration and the
                  metrics the analysis uses, under canonical names (``LAUNCH_METRICS``).
    ``metrics``   every metric of every launch in long form (launch, metric, value, unit), so
                  nothing in a report is lost. An instanced metric whose instances are named
                  (``sass__inst_executed_per_opcode``: one count per executed SASS opcode) adds
                  one row per instance, its name in ``instance``, beside its aggregate row.
    ``rules``     Nsight Compute's own rule results (the guided-analysis messages).
    ``devices``   one row per device the launches ran on.
    ``sass``      source counters per SASS instruction (``SASS``): executed instructions, warp-state
                  samples, L2 sectors of global and local accesses, shared-memory wavefronts, and
                  the CUDA C / Python line each instruction comes from (``-lineinfo``). Only
                  instructions with a non-zero counter; empty where the report has no source
                  counters (``--section SourceCounters``, part of ``--set full``).
    ``stall_samples`` the warp-state samples of each instruction by stall reason (long form).
    ``source_files`` the files the line information names, with their text where the report
                  carries it (``--import-source yes``) or it was matched to a local file.

``Timeline`` (Nsight Systems SQLite / ``.nsys-rep``, PyTorch-profiler JSON)
    ``kernels``, ``memcpy``, ``memset``, ``api`` (runtime and driver calls), ``sync``
    (synchronisation records), ``nvtx`` (ranges and marks), ``devices``.

``SanitizerReport`` (compute-sanitizer's text report or its ``--xml`` file)
    ``records``, ``locations``, ``host_frames``, ``summary``: the errors and hazards the tool printed,
    where each happened (kernel, source line, thread and block), and its totals.

Units are normalised and named in the column: times in integer nanoseconds (``*_ns``) on a
timeline, float nanoseconds for Nsight Compute durations (``duration_ns``, an average over replay
passes), sizes in bytes (``*_bytes``), rates per second (``*_per_s``), frequencies in hertz
(``*_hz``), percentages 0-100 (``*_pct``), operation counts as plain numbers (``*_flop``,
``*_inst``, ``*_sectors``). A timeline's times are relative to the start of its capture session.

A column a source cannot fill is null; a table a source lacks is empty, with its schema. Use
``conform`` at a reader's boundary: it adds missing columns as nulls, casts to the schema's types
and orders the columns, and refuses unknown columns so that typos surface in tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

import polars as pl

Int = pl.Int64
Float = pl.Float64
Str = pl.Utf8
Bool = pl.Boolean

# --------------------------------------------------------------------------------------------
# Kernel profiles (Nsight Compute)
# --------------------------------------------------------------------------------------------

#: Launch identity and configuration, filled from the report's launch__* and identity fields.
LAUNCH_IDENTITY: dict[str, pl.DataType] = {
    "launch_id": Int,  # the report's own ID for the profiled launch (0, 1, ...)
    "kernel_name": Str,  # function name, e.g. "copy_strided"
    "demangled_name": Str,  # "copy_strided(const float *, float *, int, int)"
    "mangled_name": Str,
    "process_id": Int,
    "process_name": Str,
    "device_id": Int,
    "context_id": Int,
    "stream_id": Int,
    "nvtx_range": Str,  # innermost NVTX range pushed around the launch, if recorded
    "grid_x": Int,
    "grid_y": Int,
    "grid_z": Int,
    "block_x": Int,
    "block_y": Int,
    "block_z": Int,
    "grid_size": Int,  # blocks in the grid
    "block_size": Int,  # threads per block
    "cluster_size": Int,  # thread-block cluster size (Hopper), null if none
    "registers_per_thread": Int,
    "shared_mem_static_bytes": Int,  # per block
    "shared_mem_dynamic_bytes": Int,  # per block
    "shared_mem_config_bytes": Int,  # shared-memory carve-out per SM chosen for the launch
    "local_mem_per_thread_bytes": Int,  # stack frame / spill space, where the report has it
}

#: Metrics the analysis reads, under canonical names. The mapping from Nsight Compute metric names
#: (with fallbacks for older versions) is data: coach/ingest/ncu_metrics.csv.
LAUNCH_METRICS: dict[str, pl.DataType] = {
    # time and clocks
    "duration_ns": Float,
    "sm_cycles_elapsed": Float,
    "sm_frequency_hz": Float,
    "dram_frequency_hz": Float,
    # speed of light
    "sm_throughput_pct": Float,  # compute (SM) throughput, % of peak
    "memory_throughput_pct": Float,  # compute-memory throughput, % of peak (max over units)
    "dram_throughput_pct": Float,
    "l1_throughput_pct": Float,
    "l2_throughput_pct": Float,
    # bytes through each level (hierarchical roofline)
    "dram_read_bytes": Float,
    "dram_write_bytes": Float,
    "dram_bytes": Float,
    "l2_bytes": Float,
    "l1_bytes": Float,
    "l2_hit_rate_pct": Float,
    "l1_hit_rate_pct": Float,
    # floating-point work: thread-level instruction counts (an FMA counts as one instruction)
    "fp64_add_inst": Float,
    "fp64_mul_inst": Float,
    "fp64_fma_inst": Float,
    "fp32_add_inst": Float,
    "fp32_mul_inst": Float,
    "fp32_fma_inst": Float,
    "fp16_add_inst": Float,
    "fp16_mul_inst": Float,
    "fp16_fma_inst": Float,
    "tensor_flop": Float,  # tensor-pipe operations, all input types (sm__ops_path_tensor_*)
    # pipes
    "tensor_pipe_active_pct": Float,
    "fma_pipe_active_pct": Float,
    "fp64_pipe_active_pct": Float,
    "xu_pipe_active_pct": Float,  # special-function unit (transcendentals, conversions)
    "lsu_pipe_active_pct": Float,
    "issue_active_pct": Float,  # issue slots used, % of cycles with an SM active
    # occupancy and launch limits
    "achieved_occupancy_pct": Float,
    "theoretical_occupancy_pct": Float,
    "waves_per_sm": Float,
    "blocks_limit_registers": Float,
    "blocks_limit_shared_mem": Float,
    "blocks_limit_warps": Float,
    "blocks_limit_sm": Float,
    "sm_count": Float,
    # global memory access efficiency
    "global_load_requests": Float,
    "global_load_sectors": Float,
    "global_store_requests": Float,
    "global_store_sectors": Float,
    "global_load_bytes_per_sector_pct": Float,  # useful bytes per fetched sector, % (100 is ideal)
    "global_load_bytes_per_sector": Float,  # useful bytes per fetched load sector (32 is ideal)
    "global_store_bytes_per_sector": Float,  # useful bytes per written store sector (32 is ideal)
    "l2_global_sectors": Float,  # L2 sectors the global accesses need, from the source-level counters
    "l2_global_sectors_ideal": Float,  # the same if every warp access were fully coalesced
    "l1_to_l2_read_sectors": Float,  # L2 read sectors requested by L1TEX (global and local loads that missed L1)
    "l1_to_l2_write_sectors": Float,  # L2 write sectors from L1TEX (global and local stores; L1 writes through)
    # local memory (spills, dynamically indexed arrays)
    "local_load_sectors": Float,
    "local_store_sectors": Float,
    # shared memory
    "shared_load_wavefronts": Float,
    "shared_store_wavefronts": Float,
    "shared_load_requests": Float,
    "shared_store_requests": Float,
    "shared_bank_conflicts": Float,  # load + store bank conflicts
    "shared_bytes_per_wavefront_pct": Float,  # data bytes per shared wavefront from the SASS addresses, % (100: none wasted)
    # control flow
    "branch_divergent_targets": Float,
    "thread_inst_per_warp_inst": Float,  # average active threads per executed instruction (32 max)
    "thread_inst_pred_on_per_warp_inst": Float,  # the same, counting only threads whose predicate is on
    "warp_inst_executed": Float,
    # atomics
    "global_atomic_requests": Float,
    "l2_atomic_requests": Float,
    # warp-stall breakdown: average warps stalled per issued instruction, by reason
    "stall_long_scoreboard": Float,
    "stall_short_scoreboard": Float,
    "stall_barrier": Float,
    "stall_mio_throttle": Float,
    "stall_lg_throttle": Float,
    "stall_math_pipe_throttle": Float,
    "stall_not_selected": Float,
    "stall_wait": Float,
    "stall_tex_throttle": Float,
    "stall_membar": Float,
    "stall_branch_resolving": Float,
    "stall_dispatch": Float,
    "stall_drain": Float,
    "stall_no_instruction": Float,
    "stall_sleeping": Float,
    "stall_selected": Float,
    "stall_gmma": Float,
    "warp_cycles_per_issued_inst": Float,
}

LAUNCHES: dict[str, pl.DataType] = {**LAUNCH_IDENTITY, **LAUNCH_METRICS}

METRICS: dict[str, pl.DataType] = {
    "launch_id": Int,
    "metric": Str,  # the tool's own metric name, e.g. dram__bytes_read.sum
    "value": Float,  # in base units (see ``unit``); null for text-valued metrics
    "unit": Str,  # normalised unit: ns, byte, byte/s, hz, %, cycle, inst, sector, ... or ""
    "text": Str,  # the value as text, for string-valued metrics (device names, ...)
    # Null on a metric's aggregate row. An instanced metric whose instances Nsight Compute names
    # (its correlation IDs are strings: the SASS opcode "HGMMA" of sass__inst_executed_per_opcode,
    # the category "Floating Point" of ..._per_opcode_category) also has one row per instance, the
    # name here and the instance's value in ``value``; so (launch_id, metric, instance) is the key.
    # Instances keyed by number (per-PC counters, occupancy curves) are not kept.
    "instance": Str,
}

RULES: dict[str, pl.DataType] = {
    "launch_id": Int,
    "rule_id": Str,  # e.g. UncoalescedGlobalAccess
    "rule_name": Str,
    "section_id": Str,
    "severity": Str,  # "ok", "info", "warning", "error" (Nsight Compute's message type)
    "title": Str,
    "message": Str,
    "speedup_type": Str,  # "local" or "global", as Nsight Compute estimates it
    "speedup_pct": Float,  # Nsight Compute's estimated speed-up, % of the kernel's time
    "focus_metrics": pl.List(pl.Struct({"name": Str, "value": Float, "info": Str})),
}

DEVICES: dict[str, pl.DataType] = {
    "device_id": Int,
    "name": Str,
    "cc_major": Int,
    "cc_minor": Int,
    "sm_count": Int,
    "sm_clock_hz": Float,  # maximum SM clock the device reports
    "memory_clock_hz": Float,
    "memory_bus_width_bits": Int,
    "memory_bytes": Int,
    "memory_bandwidth_bytes_per_s": Float,  # peak DRAM bandwidth the tool reports or implies
    "l2_bytes": Int,
    "shared_mem_per_sm_bytes": Int,
    "registers_per_sm": Int,
    "max_warps_per_sm": Int,
    "max_blocks_per_sm": Int,
    "max_threads_per_block": Int,
}

#: Source counters per SASS instruction of a launch (Nsight Compute's Source page, SASS view).
#: Counts are totals over the launch; a row is kept only where some counter is non-zero.
SASS: dict[str, pl.DataType] = {
    "launch_id": Int,
    "pc_offset": Int,  # bytes from the function's first instruction (addresses differ run to run)
    "file_id": Int,  # the source file (``source_files``), null without line information
    "line": Int,  # 1-based line in that file, null without line information; for inlined code the callee's
    "call_file_id": Int,  # for inlined code: the file of the line it is inlined at (one level out)
    "call_line": Int,  # that line (e.g. the call of the inlined function); null where not inlined or not known
    "sass": Str,  # the instruction, e.g. "LDG.E.CONSTANT R7, desc[UR6][R6.64]"
    "opcode": Str,  # its opcode without predicate and modifiers, e.g. "LDG"
    "warp_inst": Float,  # warp-level instructions executed (inst_executed)
    "thread_inst": Float,  # thread-level instructions executed (thread_inst_executed)
    "thread_inst_pred_on": Float,  # the same, counting threads whose predicate is on
    "samples": Float,  # warp-state samples at this instruction, all reasons (smsp__pcsamp_sample_count)
    "l1_global_requests": Float,  # L1 tag requests of global accesses (memory_l1_tag_requests_global)
    "l2_global_sectors": Float,  # L2 sectors the global accesses need (memory_l2_theoretical_sectors_global)
    "l2_global_sectors_ideal": Float,  # the same if every warp access were fully coalesced
    "l2_global_excess_sectors": Float,  # the difference: sectors fetched beyond the ideal
    "shared_wavefronts": Float,  # shared-memory wavefronts (memory_l1_wavefronts_shared)
    "shared_wavefronts_ideal": Float,  # the same without bank conflicts
    "shared_excess_wavefronts": Float,  # the difference: wavefronts added by bank conflicts
    "l2_local_sectors": Float,  # L2 sectors of local-memory accesses (memory_l2_theoretical_sectors_local)
    "divergent_branches": Float,  # executions of a branch whose warp's threads took both ways
    #                               (smsp__branch_targets_threads_divergent: the Source page's "Divergent Branches")
}

#: Warp-state samples by stall reason per instruction (only non-zero counts).
STALL_SAMPLES: dict[str, pl.DataType] = {
    "launch_id": Int,
    "pc_offset": Int,
    "reason": Str,  # Nsight Compute's reason, e.g. "long_scoreboard", "selected" (issuing)
    "samples": Float,
}

#: The source files named by the line information, one row per distinct path in the report.
SOURCE_FILES: dict[str, pl.DataType] = {
    "file_id": Int,
    "path": Str,  # as the line information names it (NVRTC: a name the compiler was given)
    "text": Str,  # the file's text; null where neither the report nor a matched local file has it
    "text_origin": Str,  # "report" (--import-source), or "local: PATH (why it matches)"
    "local_path": Str,  # the local file the text was matched to, as given when matching; null otherwise
}

# --------------------------------------------------------------------------------------------
# Timelines (Nsight Systems, PyTorch profiler)
# --------------------------------------------------------------------------------------------

_SPAN = {"start_ns": Int, "end_ns": Int, "dur_ns": Int}
_GPU_PLACE = {"device_id": Int, "context_id": Int, "stream_id": Int, "correlation_id": Int}

KERNELS: dict[str, pl.DataType] = {
    **_SPAN,
    **_GPU_PLACE,
    "pid": Int,
    "name": Str,  # short name (function name without arguments)
    "demangled_name": Str,
    "grid_x": Int,
    "grid_y": Int,
    "grid_z": Int,
    "block_x": Int,
    "block_y": Int,
    "block_z": Int,
    "registers_per_thread": Int,
    "shared_mem_static_bytes": Int,
    "shared_mem_dynamic_bytes": Int,
    "shared_mem_bytes": Int,  # static + dynamic per block; all a PyTorch-profiler trace reports
    "graph_id": Int,  # set when launched from a CUDA graph
}

MEMCPY: dict[str, pl.DataType] = {
    **_SPAN,
    **_GPU_PLACE,
    "pid": Int,
    "kind": Str,  # "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "unknown"
    "bytes": Int,
    "src_memory": Str,  # "pageable", "pinned", "device", "managed", "array", "unknown"
    "dst_memory": Str,
    "pageable": Bool,  # True when either side is pageable host memory
}

MEMSET: dict[str, pl.DataType] = {
    **_SPAN,
    **_GPU_PLACE,
    "pid": Int,
    "bytes": Int,
    "value": Int,
    "memory": Str,
}

API: dict[str, pl.DataType] = {
    **_SPAN,
    "pid": Int,
    "tid": Int,
    "correlation_id": Int,
    "name": Str,  # e.g. cudaLaunchKernel, cuLaunchKernel_ptsz
    "api": Str,  # "runtime" or "driver"
    "return_code": Int,
}

SYNC: dict[str, pl.DataType] = {
    **_SPAN,
    **_GPU_PLACE,
    "pid": Int,
    "tid": Int,
    "kind": Str,  # "event", "stream_wait_event", "stream", "context" (device-wide), "unknown"
    "event_id": Int,
}

NVTX: dict[str, pl.DataType] = {
    "start_ns": Int,
    "end_ns": Int,  # null for marks
    "dur_ns": Int,
    "pid": Int,
    "tid": Int,
    "text": Str,
    "domain": Str,
    "kind": Str,  # "push_pop", "start_end", "mark"
    "depth": Int,  # nesting level on its thread, 0 for outermost
}

TIMELINE_DEVICES: dict[str, pl.DataType] = dict(DEVICES)

KERNEL_PROFILE_TABLES: dict[str, dict[str, pl.DataType]] = {
    "launches": LAUNCHES,
    "metrics": METRICS,
    "rules": RULES,
    "devices": DEVICES,
    "sass": SASS,
    "stall_samples": STALL_SAMPLES,
    "source_files": SOURCE_FILES,
}

TIMELINE_TABLES: dict[str, dict[str, pl.DataType]] = {
    "kernels": KERNELS,
    "memcpy": MEMCPY,
    "memset": MEMSET,
    "api": API,
    "sync": SYNC,
    "nvtx": NVTX,
    "devices": TIMELINE_DEVICES,
}


# --------------------------------------------------------------------------------------------
# Correctness reports (compute-sanitizer: memcheck, racecheck, initcheck, synccheck)
# --------------------------------------------------------------------------------------------

UInt = pl.UInt64  # device addresses

#: One row per error, hazard report or notice the tool printed (``record_id`` in print order). A
#: memcheck report prints one record per faulting thread; racecheck's analysis report prints one per
#: race, naming every source location in it (``locations``) and how many byte-level hazards each had.
SANITIZER_RECORDS: dict[str, pl.DataType] = {
    "record_id": Int,
    "tool": Str,  # the tool that reports this kind of record: memcheck, racecheck, initcheck, synccheck
    # memory-access, hardware-exception, shared-race, shared-hazard, uninitialized-read,
    # uninitialized-copy, barrier, api-error, leak, device-malloc, sanitizer-error, other
    "kind": Str,
    "severity": Str,  # "error", "warning" or "info"
    "headline": Str,  # the record's first line as printed, e.g. "Invalid __global__ write of size 4 bytes"
    "space": Str,  # memory space: "global", "shared", "local", "generic"
    "access": Str,  # "read", "write", "atomic"
    "size_bytes": Int,  # bytes the faulting access moved
    "address": UInt,
    "address_problem": Str,  # "out of bounds", "misaligned", ...
    "allocation_address": UInt,  # the nearest allocation the tool knows of
    "allocation_bytes": Int,
    "allocation_relation": Str,  # the address lies "after", "before" or "inside" that allocation
    "allocation_distance_bytes": Int,  # how far after (past its end) or before (its start)
    "barrier_problem": Str,  # synccheck: "divergent threads in block", "invalid arguments", ...
    "hazard_type": Str,  # racecheck hazard reports: "RAW", "WAR", "WAW"
    "hazard_count": Int,  # racecheck: byte-level hazards the record stands for
    "function": Str,  # the device function of the access, as printed (demangled, with arguments)
    "kernel": Str,  # the kernel (outermost device frame), qualified name without arguments
    "pc_offset": Int,  # the instruction's offset in the function
    "file": Str,  # the first source location in the application's code (not a CUDA header)
    "line": Int,
    "thread_x": Int,
    "thread_y": Int,
    "thread_z": Int,
    "block_x": Int,
    "block_y": Int,
    "block_z": Int,
    "api_call": Str,  # CUDA API errors: the call that returned it, e.g. cudaMemcpy
    "api_error": Str,  # cudaErrorIllegalAddress, CUDA_ERROR_NOT_PERMITTED, ...
    "api_error_code": Int,
    "api_message": Str,  # "an illegal memory access was encountered"
    "backtrace_at": Str,  # where the host backtrace was saved: "kernel launch time", "error", ...
    "host_function": Str,  # the first host frame in the application (below the CUDA libraries)
    "leaked_bytes": Int,
    "text": Str,  # every line of the record as printed, without the prefix
}

#: The source locations of each record, in print order: the access ("at"), the other accesses of a
#: race ("race"), the device call stack ("device-frame"), the two threads of a hazard ("hazard").
SANITIZER_LOCATIONS: dict[str, pl.DataType] = {
    "record_id": Int,
    "position": Int,
    "role": Str,
    "access": Str,  # "read" or "write" (races and hazards)
    "function": Str,
    "kernel": Str,
    "pc_offset": Int,
    "file": Str,
    "line": Int,
    "hazards": Int,  # racecheck analysis: hazards between this location and the record's first
    "thread_x": Int,
    "thread_y": Int,
    "thread_z": Int,
}

#: The host backtrace of each record, innermost frame first (depth 0).
SANITIZER_HOST_FRAMES: dict[str, pl.DataType] = {
    "record_id": Int,
    "depth": Int,
    "function": Str,
    "module": Str,
    "file": Str,
    "line": Int,
    "pc": UInt,
}

#: One row: the report's totals as the tool printed them, and whether it finished.
SANITIZER_SUMMARY: dict[str, pl.DataType] = {
    "tool": Str,  # the tool that ran, where the report or its provenance says; null when it cannot tell
    "errors": Int,  # "ERROR SUMMARY: N errors" (every error, printed or not, API errors included)
    "errors_not_printed": Int,  # past --print-limit
    "hazards_displayed": Int,  # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
    "race_errors": Int,
    "race_warnings": Int,
    "leaked_bytes": Int,  # "LEAK SUMMARY: B bytes leaked in A allocations"
    "leaked_allocations": Int,
    "records": Int,  # records read from the report
    "records_dropped": Int,  # records past the reader's limit (kept out of memory, counted here)
    "target_error": Bool,  # "Target application returned an error": the program itself failed
    "complete": Bool,  # a summary line was printed: the tool ran to the end
    "program_lines": Int,  # lines the program printed between the tool's lines
}

SANITIZER_TABLES: dict[str, dict[str, pl.DataType]] = {
    "records": SANITIZER_RECORDS,
    "locations": SANITIZER_LOCATIONS,
    "host_frames": SANITIZER_HOST_FRAMES,
    "summary": SANITIZER_SUMMARY,
}


def empty(schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with ``schema``."""
    return pl.DataFrame(schema=dict(schema))


def conform(df: pl.DataFrame | pl.LazyFrame, schema: Mapping[str, pl.DataType], *, table: str = "table") -> pl.DataFrame:
    """Add the schema's missing columns as nulls, cast to its types, and order them.

    Raises ``ValueError`` for a column the schema does not know: readers must map raw names to
    canonical ones before calling this.
    """
    lf = df.lazy() if isinstance(df, pl.DataFrame) else df
    have = lf.collect_schema()
    unknown = [c for c in have.names() if c not in schema]
    if unknown:
        raise ValueError(f"{table}: columns not in the canonical schema: {unknown}")
    if isinstance(df, pl.DataFrame) and df.width:
        # columns already of their type are passed on as they are, not copied, and a column of one
        # value repeated (and a missing one, all null) stays one value (not a million)
        return df.select(
            (pl.col(name) if have[name] == dtype else pl.col(name).cast(dtype, strict=False)) if name in have
            else pl.lit(None, dtype=dtype).alias(name)
            for name, dtype in schema.items())
    if isinstance(df, pl.DataFrame):  # no columns, so no rows: every column missing, and empty
        return pl.DataFrame(schema=dict(schema))
    exprs = [
        (pl.col(name).cast(dtype, strict=False) if name in have else pl.lit(None, dtype=dtype)).alias(name)
        for name, dtype in schema.items()
    ]
    return lf.select(exprs).collect()


# --------------------------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------------------------

Format = Literal["ncu-rep", "ncu-csv", "ncu-text", "nsys-sqlite", "nsys-rep", "kineto-json", "sanitizer-text", "sanitizer-xml",
                 "coach-profile"]


@dataclass(frozen=True)
class Source:
    """Where a profile came from."""

    path: str
    format: Format
    tool: str  # "Nsight Compute", "Nsight Systems", "PyTorch profiler"
    tool_version: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)  # provenance: GPU, driver, command, date, ...


@dataclass
class KernelProfile:
    source: Source
    launches: pl.DataFrame
    metrics: pl.DataFrame
    rules: pl.DataFrame
    devices: pl.DataFrame
    # Source counters: empty (with their schemas) where the report has none.
    sass: pl.DataFrame = field(default_factory=lambda: empty(SASS))
    stall_samples: pl.DataFrame = field(default_factory=lambda: empty(STALL_SAMPLES))
    source_files: pl.DataFrame = field(default_factory=lambda: empty(SOURCE_FILES))

    kind = "kernel-profile"
    TABLES = KERNEL_PROFILE_TABLES

    def _repr_html_(self) -> str:  # Jupyter: what it is and its leading table (coach.api)
        from coach.api import profile_html

        return profile_html(self)

    def tables(self) -> dict[str, pl.DataFrame]:
        return {name: getattr(self, name) for name in self.TABLES}


@dataclass
class Timeline:
    source: Source
    kernels: pl.DataFrame
    memcpy: pl.DataFrame
    memset: pl.DataFrame
    api: pl.DataFrame
    sync: pl.DataFrame
    nvtx: pl.DataFrame
    devices: pl.DataFrame

    kind = "timeline"
    TABLES = TIMELINE_TABLES

    def _repr_html_(self) -> str:  # Jupyter: what it is and its leading table (coach.api)
        from coach.api import profile_html

        return profile_html(self)

    def tables(self) -> dict[str, pl.DataFrame]:
        return {name: getattr(self, name) for name in self.TABLES}

    @property
    def span_ns(self) -> tuple[int, int] | None:
        """First start and last end over all GPU and API activity, or None for an empty timeline."""
        starts = [t["start_ns"].min() for t in (self.kernels, self.memcpy, self.memset, self.api) if t.height]
        ends = [t["end_ns"].max() for t in (self.kernels, self.memcpy, self.memset, self.api) if t.height]
        if not starts:
            return None
        return int(min(starts)), int(max(ends))


@dataclass
class SanitizerReport:
    """What compute-sanitizer reported for one run (see the SANITIZER tables above)."""

    source: Source
    records: pl.DataFrame
    locations: pl.DataFrame
    host_frames: pl.DataFrame
    summary: pl.DataFrame

    kind = "sanitizer-report"
    TABLES = SANITIZER_TABLES

    def _repr_html_(self) -> str:  # Jupyter: what it is and its leading table (coach.api)
        from coach.api import profile_html

        return profile_html(self)

    def tables(self) -> dict[str, pl.DataFrame]:
        return {name: getattr(self, name) for name in self.TABLES}


Profile = KernelProfile | Timeline | SanitizerReport


def make_kernel_profile(source: Source, **tables: pl.DataFrame | pl.LazyFrame | None) -> KernelProfile:
    """Build a ``KernelProfile``, conforming each given table and filling absent ones empty."""
    return KernelProfile(source=source, **_conform_all(KERNEL_PROFILE_TABLES, tables))


def make_timeline(source: Source, **tables: pl.DataFrame | pl.LazyFrame | None) -> Timeline:
    """Build a ``Timeline``, conforming each given table and filling absent ones empty."""
    return Timeline(source=source, **_conform_all(TIMELINE_TABLES, tables))


def make_sanitizer_report(source: Source, **tables: pl.DataFrame | pl.LazyFrame | None) -> SanitizerReport:
    """Build a ``SanitizerReport``, conforming each given table and filling absent ones empty."""
    return SanitizerReport(source=source, **_conform_all(SANITIZER_TABLES, tables))


def make_table(name: str, df: pl.DataFrame | pl.LazyFrame | None) -> pl.DataFrame | None:
    """One timeline table conformed to its schema now (a reader that builds its tables one at a
    time, to let each one's staging data go before the next); ``make_timeline`` passes it on as it is."""
    return None if df is None else conform(df, TIMELINE_TABLES[name], table=name)


def _conform_all(schemas: Mapping[str, Mapping[str, pl.DataType]], tables: Mapping[str, Any]) -> dict[str, pl.DataFrame]:
    extra = set(tables) - set(schemas)
    if extra:
        raise TypeError(f"unknown tables: {sorted(extra)}")
    return {
        name: (empty(schema) if tables.get(name) is None else conform(tables[name], schema, table=name))
        for name, schema in schemas.items()
    }


# --------------------------------------------------------------------------------------------
# Storage: a folder of Parquet files (how traces/ keeps recorded profiles compactly)
# --------------------------------------------------------------------------------------------

SAVED_MARKER = "coach-profile.json"
SAVED_FORMAT_VERSION = 1


def save(profile: Profile, folder: str | Path, compression_level: int = 19) -> Path:
    """Write ``profile`` as ``folder/coach-profile.json`` plus one Parquet file per table (zstd at
    ``compression_level``: 19, the smallest files, for recordings kept in the repository).

    Files are written beside their final names and renamed into place, so an interrupted save
    leaves no half-written table behind.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, df in profile.tables().items():
        tmp = folder / f".{name}.parquet.tmp"
        df.write_parquet(tmp, compression="zstd", compression_level=compression_level, statistics=False)
        tmp.replace(folder / f"{name}.parquet")
    header = {
        "coach_profile_format": SAVED_FORMAT_VERSION,
        "kind": profile.kind,
        "source": {
            "path": Path(profile.source.path).name,
            "format": profile.source.format,
            "tool": profile.source.tool,
            "tool_version": profile.source.tool_version,
            "meta": dict(profile.source.meta),
        },
        "tables": sorted(profile.tables()),
    }
    tmp = folder / f".{SAVED_MARKER}.tmp"
    tmp.write_text(json.dumps(header, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(folder / SAVED_MARKER)
    return folder
