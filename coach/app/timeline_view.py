"""A zoomable timeline that stays responsive on a million events and tells the truth at every zoom.

The browser never receives one shape per event. ``events`` flattens a timeline's tables into one
frame of lanes (NVTX per thread and depth, CUDA API per thread, and per GPU stream one lane for
each kind of GPU work: kernels, copies, memsets, so that a short memset never paints over the
kernel it runs beside), sorted once. For the visible window, ``window`` keeps the events that
overlap it and, lane by lane, merges neighbours separated by less than one pixel into one bar that
says how many events it holds and how busy the lane was under it; a merged bar is drawn as pale as
it is idle, so a stretch of sparse short kernels does not look like a solid block. A lane can then
hold at most one bar per pixel of plot width, whatever the trace's size; zooming asks the server
for the new window (``dcc.Graph.relayoutData``), and at the scale of single events every event is
drawn as itself.

Every lane stays on screen in every window, empty or not; a window without GPU work says how long
the idle gap around it is. The view opens on the stretch where the GPU worked (``gpu_span``), and
``window_summary`` says what happened in the window shown: GPU busy time by kind, the largest idle
gap, and the names that took the most time. ``search`` finds events by name, ``details`` describes
the event (or merged bar) the user clicked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import plotly.graph_objects as go
import polars as pl

from coach.app import analysis
from coach.app import format as fmt
from coach.app.theme import CATEGORY_COLOURS, TEMPLATE
from coach.model import Timeline

#: Plot width the merging assumes, in pixels: a laptop screen's plot area is narrower, so merging
#: at this resolution never hides a gap the user could see.
WIDTH_PX = 1600

LANE_HEIGHT_PX = 26

#: Room left either side of the GPU's working stretch when the view opens on it (share of its length).
OPEN_MARGIN = 0.02

#: A merged bar's opacity grows with the square root of how busy its lane was under it, from
#: OPACITY_FLOOR (idle: still visible) to 1 (busy throughout): a stretch of memsets busy 0.2% of the
#: time is a faint band, one busy 25% half-toned.
OPACITY_FLOOR = 0.1

#: Names listed in a window's summary and in a merged bar's details.
TOP_NAMES = 5

CATEGORY_LABELS = {"nvtx": "NVTX range", "api": "CUDA API call", "kernel": "kernel", "memset": "memset",
                   "memcpy": "memcpy"}

#: The kinds of work that make the GPU busy (NVTX and API calls are the host's).
GPU_CATEGORIES = ("kernel", "memcpy", "memset")

EVENT_SCHEMA = {"order": pl.Int64, "kind": pl.UInt8, "device": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
                "row": pl.UInt32}

_GPU_BASE = 2 << 40
#: GPU lanes per stream, in the order drawn: kernels, then copies, then memsets.
_STREAM_SLOTS = {"kernel": 0, "memcpy": 1, "memset": 2}


@dataclass(frozen=True)
class Events:
    """Every drawable event of a timeline, sorted by ``order`` (the lane) then start; ``lanes`` in
    display order.

    ``frame`` holds only numbers (a million rows sort fast); an event's name is ``names[kind][row]``,
    looked up only for the bars drawn. ``device`` is null on host lanes (NVTX, API).
    """

    frame: pl.DataFrame
    lane_of: pl.DataFrame  # order -> lane label
    lanes: list[str]
    span_ns: tuple[int, int] | None
    names: dict[int, pl.Series]
    gpu_span_ns: tuple[int, int] | None = None  # first start to last end of GPU work

    @property
    def count(self) -> int:
        return self.frame.height

    def opening(self) -> tuple[int, int] | None:
        """The window the view opens on: the GPU's working stretch with a little room, else everything."""
        if self.gpu_span_ns is None:
            return self.span_ns
        lo, hi = self.gpu_span_ns
        pad = max(int((hi - lo) * OPEN_MARGIN), 1)
        assert self.span_ns is not None
        return max(lo - pad, self.span_ns[0]), min(hi + pad, self.span_ns[1])


def _stream_order(slot: int) -> pl.Expr:
    return (_GPU_BASE + pl.col("device_id").fill_null(0) * (1 << 24) + pl.col("stream_id").fill_null(0) * 4
            + slot)


