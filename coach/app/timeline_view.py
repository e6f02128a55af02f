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

EVENT_SCHEMA = {"order": pl.Int64, "kind": pl.UInt8, "start_ns": pl.Int64, "end_ns": pl.Int64, "row": pl.UInt32}

#: ``order`` = lane position x SLOTS + the category's slot: one number per lane and category, so
#: that sorting and grouping work on integers (a million rows), and kernels and memsets can share
#: their stream's lane without their bars being merged with each other.
SLOTS = 4
_GPU_BASE = 2 << 40


@dataclass(frozen=True)
class Events:
    """Every drawable event of a timeline, sorted by ``order`` then start; ``lanes`` in display order.

    ``frame`` holds only numbers (a million rows sort fast); an event's name is ``names[kind][row]``,
    looked up only for the bars drawn.
    """

    frame: pl.DataFrame
    lane_of: pl.DataFrame  # order -> lane label
    lanes: list[str]
    span_ns: tuple[int, int] | None
    names: dict[int, pl.Series]

    @property
    def count(self) -> int:
        return self.frame.height


def _stream_order() -> pl.Expr:
    return _GPU_BASE + pl.col("device_id").fill_null(0) * (1 << 24) + pl.col("stream_id").fill_null(0) * 2


def _stream_lane() -> pl.Expr:
    return pl.format("GPU {} · stream {}", pl.col("device_id").fill_null(0), pl.col("stream_id").fill_null(-1))


@dataclass(frozen=True)
class _Kind:
    """How one table becomes events: which columns place it in a lane, and what to call each event."""

    table: str
    category: str
    slot: int
    keys: tuple[str, ...]
    position: pl.Expr  # over ``keys``: the lane's place, top to bottom
    label: pl.Expr  # over ``keys``: the lane's label
    name: pl.Expr


def _kinds() -> tuple[_Kind, ...]:
    tid, depth = pl.col("tid").fill_null(0), pl.col("depth").fill_null(0)
    return (
        _Kind("nvtx", "nvtx", 0, ("tid", "depth"), tid * 64 + depth,
              pl.format("NVTX · thread {}", tid) + pl.when(depth > 0).then(pl.format(" · level {}", depth)).otherwise(pl.lit("")),
              pl.coalesce("text", pl.lit("(unnamed range)"))),
        _Kind("api", "api", 0, ("tid",), (1 << 40) + tid, pl.format("CUDA API · thread {}", tid), pl.col("name")),
        _Kind("kernels", "kernel", 0, ("device_id", "stream_id"), _stream_order(), _stream_lane(), pl.col("name")),
        _Kind("memset", "memset", 1, ("device_id", "stream_id"), _stream_order(), _stream_lane(),
              pl.format("memset {} B", pl.col("bytes"))),
        _Kind("memcpy", "memcpy", 0, ("device_id", "stream_id"), _stream_order() + 1,
              _stream_lane() + pl.lit(" · memcpy"), pl.format("{} {} B", pl.col("kind"), pl.col("bytes"))),
    )


def events(tl: Timeline) -> Events:
    """Flatten ``tl`` into drawable events: NVTX lanes first, then API, then GPU streams."""
    rows, labels, names = [], [], {}
    for k, kind in enumerate(_kinds()):
        df = getattr(tl, kind.table)
        if df.is_empty():
            continue
        order = kind.position * SLOTS + kind.slot
        end = pl.coalesce("end_ns", "start_ns") if kind.table == "nvtx" else pl.col("end_ns")
        rows.append(df.select(order=order, kind=pl.lit(k), start_ns="start_ns", end_ns=end,
                              row=pl.int_range(pl.len())).cast(EVENT_SCHEMA))
        names[k] = df.select(kind.name.cast(pl.Utf8)).to_series()
        # labels are formatted once per lane, not once per event
        labels.append(df.select(kind.keys).unique().select(order=order.cast(pl.Int64), lane=kind.label,
                                                          position=kind.position.cast(pl.Int64)))
    if not rows:
        empty = pl.DataFrame(schema=EVENT_SCHEMA)
        return Events(empty, pl.DataFrame(schema={"order": pl.Int64, "lane": pl.Utf8}), [], None, {})
    frame = pl.concat(rows).filter(pl.col("start_ns").is_not_null()).sort(["order", "start_ns"])
    lane_of = pl.concat(labels).unique("order")
    lanes = lane_of.group_by("lane").agg(pl.col("position").min()).sort(["position", "lane"])["lane"].to_list()
    span = None if frame.is_empty() else (int(frame["start_ns"].min()), int(frame["end_ns"].max()))
    return Events(frame=frame, lane_of=lane_of.select("order", "lane"), lanes=lanes, span_ns=span, names=names)


def window(ev: Events, t0: int, t1: int, width_px: int = WIDTH_PX) -> pl.DataFrame:
    """The bars to draw for [t0, t1]: events overlapping it, neighbours under a pixel apart merged.

    Columns: lane, category, start_ns, end_ns, events (how many were merged), busy_pct (time covered
    by events, % of the bar), name (the event's, or of the first merged one).
    """
    px_ns = max((t1 - t0) / width_px, 1.0)
    visible = ev.frame.lazy().filter((pl.col("end_ns") >= t0) & (pl.col("start_ns") <= t1))
    bars = (
        visible.with_columns(prev_end=pl.col("end_ns").cum_max().shift(1).over("order"))
        .with_columns(group=(pl.col("prev_end").is_null() | (pl.col("start_ns") - pl.col("prev_end") >= px_ns)).cum_sum())
        .group_by("group", maintain_order=True)
        .agg(
            pl.col("order").first(),
            pl.col("kind").first(),
            pl.col("start_ns").min(),
            pl.col("end_ns").max(),
            pl.len().alias("events"),
            (pl.col("end_ns") - pl.col("start_ns")).sum().alias("busy_ns"),
            pl.col("row").first(),
        )
        .join(ev.lane_of.lazy(), on="order", how="left", maintain_order="left")
        .with_columns(busy_pct=(100.0 * pl.col("busy_ns") / (pl.col("end_ns") - pl.col("start_ns")))
                      .fill_nan(100.0).clip(0.0, 100.0))
        .collect()
    )
    kinds = _kinds()
    named = [part.with_columns(category=pl.lit(kinds[k].category), name=ev.names[k].gather(part["row"]))
             for (k,), part in bars.group_by("kind", maintain_order=True)]
    columns = ["lane", "category", "start_ns", "end_ns", "events", "busy_pct", "name"]
    if not named:
        return bars.with_columns(category=pl.lit(None, pl.Utf8), name=pl.lit(None, pl.Utf8)).select(columns)
    return pl.concat([n.select(columns) for n in named]).sort("start_ns", maintain_order=True)


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
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0, xanchor="left"),
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
