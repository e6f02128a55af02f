"""Quantities derived from one Nsight Compute launch, as Polars expressions over ``launches``.

The canonical ``launches`` table holds what the tool measured; the kernel rules reason in terms a
performance engineer uses: sectors per request against the ideal for the access width, bytes moved
against the bytes the work needs, achieved bandwidth, FLOPs by precision, arithmetic intensity,
waves and the tail. Each is one expression here, so the rules, the roofline and ``coach diff`` read
the same numbers. An expression whose inputs are null yields null: nothing is guessed.

    from coach.analyze.kernel_metrics import with_derived
    wide = with_derived(profile.launches, profile.devices)
"""

from __future__ import annotations

from typing import Any, Mapping

import polars as pl

#: L1 and L2 move global memory in 32-byte sectors (Kernel Profiling Guide, "Memory Chart").
SECTOR_BYTES = 32
#: Threads per warp on every CUDA GPU to date.
WARP_SIZE = 32
# Tensor-pipe activity below this share of cycles is no matrix work: nvcc materialises constants with
# HFMA2.MMA (a move through the tensor pipe's datapath), seen three times per thread in the machine
# code of tests/programs/roofline_kernels.cu, and that shows up as a trace of tensor-pipe activity
# (0.008% of cycles in its naive SGEMM), while a kernel doing matrix work keeps the pipe busy for
# percents of its cycles at the least.
TENSOR_PIPE_IDLE_PCT = 0.1

#: Device columns joined onto each launch (from ``devices``), prefixed ``device_``.
DEVICE_COLUMNS = ("memory_bandwidth_bytes_per_s", "max_warps_per_sm", "registers_per_sm",
                  "shared_mem_per_sm_bytes", "sm_count", "cc_major", "cc_minor", "name")


def _c(name: str) -> pl.Expr:
    return pl.col(name)


def ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """``num / den``, null where the denominator is zero or null (a count of nothing has no ratio)."""
    return pl.when(den > 0).then(num / den).otherwise(None)


def _flop(add: str, mul: str, fma: str, *, lanes: int = 1) -> pl.Expr:
    # An FMA is a multiply and an add: 2 FLOPs per lane. Half-precision instructions are packed
    # (HADD2, HMUL2, HFMA2: two lanes each), which is how Nsight Compute's own roofline counts them
    # (its derived ..._hadd_pred_on_x2 and ..._hfma_pred_on_x4 metrics).
    return lanes * (_c(add) + _c(mul) + 2 * _c(fma))


def _ideal_sectors(op: str) -> pl.Expr:
    """Sectors x useful bytes per sector / 32, and at least one sector per request (null without the
    useful bytes per sector: the access width is then unknown)."""
    sectors, bps, requests = _c(f"global_{op}_sectors"), _c(f"global_{op}_bytes_per_sector"), _c(f"global_{op}_requests")
    useful = sectors * bps / SECTOR_BYTES
    floor = pl.when(requests.is_not_null()).then(pl.min_horizontal(requests, sectors))
    return pl.when(useful.is_not_null()).then(pl.max_horizontal(useful, floor))


