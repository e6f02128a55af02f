"""Version ladders as the dashboard shows them: which are recorded, each read once, and their figures.

Everything comes from ``coach.ladders`` (the definitions, ``kernels/<name>/ladder.toml``; the results,
``traces/<gpu>/ladders/<name>/results.json``, and ``results.<size>.json`` beside it for each other size
a ladder is measured at; ``rung_table``'s speed-ups and % of ceiling; ``goal_verdict``) through
``coach.analyze.ladder_evidence.recorded``, which adds each rung's Nsight Compute profile (its longest
launch, from ``traces/<gpu>/ladders/<name>/ncu``, found by the launch's NVTX range). Read here: the
hand-written end of a ladder's NOTES.md, below the results table that ``ladder_evidence`` writes, and,
for a compute-bound ladder, what the same profile says of each rung's pipes and DRAM traffic
(``rung_activity``).

A ladder's trajectory is the rate it is judged by, rung by rung (its model of the work over the
median time: every rung does the same work), against its measured ceiling: bandwidth against a DRAM
ceiling for a memory-bound ladder, FLOP/s against a library matmul's for a compute-bound one. Which
it is, and how it is printed, is said once, in ``measure``. A compute-bound rung is also placed on
the roofline of its GPU, at its FLOPs over the DRAM bytes Nsight Compute counted in its launches.
Nsight Compute profiles a ladder at its main size only, so its other sizes have timings alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import plotly.graph_objects as go
import polars as pl
from dash import html

from coach.analyze import hardware as hw
from coach.analyze.ladder_evidence import NOTES_FILE, TABLE_END, Recorded, profile_folder, recorded
from coach.app import format as fmt
from coach.app.components import badge
from coach.app.context import Context
from coach.app.theme import ACCENT, BAD, GOOD, MUTED, SERIES, TEMPLATE
from coach.errors import CoachError, InputError
from coach.ladders import (
    BYTES,
    FLOPS,
    GoalVerdict,
    LadderDef,
    LadderResults,
    Measured,
    Row,
    goal_verdict,
    ladder_names,
    load_results,
    percent_of,
    results_path,
    rung_table,
)
from coach.model import KernelProfile

TIME_DIGITS = 4  # significant digits of a median time: 134.1 µs, as the ladders' notes quote them
#: Significant digits of a rate: three for bandwidth (4.00 TB/s, as the memory-bound ladders' notes
#: and ``coach ladder`` quote it); four for FLOP/s (692.3 TFLOP/s: ``coach ladder`` quotes TFLOP/s
#: to 0.1, and the rungs of a ladder near its ceiling differ in that digit).
BANDWIDTH_DIGITS = 3
FLOP_DIGITS = 4
#: Nsight Compute's DRAM traffic (reads and writes) of a launch, per second of it: times the launch's
#: duration, the bytes it moved to and from DRAM.
DRAM_RATE = "dram__bytes.sum.per_second"
#: The pipes whose activity a compute-bound rung shows (canonical launch columns: cycles the pipe was
#: active, % of its peak over the SM's active cycles, from the ComputeWorkloadAnalysis section): the
#: tensor pipe does HMMA and HGMMA, the FMA pipe FP32 on the CUDA cores.
PIPES = {"tensor_pipe_active_pct": "tensor pipe", "fma_pipe_active_pct": "FMA pipe"}
#: The precision of ``coach.analyze.hardware`` each measured compute ceiling is a rate of.
CEILING_PRECISION = {key: precision for precision, keys in hw.MEASURED_FOR.items() for key in keys}


# --------------------------------------------------------------------------------------------
# Which ladders, read once
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    """A ladder recorded on one GPU (``gpu``: the folder under traces/), read, or why it could not be."""

    name: str  # as coach.ladders.ladder_names gives it; may hold a "/" (a ladder of a family)
    gpu: str
    recorded: Recorded | None  # at the ladder's main size
    problem: str = ""
    sizes: tuple[str, ...] = ()  # the sizes recorded on this GPU, the main one first
    #: a compute-bound ladder's ``rung_activity``, if it was profiled: rung key -> its row
    activity: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def activity_of(self, rec: Recorded) -> Mapping[str, Mapping[str, Any]]:
        """The rungs' activity for ``rec`` at the main size, the one profiled (none at another size)."""
        return self.activity if rec is self.recorded else {}


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
        return ctx.view(("ladder", gpu, name), lambda: read_listing(name, gpu, kernels, traces))
    except CoachError as err:
        return Listing(name, gpu, None, str(err))


