"""What every kernel rule shares: the per-launch context, the finding builder, number formatting.

Not a rule itself (no ``SPEC``): the rule registry in ``__init__`` lists rule modules by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec

NCU = "ncu"  # Evidence.source for numbers read from the report
#: details key of a finding that names a limit set by the launch configuration alone, with its kind:
#: the resource capping theoretical occupancy, a partial last wave, a grid of fewer blocks than SMs, or
#: a kernel as short as a launch's own cost. Where that limit keeps the launch from its roof, the
#: finding is ranked with the root's gap (kernel_rules/__init__.py).
LAUNCH_LIMIT = "launch_limit"
OCCUPANCY_LIMIT = "occupancy"
PARTIAL_WAVE = "partial-wave"
SMALL_GRID = "small-grid"
SHORT_KERNEL = "short-kernel"


@dataclass(frozen=True)
class Verdict:
    """The speed-of-light root's reading of one launch, which the other rules build on.

    ``side`` is the busier half of the GPU ("memory" or "compute", or "balanced" when neither leads
    by the balance margin); ``regime`` is how close the busiest unit runs to its peak: "at-roof",
    "below-roof" or "latency"; ``gap_ns`` is the time the launch would save if that unit ran at its
    peak, the most any fix that leaves the bytes and instructions unchanged can save.
    """

    side: str
    regime: str
    category: Bottleneck
    unit: str
    busiest_pct: float
    gap_ns: float | None
    subtrees: frozenset[str]
    #: where the speed-of-light throughputs are missing, the column of the unit at its roof that
    #: the verdict was read from (``speed_of_light.unit_verdict``); None for the full reading
    measured_by: str | None = None


@dataclass(frozen=True)
class KernelContext:
    """What a rule sees besides the launch row: the root's verdict, Nsight Compute's own rule results
    for the launch, and the hardware entry (if any)."""

    verdict: Verdict | None = None
    ncu_rules: tuple[dict[str, Any], ...] = ()
    hardware: Any = None

    def ncu(self, *rule_ids: str) -> dict[str, Any] | None:
        """The first of Nsight Compute's warnings for this launch among ``rule_ids`` (in that order)."""
        for rid in rule_ids:
            for r in self.ncu_rules:
                if r.get("rule_id") == rid and r.get("severity") in ("warning", "error"):
                    return r
        return None

    def cap(self, saving_ns: float | None, launch: dict[str, Any]) -> float | None:
        """Limit a saving to the gap to the roof: a fix that keeps the bytes and instructions
        (occupancy, latency hiding) can bring the kernel to its roof, not past it. Without the
        root's verdict, the DRAM floor (its bytes at peak bandwidth) still bounds it."""
        gap = self.verdict.gap_ns if self.verdict else None
        if gap is None and launch.get("dram_floor_ns") is not None:
            gap = max(0.0, launch["duration_ns"] - launch["dram_floor_ns"])
        if saving_ns is None or gap is None:
            return saving_ns
        return min(saving_ns, gap)

    def memory_weight(self, launch: dict[str, Any]) -> float:
        """How much of the time a memory fix acts on: all of it when the root says memory-bound,
        else the memory system's share of peak (Nsight Compute weighs its child rules the same way)."""
        if self.verdict and self.verdict.side == "memory":
            return 1.0
        pct = launch.get("memory_throughput_pct")
        return 1.0 if pct is None else min(1.0, pct / 100)

    def compute_weight(self, launch: dict[str, Any]) -> float:
        """The compute analogue of ``memory_weight``."""
        if self.verdict and self.verdict.side == "compute":
            return 1.0
        pct = launch.get("sm_throughput_pct")
        return 1.0 if pct is None else min(1.0, pct / 100)


def cannot_decide(spec: RuleSpec, launch: dict[str, Any], reason: str, needs: Iterable[str]) -> Finding:
    """A rule's note that it could not decide for this launch, with what it needs: returned from
    ``apply`` beside (or instead of) findings; the diagnosis lists it under "not checked"."""
    from coach.analyze.diagnose import not_checked  # noqa: PLC0415 - diagnose imports the rule package lazily

    return not_checked(spec.id, spec.name, [], reason=reason, scope=launch.get("kernel_name") or "",
                       launch_id=launch.get("launch_id"), needs=list(needs))


