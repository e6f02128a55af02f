"""The app's one door into ``coach.analyze``: every page asks here, and nothing here analyses.

Some analyses may be missing from an installation (a module not yet part of it); each function then
returns ``None`` and the page says what is not available, instead of failing. An ``ImportError``
from inside a module that does exist is a bug and is not hidden. A ``CoachError`` raised by an
analysis (a report without the metrics it needs) propagates: pages show its one-line message.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import plotly.graph_objects as go
import polars as pl

from coach.analyze.findings import Finding
from coach.model import KernelProfile, Profile, Timeline

DIAGNOSE = "coach.analyze.diagnose"
ROOFLINE = "coach.analyze.roofline"
ROOFLINE_PLOT = "coach.analyze.roofline_plot"
TIMELINE_SUMMARY = "coach.analyze.timeline_summary"
SCENARIOS = "coach.scenarios"
EXERCISES = "coach.exercises"


def optional(name: str) -> ModuleType | None:
    """The module ``name``, or None when this installation does not have it."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name is not None and (name == err.name or name.startswith(err.name + ".")):
            return None
        raise


def available(name: str) -> bool:
    return optional(name) is not None


def findings(profile: Profile) -> list[Finding] | None:
    """The ranked findings of ``coach.analyze.diagnose``; None if diagnosis is not installed."""
    mod = optional(DIAGNOSE)
    return None if mod is None else list(mod.diagnose(profile))


def is_note(finding: Finding) -> bool:
    """A "could not check" note rather than a finding (``diagnose`` ranks these last)."""
    mod = optional(DIAGNOSE)
    return bool(mod is not None and hasattr(mod, "is_not_checked") and mod.is_not_checked(finding))


def roofline(profile: KernelProfile) -> Any | None:
    """The hierarchical roofline of a kernel profile; None if the roofline is not installed."""
    mod = optional(ROOFLINE)
    return None if mod is None else mod.roofline(profile)


def roofline_figure(profile: KernelProfile, compare: KernelProfile | None = None,
                    title: str | None = None) -> go.Figure | None:
    """The roofline figure with every kernel, or before -> after arrows when ``compare`` is given."""
    mod, plot = optional(ROOFLINE), optional(ROOFLINE_PLOT)
    if mod is None or plot is None:
        return None
    before = mod.roofline(profile)
    after = mod.roofline(compare) if compare is not None else None
    return plot.figure(before, compare=after, title=title)


def timeline_summary(timeline: Timeline) -> dict[str, Any] | None:
    """``coach.analyze.timeline_summary.summarize_timeline``; None if it is not installed."""
    mod = optional(TIMELINE_SUMMARY)
    return None if mod is None else mod.summarize_timeline(timeline)


def timeline_kernels(timeline: Timeline) -> pl.DataFrame | None:
    """Kernels of a timeline summarised by name (the timeline summary's own table)."""
    mod = optional(TIMELINE_SUMMARY)
    return None if mod is None else mod.top_kernels(timeline.kernels, top=10_000)
