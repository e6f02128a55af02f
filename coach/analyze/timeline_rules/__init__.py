"""Timeline rules: one module per rule, each declaring ``SPEC`` (a ``RuleSpec``) and
``apply(analysis, hardware=None) -> list[Finding]``, where ``analysis`` is a
``coach.analyze.timeline.TimelineAnalysis`` (the shared computations, made once) and ``hardware``
an optional GPU entry (``coach.analyze.hardware.GPU``) for ceilings such as the host link's rate.

``run_all(timeline, hardware)`` runs every rule whose table has the columns it requires and returns
the findings ranked by estimated saving, then a note (``coach.analyze.diagnose.not_checked``) for
each rule whose table has records without a column the rule needs, and one for each way the trace is
incomplete (``coach.analyze.coverage``). A trace whose API calls launched work but which holds no GPU
record gets only that note: every rule would speak of a GPU the trace did not record.

A whole-program capture whose loop is marked (``_steady``: a cudaProfilerStart/Stop range, NVTX step
ranges) is diagnosed in its steady window: the rules read the loop, and the start-up left out is
reported apart as one-time work (``warmup.start_up``), with no saving, after the window's findings.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import polars as pl

from coach.analyze.coverage import api_without_gpu_records, no_gpu_activity, timeline_gaps
from coach.analyze.diagnose import not_checked
from coach.analyze.findings import Finding, RuleSpec, rank
from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules import _steady
from coach.analyze.timeline_rules._shared import timeline_gpu
from coach.analyze.timeline_rules import (
    allocator_churn,
    gpu_idle,
    host_sync,
    input_pipeline,
    launch_bound,
    layout_copies,
    no_overlap,
    pageable_memcpy,
    transfer_bandwidth,
    warmup,
)
from coach.model import Timeline

RULES: tuple[ModuleType, ...] = (
    input_pipeline,
    gpu_idle,
    launch_bound,
    host_sync,
    pageable_memcpy,
    no_overlap,
    transfer_bandwidth,
    allocator_churn,
    layout_copies,
    warmup,
)


def missing_columns(spec: RuleSpec, timeline: Timeline) -> list[str]:
    """Required columns the rule's table has no value in (empty when the table has no rows: no such
    activity happened, so there is nothing to check)."""
    table: pl.DataFrame = getattr(timeline, spec.table)
    return [c for c in spec.requires if table.height and table[c].null_count() == table.height]


def applicable(spec: RuleSpec, timeline: Timeline) -> bool:
    """The rule's table has rows, and each required column has at least one value."""
    return getattr(timeline, spec.table).height > 0 and not missing_columns(spec, timeline)


def run_all(timeline: Timeline, hardware: Any = None, analysis: TimelineAnalysis | None = None) -> list[Finding]:
    """Every applicable rule's findings, largest estimated saving first; then a note for each rule
    whose table has rows but lacks a column it needs. ``hardware`` defaults to the hardware-table
    entry of the timeline's GPU; ``analysis`` is the timeline's shared computations when the caller
    has them already (a summary of the same timeline)."""
    if analysis is None or analysis.timeline is not timeline:
        analysis = TimelineAnalysis(timeline)
    hardware = hardware if hardware is not None else timeline_gpu(timeline.devices)
    findings: list[Finding] = []
    notes: list[Finding] = [not_checked("capture", "the GPU side of the trace", [], reason=gap[0].lower() + gap[1:].rstrip("."),
                                        scope="timeline") for gap in timeline_gaps(timeline)]
    if api_without_gpu_records(timeline):  # every rule would speak of a GPU the trace did not record
        return notes
    if timeline.kernels.height + timeline.memcpy.height + timeline.memset.height == 0 and timeline.api.height == 0:
        # CPU operators or OS calls alone: no rule has a GPU to judge, and "nothing found" would read as healthy
        reason = no_gpu_activity(timeline.source.format).removeprefix("No GPU activity recorded")
        notes.append(not_checked("capture", "the GPU side of the trace", [],
                                 reason="the trace records no GPU activity" + reason, scope="timeline"))
    steady = _steady.find(analysis, warmup.one_time_calls(analysis))
    whole = analysis
    if steady is not None:
        findings.extend(warmup.start_up(whole, steady))
        # the rules read the steady window's analysis alone: the whole capture's tables (the caller's
        # summary has used them already) are let go before the window's are computed
        whole.release()
        analysis = TimelineAnalysis(_steady.crop(timeline, steady), holes=steady.holes)
    for rule in RULES:
        gone = missing_columns(rule.SPEC, timeline)
        if gone:
            notes.append(not_checked(rule.SPEC.id, rule.SPEC.name, [],
                                     reason=f"the trace's {rule.SPEC.table} records have no {', '.join(gone)}",
                                     scope="timeline"))
        elif applicable(rule.SPEC, timeline):
            findings.extend(rule.apply(analysis, hardware) if applicable(rule.SPEC, analysis.timeline) else [])
    return rank([_within_window(f, analysis.window_ns) for f in findings]) + notes


def _within_window(f: Finding, window_ns: int) -> Finding:
    """No fix saves more than the profiled window (each rule bounds its own; this keeps any that does
    not from claiming more than 100%)."""
    if f.estimated_saving_ns is None or not window_ns or f.estimated_saving_ns <= window_ns:
        return f
    return dataclasses.replace(f, estimated_saving_ns=float(window_ns), estimated_gain_pct=100.0)
