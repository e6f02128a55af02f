"""The roofline as a plotly figure, and the look every coach figure shares.

``figure(rl)`` draws, on log-log axes, each memory level's bandwidth roof (a diagonal) and each
precision's compute roof (a horizontal), labelled with their values and where they come from, and
one point per kernel, level and precision with floating-point work: the level is the point's
colour, the precision its shape, and the kernel's name is in its hover label (names written on
the chart pile up where kernels sit close). A kernel launched many times (more than
``MAX_LAUNCHES``) is one point at the median of its launches, with bars over their range.
``figure(before, compare=after)`` draws both profiles and an arrow from each "before" point to
its "after" point.

A kernel bound by a pipe no FLOP roof stands for (the special-function unit: ``Roofline.pipe_roofs``)
gets the roof of its own instruction mix, a short line through its column, so that it is not read
as far below its roof. Beneath the chart, a panel shows each kernel's traffic at each level as a
share of that level's peak bandwidth: the whole story for a kernel without floating-point work,
which sits at intensity 0 and so has no place on a log axis. A report without the counters for a
chart says so in the chart, naming what is missing.

Every number drawn is a number of the roofline table; traces carry ``meta`` (what they show) and
``customdata`` (which row) so that tests and the dashboard can map a mark back to its row.
"""

from __future__ import annotations

import math
from typing import Iterable

import plotly.graph_objects as go
import plotly.io as pio
import polars as pl
from plotly.subplots import make_subplots

from coach.analyze.roofline import LEVEL_ORDER, SOURCE_DATASHEET, SOURCE_MEASURED, SOURCE_REPORT, Roofline, pair, precision_label

#: Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
LEVEL_COLORS = {"DRAM": "#0072B2", "L2": "#009E73", "L1": "#E69F00"}
COMPUTE_COLOR = "#4d4d4d"
SOURCE_DASH = {SOURCE_REPORT: "solid", SOURCE_DATASHEET: "dash", SOURCE_MEASURED: "dot"}
#: One marker shape per precision (open for the "before" run of a comparison).
PRECISION_SYMBOLS = {"fp64": "diamond", "fp32": "circle", "fp16": "square"}
TENSOR_SYMBOL = "star"
OPEN_RUNS = ("before",)
WIDTH_PX, HEIGHT_PX = 1250, 860
#: Height of the traffic panel per kernel row, and its least height.
BAR_ROW_PX, BAR_MIN_PX = 22, 150
#: Room between the roofline and the traffic panel: the roofline's axis title, the panel's title.
GAP_PX = 150
#: Launches of one kernel drawn one by one; above this, one point at their median.
MAX_LAUNCHES = 8
#: Kernel names longer than this are cut on the traffic panel's axis (in full on hover).
NAME_CHARS = 48
PIPE_ROOF_COLOR = "#D55E00"

#: The plotly template coach's figures use (the dashboard too): registered as "coach".
THEME = go.layout.Template(
    layout=go.Layout(
        font={"family": "Inter, 'Helvetica Neue', Arial, sans-serif", "size": 13, "color": "#222222"},
        title={"font": {"size": 17}, "x": 0.01, "xanchor": "left"},
        paper_bgcolor="white",
        plot_bgcolor="white",
        colorway=list(PALETTE),
        xaxis={"showgrid": True, "gridcolor": "#e8e8e8", "zeroline": False, "linecolor": "#8c8c8c", "mirror": True, "ticks": "outside"},
        yaxis={"showgrid": True, "gridcolor": "#e8e8e8", "zeroline": False, "linecolor": "#8c8c8c", "mirror": True, "ticks": "outside"},
        legend={"bgcolor": "rgba(255,255,255,0.9)", "bordercolor": "#cccccc", "borderwidth": 1, "font": {"size": 11}, "tracegroupgap": 8},
        hoverlabel={"font": {"size": 12}, "bgcolor": "white"},
        margin={"l": 80, "r": 30, "t": 80, "b": 70},
    )
)
pio.templates["coach"] = THEME


