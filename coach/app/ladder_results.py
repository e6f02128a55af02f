"""The recorded results of a version ladder, as the Ladders page reads them.

Format: ``kernels/<op>/results.json``, one per ladder, written by the ladder's runner::

    {
      "ladder": "reduction",                      # the folder name
      "title": "Sum of 2^28 fp32 values",
      "gpu": "NVIDIA H200",                       # a name coach.analyze.hardware.match knows
      "provenance": {"driver": "580.65", "cuda": "13.0", "date": "2026-12-01",
                     "command": "python kernels/reduction/run.py --out ...", "timing": "do_bench median"},
      "rungs": [
        {
          "rung": "00_naive",                     # the rung's file name without suffix
          "title": "one atomicAdd per element",
          "reason": "why this step, in one or two sentences",
          "prediction": "what should change, said before measuring",
          "predicted_time_s": 0.0031,             # optional: the time the prediction implies
          "time_s": 0.0412,                       # measured (median)
          "bytes": 1073741824,                    # DRAM bytes the bytes model says it must move
          "flops": 268435456,                     # FLOPs of the work (0 for pure data movement)
          "note": "why measurement and prediction differ, where they do"   # optional
        }
      ]
    }

Rungs are in ladder order. Every number was measured on the GPU named; ``bytes`` and ``flops`` come
from the ladder's model of the work, not from the profiler, so every rung is compared on the same work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coach.errors import InputError

RESULTS_FILE = "results.json"


@dataclass(frozen=True)
class Rung:
    rung: str
    title: str
    reason: str
    prediction: str
    time_s: float
    bytes: float
    flops: float
    predicted_time_s: float | None = None
    note: str = ""

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.time_s

    @property
    def flop_per_s(self) -> float:
        return self.flops / self.time_s

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes else None


@dataclass(frozen=True)
class Ladder:
    ladder: str
    title: str
    gpu: str
    provenance: dict[str, Any]
    rungs: tuple[Rung, ...]
    path: Path

    def speedups(self) -> list[float | None]:
        """Each rung's speed-up over the one before it (None for the first)."""
        times = [r.time_s for r in self.rungs]
        return [None, *[a / b for a, b in zip(times, times[1:])]]

    @property
    def total_speedup(self) -> float:
        return self.rungs[0].time_s / self.rungs[-1].time_s


def read(path: Path) -> Ladder:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(path, f"cannot be read as JSON ({err})") from None
    if not isinstance(data, dict):
        raise InputError(path, "holds no JSON object")
    for key in ("ladder", "title", "gpu", "rungs"):
        if key not in data:
            raise InputError(path, f"has no '{key}'")
    if not isinstance(data["rungs"], list) or not data["rungs"]:
        raise InputError(path, "'rungs' must be a non-empty list")
    rungs = []
    for i, raw in enumerate(data["rungs"]):
        try:
            rungs.append(Rung(
                rung=str(raw["rung"]), title=str(raw.get("title", raw["rung"])), reason=str(raw.get("reason", "")),
                prediction=str(raw.get("prediction", "")), time_s=float(raw["time_s"]), bytes=float(raw["bytes"]),
                flops=float(raw.get("flops", 0.0)),
                predicted_time_s=None if raw.get("predicted_time_s") is None else float(raw["predicted_time_s"]),
                note=str(raw.get("note", ""))))
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(path, f"rung {i}: missing or bad field ({err})") from None
        if rungs[-1].time_s <= 0:
            raise InputError(path, f"rung {i}: time_s must be positive")
    return Ladder(ladder=str(data["ladder"]), title=str(data["title"]), gpu=str(data["gpu"]),
                  provenance=dict(data.get("provenance", {})), rungs=tuple(rungs), path=path)


def discover(kernels_dir: Path) -> list[Path]:
    """The results files of every ladder under ``kernels_dir``, in folder order."""
    if not kernels_dir.is_dir():
        return []
    return sorted(p for p in kernels_dir.glob(f"*/{RESULTS_FILE}") if p.is_file())
