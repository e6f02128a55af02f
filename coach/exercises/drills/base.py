"""What every drill shares: the ``Drill`` itself, its grading by tolerance, and the helpers that
write numbers the way a worked solution on a whiteboard does."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

from coach.analyze import hardware
from coach.errors import CoachError
from coach.exercises.quantity import QuantityError, Unit, parse, unit

#: An estimate that rounds bandwidths, peaks and sizes to two significant figures, as anyone does at
#: a whiteboard, lands within about 10% of the exact floor; ±20% leaves room for that and for
#: counting a small side term (gamma and beta, the GEMM's C) differently, but not for a wrong factor
#: of 2 (forgetting the write, using the sparse peak).
FLOOR_TOLERANCE = 0.20
#: MFU is a ratio of two numbers the question gives almost exactly: ±10% allows rounding only.
MFU_TOLERANCE = 0.10
#: KV-cache size is exact arithmetic on the configuration; ±5% allows GB versus GiB-free rounding only.
KV_TOLERANCE = 0.05
#: A "bound" drill is posed at least this far from the ridge point, so the right answer is clear.
BOUND_MARGIN = 1.5
#: Weights may fill at most this share of the GPUs' memory in a decode drill (the rest is KV cache,
#: activations and the runtime).
DECODE_MEMORY_SHARE = 0.8


class DrillError(CoachError):
    """A drill that cannot be posed (unknown kind, a GPU without the needed number)."""


@dataclass(frozen=True)
class Drill:
    id: str
    kind: str
    topic: str  # the quiz topic it trains, for progress and plans
    gpu: str
    question: str
    answer: float  # in ``unit``
    unit: Unit
    tolerance: float  # relative
    steps: tuple[str, ...]  # the worked solution, one line per step
    bound: str | None = None  # "memory" or "compute", for drills that ask which
    sources: tuple[str, ...] = ()

    def check(self, text: str) -> DrillResult:
        """Grade a typed answer: the number within tolerance (and the bound, where asked)."""
        try:
            given = parse(text, self.unit)
        except QuantityError as err:
            return DrillResult(False, None, None, (f"could not read a number: {err}",) + self._solution())
        error = (given - self.answer) / self.answer
        ok = abs(error) <= self.tolerance
        lines = [f"{'right' if ok else 'off'}: you said {_fmt(given)} {self.unit.name}, the answer is "
                 f"{_fmt(self.answer)} {self.unit.name} ({abs(error):.0%} {'high' if error > 0 else 'low'}; "
                 f"tolerance ±{self.tolerance:.0%})"]
        if self.bound is not None:
            said = _said_bound(text)
            if said is None:
                ok = False
                lines.append(f"say which bound it is: this one is {self.bound}-bound")
            elif said != self.bound:
                ok = False
                lines.append(f"wrong bound: you said {said}-bound, it is {self.bound}-bound")
            else:
                lines.append(f"right bound: {self.bound}-bound")
        return DrillResult(ok, given, error, tuple(lines) + self._solution())

    def _solution(self) -> tuple[str, ...]:
        return ("worked solution:",) + tuple(f"  {i}. {s}" for i, s in enumerate(self.steps, 1))


@dataclass(frozen=True)
class DrillResult:
    correct: bool
    given: float | None
    error: float | None  # relative, signed
    feedback: tuple[str, ...] = field(default=())


def _said_bound(text: str) -> str | None:
    """'memory-bound' / 'bandwidth' or 'compute-bound' / 'math'; None when neither or both are said."""
    t = text.lower()
    memory = re.search(r"\b(memory|bandwidth)\b", t) is not None
    compute = re.search(r"\b(compute|math|flops?)[- ]bound\b|\bcompute\b", t) is not None
    return None if memory == compute else ("memory" if memory else "compute")


def _fmt(x: float) -> str:
    """Readable numbers: 536,870,912 / 160.3 / 0.1 / 3.646."""
    if not math.isfinite(x):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _sci(x: float) -> str:
    """6.7e11, as a question states a large count."""
    mantissa, exponent = f"{x:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def _gpus_phrase(n: int, gpu: str) -> str:
    return f"an {_gpu_name(gpu)}" if n == 1 else f"{n} x {_gpu_name(gpu)}"


def _eng(x: float, base: str) -> str:
    """1.2e12 FLOP/s -> '1.2 TFLOP/s'; 3.35e12 byte/s -> '3.35 TB/s'."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.4g} {prefix}{base}"
    return f"{x:.4g} {base}"


def _gpu_name(gpu_id: str) -> str:
    return hardware.get(gpu_id).name


def _datasheet(gpu_id: str) -> hardware.Ceilings:
    return hardware.ceilings(gpu_id, measured=False)


def _roof_line(what: str, roof: hardware.Ceiling, base: str) -> str:
    return f"{what}: {_eng(roof.value, base)} ({roof.source})"


def _time_unit(seconds: float) -> Unit:
    return unit("ms") if seconds >= 1e-3 else unit("us")


def _gpus_with(need: Callable[[hardware.Ceilings], bool]) -> list[str]:
    return sorted(g for g in hardware.gpus() if need(_datasheet(g)))


def _round2(x: float) -> float:
    """Two significant figures: numbers a question can state without looking machine-made."""
    return float(f"{x:.2g}")