def _stream_lane(suffix: str = "") -> pl.Expr:
    lane = pl.format("GPU {} · stream {}", pl.col("device_id").fill_null(0), pl.col("stream_id").fill_null(-1))
    return lane + pl.lit(suffix) if suffix else lane


@dataclass(frozen=True)
class _Kind:
    """How one table becomes events: which columns place it in a lane, and what to call each event."""

    table: str
    category: str
    keys: tuple[str, ...]
    position: pl.Expr  # over ``keys``: the lane's place, top to bottom
    label: pl.Expr  # over ``keys``: the lane's label
    name: pl.Expr


def _kinds() -> tuple[_Kind, ...]:
    tid, depth = pl.col("tid").fill_null(0), pl.col("depth").fill_null(0)
    stream = ("device_id", "stream_id")
    return (
        _Kind("nvtx", "nvtx", ("tid", "depth"), tid * 64 + depth,
              pl.format("NVTX · thread {}", tid) + pl.when(depth > 0).then(pl.format(" · level {}", depth)).otherwise(pl.lit("")),
              pl.coalesce("text", pl.lit("(unnamed range)"))),
        _Kind("api", "api", ("tid",), (1 << 40) + tid, pl.format("CUDA API · thread {}", tid), pl.col("name")),
        _Kind("kernels", "kernel", stream, _stream_order(_STREAM_SLOTS["kernel"]), _stream_lane(), pl.col("name")),
        _Kind("memcpy", "memcpy", stream, _stream_order(_STREAM_SLOTS["memcpy"]), _stream_lane(" · memcpy"),
              pl.format("{} {} B", pl.col("kind"), pl.col("bytes"))),
        _Kind("memset", "memset", stream, _stream_order(_STREAM_SLOTS["memset"]), _stream_lane(" · memset"),
              pl.format("memset {} B", pl.col("bytes"))),
    )


def _gpu_kinds() -> list[int]:
    return [k for k, kind in enumerate(_kinds()) if kind.category in GPU_CATEGORIES]


def events(tl: Timeline) -> Events:
    """Flatten ``tl`` into drawable events: NVTX lanes first, then API, then GPU streams."""
    rows, labels, names = [], [], {}
    for k, kind in enumerate(_kinds()):
        df = getattr(tl, kind.table)
        if df.is_empty():
            continue
        end = pl.coalesce("end_ns", "start_ns") if kind.table == "nvtx" else pl.col("end_ns")
        device = pl.col("device_id").fill_null(0) if kind.category in GPU_CATEGORIES else pl.lit(None, pl.Int64)
        rows.append(df.select(order=kind.position, kind=pl.lit(k), device=device, start_ns="start_ns", end_ns=end,
                              row=pl.int_range(pl.len())).cast(EVENT_SCHEMA))
        names[k] = df.select(kind.name.cast(pl.Utf8)).to_series()
        # labels are formatted once per lane, not once per event
        labels.append(df.select(kind.keys).unique().select(order=kind.position.cast(pl.Int64), lane=kind.label))
    if not rows:
        empty = pl.DataFrame(schema=EVENT_SCHEMA)
        return Events(empty, pl.DataFrame(schema={"order": pl.Int64, "lane": pl.Utf8}), [], None, {})
    frame = pl.concat(rows).filter(pl.col("start_ns").is_not_null()).sort(["order", "start_ns"])
    lane_of = pl.concat(labels).unique("order").sort("order")
    span = None if frame.is_empty() else (int(frame["start_ns"].min()), int(frame["end_ns"].max()))
    gpu = frame.filter(pl.col("kind").is_in(_gpu_kinds()))
    gpu_span = None if gpu.is_empty() else (int(gpu["start_ns"].min()), int(gpu["end_ns"].max()))
    return Events(frame=frame, lane_of=lane_of, lanes=lane_of["lane"].to_list(), span_ns=span, names=names,
                  gpu_span_ns=gpu_span)


def _visible(ev: Events, t0: int, t1: int) -> pl.LazyFrame:
    return ev.frame.lazy().filter((pl.col("end_ns") >= t0) & (pl.col("start_ns") <= t1))