def missing(launch: dict[str, Any], columns: Iterable[str]) -> list[str]:
    """The columns among ``columns`` that are null (or absent) for this launch."""
    return [c for c in columns if launch.get(c) is None]


def ev(metric: str, value: float | None, unit: str = "", healthy: str = "", threshold: float | None = None,
       source: str = NCU) -> Evidence:
    return Evidence(metric=metric, value=None if value is None else float(value), unit=unit, healthy=healthy,
                    threshold=threshold, source=source)


def finding(
    spec: RuleSpec,
    launch: dict[str, Any],
    *,
    title: str,
    message: str,
    next_step: str,
    evidence: Iterable[Evidence],
    saving_ns: float | None,
    gain_model: str,
    category: Bottleneck | None = None,
    ncu: dict[str, Any] | None = None,
    differs_from_ncu: str | None = None,
    details: dict[str, Any] | None = None,
) -> Finding:
    """A finding for ``launch`` with the rule's id and class, the saving also as a share of the launch."""
    duration = launch.get("duration_ns")
    saving = None if saving_ns is None else max(0.0, float(saving_ns))
    pct = None if saving is None or not duration else 100.0 * saving / duration
    return Finding(
        rule_id=spec.id,
        category=category or spec.category,
        title=title,
        message=message,
        next_step=next_step,
        evidence=tuple(evidence),
        scope=launch.get("kernel_name") or "",
        launch_id=launch.get("launch_id"),
        estimated_gain_pct=pct,
        estimated_saving_ns=saving,
        gain_model=gain_model,
        ncu_rule=ncu.get("rule_id") if ncu else None,
        ncu_speedup_pct=ncu.get("speedup_pct") if ncu else None,
        differs_from_ncu=differs_from_ncu,
        details=details or {},
    )


#: How a value the report lacks reads (coach.analyze.quantities.NOT_IN_REPORT): never 0, never "?".
MISSING = "not in report"


def fmt_time(ns: float | None) -> str:
    """A time (or a change of time: negative reads "-61.41 ms", in the same unit as its size)."""
    if ns is None:
        return MISSING
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def fmt_pct(pct: float | None) -> str:
    """A percentage: one decimal ("92.7%"); a small share that was measured keeps two significant
    digits ("0.016%", "0.000078%"), never "0.0%", which would read as a zero."""
    if pct is None:
        return MISSING
    if 0 < abs(pct) < 0.05:
        return f"{pct:.{1 - math.floor(math.log10(abs(pct)))}f}%"
    return f"{pct:.1f}%"


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return MISSING
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b:.0f} B"


def fmt_rate(bytes_per_s: float | None) -> str:
    if bytes_per_s is None:
        return MISSING
    if bytes_per_s >= 1e11:
        return f"{bytes_per_s / 1e12:.2f} TB/s"
    if bytes_per_s >= 1e8 or bytes_per_s == 0:
        return f"{bytes_per_s / 1e9:.1f} GB/s"
    # a small rate that was measured is not printed as "0.0 GB/s" (it would read as a zero)
    return f"{bytes_per_s / 1e6:.2f} MB/s" if bytes_per_s >= 1e6 else f"{bytes_per_s / 1e3:.2f} kB/s"


def fmt_count(x: float | None) -> str:
    """A count, the one format of a count everywhere coach prints one: exact, thousands separated,
    below a million ("65,536"), where a reader compares it digit for digit with the program's own
    loop counts; above, two decimals of M or G ("58.72M"), the digits a profile's counts carry."""
    if x is None:
        return MISSING
    for unit, size in (("G", 1e9), ("M", 1e6)):
        if abs(x) >= size:
            return f"{x / size:.2f}{unit}"
    return f"{x:,.0f}"