def read_listing(name: str, gpu: str, kernels: Path, traces: Path) -> Listing:
    """Ladder ``name`` as recorded on ``gpu``: its main size in full, which other sizes have results,
    and (compute-bound) its rungs' activity."""
    rec = recorded(name, gpu, kernels, traces)
    main = rec.defn.main_size
    sizes = tuple(s for s in rec.defn.sizes if results_path(name, gpu, traces, size=s, main=main).is_file())
    folder = profile_folder(name, gpu, traces)
    activity = ({r["rung"]: r for r in rung_activity(name, folder).iter_rows(named=True)}
                if rec.defn.compute_bound and folder.is_dir() else {})
    return Listing(name, gpu, rec, sizes=sizes, activity=activity)


def at_size(item: Listing, size: str | None) -> Recorded:
    """The recording of ``item`` at ``size`` (a key of its problem's SIZES; None: the main size).
    Nsight Compute profiled the main size only, so at another size no rung has a profile."""
    rec = item.recorded
    assert rec is not None, "a ladder that could not be read has no sizes"
    if size is None or size == rec.results.size_name:
        return rec
    res = load_results(rec.results.path, size)
    if res.ladder != rec.defn.name:
        raise InputError(res.path, f"holds results of ladder {res.ladder!r}, not {rec.defn.name!r}")
    return Recorded(rec.defn, res, tuple(rung_table(rec.defn, res)), {})


def size_goals(item: Listing) -> list[tuple[str, Goal | None]]:
    """Each size of ``item`` and its goal as judged there (None: its results cannot be read)."""
    out: list[tuple[str, Goal | None]] = []
    for size in item.sizes:
        try:
            out.append((size, goal(at_size(item, size))))
        except CoachError:
            out.append((size, None))
    return out


def rung_activity(ladder: str, folder: Path) -> pl.DataFrame:
    """Per rung of ``ladder`` profiled in ``folder`` (the launches in NVTX range ``<ladder>/<rung>``):
    ``dram_bytes``, what all its launches moved to and from DRAM (null if one lacks the rate), and
    the ``PIPES`` activity of its longest launch, the one ``ladder_evidence`` quotes."""
    from coach.ingest import load

    profile = load(folder)
    if not isinstance(profile, KernelProfile):
        raise InputError(folder, "is not a kernel profile (Nsight Compute)")
    dram = (profile.metrics.filter(pl.col("metric") == DRAM_RATE)
            .group_by("launch_id").agg(pl.col("value").first().alias("dram_bytes_per_s")))
    moved = pl.col("dram_bytes_per_s") * pl.col("duration_ns") * 1e-9
    return (profile.launches.filter(pl.col("nvtx_range").str.starts_with(f"{ladder}/"))
            .join(dram, on="launch_id", how="left", maintain_order="left")
            .with_columns(pl.col("nvtx_range").str.split("/").list.last().alias("rung"), moved.alias("dram_bytes"))
            .sort("duration_ns", descending=True)
            .group_by("rung", maintain_order=True)
            .agg(pl.when(pl.col("dram_bytes").null_count() == 0).then(pl.col("dram_bytes").sum()).alias("dram_bytes"),
                 *[pl.col(c).first() for c in PIPES]))


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


def size_words(res: LadderResults) -> str:
    """The problem size a results file was measured at: ``h200_causal: batch 4, heads 32, ...``."""
    size = res.extra.get("size")
    params = ", ".join(f"{k} {v}" for k, v in size.items()) if isinstance(size, dict) else ""
    return f"{res.size_name}: {params}" if params else res.size_name


# --------------------------------------------------------------------------------------------
# What a ladder is judged by
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """The rate a ladder is judged by: the one its ceiling and its goal are in, and from which
    ``rung_table`` computes "% of ceiling". Every speed the pages show passes through here."""

    label: str  # "bandwidth", "FLOP rate"
    unit: str  # as printed: "B/s", "FLOP/s"
    work_unit: str  # "B", "FLOP": what one call of the ladder's work model amounts to
    ladder_unit: str  # coach.ladders.BYTES or FLOPS: which of a measurement's rates
    ceiling: float | None  # the measured ceiling on the recording's GPU, if known
    goal: float
    digits: int
    profile_column: str | None  # the rung profile's column measuring the same rate, if any ...
    profile_label: str  # ... and what it measures, in words

    @property
    def compute_bound(self) -> bool:
        return self.ladder_unit == FLOPS

    @property
    def title(self) -> str:
        """The label starting a sentence: "Bandwidth", "FLOP rate"."""
        return self.label[:1].upper() + self.label[1:]

    def rate(self, m: Measured | None) -> float | None:
        return m.rate(self.ladder_unit) if m is not None and ok(m) else None

    def work(self, m: Measured) -> int:
        return m.flops if self.compute_bound else m.bytes

    def show(self, value: float | None) -> str:
        return fmt.si(value, self.unit, self.digits)

    def percent(self, m: Measured | None) -> float | None:
        """A peer's share of the ceiling (a rung's is ``Row.pct_of_ceiling``), computed as rung_table does."""
        return percent_of(self.rate(m), self.ceiling)