def window(ev: Events, t0: int, t1: int, width_px: int = WIDTH_PX) -> pl.DataFrame:
    """The bars to draw for [t0, t1]: events overlapping it, neighbours under a pixel apart merged.

    Columns: lane, category, start_ns, end_ns, events (how many were merged), busy_pct (time covered
    by events, % of the bar), name (the event's, or of the first merged one), kind and row (the
    first event's table and row, for its details).
    """
    px_ns = max((t1 - t0) / width_px, 1.0)
    bars = (
        _visible(ev, t0, t1).with_columns(prev_end=pl.col("end_ns").cum_max().shift(1).over("order"))
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
    columns = ["lane", "category", "start_ns", "end_ns", "events", "busy_pct", "name", "kind", "row"]
    if not named:
        return bars.with_columns(category=pl.lit(None, pl.Utf8), name=pl.lit(None, pl.Utf8)).select(columns)
    return pl.concat([n.select(columns) for n in named]).sort("start_ns", maintain_order=True)


# --------------------------------------------------------------------------------------------
# What a window holds
# --------------------------------------------------------------------------------------------


def _union_ns(intervals: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per ``by`` group: the time covered by the union of ``[start_ns, end_ns)`` (the analysis'
    own interval union, so that the window's busy time is the one ``coach`` reports)."""
    merged = analysis.merge_intervals(intervals.select(*by, "start_ns", "end_ns"), by)
    return merged.group_by(by, maintain_order=True).agg(pl.col("dur_ns").sum().alias("busy_ns"))


def _gpu_in(ev: Events, t0: int, t1: int) -> pl.DataFrame:
    """GPU work overlapping [t0, t1], clipped to it, with its category."""
    cat = pl.col("kind").replace_strict({k: _kinds()[k].category for k in _gpu_kinds()}, default=None,
                                        return_dtype=pl.Utf8)
    return (_visible(ev, t0, t1).filter(pl.col("kind").is_in(_gpu_kinds()))
            .select("device", "kind", "row", category=cat, start_ns=pl.max_horizontal("start_ns", pl.lit(t0)),
                    end_ns=pl.min_horizontal("end_ns", pl.lit(t1)), dur_ns=pl.col("end_ns") - pl.col("start_ns"))
            .collect())


def idle_gap(ev: Events, t0: int, t1: int) -> tuple[int, int] | None:
    """The idle stretch of the GPU around a window without GPU work: from the end of the last work
    before it to the start of the first after it (the trace's edges where there is none)."""
    if ev.span_ns is None:
        return None
    gpu = ev.frame.lazy().filter(pl.col("kind").is_in(_gpu_kinds()))
    if gpu.filter((pl.col("end_ns") > t0) & (pl.col("start_ns") < t1)).select(pl.len()).collect().item():
        return None
    before = gpu.filter(pl.col("end_ns") <= t0).select(pl.col("end_ns").max()).collect().item()
    after = gpu.filter(pl.col("start_ns") >= t1).select(pl.col("start_ns").min()).collect().item()
    lo = int(before) if before is not None else ev.span_ns[0]
    hi = int(after) if after is not None else ev.span_ns[1]
    return (lo, hi) if hi > lo else None


def window_summary(ev: Events, t0: int, t1: int) -> dict[str, Any]:
    """What happened in [t0, t1]: per GPU its busy time (union of its work) and the time of each
    kind of work, the largest idle gap on any GPU, the events that overlap the window, and the
    names that took the most GPU time in it."""
    gpu = _gpu_in(ev, t0, t1)
    span = max(t1 - t0, 1)
    devices = []
    if gpu.height:
        busy = _union_ns(gpu, ["device"])
        per_kind = _union_ns(gpu, ["device", "category"])
        for device, busy_ns in busy.sort("device").iter_rows():
            kinds = {c: int(n) for d, c, n in per_kind.iter_rows() if d == device}
            devices.append({"device": int(device), "busy_ns": int(busy_ns), "busy_pct": 100.0 * busy_ns / span,
                            "by_kind_ns": {c: kinds.get(c, 0) for c in GPU_CATEGORIES if kinds.get(c)}})
    gap = _largest_gap(gpu, t0, t1)
    names = []
    if gpu.height:
        named = pl.concat([part.select("dur_ns", name=ev.names[k].gather(part["row"]))
                           for (k,), part in gpu.group_by("kind", maintain_order=True)])
        names = (named.group_by("name").agg(pl.len().alias("count"), pl.col("dur_ns").sum().alias("total_ns"))
                 .sort(["total_ns", "name"], descending=[True, False]).head(TOP_NAMES).rows(named=True))
    shown = _visible(ev, t0, t1).select(pl.len()).collect().item()
    return {"t0_ns": t0, "t1_ns": t1, "events": int(shown), "devices": devices, "largest_gap": gap,
            "top_names": names, "idle_gap": idle_gap(ev, t0, t1) if not gpu.height else None}


def _largest_gap(gpu: pl.DataFrame, t0: int, t1: int) -> tuple[int, int] | None:
    """The longest stretch of [t0, t1] in which a GPU with work in the window did nothing."""
    if gpu.is_empty():
        return None
    s = gpu.sort("device", "start_ns").with_columns(prev=pl.col("end_ns").cum_max().shift(1).over("device"))
    inner = s.select(lo=pl.col("prev"), hi=pl.col("start_ns")).drop_nulls()
    edges = gpu.group_by("device").agg(first=pl.col("start_ns").min(), last=pl.col("end_ns").max())
    gaps = pl.concat([inner, edges.select(lo=pl.lit(t0, pl.Int64), hi="first"),
                      edges.select(lo="last", hi=pl.lit(t1, pl.Int64))]).filter(pl.col("hi") > pl.col("lo"))
    if gaps.is_empty():
        return None
    lo, hi = gaps.sort(pl.col("hi") - pl.col("lo"), descending=True).row(0)
    return int(lo), int(hi)


def summary_text(s: Mapping[str, Any], origin_ns: int = 0) -> str:
    """The window summary in one line of words and numbers."""
    t0, t1 = s["t0_ns"], s["t1_ns"]
    n = s["events"]
    parts = [f"{_ms(t0 - origin_ns)}–{_ms(t1 - origin_ns)} ms ({fmt.duration_ns(t1 - t0)}): "
             f"{n:,} event{'' if n == 1 else 's'}"]
    for d in s["devices"]:
        kinds = ", ".join(f"{CATEGORY_LABELS[c]}s {fmt.duration_ns(n)}" for c, n in d["by_kind_ns"].items())
        parts.append(f"GPU {d['device']} busy {fmt.pct(d['busy_pct'], 3)}" + (f" ({kinds})" if kinds else ""))
    if s["idle_gap"] is not None:
        lo, hi = s["idle_gap"]
        parts.append(f"no GPU work here: an idle gap of {fmt.duration_ns(hi - lo)} "
                     f"({_ms(lo - origin_ns)}–{_ms(hi - origin_ns)} ms)")
    elif s["largest_gap"] is not None:
        lo, hi = s["largest_gap"]
        parts.append(f"largest idle gap {fmt.duration_ns(hi - lo)} at {_ms(lo - origin_ns)} ms")
    return "; ".join(parts) + "."


def _ms(ns: float) -> str:
    return fmt.number(ns / 1e6, 4)


# --------------------------------------------------------------------------------------------
# Search and details
# --------------------------------------------------------------------------------------------


def search(ev: Events, text: str) -> Events:
    """The events whose name contains ``text`` (case-insensitive, literally), as their own Events
    (same lanes), so that they can be drawn and summed like the whole."""
    needle = (text or "").strip().lower()
    parts = []
    for k, names in ev.names.items():
        hit = names.str.to_lowercase().str.contains(needle, literal=True).fill_null(False)
        rows = pl.Series("row", hit.arg_true(), dtype=pl.UInt32)
        if rows.len():
            parts.append(ev.frame.filter((pl.col("kind") == k) & pl.col("row").is_in(rows.implode())))
    frame = pl.concat(parts).sort(["order", "start_ns"]) if parts else ev.frame.clear()
    return Events(frame=frame, lane_of=ev.lane_of, lanes=ev.lanes, span_ns=ev.span_ns, names=ev.names,
                  gpu_span_ns=ev.gpu_span_ns)


def matches_table(found: Events) -> pl.DataFrame:
    """Matches grouped by name: name, kind, count, total_ns, first_ns (start of the first)."""
    if found.frame.is_empty():
        return pl.DataFrame(schema={"name": pl.Utf8, "category": pl.Utf8, "count": pl.UInt32, "total_ns": pl.Int64,
                                    "first_ns": pl.Int64})
    kinds = _kinds()
    named = pl.concat([part.select("start_ns", dur=pl.col("end_ns") - pl.col("start_ns"),
                                   category=pl.lit(kinds[k].category), name=found.names[k].gather(part["row"]))
                       for (k,), part in found.frame.group_by("kind", maintain_order=True)])
    return (named.group_by("name", "category")
            .agg(pl.len().alias("count"), pl.col("dur").sum().alias("total_ns"), pl.col("start_ns").min().alias("first_ns"))
            .sort(["total_ns", "name"], descending=[True, False]))


def details(ev: Events, tl: Timeline, kind: int, row: int, t0: int, t1: int, lane: str) -> dict[str, Any]:
    """What one bar holds: for a single event its table row (every column with a value), for a merged
    bar the events in [t0, t1] of its lane, by name."""
    k = _kinds()[kind]
    order = ev.lane_of.filter(pl.col("lane") == lane)["order"]
    inside = _visible(ev, t0, t1).filter(pl.col("order").is_in(order.implode()) & (pl.col("start_ns") >= t0)
                                         & (pl.col("end_ns") <= t1)).collect()
    if inside.height <= 1:
        table = getattr(tl, k.table)
        record = {c: v for c, v in table.row(int(row), named=True).items() if v is not None}
        return {"single": True, "category": k.category, "name": ev.names[kind][int(row)], "lane": lane,
                "record": record}
    named = pl.concat([part.select(dur=pl.col("end_ns") - pl.col("start_ns"), name=ev.names[kk].gather(part["row"]))
                       for (kk,), part in inside.group_by("kind", maintain_order=True)])
    top = (named.group_by("name").agg(pl.len().alias("count"), pl.col("dur").sum().alias("total_ns"))
           .sort(["total_ns", "name"], descending=[True, False]))
    busy = _union_ns(inside.select("start_ns", "end_ns", key=pl.lit(0)), ["key"])["busy_ns"].sum()
    return {"single": False, "category": k.category, "lane": lane, "events": inside.height, "t0_ns": t0, "t1_ns": t1,
            "busy_pct": 100.0 * busy / max(t1 - t0, 1), "names": top.head(TOP_NAMES * 2).rows(named=True),
            "more_names": max(top.height - TOP_NAMES * 2, 0)}


# --------------------------------------------------------------------------------------------
# The figure
# --------------------------------------------------------------------------------------------


def _hover(bars: pl.DataFrame, origin_ns: int) -> list[str]:
    """One line of hover text per bar, made from its numbers (never a raw object)."""
    dur = bars["end_ns"] - bars["start_ns"]
    out = []
    for n, d, s, e, c, b in zip(bars["name"], dur, bars["start_ns"], bars["events"], bars["category"], bars["busy_pct"]):
        if e == 1:
            out.append(f"<b>{n}</b><br>{fmt.duration_ns(d)} from {fmt.duration_ns(s - origin_ns)}<br>click for details")
        else:
            out.append(f"<b>{e:,} {CATEGORY_LABELS.get(c, c)}s</b> merged at this zoom<br>{fmt.duration_ns(d)}, "
                       f"{fmt.pct(b, 2)} busy<br>click for what they are; zoom in to see each one")
    return out


def _opacity(bars: pl.DataFrame) -> list[float]:
    shade = OPACITY_FLOOR + (1 - OPACITY_FLOOR) * (bars["busy_pct"] / 100.0).sqrt()
    return pl.select(pl.when(bars["events"] == 1).then(1.0).otherwise(shade)).to_series().round(3).to_list()


def _bar_trace(part: pl.DataFrame, min_ns: float, origin_ns: int, name: str, meta: str, **marker: Any) -> go.Bar:
    return go.Bar(
        orientation="h",
        y=part["lane"].to_list(),
        base=((part["start_ns"] - origin_ns) / 1e6).to_list(),
        x=((part["end_ns"] - part["start_ns"]).cast(pl.Float64).clip(lower_bound=min_ns) / 1e6).to_list(),
        name=name,
        marker=marker,
        hovertext=_hover(part, origin_ns),
        hoverinfo="text",
        customdata=part.select("kind", "row", "start_ns", "end_ns", "events").rows(),
        width=0.72,
        meta=meta,
    )


def resolve(ev: Events, t0: int | None, t1: int | None) -> tuple[int, int] | None:
    """The window asked for, clamped to the trace; the opening window where none is asked."""
    if ev.span_ns is None:
        return None
    lo, hi = ev.span_ns
    if t0 is None or t1 is None:
        return ev.opening()
    a, b = max(int(t0), lo), min(int(t1), hi)
    return (a, b) if b > a else (lo, hi)


def figure(ev: Events, t0: int | None = None, t1: int | None = None, width_px: int = WIDTH_PX, *,
           origin_ns: int = 0, axis_title: str = "time since capture start (ms)",
           x_range_ms: tuple[float, float] | None = None, highlight: Events | None = None,
           ) -> tuple[go.Figure, pl.DataFrame]:
    """The timeline figure for [t0, t1] (the GPU's working stretch by default), and the bars it draws.

    Times on the axis are milliseconds after ``origin_ns``; ``x_range_ms`` sets the axis' range
    (two timelines drawn on one scale), ``highlight`` draws the events of a search outlined on top.
    """
    fig = go.Figure()
    win = resolve(ev, t0, t1)
    if win is None:
        fig.update_layout(template=TEMPLATE, height=160, title="Timeline: no events")
        return fig, pl.DataFrame()
    t0, t1 = win
    bars = window(ev, t0, t1, width_px)
    min_ns = (t1 - t0) / width_px  # narrower bars are drawn one pixel wide, so none disappears
    # every lane, even where this window has nothing in it: an empty lane is information
    fig.add_trace(go.Scatter(x=[(t0 - origin_ns) / 1e6] * len(ev.lanes), y=ev.lanes, mode="markers",
                             marker=dict(opacity=0), hoverinfo="skip", showlegend=False, meta="lanes"))
    for category, part in bars.group_by("category", maintain_order=True):
        cat = category[0]
        fig.add_trace(_bar_trace(part, min_ns, origin_ns, CATEGORY_LABELS.get(cat, cat), cat,
                                 color=CATEGORY_COLOURS.get(cat, "#888"), opacity=_opacity(part), line=dict(width=0)))
    if highlight is not None and highlight.count:
        hits = window(highlight, t0, t1, width_px)
        if hits.height:
            fig.add_trace(_bar_trace(hits, min_ns, origin_ns, "search matches", "match", color="rgba(0,0,0,0)",
                                     line=dict(width=2, color="#111827")))
    gap = idle_gap(ev, t0, t1) if not bars.filter(pl.col("category").is_in(GPU_CATEGORIES)).height else None
    if gap is not None:
        lo, hi = gap
        fig.add_annotation(text=f"GPU idle here: a gap of {fmt.duration_ns(hi - lo)}", xref="paper", yref="paper",
                           x=0.5, y=0.5, showarrow=False, font=dict(size=14, color="#6b7280"),
                           bgcolor="rgba(255,255,255,0.85)")
    fig.update_layout(
        template=TEMPLATE,
        barmode="overlay",
        height=130 + LANE_HEIGHT_PX * max(len(ev.lanes), 3),
        # the title (where a page gives one) on its own line above the legend
        title=dict(y=1, yref="container", yanchor="top", pad=dict(t=10)),
        margin=dict(l=10, r=20, t=64, b=50),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0, xanchor="left"),
        uirevision="timeline",
        dragmode="zoom",
        clickmode="event",
    )
    x_range = list(x_range_ms) if x_range_ms is not None else [(t0 - origin_ns) / 1e6, (t1 - origin_ns) / 1e6]
    fig.update_xaxes(title_text=axis_title, range=x_range)
    # the first lane on top: a reversed range over the categories, fixed so that no window drops one
    fig.update_yaxes(categoryorder="array", categoryarray=ev.lanes, range=[len(ev.lanes) - 0.5, -0.5],
                     fixedrange=True, title_text=None)
    return fig, bars


def visible_window(relayout: Mapping[str, Any] | None, origin_ns: int = 0) -> tuple[int, int] | None | str:
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
        lo_ns, hi_ns = int(float(lo) * 1e6) + origin_ns, int(float(hi) * 1e6) + origin_ns
    except (TypeError, ValueError):
        return None
    return (lo_ns, hi_ns) if hi_ns > lo_ns else None