def _si(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _runs(rl: Roofline, compare: Roofline | None) -> list[tuple[str, Roofline]]:
    return [("profile", rl)] if compare is None else [("before", rl), ("after", compare)]


def symbol(precision: str, run: str = "profile") -> str:
    shape = TENSOR_SYMBOL if precision.startswith("tensor_") else PRECISION_SYMBOLS.get(precision, "triangle-up")
    return shape + ("-open" if run in OPEN_RUNS else "")


def _labels(table: pl.DataFrame) -> pl.Expr:
    """The kernel name, with '#n' where the profile holds several launches of it (a few), or with
    the number of launches where it holds many (drawn as one median point)."""
    nth = pl.col("launch_id").rank("dense").over("kernel_name")
    n = pl.col("launch_id").n_unique().over("kernel_name")
    return (pl.when(n > MAX_LAUNCHES).then(pl.format("{} (median of {} launches)", pl.col("kernel_name"), n))
            .when(n > 1).then(pl.concat_str(pl.col("kernel_name"), pl.lit(" #"), nth.cast(pl.Utf8)))
            .otherwise(pl.col("kernel_name")))


def _collapse(frame: pl.DataFrame, keys: list[str], values: list[str]) -> pl.DataFrame:
    """Rows of kernels launched more than ``MAX_LAUNCHES`` times as one row per kernel and ``keys``:
    the median of each value, with ``<value>_lo``/``_hi`` its range and ``launches`` the count
    (the first launch's id kept); others as they are, with a range of nothing."""
    n = pl.col("launch_id").n_unique().over(["run", "kernel_name"] if "run" in frame.columns else ["kernel_name"])
    marked = frame.with_columns(_many=n > MAX_LAUNCHES, launches=n.cast(pl.Int64))
    few = marked.filter(~pl.col("_many")).with_columns(
        *[pl.col(v).alias(f"{v}_lo") for v in values], *[pl.col(v).alias(f"{v}_hi") for v in values])
    many = marked.filter(pl.col("_many"))
    if many.height:
        others = [c for c in frame.columns if c not in values and c not in keys and c != "kernel_name"]
        many = (many.group_by(["kernel_name", *keys], maintain_order=True)
                .agg(*[pl.col(v).median() for v in values], *[pl.col(v).min().alias(f"{v}_lo") for v in values],
                     *[pl.col(v).max().alias(f"{v}_hi") for v in values], pl.col("launches").first(), pl.col("_many").first(),
                     *[pl.col(c).first() for c in others]))
    return pl.concat([few, many.select(few.columns)], how="vertical_relaxed").drop("_many") if many.height else few.drop("_many")


def _work(runs: list[tuple[str, Roofline]]) -> pl.DataFrame:
    """Rows with a point to draw (work done, a level with traffic); kernels with many launches as
    one row at their median (``_collapse``)."""
    frames = [
        rl.table.with_columns(pl.lit(run).alias("run"), _labels(rl.table).alias("label"))
        .filter((pl.col("flop") > 0) & pl.col("intensity_flop_per_byte").is_not_null())
        for run, rl in runs
    ]
    work = pl.concat(frames)
    return _collapse(work, ["run", "level", "precision"],
                     ["intensity_flop_per_byte", "flop_per_s", "pct_of_roof", "compute_pct", "bandwidth_pct"])


def _drawn_ceilings(runs: list[tuple[str, Roofline]], work: pl.DataFrame) -> pl.DataFrame:
    """Bandwidth roofs of every level; compute roofs of the precisions with work (FP32 if none).
    The first run's GPU sets the roofs: a comparison is of two versions of code on one GPU."""
    ceilings = runs[0][1].ceilings
    used = work["precision"].unique().to_list() or ["fp32"]
    return ceilings.filter((pl.col("kind") == "bandwidth") | pl.col("name").is_in(used))


def _axis_range(lo: float, hi: float) -> list[float]:
    return [math.floor(math.log10(lo) * 2) / 2, math.ceil(math.log10(hi) * 2) / 2]


def _bar_rows(runs: list[tuple[str, Roofline]]) -> int:
    return sum(max(rl.table["kernel_name"].n_unique(), 1) for _, rl in runs)


def figure(rl: Roofline, compare: Roofline | None = None, title: str | None = None) -> go.Figure:
    """The hierarchical roofline of ``rl`` (and arrows to ``compare``'s points, when given)."""
    runs = _runs(rl, compare)
    work = _work(runs)
    ceilings = _drawn_ceilings(runs, work)
    bw = ceilings.filter(pl.col("kind") == "bandwidth")
    fl = ceilings.filter(pl.col("kind") == "compute")
    bar_px = max(BAR_MIN_PX, BAR_ROW_PX * _bar_rows(runs) + 60)
    height = HEIGHT_PX - 200 + bar_px

    fig = make_subplots(
        rows=2, cols=1, row_heights=[(height - bar_px) / height, bar_px / height], vertical_spacing=GAP_PX / height,
        subplot_titles=("Hierarchical roofline", "Traffic per level"),
    )
    pipe_roofs = pl.concat([r.pipe_roofs.with_columns(pl.lit(run).alias("run")) for run, r in runs])
    if fl.height:
        b_lo = bw["peak_per_s"].min() if bw.height else None
        ridges = [p / b for p in fl["peak_per_s"] for b in bw["peak_per_s"]] or [fl["peak_per_s"].max() / 1e12]
        intensities = work["intensity_flop_per_byte"].to_list()
        x_lo = min([min(ridges) / 50, *[i / 3 for i in intensities]])
        x_hi = max([max(ridges) * 50, *[i * 3 for i in intensities]])
        _roofs(fig, bw, fl, x_lo, x_hi)
        lows = [y / 3 for y in [*work["flop_per_s"], *pipe_roofs["flop_per_s"]]]
        y_lo = min([b_lo * x_lo if b_lo else fl["peak_per_s"].min() / 1e3, *lows])
        fig.update_xaxes(type="log", range=_axis_range(x_lo, x_hi), row=1, col=1)
        fig.update_yaxes(type="log", range=_axis_range(y_lo, fl["peak_per_s"].max() * 3), row=1, col=1)
    else:
        fig.update_xaxes(type="log", row=1, col=1)
        fig.update_yaxes(type="log", row=1, col=1)
    _points(fig, work, runs)
    _precision_legend(fig, work)
    _pipe_roofs(fig, pipe_roofs)
    if compare is not None:
        _arrows(fig, rl, compare)
    _bandwidth_bars(fig, runs)
    _notes(fig, runs, work, drawable=bool(bw.height or fl.height))

    gpu = next((g for g in ceilings["gpu"].to_list() if g), None)
    fig.update_layout(
        template="coach",
        width=WIDTH_PX,
        height=height,
        title=title or ("Roofline" + (f" on the {gpu}" if gpu else "") + (": before and after" if compare is not None else "")),
        legend={"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left"},
        barmode="group",
    )
    fig.update_xaxes(title_text="Arithmetic intensity [FLOP/byte]", exponentformat="SI", row=1, col=1)
    fig.update_yaxes(title_text="Performance [FLOP/s]", exponentformat="SI", row=1, col=1)
    fig.update_xaxes(title_text="Achieved traffic [% of peak bandwidth]", range=[0, 105], row=2, col=1)
    return fig


def _roofs(fig: go.Figure, bw: pl.DataFrame, fl: pl.DataFrame, x_lo: float, x_hi: float) -> None:
    """Each bandwidth roof from the left edge up to the highest compute roof; each compute roof from
    where the fastest bandwidth meets it to the right edge. The report's roofs are labelled on the
    chart at their outer ends; datasheet and measured ones, often within a few percent of them, in
    the legend and on hover only, so that labels do not pile up."""
    p_max, b_max = fl["peak_per_s"].max(), (bw["peak_per_s"].max() if bw.height else None)
    for c in bw.iter_rows(named=True):
        b = c["peak_per_s"]
        ours = c["source"] == SOURCE_REPORT
        label = f"{c['name']} {_si(b, 'B/s')}" + ("" if ours else f" ({c['source']})")
        color = LEVEL_COLORS.get(c["name"], COMPUTE_COLOR)
        fig.add_trace(go.Scatter(
            x=[x_lo, p_max / b], y=[b * x_lo, p_max], mode="lines+text" if ours else "lines", text=[label, ""] if ours else None,
            textposition="top right", textfont={"color": color, "size": 11},
            line={"color": color, "width": 2 if ours else 1.5, "dash": SOURCE_DASH.get(c["source"], "dashdot")},
            name=label, legendgroup="roofs", legendgrouptitle_text="Roofs", hovertemplate=f"{label}<br>{c['note']}<extra></extra>",
            meta={"role": "roof", "kind": "bandwidth", "name": c["name"], "source": c["source"], "peak_per_s": b},
        ), row=1, col=1)
    for c in fl.iter_rows(named=True):
        p = c["peak_per_s"]
        ours = c["source"] == SOURCE_REPORT
        label = f"{precision_label(c['name'])} {_si(p, 'FLOP/s')}" + ("" if ours else f" ({c['source']})")
        fig.add_trace(go.Scatter(
            x=[p / b_max if b_max else x_lo, x_hi], y=[p, p], mode="lines+text" if ours else "lines", text=["", label] if ours else None,
            textposition="top left", textfont={"color": COMPUTE_COLOR, "size": 11},
            line={"color": COMPUTE_COLOR, "width": 2 if ours else 1.5, "dash": SOURCE_DASH.get(c["source"], "dashdot")},
            name=label, legendgroup="roofs", hovertemplate=f"{label}<br>{c['note']}<extra></extra>",
            meta={"role": "roof", "kind": "compute", "name": c["name"], "source": c["source"], "peak_per_s": p},
        ), row=1, col=1)


_HOVER = (
    "<b>%{{customdata[4]}}</b>{run}<br>{level} · %{{customdata[1]}}<br>intensity %{{x:.3s}} FLOP/byte<br>"
    "%{{y:.3s}}FLOP/s<br>%{{customdata[2]:.1f}}% of the roof (%{{customdata[3]}}-bound)%{{customdata[6]}}<extra></extra>"
)


def _spread(pts: pl.DataFrame, value: str) -> dict | None:
    """Error bars over the launches' range where a point stands for many launches."""
    if (pts["launches"] <= MAX_LAUNCHES).all():
        return None
    return {"type": "data", "symmetric": False, "array": (pts[f"{value}_hi"] - pts[value]).to_list(),
            "arrayminus": (pts[value] - pts[f"{value}_lo"]).to_list(), "thickness": 1, "width": 3}


def _points(fig: go.Figure, work: pl.DataFrame, runs: list[tuple[str, Roofline]]) -> None:
    for run, _ in runs:
        mine = work.filter(pl.col("run") == run)
        _connectors(fig, mine, run)
        for level in LEVEL_ORDER:
            pts = mine.filter(pl.col("level") == level)
            if pts.height == 0:
                continue
            many = pl.when(pl.col("launches") > MAX_LAUNCHES).then(
                pl.format("<br>the median of {} launches; the bars span their range", pl.col("launches"))
            ).otherwise(pl.lit(""))
            fig.add_trace(go.Scatter(
                x=pts["intensity_flop_per_byte"].to_list(), y=pts["flop_per_s"].to_list(),
                mode="markers",
                marker={"symbol": [symbol(p, run) for p in pts["precision"]], "size": 11, "color": LEVEL_COLORS[level],
                        "line": {"width": 2, "color": LEVEL_COLORS[level]}},
                error_x=_spread(pts, "intensity_flop_per_byte"), error_y=_spread(pts, "flop_per_s"),
                customdata=pts.select(
                    "launch_id",
                    pl.col("precision").replace_strict({p: precision_label(p) for p in pts["precision"].unique()}),
                    "pct_of_roof", "bound", "label", pl.col("precision").alias("precision_key"), many.alias("many"),
                    "launches",
                ).rows(),
                name=f"{level}" + ("" if run == "profile" else f" ({run})"), legendgroup=f"points-{run}",
                legendgrouptitle_text="Kernels (colour: level)" if run == "profile" else f"Kernels, {run}",
                hovertemplate=_HOVER.format(run="" if run == "profile" else f" ({run})", level=level),
                meta={"role": "point", "run": run, "level": level},
            ), row=1, col=1)


def _precision_legend(fig: go.Figure, work: pl.DataFrame) -> None:
    """One legend entry per precision drawn: its marker shape."""
    for p in work["precision"].unique(maintain_order=True).to_list():
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", marker={"symbol": symbol(p), "size": 10, "color": "#555555"},
            name=precision_label(p), legendgroup="precisions", legendgrouptitle_text="Shape: precision",
            hoverinfo="skip", meta={"role": "precision", "precision": p},
        ), row=1, col=1)


