"""What several timeline rules share: the reporting floor, the launch latency, the host link's
ceiling, API-name matching and number formatting."""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.hardware import match
from coach.analyze.timeline import API_SUFFIX

# A finding whose estimated saving is under 2% of the profiled window is not reported: a saving that
# small cannot be confirmed by re-measuring, since end-to-end times of the same program under a
# tracer move by about that much from run to run (profiler buffer flushes, clock boost changes).
REPORTABLE_SHARE_PCT = 2.0

# The time from a launch call to its kernel starting on an idle GPU, which no host-side change can
# remove. Measured on the H200 under Nsight Systems (tests/data/nsys_torch_softmax): steady-state
# cudaLaunchKernel calls take 7.9-10.1 us and their kernels start 9.9-12.0 us after the call begins.
LAUNCH_LATENCY_NS = 10_000

# Host link ceiling when no hardware entry is given: PCIe Gen5 x16, per direction. NVIDIA H200
# datasheet, "PCIe Gen5: 128 GB/s" (both directions together); the machine the traces come from.
PCIE_GEN5_X16_BYTES_PER_S = 64e9


def base_api_name(name: pl.Expr) -> pl.Expr:
    """``cudaStreamSynchronize_v3020``, ``cuMemcpyDtoH_v2_ptds`` and ``hipMemcpy_spt`` -> the name without
    version and per-thread-stream suffixes (Nsight Systems keeps them, Kineto does not)."""
    return name.str.replace(API_SUFFIX, "")


def link_bytes_per_s(hardware: Any) -> tuple[float, str]:
    """The host link's per-direction rate and where it comes from: ``hardware`` is a GPU entry
    (``coach.analyze.hardware.GPU``) or None."""
    rate = getattr(hardware, "pcie_bytes_per_s_per_direction", None)
    if rate:
        where = hardware.source("pcie_bytes_per_s_per_direction").describe() if hasattr(hardware, "source") else "datasheet"
        return float(rate), f"{hardware.name}, PCIe per direction ({where})"
    return PCIE_GEN5_X16_BYTES_PER_S, "PCIe Gen5 x16 per direction (NVIDIA H200 datasheet: 128 GB/s both ways)"


def timeline_gpu(devices: pl.DataFrame) -> Any:
    """The hardware entry for the timeline's first named device, or None when it is not in the table."""
    names = devices["name"].drop_nulls() if devices.height else []
    return match(names[0]) if len(names) else None


def share_pct(part_ns: float, window_ns: float) -> float:
    return part_ns / window_ns * 100.0 if window_ns else 0.0


def reportable(saving_ns: float, window_ns: float) -> bool:
    return share_pct(saving_ns, window_ns) >= REPORTABLE_SHARE_PCT


def ns(value: float | None) -> str:
    """A duration for a message: 25.96 ms, 89.8 us, 895 ns."""
    if value is None:
        return "n/a"
    v = float(value)
    if abs(v) >= 1e9:
        return f"{v / 1e9:.3g} s"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.4g} ms"
    if abs(v) >= 1e3:
        return f"{v / 1e3:.3g} us"
    return f"{v:.0f} ns"


def nbytes(value: float | None) -> str:
    if value is None:
        return "n/a"
    v = float(value)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:.0f} B"


def rate(bytes_per_s: float | None) -> str:
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / 1e9:.3g} GB/s"


def largest_group(frame: pl.DataFrame, by: str, value: str | pl.Expr) -> tuple[float, pl.DataFrame]:
    """A saving spread over devices (or processes) that run side by side: ``(saving, per_group)``.

    The GPUs of one trace (and the processes driving them) idle and work at the same time, so the
    wall time a fix gains is at most the largest group's share, not the sum over groups: eight GPUs
    each idle 1 s after a synchronisation make the run 1 s slower, not 8 s. ``per_group`` holds ``by``
    and ``saving_ns``, largest first; one group gives the plain sum."""
    expr = pl.col(value) if isinstance(value, str) else value
    per = (frame.group_by(by).agg(saving_ns=expr.sum().cast(pl.Float64))
           .sort(["saving_ns", by], descending=[True, False], nulls_last=True))
    return (float(per["saving_ns"][0]) if per.height else 0.0), per


def after_set_up(gaps: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    """The gaps between GPU operations that end after their device's first kernel. Before it a device
    has had only copies and memsets: the program uploading its weights and data while it builds its
    model, optimiser and data pipeline (seconds of host work under a whole-program capture), which is
    start-up, not the loop. A device without kernels keeps all its gaps."""
    if gaps.is_empty() or kernels.is_empty():
        return gaps
    first = kernels.group_by("device_id").agg(_first_kernel_ns=pl.col("start_ns").min())
    return (gaps.join(first, on="device_id", how="left", maintain_order="left", nulls_equal=True)
            .filter(pl.col("_first_kernel_ns").is_null() | (pl.col("end_ns") > pl.col("_first_kernel_ns")))
            .drop("_first_kernel_ns"))


def within_window(saving_ns: float, window_ns: float) -> float:
    """No fix saves more than the profiled window."""
    return min(saving_ns, float(window_ns)) if window_ns else saving_ns
