"""Version ladders as the dashboard shows them: which are recorded, each read once, and their figures.

Everything comes from ``coach.ladders`` (the definitions, ``kernels/<name>/ladder.toml``; the results,
``traces/<gpu>/ladders/<name>/results.json``; ``rung_table``'s speed-ups and % of ceiling) through
``coach.analyze.ladder_evidence.recorded``, which adds each rung's Nsight Compute profile (its longest
launch, from ``traces/<gpu>/ladders/<name>/ncu``, found by the launch's NVTX range). The one thing
read here is the hand-written end of a ladder's NOTES.md, below the results table that
``ladder_evidence`` writes: what the ladder concludes and, where the goal is missed, why.

A ladder's trajectory is the rate it is judged by, rung by rung (its model of the work over the
median time: every rung does the same work), against its measured ceiling, rather than a roofline:
the ladder recordings hold Nsight Compute's SpeedOfLight, MemoryWorkloadAnalysis, Occupancy and
LaunchStats sections, without the instruction rates and peaks from which ``coach.analyze.roofline``
places a kernel. Which rate that is (bandwidth, for every ladder recorded so far) is said once, in
``measure``; the pages show it and ``rung_table``'s % of ceiling as given.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Callable

import plotly.graph_objects as go
from dash import html

from coach.analyze.ladder_evidence import NOTES_FILE, TABLE_END, Recorded, recorded
from coach.app import format as fmt
from coach.app.components import badge
from coach.app.context import Context
from coach.app.theme import ACCENT, BAD, GOOD, MUTED, SERIES, TEMPLATE
from coach.errors import CoachError
from coach.ladders import LadderDef, LadderResults, Measured, Row, ladder_names, percent_of, results_path

TIME_DIGITS = 4  # significant digits of a median time: 134.1 µs, as the ladders' notes quote them


# --------------------------------------------------------------------------------------------
# Which ladders, read once
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    """A ladder recorded on one GPU (``gpu``: the folder under traces/), read, or why it could not be."""

    name: str  # as coach.ladders.ladder_names gives it; may hold a "/" (a ladder of a family)
    gpu: str
    recorded: Recorded | None
    problem: str = ""


def recorded_ladders(ctx: Context) -> list[Listing]:
    """Every ladder defined under the kernels folder that has results under ``traces/<gpu>/ladders``,
    in ladder order, then GPU order; each read once per app."""
    kernels, traces = ctx.settings.kernels_dir, ctx.settings.traces_dir
    gpus = sorted(d.name for d in traces.iterdir() if d.is_dir()) if traces.is_dir() else []
    return [_listing(ctx, name, gpu) for name in ladder_names(kernels) for gpu in gpus
            if results_path(name, gpu, traces).is_file()]


def _listing(ctx: Context, name: str, gpu: str) -> Listing:
    kernels, traces = ctx.settings.kernels_dir, ctx.settings.traces_dir
    try:
        return Listing(name, gpu, ctx.view(("ladder", gpu, name), lambda: recorded(name, gpu, kernels, traces)))
    except CoachError as err:
        return Listing(name, gpu, None, str(err))


def unrecorded(ctx: Context, listings: list[Listing]) -> list[str]:
    """Ladders defined under the kernels folder with no results on any GPU yet."""
    seen = {item.name for item in listings}
    return [name for name in ladder_names(ctx.settings.kernels_dir) if name not in seen]


def slug(name: str) -> str:
    """A ladder's name as part of an element id: ``matmul/fp32`` -> ``matmul-fp32``."""
    return name.replace("/", "-")


def ok(m: Measured | None) -> bool:
    """Checked correct and timed."""
    return m is not None and m.status == "ok"


# --------------------------------------------------------------------------------------------
# What a ladder is judged by
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """The rate a ladder is judged by: the one its ceiling and its goal are in, and from which
    ``rung_table`` computes "% of ceiling". Every speed the pages show passes through here."""

    label: str  # "bandwidth"
    unit: str  # "B/s"
    work_unit: str  # "B": what one call of the ladder's work model amounts to
    ceiling: float | None  # the measured ceiling on the recording's GPU, if known
    goal: float
    rate_of: Callable[[Measured], float | None]
    work_of: Callable[[Measured], int]
    profile_column: str | None  # the rung profile's column measuring the same rate, if any ...
    profile_label: str  # ... and what it measures, in words

    def rate(self, m: Measured | None) -> float | None:
        return self.rate_of(m) if ok(m) else None

    def show(self, value: float | None) -> str:
        return fmt.si(value, self.unit)

    def percent(self, m: Measured | None) -> float | None:
        """A peer's share of the ceiling (a rung's is ``Row.pct_of_ceiling``), computed as rung_table does."""
        return percent_of(self.rate(m), self.ceiling)