def _pipe_roofs(fig: go.Figure, roofs: pl.DataFrame) -> None:
    """The roof of a kernel bound by a pipe without a FLOP roof: a short line through its point."""
    for r in roofs.iter_rows(named=True):
        x = r["intensity_flop_per_byte"]
        label = f"{r['pipe']} roof of {r['kernel_name']}: {_si(r['roof_flop_per_s'], 'FLOP/s')}"
        short = f"{r['pipe'].split(' (')[0]} pipe roof, {_short(r['kernel_name'])}: {_si(r['roof_flop_per_s'], 'FLOP/s')}"
        fig.add_trace(go.Scatter(
            x=[x / 4, x * 4], y=[r["roof_flop_per_s"]] * 2, mode="lines",
            line={"color": PIPE_ROOF_COLOR, "width": 2.5, "dash": "dashdot"},
            name=short + ("" if r["run"] == "profile" else f" ({r['run']})"), legendgroup="roofs",
            hovertemplate=(f"{label}<br>the pipe is {r['pipe_pct']:.1f}% busy: its {precision_label(r['precision'])} rate "
                           f"of {_si(r['flop_per_s'], 'FLOP/s')} is the most this instruction mix reaches at "
                           f"{r['pipe_pct']:.1f}%, so it can rise only by "
                           f"{100 / r['pipe_pct'] * 100 - 100:.0f}% unless the mix changes<extra></extra>"),
            meta={"role": "pipe-roof", "run": r["run"], "launch_id": r["launch_id"], "pipe": r["pipe"],
                  "peak_per_s": r["roof_flop_per_s"]},
        ), row=1, col=1)