# Stage 1: from measured columns only.
_STAGE1: dict[str, pl.Expr] = {
    "duration_s": _c("duration_ns") * 1e-9,
    "load_sectors_per_request": ratio(_c("global_load_sectors"), _c("global_load_requests")),
    "store_sectors_per_request": ratio(_c("global_store_sectors"), _c("global_store_requests")),
    # The sectors a warp would touch if its threads' bytes were contiguous: the useful bytes of each
    # fetched sector tell how much of it the threads asked for. A request touches one sector at the
    # least, however few of its threads are active: one thread per warp storing a 4-byte result uses
    # 4 bytes of its one sector (H200, traces/h200/scenario-05: 1.00 sector per store request, 4.0
    # useful bytes per sector), which is a small access, not an uncoalesced one.
    "ideal_load_sectors": _ideal_sectors("load"),
    "ideal_store_sectors": _ideal_sectors("store"),
    "useful_load_bytes": _c("global_load_sectors") * _c("global_load_bytes_per_sector"),
    "useful_store_bytes": _c("global_store_sectors") * _c("global_store_bytes_per_sector"),
    "global_sectors": _c("global_load_sectors") + _c("global_store_sectors"),
    "dram_bandwidth_bytes_per_s": ratio(_c("dram_bytes"), _c("duration_ns") * 1e-9),
    "dram_read_bandwidth_bytes_per_s": ratio(_c("dram_read_bytes"), _c("duration_ns") * 1e-9),
    "dram_read_fraction": ratio(_c("dram_read_bytes"), _c("dram_bytes")),
    "fp64_flop": _flop("fp64_add_inst", "fp64_mul_inst", "fp64_fma_inst"),
    "fp32_flop": _flop("fp32_add_inst", "fp32_mul_inst", "fp32_fma_inst"),
    "fp16_flop": _flop("fp16_add_inst", "fp16_mul_inst", "fp16_fma_inst", lanes=2),
    "fp64_inst": _c("fp64_add_inst") + _c("fp64_mul_inst") + _c("fp64_fma_inst"),
    "fp32_inst": _c("fp32_add_inst") + _c("fp32_mul_inst") + _c("fp32_fma_inst"),
    "fp16_inst": _c("fp16_add_inst") + _c("fp16_mul_inst") + _c("fp16_fma_inst"),
    # Where no tensor-op count was collected, an idle tensor pipe still says exactly 0 tensor FLOPs.
    "tensor_flop_known": pl.coalesce(_c("tensor_flop"),
                                     pl.when(_c("tensor_pipe_active_pct") < TENSOR_PIPE_IDLE_PCT).then(0.0)),
    "full_waves": _c("waves_per_sm").floor(),
    "shared_wavefronts": _c("shared_load_wavefronts") + _c("shared_store_wavefronts"),
    "shared_requests": _c("shared_load_requests") + _c("shared_store_requests"),
    "local_sectors": _c("local_load_sectors") + _c("local_store_sectors"),
    "sol_busiest_pct": pl.max_horizontal(_c("sm_throughput_pct"), _c("memory_throughput_pct")),
    # Average cycles a warp waited on L1TEX (global/local) data per global load it issued: the
    # long-scoreboard stall counts warp-cycles per issued instruction (Kernel Profiling Guide,
    # "Warp Scheduler States"), so times instructions over loads gives warp-cycles per load.
    "memory_wait_cycles_per_load": ratio(_c("stall_long_scoreboard") * _c("warp_inst_executed"), _c("global_load_requests")),
}

# Stage 2: from stage 1 and the device columns.
_STAGE2: dict[str, pl.Expr] = {
    "ideal_load_sectors_per_request": ratio(_c("ideal_load_sectors"), _c("global_load_requests")),
    "ideal_store_sectors_per_request": ratio(_c("ideal_store_sectors"), _c("global_store_requests")),
    "excess_load_sectors": (_c("global_load_sectors") - _c("ideal_load_sectors")).clip(lower_bound=0),
    "excess_store_sectors": (_c("global_store_sectors") - _c("ideal_store_sectors")).clip(lower_bound=0),
    "dram_read_over_useful": ratio(_c("dram_read_bytes"), _c("useful_load_bytes")),
    "simt_flop": _c("fp64_flop") + _c("fp32_flop") + _c("fp16_flop"),
    "fp64_inst_fraction": ratio(_c("fp64_inst"), _c("fp64_inst") + _c("fp32_inst") + _c("fp16_inst")),
    "fma_inst_fraction": ratio(_c("fp32_fma_inst") + _c("fp16_fma_inst"), _c("fp32_inst") + _c("fp16_inst")),
    "tail_wave_fraction": _c("waves_per_sm") - _c("full_waves"),
    # With equal-length blocks the last, partial wave takes as long as a full one: the share of the
    # kernel's SM-time left idle is (ceil(waves) - waves) / ceil(waves).
    "tail_idle_fraction": ratio(_c("waves_per_sm").ceil() - _c("waves_per_sm"), _c("waves_per_sm").ceil()),
    "wavefronts_per_shared_request": ratio(_c("shared_wavefronts"), _c("shared_requests")),
    "bank_conflict_fraction": ratio(_c("shared_bank_conflicts"), _c("shared_wavefronts")),
    "local_traffic_fraction": ratio(_c("local_sectors"), _c("local_sectors") + _c("global_sectors")),
    "atomic_request_fraction": ratio(
        _c("global_atomic_requests"),
        _c("global_atomic_requests") + _c("global_load_requests") + _c("global_store_requests"),
    ),
    "dram_peak_bytes_per_s": _c("device_memory_bandwidth_bytes_per_s"),
    "sol_gap_ns": _c("duration_ns") * (1 - _c("sol_busiest_pct") / 100),
    "memory_wait_ns_per_load": ratio(_c("memory_wait_cycles_per_load"), _c("sm_frequency_hz")) * 1e9,
    "resident_threads_per_sm": _c("achieved_occupancy_pct") / 100 * _c("device_max_warps_per_sm") * WARP_SIZE,
}

