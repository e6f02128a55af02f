"""Timeline rules: one module per rule, each declaring ``SPEC`` (a ``RuleSpec``) and
``apply(analysis, hardware=None) -> list[Finding]``, where ``analysis`` is a
``coach.analyze.timeline.TimelineAnalysis`` (the shared computations, made once) and ``hardware``
an optional GPU entry (``coach.analyze.hardware.GPU``) for ceilings such as the host link's rate.

``run_all(timeline, hardware)`` runs every rule whose table has the columns it requires and returns
the findings ranked by estimated saving.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import polars as pl

from coach.analyze.findings import Finding, RuleSpec, rank
from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules import (
    allocator_churn,
    gpu_idle,
    host_sync,
    launch_bound,
    no_overlap,
    pageable_memcpy,
    transfer_bandwidth,
    warmup,
)
from coach.model import Timeline

RULES: tuple[ModuleType, ...] = (
    gpu_idle,
    launch_bound,
    host_sync,
    pageable_memcpy,
    no_overlap,
    transfer_bandwidth,
    allocator_churn,
    warmup,
)


def applicable(spec: RuleSpec, timeline: Timeline) -> bool:
    """The rule's table has rows, and each required column has at least one value."""
    table: pl.DataFrame = getattr(timeline, spec.table)
    if table.is_empty():
        return False
    return all(table[c].null_count() < table.height for c in spec.requires)


def run_all(timeline: Timeline, hardware: Any = None) -> list[Finding]:
    """Every applicable rule's findings, largest estimated saving first."""
    analysis = TimelineAnalysis(timeline)
    findings: list[Finding] = []
    for rule in RULES:
        if applicable(rule.SPEC, timeline):
            findings.extend(rule.apply(analysis, hardware))
    return rank(findings)
