"""A zoomable timeline that stays responsive on a million events.

The browser never receives one shape per event. ``events`` flattens a timeline's tables into one
frame of lanes (NVTX per thread and depth, CUDA API per thread, kernels and memory operations per
GPU stream), sorted once. For the visible window, ``window`` keeps the events that overlap it and,
lane by lane, merges neighbours separated by less than one pixel into one bar that says how many
events it holds and how busy the lane was under it. A lane can then hold at most one bar per pixel
of plot width, whatever the trace's size; zooming asks the server for the new window
(``dcc.Graph.relayoutData``), and at the scale of single events every event is drawn as itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import plotly.graph_objects as go
import polars as pl

from coach.app import format as fmt
from coach.app.theme import CATEGORY_COLOURS, TEMPLATE
from coach.model import Timeline

#: Plot width the merging assumes, in pixels: a laptop screen's plot area is narrower, so merging
#: at this resolution never hides a gap the user could see.
WIDTH_PX = 1600

LANE_HEIGHT_PX = 26

CATEGORY_LABELS = {"nvtx": "NVTX range", "api": "CUDA API call", "kernel": "kernel", "memset": "memset",
                   "memcpy": "memcpy"}

EVENT_SCHEMA = {"order": pl.Int64, "lane": pl.Utf8, "category": pl.Utf8, "start_ns": pl.Int64, "end_ns": pl.Int64,
                "name": pl.Utf8}


@dataclass(frozen=True)
class Events:
    """Every drawable event of a timeline, sorted by lane then start; ``lanes`` in display order."""

    frame: pl.DataFrame
    lanes: list[str]
    span_ns: tuple[int, int] | None

    @property
    def count(self) -> int:
        return self.frame.height


def _stream_lane() -> pl.Expr:
    return pl.format("GPU {} · stream {}", pl.col("device_id").fill_null(0), pl.col("stream_id").fill_null(-1))


def events(tl: Timeline) -> Events:
    """Flatten ``tl`` into drawable events. ``order`` sorts lanes: NVTX, API, then GPU streams."""
    parts = [
        tl.nvtx.select(
            order=pl.col("tid").fill_null(0) * 64 + pl.col("depth").fill_null(0),
            lane=pl.format("NVTX · thread {}", pl.col("tid").fill_null(0))
            + pl.when(pl.col("depth").fill_null(0) > 0).then(pl.format(" · level {}", pl.col("depth"))).otherwise(pl.lit("")),
            category=pl.lit("nvtx"),
            start_ns="start_ns",
            end_ns=pl.coalesce("end_ns", "start_ns"),
            name=pl.coalesce("text", pl.lit("(unnamed range)")),
        ),
        tl.api.select(
            order=pl.lit(1 << 40) + pl.col("tid").fill_null(0),
            lane=pl.format("CUDA API · thread {}", pl.col("tid").fill_null(0)),
            category=pl.lit("api"), start_ns="start_ns", end_ns="end_ns", name="name",
        ),
        tl.kernels.select(
            order=pl.lit(2 << 40) + pl.col("device_id").fill_null(0) * (1 << 24) + pl.col("stream_id").fill_null(0) * 4,
            lane=_stream_lane(), category=pl.lit("kernel"), start_ns="start_ns", end_ns="end_ns", name="name",
        ),
        tl.memset.select(
            order=pl.lit(2 << 40) + pl.col("device_id").fill_null(0) * (1 << 24) + pl.col("stream_id").fill_null(0) * 4,
            lane=_stream_lane(), category=pl.lit("memset"), start_ns="start_ns", end_ns="end_ns",
            name=pl.format("memset {} B", pl.col("bytes")),
        ),
        tl.memcpy.select(
            order=pl.lit(2 << 40) + pl.col("device_id").fill_null(0) * (1 << 24) + pl.col("stream_id").fill_null(0) * 4 + 1,
            lane=_stream_lane() + pl.lit(" · memcpy"), category=pl.lit("memcpy"), start_ns="start_ns",
            end_ns="end_ns", name=pl.format("{} {} B", pl.col("kind"), pl.col("bytes")),
        ),
    ]
    frame = (pl.concat([p.cast(EVENT_SCHEMA) for p in parts if p.height])
             if any(p.height for p in parts) else pl.DataFrame(schema=EVENT_SCHEMA))
    frame = frame.filter(pl.col("start_ns").is_not_null()).sort(["order", "lane", "category", "start_ns"])
    lanes = frame.group_by("lane").agg(pl.col("order").min()).sort(["order", "lane"])["lane"].to_list()
    span = None if frame.is_empty() else (int(frame["start_ns"].min()), int(frame["end_ns"].max()))
    return Events(frame=frame, lanes=lanes, span_ns=span)


def window(ev: Events, t0: int, t1: int, width_px: int = WIDTH_PX) -> pl.DataFrame:
    """The bars to draw for [t0, t1]: events overlapping it, neighbours under a pixel apart merged.

    Columns: lane, category, start_ns, end_ns, events (how many were merged), busy_pct (time covered
    by events, % of the bar), name (the event's, or of the first merged one).
    """
    px_ns = max((t1 - t0) / width_px, 1.0)
    visible = ev.frame.lazy().filter((pl.col("end_ns") >= t0) & (pl.col("start_ns") <= t1))
    key = ["lane", "category"]
    return (
        visible.with_columns(prev_end=pl.col("end_ns").cum_max().shift(1).over(key))
        .with_columns(group=(pl.col("prev_end").is_null() | (pl.col("start_ns") - pl.col("prev_end") >= px_ns)).cum_sum())
        .group_by("group", maintain_order=True)
        .agg(
            pl.col("lane").first(),
            pl.col("category").first(),
            pl.col("start_ns").min(),
            pl.col("end_ns").max(),
            pl.len().alias("events"),
            (pl.col("end_ns") - pl.col("start_ns")).sum().alias("busy_ns"),
            pl.col("name").first(),
        )
        .with_columns(busy_pct=(100.0 * pl.col("busy_ns") / (pl.col("end_ns") - pl.col("start_ns")))
                      .fill_nan(100.0).clip(0.0, 100.0))
        .drop("group", "busy_ns")
        .collect()
    )


def _hover(bars: pl.DataFrame) -> pl.Series:
    """One line of hover text per bar, made from its numbers (never a raw object)."""
    dur = bars["end_ns"] - bars["start_ns"]
    single = [f"<b>{n}</b><br>{fmt.duration_ns(d)} from {fmt.duration_ns(s)}"
              for n, d, s in zip(bars["name"], dur, bars["start_ns"])]
    merged = [f"<b>{e:,} {CATEGORY_LABELS.get(c, c)}s</b> merged at this zoom<br>{fmt.duration_ns(d)}, "
              f"{fmt.pct(b, 2)} busy<br>zoom in to see each one"
              for e, c, d, b in zip(bars["events"], bars["category"], dur, bars["busy_pct"])]
    return pl.Series([s if e == 1 else m for s, m, e in zip(single, merged, bars["events"])])


def figure(ev: Events, t0: int | None = None, t1: int | None = None, width_px: int = WIDTH_PX) -> tuple[go.Figure, pl.DataFrame]:
    """The timeline figure for [t0, t1] (the whole trace by default), and the bars it draws."""
    fig = go.Figure()
    if ev.span_ns is None:
        fig.update_layout(template=TEMPLATE, height=160, title="Timeline: no events")
        return fig, pl.DataFrame()
    lo, hi = ev.span_ns
    t0 = lo if t0 is None else max(int(t0), lo)
    t1 = hi if t1 is None else min(int(t1), hi)
    if t1 <= t0:
        t0, t1 = lo, hi
    bars = window(ev, t0, t1, width_px)
    min_ns = (t1 - t0) / width_px  # narrower bars are drawn one pixel wide, so none disappears
    for category, part in bars.group_by("category", maintain_order=True):
        cat = category[0]
        fig.add_trace(go.Bar(
            orientation="h",
            y=part["lane"].to_list(),
            base=(part["start_ns"] / 1e6).to_list(),
            x=((part["end_ns"] - part["start_ns"]).cast(pl.Float64).clip(lower_bound=min_ns) / 1e6).to_list(),
            name=CATEGORY_LABELS.get(cat, cat),
            marker=dict(color=CATEGORY_COLOURS.get(cat, "#888"), line=dict(width=0)),
            hovertext=_hover(part).to_list(),
            hoverinfo="text",
            width=0.72,
            meta=cat,
        ))
    fig.update_layout(
        template=TEMPLATE,
        barmode="overlay",
        height=110 + LANE_HEIGHT_PX * max(len(ev.lanes), 3),
        margin=dict(l=10, r=20, t=36, b=50),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
        uirevision="timeline",
        dragmode="zoom",
    )
    fig.update_xaxes(title_text="time since capture start (ms)", range=[t0 / 1e6, t1 / 1e6])
    fig.update_yaxes(categoryorder="array", categoryarray=ev.lanes, autorange="reversed", fixedrange=True,
                     title_text=None)
    return fig, bars


def visible_window(relayout: Mapping[str, Any] | None) -> tuple[int, int] | None | str:
    """The x window a zoom or pan asks for, in ns; "all" for a reset; None if it is not about x."""
    if not relayout:
        return None
    if relayout.get("xaxis.autorange"):
        return "all"
    if "xaxis.range[0]" in relayout and "xaxis.range[1]" in relayout:
        lo, hi = relayout["xaxis.range[0]"], relayout["xaxis.range[1]"]
    elif isinstance(relayout.get("xaxis.range"), list) and len(relayout["xaxis.range"]) == 2:
        lo, hi = relayout["xaxis.range"]
    else:
        return None
    try:
        lo_ns, hi_ns = int(float(lo) * 1e6), int(float(hi) * 1e6)
    except (TypeError, ValueError):
        return None
    return (lo_ns, hi_ns) if hi_ns > lo_ns else None