def _connectors(fig: go.Figure, work: pl.DataFrame, run: str) -> None:
    """A thin line through one kernel's points at the levels (same FLOP/s, one intensity per level)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for (_, _), g in work.group_by("launch_id", "precision", maintain_order=True):
        if g.height > 1:
            xs += [g["intensity_flop_per_byte"].min(), g["intensity_flop_per_byte"].max(), None]
            ys += [g["flop_per_s"].item(0), g["flop_per_s"].item(0), None]
    if xs:
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", line={"color": "#b3b3b3", "width": 1}, hoverinfo="skip", showlegend=False,
            meta={"role": "connector", "run": run},
        ), row=1, col=1)


def _arrows(fig: go.Figure, before: Roofline, after: Roofline) -> None:
    """An arrow per kernel, level and precision from the "before" point to the "after" point.
    Annotations on log axes take log10 coordinates."""
    pairs = pair(before, after).filter(
        (pl.col("flop_before") > 0) & (pl.col("flop_after") > 0)
        & pl.col("intensity_flop_per_byte_before").is_not_null() & pl.col("intensity_flop_per_byte_after").is_not_null()
    )
    for r in pairs.iter_rows(named=True):
        fig.add_annotation(
            x=math.log10(r["intensity_flop_per_byte_after"]), y=math.log10(r["flop_per_s_after"]),
            ax=math.log10(r["intensity_flop_per_byte_before"]), ay=math.log10(r["flop_per_s_before"]),
            xref="x", yref="y", axref="x", ayref="y", showarrow=True, arrowhead=3, arrowsize=1.2, arrowwidth=1.5,
            arrowcolor=LEVEL_COLORS[r["level"]], text="", standoff=6, startstandoff=6,
            hovertext=f"{r['kernel_name_before']} → {r['kernel_name_after']} ({r['level']}, {precision_label(r['precision'])}): {r['speedup']:.2f}x faster",
            name="arrow",
        )


def _short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


def _bandwidth_bars(fig: go.Figure, runs: list[tuple[str, Roofline]]) -> None:
    """Traffic at each level, % of its peak, per kernel (and run): the same for every precision of a
    launch, so one row per launch and level is taken; a kernel with many launches as its median."""
    frames = []
    for run, rl in runs:
        frames.append(
            rl.table.with_columns(_labels(rl.table).alias("label"))
            .unique(["launch_id", "level"], keep="first", maintain_order=True)
            .with_columns(pl.lit(run).alias("run"))
        )
    bars = _collapse(pl.concat(frames), ["run", "level"], ["bandwidth_pct", "bytes_per_s"]).with_columns(
        (pl.col("label").map_elements(_short, return_dtype=pl.Utf8)
         + pl.col("run").replace_strict({"profile": ""}, default=None).fill_null(pl.lit(" · ") + pl.col("run"))).alias("row"))
    # each kernel's runs next to each other: "k · before", "k · after", then the next kernel
    run_rank = {run: i for i, (run, _) in enumerate(runs)}
    first_seen = {label: i for i, label in enumerate(dict.fromkeys(bars["label"].to_list()))}
    categories = sorted(dict.fromkeys(bars.select("label", "run", "row").rows()), key=lambda r: (first_seen[r[0]], run_rank[r[1]]))
    categories = [row for _, _, row in categories]
    for level in LEVEL_ORDER:
        b = bars.filter(pl.col("level") == level)
        if b.height == 0:
            continue
        fig.add_trace(go.Bar(
            y=b["row"].to_list(), x=b["bandwidth_pct"].to_list(), orientation="h", name=f"{level} traffic",
            marker={"color": LEVEL_COLORS[level]}, showlegend=False,  # the level colours are in the points' legend
            customdata=b.select("launch_id", "run", "bytes_per_s", "peak_bytes_per_s", "label").rows(),
            hovertemplate="%{customdata[4]}: " + level + " %{customdata[2]:.3s}B/s, %{x:.1f}% of %{customdata[3]:.3s}B/s<extra></extra>",
            meta={"role": "bandwidth", "level": level},
        ), row=2, col=1)
    # reversed: the first kernel on top and, within a kernel, DRAM first as in the legend
    fig.update_yaxes(categoryorder="array", categoryarray=categories, autorange="reversed", automargin=True,
                     row=2, col=1)
    fig.add_vline(x=100, line={"color": "#8c8c8c", "width": 1, "dash": "dash"}, row=2, col=1)


def _notes(fig: go.Figure, runs: list[tuple[str, Roofline]], work: pl.DataFrame, drawable: bool = True) -> None:
    """Say what the roofline cannot show: kernels without floating-point work, missing levels, and
    a report with nothing to draw a roofline from."""
    lines = []
    for run, rl in runs:
        with_work = set(work.filter(pl.col("run") == run)["launch_id"].to_list())
        idle = rl.table.with_columns(_labels(rl.table).alias("label")).filter(
            ~pl.col("kernel_name").is_in(work.filter(pl.col("run") == run)["kernel_name"].unique().to_list())
            & ~pl.col("launch_id").is_in(list(with_work)))
        names = list(dict.fromkeys(idle["label"].to_list()))
        if names:
            lines.append(f"No floating-point work{'' if run == 'profile' else f' ({run})'}: {_join(names)}; see their traffic below.")
        absent = sorted(set(rl.missing.filter(pl.col("part") == "level")["name"].to_list()), key=LEVEL_ORDER.index)
        if absent:
            lines.append(f"Not in the report{'' if run == 'profile' else f' ({run})'}: {_join(absent)} traffic.")
    if not drawable:
        needs = runs[0][1].missing.filter(pl.col("part") == "level")["needs"].unique(maintain_order=True).to_list()
        fig.add_annotation(
            text="Nothing to draw: this report has neither the traffic counters nor the peak rates a roofline is made of"
                 + (f"<br>(needs {needs[0]} and the like: profile with ncu --set full)" if needs else ""),
            xref="x domain", yref="y domain", x=0.5, y=0.5, showarrow=False, font={"size": 13, "color": "#555555"})
    if lines:
        fig.add_annotation(  # beneath the traffic panel's axis title, in pixels whatever the figure's height
            text="<br>".join(lines), xref="paper", yref="paper", x=0, y=0, yshift=-64, xanchor="left", yanchor="top",
            showarrow=False, align="left", font={"size": 11, "color": "#555555"},
        )
        fig.update_layout(margin={"b": 96 + 18 * len(lines)})


def _join(items: Iterable[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
