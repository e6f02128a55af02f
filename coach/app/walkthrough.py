"""What the scenario walkthrough shows, as one plain value: ``Walkthrough``.

The stepper page renders a ``Walkthrough`` and nothing else, so it does not care where one comes
from: ``from_scenario`` builds it from a scenario folder (``coach.scenarios``) and its recorded
traces, and ``kernel_pair`` from two launches of Nsight Compute reports (a slow kernel and its
fix). Numbers are read from the profiles; the words come from the scenario's files.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Sequence

import polars as pl

from coach.model import KernelProfile, Timeline

STEPS = ("Symptom", "Your first check", "Evidence", "Bottleneck", "Fix", "Result")
#: The step at which the user must commit an answer before seeing more.
ANSWER_STEP = 1


@dataclass(frozen=True)
class EvidenceRow:
    """One measured number, slow and fixed; ``key`` marks the numbers that prove the bottleneck."""

    label: str
    metric: str  # canonical column
    slow: float | None
    fixed: float | None
    unit: str = ""
    healthy: str = ""  # what a healthy value looks like, in words
    key: bool = False


@dataclass(frozen=True)
class Walkthrough:
    id: str
    title: str
    level: str
    symptom: str  # as the user first meets it, with the measured numbers filled in
    question: str
    bottleneck: str  # a coach.analyze.findings.Bottleneck value
    fix_summary: str
    fix_details: str = ""
    wrong_fix: str = ""
    hints: tuple[str, ...] = ()
    strong: tuple[str, ...] = ()  # what a strong answer names (the rubric)
    red_flags: tuple[str, ...] = ()
    evidence: tuple[EvidenceRow, ...] = ()
    slow_source: str = ""
    fixed_source: str = ""
    source_label: str = ""  # e.g. "copy kernel (CUDA C++)"
    before: KernelProfile | None = field(default=None, compare=False)
    after: KernelProfile | None = field(default=None, compare=False)
    slow_timeline: Timeline | None = field(default=None, compare=False)
    fixed_timeline: Timeline | None = field(default=None, compare=False)
    slow_time_ns: float | None = None
    fixed_time_ns: float | None = None
    slow_bytes_per_s: float | None = None  # DRAM bytes per second, as measured
    fixed_bytes_per_s: float | None = None

    @property
    def speedup(self) -> float | None:
        if not self.slow_time_ns or not self.fixed_time_ns:
            return None
        return self.slow_time_ns / self.fixed_time_ns

    @property
    def one_line(self) -> str:
        """The symptom's first sentence, for the gallery."""
        text = " ".join(self.symptom.split())
        end = text.find(". ")
        return text if end < 0 else text[: end + 1]


def launch(profile: KernelProfile, launch_id: int) -> KernelProfile:
    """The part of a kernel profile that belongs to one launch (every table filtered to it)."""
    keep = pl.col("launch_id") == launch_id
    if profile.launches.filter(keep).is_empty():
        raise KeyError(f"no launch {launch_id} in {profile.source.path}")
    device = profile.launches.filter(keep)["device_id"].first()
    return KernelProfile(
        source=profile.source,
        launches=profile.launches.filter(keep),
        metrics=profile.metrics.filter(keep),
        rules=profile.rules.filter(keep),
        devices=profile.devices.filter(pl.col("device_id") == device) if device is not None else profile.devices,
    )


def _value(profile: KernelProfile, column: str) -> float | None:
    v = profile.launches[column].first() if column in profile.launches.columns else None
    return None if v is None else float(v)


def _rate(profile: KernelProfile) -> float | None:
    b, t = _value(profile, "dram_bytes"), _value(profile, "duration_ns")
    return None if b is None or not t else b / (t * 1e-9)


def evidence_rows(before: KernelProfile, after: KernelProfile, wanted: Sequence[dict[str, Any]]) -> tuple[EvidenceRow, ...]:
    """Evidence rows for the columns in ``wanted`` (dicts of EvidenceRow fields without the values)."""
    return tuple(EvidenceRow(slow=_value(before, w["metric"]), fixed=_value(after, w["metric"]), **w) for w in wanted)


def kernel_pair(*, before: KernelProfile, after: KernelProfile, evidence: Sequence[dict[str, Any]], **words: Any) -> Walkthrough:
    """A walkthrough of one slow launch and its fixed version (each a one-launch ``KernelProfile``).

    ``evidence`` names the columns to show; ``words`` are the Walkthrough's text fields.
    """
    return Walkthrough(
        **words,
        evidence=evidence_rows(before, after, evidence),
        before=before,
        after=after,
        slow_time_ns=_value(before, "duration_ns"),
        fixed_time_ns=_value(after, "duration_ns"),
        slow_bytes_per_s=_rate(before),
        fixed_bytes_per_s=_rate(after),
    )


@dataclass(frozen=True)
class DiffLine:
    text: str
    change: str  # "", "del" (only in the slow version) or "add" (only in the fixed one)


def side_by_side(slow: str, fixed: str) -> tuple[list[DiffLine], list[DiffLine]]:
    """The two sources aligned line by line, with the lines the fix changed marked."""
    a, b = slow.splitlines(), fixed.splitlines()
    left: list[DiffLine] = []
    right: list[DiffLine] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            left += [DiffLine(t, "") for t in a[i1:i2]]
            right += [DiffLine(t, "") for t in b[j1:j2]]
            continue
        old = [DiffLine(t, "del") for t in a[i1:i2]]
        new = [DiffLine(t, "add") for t in b[j1:j2]]
        pad = max(len(old), len(new))
        left += old + [DiffLine("", "")] * (pad - len(old))
        right += new + [DiffLine("", "")] * (pad - len(new))
    return left, right