def measure(rec: Recorded) -> Measure:
    """Every ladder recorded so far is memory-bound: achieved bandwidth (the bytes model over the
    median time) against a measured DRAM ceiling (one of ``coach.ladders.CEILINGS``); Nsight Compute's
    DRAM traffic rate of the rung's longest kernel measures the same thing."""
    return Measure("bandwidth", "B/s", "B", rec.results.ceiling_bytes_per_s, rec.defn.goal_bytes_per_s,
                   attrgetter("bytes_per_s"), attrgetter("bytes"), "dram_bytes_per_s", "DRAM traffic")


@dataclass(frozen=True)
class Goal:
    """The ladder's goal against its last correct rung (as ``coach ladder`` judges it), and every
    correct rung that reaches it (a ladder may reach its goal before its last rung, as gemv does)."""

    text: str
    last: Row | None
    reached_by: tuple[Row, ...]

    @property
    def met(self) -> bool:
        return self.last is not None and self.last in self.reached_by


def goal(rec: Recorded) -> Goal:
    ms = measure(rec)
    correct = [r for r in rec.rows if ok(r.result)]
    return Goal(rec.defn.goal, correct[-1] if correct else None,
                tuple(r for r in correct if ms.rate(r.result) >= ms.goal))


def goal_badge(g: Goal) -> html.Span:
    return badge("goal met", "good") if g.met else badge("goal missed", "bad")


def strongest_peer(res: LadderResults) -> Measured | None:
    """The fastest peer that was checked correct in the same run."""
    return min((p for p in res.peers if ok(p)), key=lambda p: p.time_s, default=None)


def conclusion(defn: LadderDef) -> str:
    """The Markdown of NOTES.md below its generated results table: written by hand after the run,
    it says whether the goal was met and, where not, what limits the last rung. Empty if absent."""
    try:
        text = (defn.folder / NOTES_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    _, found, after = text.partition(TABLE_END)
    return after.strip() if found else ""


def median(seconds: float | None) -> str:
    return fmt.si(seconds, "s", TIME_DIGITS)


def percent(value: float | None) -> str:
    """A share of the ceiling, to 0.1% as the ladders' notes and ``coach ladder`` quote it."""
    return fmt.MISSING if fmt.missing(value) else f"{value:.1f}%"


def times(value: float | None) -> str:
    """A time ratio, to two decimals as the ladders' notes and ``coach ladder`` quote it."""
    return fmt.MISSING if fmt.missing(value) else f"{value:.2f}×"


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def trajectory(rec: Recorded) -> go.Figure:
    """The rate of each rung joined in ladder order, Nsight Compute's measure of the same rate in each
    rung's longest kernel beside it, the peers of the same run at the right, the measured ceiling and
    the goal across."""
    ms = measure(rec)
    rows = [r for r in rec.rows if ok(r.result)]
    peers = [p for p in rec.results.peers if ok(p)]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[r.rung.id for r in rows], y=[ms.rate(r.result) for r in rows], mode="lines+markers+text",
        text=[ms.show(ms.rate(r.result)) for r in rows], textposition="bottom right",
        customdata=[[r.rung.title, median(r.result.time_s), percent(r.pct_of_ceiling)] for r in rows],
        hovertemplate="%{x} %{customdata[0]}<br>%{customdata[1]}: %{text}, %{customdata[2]} of the ceiling"
                      "<extra></extra>",
        name=f"rungs: {ms.label}, work model / median time", line=dict(color=ACCENT, width=3), marker=dict(size=10),
        meta={"role": "rungs"}))
    profiled = [(r, rec.profiles[r.rung.key]) for r in rows
                if r.rung.key in rec.profiles and ms.profile_column and rec.profiles[r.rung.key].get(ms.profile_column)]
    if profiled:
        fig.add_trace(go.Scatter(
            x=[r.rung.id for r, _ in profiled], y=[p[ms.profile_column] for _, p in profiled],
            mode="markers", marker=dict(symbol="line-ew-open", size=18, color=MUTED, line=dict(width=3)),
            customdata=[[p["kernel_name"], ms.show(p[ms.profile_column])] for _, p in profiled],
            hovertemplate="%{x}: %{customdata[0]}, %{customdata[1]} (Nsight Compute)<extra></extra>",
            name=f"Nsight Compute: {ms.profile_label} of the longest kernel", meta={"role": "ncu"}))
    if peers:
        fig.add_trace(go.Scatter(
            x=[p.key for p in peers], y=[ms.rate(p) for p in peers], mode="markers+text",
            text=[ms.show(ms.rate(p)) for p in peers], textposition="top center",
            marker=dict(symbol="diamond", size=12, color=SERIES[1]),
            customdata=[[median(p.time_s)] for p in peers],
            hovertemplate="%{x}: %{customdata[0]}, %{text}<extra></extra>",
            name="peers, same run", meta={"role": "peers"}))
    top = max([ms.ceiling or 0.0, ms.goal, *(ms.rate(r.result) for r in rows), *(ms.rate(p) for p in peers),
               *(p[ms.profile_column] for _, p in profiled)])
    if ms.ceiling:
        fig.add_hline(y=ms.ceiling, line=dict(color=MUTED, width=2),
                      annotation_text=f"measured ceiling {ms.show(ms.ceiling)}", annotation_position="top left")
    fig.add_hline(y=ms.goal, line=dict(color=GOOD, dash="dash"), annotation_text=f"goal {ms.show(ms.goal)}",
                  annotation_position="bottom left")
    fig.update_xaxes(type="category", categoryorder="array",
                     categoryarray=[r.rung.id for r in rec.rows] + [p.key for p in peers], title_text="rung, then peers")
    fig.update_yaxes(title_text=f"achieved {ms.label}", tickformat="~s", ticksuffix=ms.unit, range=[0, top * 1.15])
    fig.update_layout(template=TEMPLATE, title=f"{ms.label.capitalize()}, rung by rung", height=440,
                      legend=dict(orientation="h", x=0, y=-0.22, xanchor="left", yanchor="top"),
                      margin=dict(b=110))
    return fig