def measure(rec: Recorded) -> Measure:
    """A memory-bound ladder: achieved bandwidth (the bytes model over the median time) against a
    measured DRAM ceiling, and Nsight Compute's DRAM traffic rate of the rung's longest kernel measures
    the same thing. A compute-bound one: achieved FLOP/s (``problem.flops`` over the median time)
    against a measured library matmul; the recordings hold no executed-FLOP rate to set beside it
    (Nsight Compute's roofline metrics are not collected), so its profile shows as pipe activity."""
    defn, res = rec.defn, rec.results
    if defn.compute_bound:
        return Measure("FLOP rate", "FLOP/s", "FLOP", FLOPS, res.ceiling_value, defn.goal_rate, FLOP_DIGITS, None, "")
    return Measure("bandwidth", "B/s", "B", BYTES, res.ceiling_value, defn.goal_rate, BANDWIDTH_DIGITS,
                   "dram_bytes_per_s", "DRAM traffic")


@dataclass(frozen=True)
class Goal:
    """The ladder's goal as ``coach ladder`` judges it (``goal_verdict``): a rate and, where the ladder
    sets ``goal_ratio_to_baseline``, a share of its baseline peer's speed in the same run; met or not
    by the last correct rung and by the fastest, and every correct rung that meets it (a ladder may
    reach its goal before its last rung, as gemv does)."""

    text: str
    verdict: GoalVerdict
    baseline: str
    reached_by: tuple[Row, ...]

    @property
    def last(self) -> Row | None:
        return self.verdict.last

    @property
    def best(self) -> Row | None:
        return self.verdict.best

    @property
    def met(self) -> bool:
        return self.verdict.last_met

    def of_baseline(self, row: Row) -> str | None:
        """A rung's speed as a share of the baseline's ("×0.90 of cublas.fp32"), where the goal asks for one."""
        if self.verdict.ratio_goal is None:
            return None
        if row.vs_baseline is None:
            return f"{self.baseline} not timed"
        return f"×{row.vs_baseline:.2f} of {self.baseline}"

    def needs(self, ms: Measure) -> str:
        """What a rung must reach: "580.0 TFLOP/s and ×0.85 of cublas.bf16"."""
        return self.verdict.needs(ms.show, self.baseline, times="×")

    def reaches(self, ms: Measure, row: Row) -> str:
        """A rung against the goal's terms: "683.1 TFLOP/s, ×1.02 of cublas.bf16"."""
        ratio = self.of_baseline(row)
        return ms.show(row.rate) + (f", {ratio}" if ratio else "")

    def judged(self, ms: Measure, row: Row) -> str:
        """"met", or "missed", saying which term a rung falls short of where the goal has two."""
        if self.verdict.meets(row):
            return "met"
        ratio = self.verdict.ratio_goal
        if ratio is None:
            return "missed"
        short = [*([f"under {ms.show(self.verdict.rate_goal)}"] if (row.rate or 0) < self.verdict.rate_goal else []),
                 *([f"under ×{ratio:.2f} of {self.baseline}"] if (row.vs_baseline or 0) < ratio else [])]
        return f"missed ({' and '.join(short)})"


def goal(rec: Recorded) -> Goal:
    verdict = goal_verdict(rec.defn, list(rec.rows), rec.results.size_name)
    return Goal(rec.defn.goal, verdict, rec.results.baseline, tuple(r for r in rec.rows if verdict.meets(r)))


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


