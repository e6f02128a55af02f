"""The roofline as a plotly figure, and the look every coach figure shares.

``figure(rl)`` draws, on log-log axes, each memory level's bandwidth roof (a diagonal) and each
precision's compute roof (a horizontal), labelled with their values and where they come from, and
one labelled point per kernel, level and precision with floating-point work. ``figure(before,
compare=after)`` draws both profiles and an arrow from each "before" point to its "after" point.
A panel beside it shows each kernel's traffic at each level as a share of that level's peak
bandwidth: the whole story for a kernel without floating-point work, which sits at intensity 0 and
so has no place on a log axis.

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
RUN_SYMBOLS = {"profile": "circle", "before": "circle-open", "after": "circle"}
WIDTH_PX, HEIGHT_PX = 1250, 720

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


def _labels(table: pl.DataFrame) -> pl.Expr:
    """The kernel name, with '#n' where the profile holds several launches of it."""
    nth = pl.col("launch_id").rank("dense").over("kernel_name")
    several = pl.col("launch_id").n_unique().over("kernel_name") > 1
    return pl.when(several).then(pl.concat_str(pl.col("kernel_name"), pl.lit(" #"), nth.cast(pl.Utf8))).otherwise(pl.col("kernel_name"))


def _work(runs: list[tuple[str, Roofline]]) -> pl.DataFrame:
    """Rows with a point to draw (work done, a level with traffic), and ``text``: the kernel's label
    on its outermost level's point only; its other levels sit on the same height, joined by a line."""
    level_rank = pl.col("level").replace_strict({n: i for i, n in enumerate(LEVEL_ORDER)}, return_dtype=pl.Int64)
    frames = [
        rl.table.with_columns(pl.lit(run).alias("run"), _labels(rl.table).alias("label"))
        .filter((pl.col("flop") > 0) & pl.col("intensity_flop_per_byte").is_not_null())
        for run, rl in runs
    ]
    return pl.concat(frames).with_columns(
        pl.when(level_rank == level_rank.min().over("run", "launch_id", "precision")).then(pl.col("label")).otherwise(pl.lit("")).alias("text")
    )


def _drawn_ceilings(runs: list[tuple[str, Roofline]], work: pl.DataFrame) -> pl.DataFrame:
    """Bandwidth roofs of every level; compute roofs of the precisions with work (FP32 if none).
    The first run's GPU sets the roofs: a comparison is of two versions of code on one GPU."""
    ceilings = runs[0][1].ceilings
    used = work["precision"].unique().to_list() or ["fp32"]
    return ceilings.filter((pl.col("kind") == "bandwidth") | pl.col("name").is_in(used))


def _axis_range(lo: float, hi: float) -> list[float]:
    return [math.floor(math.log10(lo) * 2) / 2, math.ceil(math.log10(hi) * 2) / 2]


def figure(rl: Roofline, compare: Roofline | None = None, title: str | None = None) -> go.Figure:
    """The hierarchical roofline of ``rl`` (and arrows to ``compare``'s points, when given)."""
    runs = _runs(rl, compare)
    work = _work(runs)
    ceilings = _drawn_ceilings(runs, work)
    bw = ceilings.filter(pl.col("kind") == "bandwidth")
    fl = ceilings.filter(pl.col("kind") == "compute")

    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.68, 0.32], horizontal_spacing=0.17,
        subplot_titles=("Hierarchical roofline", "Traffic per level"),
    )
    if bw.height and fl.height:
        ridges = [p / b for p in fl["peak_per_s"] for b in bw["peak_per_s"]]
        intensities = work["intensity_flop_per_byte"].to_list()
        x_lo = min([min(ridges) / 50, *[i / 3 for i in intensities]])
        x_hi = max([max(ridges) * 50, *[i * 3 for i in intensities]])
        _roofs(fig, bw, fl, x_lo, x_hi)
        y_lo = min([bw["peak_per_s"].min() * x_lo, *[y / 3 for y in work["flop_per_s"]]])
        fig.update_xaxes(type="log", range=_axis_range(x_lo, x_hi), row=1, col=1)
        fig.update_yaxes(type="log", range=_axis_range(y_lo, fl["peak_per_s"].max() * 3), row=1, col=1)
    else:
        fig.update_xaxes(type="log", row=1, col=1)
        fig.update_yaxes(type="log", row=1, col=1)
    _points(fig, work, runs)
    if compare is not None:
        _arrows(fig, rl, compare)
    _bandwidth_bars(fig, runs)
    _notes(fig, runs, work)

    gpu = next((g for g in ceilings["gpu"].to_list() if g), None)
    fig.update_layout(
        template="coach",
        width=WIDTH_PX,
        height=HEIGHT_PX,
        title=title or ("Roofline" + (f" on the {gpu}" if gpu else "") + (": before and after" if compare is not None else "")),
        legend={"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left"},
        barmode="group",
    )
    fig.update_xaxes(title_text="Arithmetic intensity [FLOP/byte]", exponentformat="SI", row=1, col=1)
    fig.update_yaxes(title_text="Performance [FLOP/s]", exponentformat="SI", row=1, col=1)
    fig.update_xaxes(title_text="Achieved traffic [% of peak bandwidth]", range=[0, 105], row=1, col=2)
    return fig


