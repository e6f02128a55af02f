"""The app's one door into ``coach.analyze``: every page asks here, and nothing here analyses.

Some analyses may be missing from an installation (a module not yet part of it); each function then
returns ``None`` and the page says what is not available, instead of failing. An ``ImportError``
from inside a module that does exist is a bug and is not hidden. A ``CoachError`` raised by an
analysis (a report without the metrics it needs) propagates: pages show its one-line message.
"""

from __future__ import annotations

import importlib
from pathlib import Path
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
SOURCE = "coach.analyze.source"
EXERCISE_PLAYER = "coach.exercises.player"
EXERCISE_PROGRESS = "coach.exercises.progress"


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


def source_module() -> ModuleType | None:
    """``coach.analyze.source`` (the lines of a launch, from its source counters); None if not installed."""
    return optional(SOURCE)


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


def merge_intervals(intervals: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """``coach.analyze.timeline.merge_intervals``: the union of intervals per group."""
    from coach.analyze.timeline import merge_intervals as merge

    return merge(intervals, by)


def diff(before: Profile, after: Profile) -> dict[str, Any]:
    """``coach diff BEFORE AFTER`` as data: ``coach.analyze.diff``'s top-level ``diff`` and nothing
    else of that module (its verdict lines, movements and comparability come in ``to_dict``)."""
    from coach.analyze.diff import diff as compare

    return compare(before, after).to_dict()


def exercise(scenario_id: str) -> Any | None:
    """The guided exercise of a scenario (``coach.exercises.player``); None if exercises are not
    installed or ``scenario_id`` is not one of the project's scenarios."""
    from coach import scenarios
    from coach.errors import CoachError

    player = optional(EXERCISE_PLAYER)
    if player is None:
        return None
    try:
        scn = scenarios.find(scenario_id)
    except CoachError:
        return None
    return player.build(scn, others=[s for s in scenarios.all_scenarios() if s.id != scn.id])


def grade(exercise: Any, answer: str) -> Any:
    """``answer`` graded against the exercise's rubric (``coach.exercises.grading``)."""
    from coach.exercises.grading import grade as grade_text

    return grade_text(answer, exercise.signals, exercise.red_flags)


def exercise_status(path: Path | None = None) -> dict[str, tuple[int, float]] | None:
    """Per scenario id: how many exercise attempts the user made and the best share of the score.

    Reads the progress database (``path``, or the user's default one) without creating it; None if
    exercises are not installed.
    """
    progress = optional(EXERCISE_PROGRESS)
    if progress is None:
        return None
    db = Path(path) if path is not None else progress.default_path()
    if not db.is_file():
        return {}
    with progress.ProgressStore(db) as store:
        attempts = store.attempts()
    tried = (attempts.filter(pl.col("kind") == "exercise")
             .group_by("item").agg(pl.len().alias("attempts"), pl.col("fraction").max().alias("best")))
    return {item: (int(n), float(best)) for item, n, best in tried.iter_rows()}