def pipe(metric: str | None, pct: float | None) -> str:
    """``ladder_evidence``'s busiest pipe of a rung, short: ``sm__pipe_tensor_cycles_active...`` at
    97.4 -> "tensor 97.4%"; ``sm__inst_executed_pipe_lsu...`` -> "lsu 74.3%"."""
    if metric is None or fmt.missing(pct):
        return fmt.MISSING
    name = metric.removeprefix("sm__").split(".")[0].removeprefix("inst_executed_pipe_").removeprefix("pipe_")
    return f"{name.removesuffix('_cycles_active')} {percent(pct)}"


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def trajectory(rec: Recorded) -> go.Figure:
    """The rate of each rung joined in ladder order, Nsight Compute's measure of the same rate in each
    rung's longest kernel beside it (memory-bound ladders), the peers of the same run at the right, the
    measured ceiling and the goal across (and, for a goal set against the baseline peer, that share of
    the baseline's rate)."""
    ms, g = measure(rec), goal(rec)
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
            marker=dict(symbol="diamond", size=12, color=SERIES[1]), cliponaxis=False,
            customdata=[[median(p.time_s)] for p in peers],
            hovertemplate="%{x}: %{customdata[0]}, %{text}<extra></extra>",
            name="peers, same run", meta={"role": "peers"}))
    ratio, base = g.verdict.ratio_goal, ms.rate(rec.results.peer(rec.results.baseline))
    share = ratio * base if ratio is not None and base is not None else None
    top = max([ms.ceiling or 0.0, ms.goal, share or 0.0, *(ms.rate(r.result) for r in rows),
               *(ms.rate(p) for p in peers), *(p[ms.profile_column] for _, p in profiled)])
    if ms.ceiling:
        fig.add_hline(y=ms.ceiling, line=dict(color=MUTED, width=2),
                      annotation_text=f"measured ceiling {ms.show(ms.ceiling)}", annotation_position="top left")
    fig.add_hline(y=ms.goal, line=dict(color=GOOD, dash="dash"), annotation_text=f"goal {ms.show(ms.goal)}",
                  annotation_position="bottom left")
    if share is not None:
        fig.add_hline(y=share, line=dict(color=GOOD, dash="dot"), annotation_position="bottom right",
                      annotation_text=f"goal ×{ratio:.2f} of {g.baseline}: {ms.show(share)}")
    fig.update_xaxes(type="category", categoryorder="array",
                     categoryarray=[r.rung.id for r in rec.rows] + [p.key for p in peers], title_text="rung, then peers")
    fig.update_yaxes(title_text=f"achieved {ms.label}", tickformat="~s", ticksuffix=ms.unit, range=[0, top * 1.15])
    fig.update_layout(template=TEMPLATE, title=f"{ms.title}, rung by rung", height=440,
                      legend=dict(orientation="h", x=0, y=-0.22, xanchor="left", yanchor="top"),
                      margin=dict(b=110))
    return fig