def _roofs(fig: go.Figure, bw: pl.DataFrame, fl: pl.DataFrame, x_lo: float, x_hi: float) -> None:
    """Each bandwidth roof from the left edge up to the highest compute roof; each compute roof from
    where the fastest bandwidth meets it to the right edge. The report's roofs are labelled on the
    chart at their outer ends; datasheet and measured ones, often within a few percent of them, in
    the legend and on hover only, so that labels do not pile up."""
    p_max, b_max = fl["peak_per_s"].max(), bw["peak_per_s"].max()
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
            x=[p / b_max, x_hi], y=[p, p], mode="lines+text" if ours else "lines", text=["", label] if ours else None,
            textposition="top left", textfont={"color": COMPUTE_COLOR, "size": 11},
            line={"color": COMPUTE_COLOR, "width": 2 if ours else 1.5, "dash": SOURCE_DASH.get(c["source"], "dashdot")},
            name=label, legendgroup="roofs", hovertemplate=f"{label}<br>{c['note']}<extra></extra>",
            meta={"role": "roof", "kind": "compute", "name": c["name"], "source": c["source"], "peak_per_s": p},
        ), row=1, col=1)


_HOVER = (
    "<b>%{{customdata[4]}}</b>{run}<br>{level} · %{{customdata[1]}}<br>intensity %{{x:.3s}} FLOP/byte<br>"
    "%{{y:.3s}}FLOP/s<br>%{{customdata[2]:.1f}}% of the roof (%{{customdata[3]}}-bound)<extra></extra>"
)


def _points(fig: go.Figure, work: pl.DataFrame, runs: list[tuple[str, Roofline]]) -> None:
    for run, _ in runs:
        mine = work.filter(pl.col("run") == run)
        _connectors(fig, mine, run)
        for level in LEVEL_ORDER:
            pts = mine.filter(pl.col("level") == level)
            if pts.height == 0:
                continue
            fig.add_trace(go.Scatter(
                x=pts["intensity_flop_per_byte"].to_list(), y=pts["flop_per_s"].to_list(),
                mode="markers+text", text=pts["text"].to_list(), textposition="middle left",
                textfont={"size": 11, "color": "#333333"},
                marker={"symbol": RUN_SYMBOLS[run], "size": 11, "color": LEVEL_COLORS[level], "line": {"width": 2, "color": LEVEL_COLORS[level]}},
                customdata=pts.select(
                    "launch_id",
                    pl.col("precision").replace_strict({p: precision_label(p) for p in pts["precision"].unique()}),
                    "pct_of_roof", "bound", "label", pl.col("precision").alias("precision_key"),
                ).rows(),
                name=f"{level}" + ("" if run == "profile" else f" ({run})"), legendgroup=f"points-{run}",
                legendgrouptitle_text="Kernels" if run == "profile" else f"Kernels, {run}",
                hovertemplate=_HOVER.format(run="" if run == "profile" else f" ({run})", level=level),
                meta={"role": "point", "run": run, "level": level},
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


def _bandwidth_bars(fig: go.Figure, runs: list[tuple[str, Roofline]]) -> None:
    """Traffic at each level, % of its peak, per kernel (and run): the same for every precision of a
    launch, so one row per launch and level is taken."""
    frames = []
    for run, rl in runs:
        frames.append(
            rl.table.with_columns(_labels(rl.table).alias("label"))
            .unique(["launch_id", "level"], keep="first", maintain_order=True)
            .with_columns(
                pl.lit(run).alias("run"),
                (pl.col("label") + ("" if run == "profile" else f" · {run}")).alias("row"),
            )
        )
    bars = pl.concat(frames)
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
            customdata=b.select("launch_id", "run", "bytes_per_s", "peak_bytes_per_s").rows(),
            hovertemplate="%{y}: " + level + " %{customdata[2]:.3s}B/s, %{x:.1f}% of %{customdata[3]:.3s}B/s<extra></extra>",
            meta={"role": "bandwidth", "level": level},
        ), row=1, col=2)
    # reversed: the first kernel on top and, within a kernel, DRAM first as in the legend
    fig.update_yaxes(categoryorder="array", categoryarray=categories, autorange="reversed", row=1, col=2)
    fig.add_vline(x=100, line={"color": "#8c8c8c", "width": 1, "dash": "dash"}, row=1, col=2)


def _notes(fig: go.Figure, runs: list[tuple[str, Roofline]], work: pl.DataFrame) -> None:
    """Say what the roofline cannot show: kernels without floating-point work, missing levels."""
    lines = []
    for run, rl in runs:
        with_work = set(work.filter(pl.col("run") == run)["launch_id"].to_list())
        idle = rl.table.with_columns(_labels(rl.table).alias("label")).filter(~pl.col("launch_id").is_in(list(with_work)))
        names = list(dict.fromkeys(idle["label"].to_list()))
        if names:
            lines.append(f"No floating-point work{'' if run == 'profile' else f' ({run})'}: {_join(names)}; see their traffic on the right.")
        absent = sorted(set(rl.missing.filter(pl.col("part") == "level")["name"].to_list()), key=LEVEL_ORDER.index)
        if absent:
            lines.append(f"Not in the report{'' if run == 'profile' else f' ({run})'}: {_join(absent)} traffic.")
    if lines:
        fig.add_annotation(
            text="<br>".join(lines), xref="paper", yref="paper", x=0, y=-0.17, xanchor="left", yanchor="top",
            showarrow=False, align="left", font={"size": 11, "color": "#555555"},
        )
        fig.update_layout(margin={"b": 90 + 18 * len(lines)})


def _join(items: Iterable[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