def step_speedups(rec: Recorded) -> go.Figure:
    """Each rung's speed-up over the previous correct rung; a step that made things slower in red."""
    steps = [r for r in rec.rows if r.vs_previous is not None]
    fig = go.Figure(go.Bar(
        x=[r.rung.id for r in steps], y=[r.vs_previous for r in steps],
        marker_color=[GOOD if r.vs_previous >= 1 else BAD for r in steps],
        text=[times(r.vs_previous) for r in steps], textposition="outside",
        customdata=[[r.rung.title, times(r.vs_first)] for r in steps],
        hovertemplate="%{x} %{customdata[0]}: %{y:.2f}× the previous rung, %{customdata[1]} rung 00<extra></extra>",
        meta={"role": "steps"}))
    fig.add_hline(y=1.0, line=dict(color=MUTED, dash="dot"))
    fig.update_xaxes(type="category", title_text="rung")
    fig.update_yaxes(title_text="speed-up over the previous rung (×)", rangemode="tozero")
    fig.update_layout(template=TEMPLATE, title="Speed-up of each step", height=440, showlegend=False)
    return fig


def overview(listings: list[Listing]) -> go.Figure:
    """Every recorded ladder's rungs as a share of its own measured ceiling: where each climb ends."""
    fig, top = go.Figure(), 100.0
    for i, item in enumerate(x for x in listings if x.recorded is not None):
        ms = measure(item.recorded)
        rows = [r for r in item.recorded.rows if r.pct_of_ceiling is not None]
        fig.add_trace(go.Scatter(
            x=[r.rung.id for r in rows], y=[r.pct_of_ceiling for r in rows], mode="lines+markers",
            name=item.name, line=dict(color=SERIES[i % len(SERIES)], width=2.5), marker=dict(size=8),
            customdata=[[r.rung.title, ms.show(ms.rate(r.result))] for r in rows],
            hovertemplate=f"{item.name} %{{x}} %{{customdata[0]}}: %{{customdata[1]}}, %{{y:.1f}}%<extra></extra>",
            meta={"role": "ladder", "ladder": item.name, "gpu": item.gpu}))
        top = max([top, *(r.pct_of_ceiling for r in rows)])
    fig.add_hline(y=100, line=dict(color=MUTED, width=2), annotation_text="measured ceiling",
                  annotation_position="top left")
    fig.update_xaxes(type="category", categoryorder="category ascending", title_text="rung")
    fig.update_yaxes(title_text="% of the ladder's measured ceiling", range=[0, top * 1.15])
    fig.update_layout(template=TEMPLATE, title="Every ladder, rung by rung", height=400)
    return fig