def roofline(rec: Recorded, activity: Mapping[str, Mapping[str, Any]]) -> go.Figure | None:
    """Each rung of a compute-bound ladder on its GPU's roofline, joined in ladder order: at its
    arithmetic intensity (the work model's FLOPs over the DRAM bytes Nsight Compute counted in all its
    launches) and its achieved FLOP/s (the work model over the median time). Under the measured DRAM
    roof and the ladder's measured ceiling, with the datasheet's dotted above them; a vertical line
    where the compulsory traffic alone (the bytes model: inputs read once, output written once) would
    put a rung, where reuse moves it (data left in L2 by the call before can put it a little beyond).
    None where no rung has its DRAM bytes, or the GPU is not in coach's hardware tables."""
    res = rec.results
    gpu = hw.match(str(res.provenance.get("gpu_name") or res.gpu))
    precision = CEILING_PRECISION.get(res.ceiling_name)
    points = [(r, r.result.flops / activity[r.rung.key]["dram_bytes"]) for r in rec.rows
              if ok(r.result) and r.rate and activity.get(r.rung.key, {}).get("dram_bytes")]
    if gpu is None or precision is None or not points or not res.ceiling_value:
        return None
    ms, roofs = measure(rec), hw.ceilings(gpu)
    dram, peak = roofs.bandwidth["dram"], roofs.compute[precision]
    work = next(r.result for r, _ in points)
    compulsory = work.flops / work.bytes if work.bytes else None
    xs = [x for _, x in points] + ([compulsory] if compulsory else [])
    in_use = "measured" if dram.origin == "measured" else f"DRAM {dram.origin}, compute measured"
    roof_pairs = [(res.ceiling_value, dram.value, in_use, "solid"),
                  (peak.datasheet, dram.datasheet, "datasheet", "dot")]
    ridges = [f / b for f, b, _, _ in roof_pairs if f and b]
    x_lo, x_hi = min([*xs, *ridges]) / 4, max([*xs, *ridges]) * 4
    fig = go.Figure()
    for flops, bandwidth, source, dash in roof_pairs:
        if not flops or not bandwidth:
            continue
        fig.add_trace(go.Scatter(
            x=[x_lo, flops / bandwidth, x_hi], y=[x_lo * bandwidth, flops, flops], mode="lines",
            line=dict(color=MUTED if dash == "dot" else SERIES[0], width=2, dash=dash),
            name=f"{source}: DRAM {fmt.si(bandwidth, 'B/s')}, {ms.show(flops)}",
            hovertemplate=f"{source} roof: DRAM {fmt.si(bandwidth, 'B/s')}, compute {ms.show(flops)} "
                          f"(ridge {fmt.number(flops / bandwidth)} FLOP/B)<extra></extra>",
            meta={"role": "roof", "source": source, "bandwidth": bandwidth, "flop_per_s": flops}))
    if compulsory:  # annotations on a log axis take log10 coordinates, shapes data ones
        fig.add_vline(x=compulsory, line=dict(color=GOOD, dash="dash"))
        fig.add_annotation(x=math.log10(compulsory), y=0, xref="x", yref="y domain", xanchor="right", yanchor="bottom",
                           showarrow=False, text=f"compulsory traffic only: {fmt.number(compulsory)} FLOP/B",
                           font=dict(color=GOOD))
    rows = [r for r, _ in points]
    fig.add_trace(go.Scatter(
        x=[x for _, x in points], y=[r.rate for r in rows], mode="lines+markers+text",
        text=[r.rung.id for r in rows], textposition="top center",
        customdata=[[r.rung.title, ms.show(r.rate), fmt.si(activity[r.rung.key]["dram_bytes"], "B"),
                     percent(r.pct_of_ceiling)] for r in rows],
        hovertemplate="%{text} %{customdata[0]}<br>%{customdata[1]} (%{customdata[3]} of the ceiling) at "
                      "%{x:.3s} FLOP/B: %{customdata[2]} of DRAM traffic (Nsight Compute)<extra></extra>",
        line=dict(color=ACCENT, width=1.5), marker=dict(size=10, color=ACCENT), name="rungs",
        meta={"role": "rungs"}))
    y_lo = min(r.rate or 0 for r in rows) / 4
    fig.update_xaxes(type="log", range=[math.log10(x_lo), math.log10(x_hi)],
                     title_text="arithmetic intensity (FLOP per DRAM byte, Nsight Compute)")
    fig.update_yaxes(type="log", range=[math.log10(y_lo), math.log10(max(res.ceiling_value, peak.datasheet or 0) * 2)],
                     title_text="achieved FLOP/s", tickformat="~s")
    fig.update_layout(template=TEMPLATE, title=f"Each rung on the roofline of the {gpu.name}", height=440,
                      legend=dict(orientation="h", x=0, y=-0.22, xanchor="left", yanchor="top"), margin=dict(b=110))
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
    """Every recorded ladder's rungs as a share of its own measured ceiling, bandwidth or FLOP/s (the
    compute-bound ones dashed): where each climb ends."""
    fig, top = go.Figure(), 100.0
    for i, item in enumerate(x for x in listings if x.recorded is not None):
        ms = measure(item.recorded)
        rows = [r for r in item.recorded.rows if r.pct_of_ceiling is not None]
        fig.add_trace(go.Scatter(
            x=[r.rung.id for r in rows], y=[r.pct_of_ceiling for r in rows], mode="lines+markers",
            name=f"{item.name} ({ms.unit})",
            line=dict(color=SERIES[i % len(SERIES)], width=2.5, dash="dash" if ms.compute_bound else "solid"),
            marker=dict(size=8),
            customdata=[[r.rung.title, ms.show(ms.rate(r.result))] for r in rows],
            hovertemplate=f"{item.name} %{{x}} %{{customdata[0]}}: %{{customdata[1]}}, %{{y:.1f}}%<extra></extra>",
            meta={"role": "ladder", "ladder": item.name, "gpu": item.gpu, "unit": ms.unit}))
        top = max([top, *(r.pct_of_ceiling for r in rows)])
    fig.add_hline(y=100, line=dict(color=MUTED, width=2), annotation_text="measured ceiling",
                  annotation_position="top left")
    fig.update_xaxes(type="category", categoryorder="category ascending", title_text="rung")
    fig.update_yaxes(title_text="% of the ladder's measured ceiling", range=[0, top * 1.15])
    fig.update_layout(template=TEMPLATE, title="Every ladder, rung by rung (bandwidth, or FLOP/s dashed)", height=440)
    return fig