# Stage 3: from stage 2.
_STAGE3: dict[str, pl.Expr] = {
    "flop": _c("simt_flop") + _c("tensor_flop_known"),
    "dram_floor_ns": ratio(_c("dram_bytes"), _c("dram_peak_bytes_per_s")) * 1e9,
    # Little's law: bytes in flight = bandwidth x latency. With the read bandwidth achieved and the
    # wait per load measured in the same launch, this is the data each SM had outstanding on average.
    "dram_read_bytes_in_flight_per_sm": ratio(
        _c("dram_read_bandwidth_bytes_per_s") * _c("memory_wait_ns_per_load") * 1e-9, _c("sm_count")
    ),
}

_STAGE4: dict[str, pl.Expr] = {
    "arithmetic_intensity_flop_per_byte": ratio(_c("flop"), _c("dram_bytes")),
    "bytes_in_flight_per_thread": ratio(_c("dram_read_bytes_in_flight_per_sm"), _c("resident_threads_per_sm")),
}

#: Every derived column, in the order they are added.
DERIVED: tuple[str, ...] = (*_STAGE1, *_STAGE2, *_STAGE3, *_STAGE4)
_EXPRESSIONS: dict[str, pl.Expr] = {**_STAGE1, **_STAGE2, **_STAGE3, **_STAGE4}


def inputs_of(column: str) -> set[str]:
    """The columns of ``launches`` and ``devices`` (the latter as ``device_*``) that ``column`` is
    computed from: itself where it is not derived. What a rule needs, for the tests that remove it."""
    if column not in _EXPRESSIONS:
        return {column}
    return set().union(*(inputs_of(c) for c in _EXPRESSIONS[column].meta.root_names()))


def with_derived(
    launches: pl.DataFrame | pl.LazyFrame,
    devices: pl.DataFrame | None = None,
    hardware: Any = None,
) -> pl.DataFrame:
    """``launches`` with the device columns (``device_*``) and every derived column added.

    ``hardware`` may override the device's peak DRAM bandwidth (``dram_bandwidth_bytes_per_s``),
    e.g. with a GPU table entry when the report lacks the tool's own peak.
    """
    lf = launches.lazy() if isinstance(launches, pl.DataFrame) else launches
    lf = lf.join(_device_columns(devices), on="device_id", how="left", maintain_order="left")
    peak = hardware_value(hardware, "dram_bandwidth_bytes_per_s")
    if peak is not None:
        lf = lf.with_columns(pl.lit(float(peak)).alias("device_memory_bandwidth_bytes_per_s"))
    for stage in (_STAGE1, _STAGE2, _STAGE3, _STAGE4):
        lf = lf.with_columns(**stage)
    return lf.collect()


def _device_columns(devices: pl.DataFrame | None) -> pl.LazyFrame:
    schema = {"device_id": pl.Int64, **{f"device_{c}": pl.Float64 for c in DEVICE_COLUMNS if c != "name"},
              "device_name": pl.Utf8}
    if devices is None or devices.height == 0:
        return pl.LazyFrame(schema=schema)
    return devices.lazy().select(
        pl.col("device_id"),
        *[pl.col(c).cast(pl.Float64).alias(f"device_{c}") for c in DEVICE_COLUMNS if c != "name"],
        pl.col("name").alias("device_name"),
    ).unique(subset="device_id", keep="first")


def hardware_value(hardware: Any, key: str) -> Any:
    """``hardware[key]`` or ``hardware.key``, or None: a GPU table entry may be a mapping or an object."""
    if hardware is None:
        return None
    if isinstance(hardware, Mapping):
        return hardware.get(key)
    return getattr(hardware, key, None)
