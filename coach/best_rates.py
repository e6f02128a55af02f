"""The fastest rates recorded on a GPU, so that a measured ceiling is never below a recorded rate.

A calibration (``hardware/measured/<gpu>.json``, written by ``coach.capture.calibrate``) measures
each ceiling once, with one program: DRAM bandwidth as a device-to-device copy and a ``torch.sum``,
matmul rates as cuBLAS. Other recordings on the same GPU can go faster: a ladder rung or a library
peer that reads with wider loads, a kernel whose traffic Nsight Compute counts above the copy's. A
ceiling labelled "measured" that a recorded rate exceeds is not a ceiling, so the measured ceiling
of each kind is the larger of the calibration and the best rate recorded, and its label says which.

``traces/<gpu>/best-rates.json`` holds the best recorded rate of each calibration measurement:

    {"coach_best_rates": 1, "gpu": "h200",
     "rates": {"dram_copy_bandwidth_bytes_per_s": {"value": 4.49e12, "where": "..."}, ...},
     "rejected": [{"measurement": ..., "value": ..., "where": ..., "why": ...}],
     "not_used": [{"measurement": ..., "value": ..., "where": ..., "why": ...}]}

It is written by ``coach.recordings.write_best_rates`` when recordings are imported, and a test
checks that it agrees with the traces. A rate above the datasheet's peak is not folded in (it can
only be a miscount) but listed under ``rejected``, which the same test requires to be empty. A DRAM
rate whose traffic is not known to be of the ceiling's kind (a copy's mix of reads and writes, or
reads alone: ``coach.recorded_rates``) is not folded in either, but listed under ``not_used`` with
what it needs. Every DRAM rate, whatever its mix, also counts toward ``dram_bandwidth_bytes_per_s``:
no calibration measures it, but the roofline's DRAM roof (``coach.analyze.hardware.ceilings``) is
never below it, so that no recorded kernel sits above the roof.

This module needs only the standard library: scenarios and ladders read it on the GPU machine too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coach.paths import traces_dir

BEST_RATES_FILE = "best-rates.json"
BEST_RATES_FORMAT = 1


def path_for(gpu: str, traces: Path | None = None) -> Path:
    return (Path(traces) if traces is not None else traces_dir()) / gpu / BEST_RATES_FILE


def read(gpu: str, traces: Path | None = None) -> dict[str, Any]:
    """The best-rates file of ``gpu`` (a traces/ folder name, e.g. "h200"); empty rates where none."""
    return read_file(path_for(gpu, traces))


def read_file(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"rates": {}, "rejected": [], "not_used": []}
    if not isinstance(doc, dict) or doc.get("coach_best_rates") != BEST_RATES_FORMAT:
        return {"rates": {}, "rejected": [], "not_used": []}
    return {"rates": dict(doc.get("rates") or {}), "rejected": list(doc.get("rejected") or []),
            "not_used": list(doc.get("not_used") or []), "gpu": doc.get("gpu")}


def measured_ceiling(measurement: str, calibrated: float | None, best: dict[str, Any]) -> tuple[float | None, str]:
    """The measured ceiling of ``measurement``: the calibration's value, raised to the best recorded
    rate where one is higher (``best`` as ``read`` returns it), and a note saying which; "" when the
    calibration stands. The note says where the value comes from, not the value itself: every page
    prints the value beside it, so a caption says its ceiling once."""
    entry = (best.get("rates") or {}).get(measurement)
    value = entry.get("value") if isinstance(entry, dict) else None
    if not isinstance(value, (int, float)) or (calibrated is not None and value <= calibrated):
        return calibrated, ""
    where = entry.get("where", "a recording")
    unit = unit_of(measurement)
    cal = f"above the calibration's {_si(calibrated, unit)}" if calibrated else "no calibration"
    return float(value), f"the best rate recorded on this GPU ({where}; {cal})"


def ceiling_for(gpu: str, measurement: str, calibrated: float | None, traces: Path | None = None) -> tuple[float | None, str]:
    """``measured_ceiling`` with the best rates of ``gpu`` under ``traces``."""
    return measured_ceiling(measurement, calibrated, read(gpu, traces))


def unit_of(measurement: str) -> str:
    """"B/s" or "FLOP/s", by the measurement's name (``*_bytes_per_s``, ``*_flop_per_s``)."""
    return "B/s" if measurement.endswith("bytes_per_s") else "FLOP/s" if measurement.endswith("flop_per_s") else "/s"


def _si(value: float | None, unit: str) -> str:
    if value is None:
        return "none"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"
