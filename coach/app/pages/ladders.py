"""Ladders: each version ladder's rungs on the roofline as a trajectory, the speed-up of each step,
and the reason and prediction for each step next to what was measured (``kernels/<op>/results.json``,
see ``coach.app.ladder_results``)."""

from __future__ import annotations

import plotly.graph_objects as go
from dash import Dash, html, dcc

from coach.analyze import hardware as hw
from coach.app import format as fmt
from coach.app import ids
from coach.app.components import alert, card, empty, header, plain_table, stat
from coach.app.context import Context
from coach.app.ladder_results import RESULTS_FILE, Ladder, discover, read
from coach.app.theme import ACCENT, GRID, SERIES, TEMPLATE
from coach.errors import CoachError

PATH = "/ladders"
NAV_LABEL = "Ladders"
TITLE = "Version ladders"


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    found = discover(ctx.settings.kernels_dir)
    intro = header(TITLE, "From a naive kernel to a fast one, one justified step at a time: what each step "
                          "predicted, what it measured, and where it moved on the roofline.")
    if not found:
        return html.Div([intro, html.Div(empty(
            "No ladder results are recorded yet",
            ["Each ladder writes its measured rungs to ", html.Code(f"kernels/<op>/{RESULTS_FILE}"),
             " when it is run on a GPU; they appear here once recorded."]), id=ids.LAD_BODY)])
    sections = []
    for path in found:
        try:
            sections.append(ladder_section(read(path)))
        except CoachError as err:
            sections.append(alert(str(err), "error"))
    return html.Div([intro, html.Div(sections, id=ids.LAD_BODY)])


def ladder_section(ladder: Ladder) -> html.Section:
    speedups = ladder.speedups()
    prov = ", ".join(f"{k} {v}" for k, v in ladder.provenance.items())
    rows = [[r.rung, r.title, r.reason, r.prediction,
             fmt.si(r.predicted_time_s, "s"), fmt.si(r.time_s, "s"), fmt.si(r.bytes_per_s, "B/s"),
             fmt.ratio(s), r.note or ""]
            for r, s in zip(ladder.rungs, speedups)]
    return html.Section([
        html.H2(ladder.title),
        html.P(f"Measured on the {ladder.gpu}" + (f" ({prov})" if prov else "") + ".", className="small muted"),
        html.Div([stat("rungs", str(len(ladder.rungs))), stat("first to last", fmt.ratio(ladder.total_speedup)),
                  stat("last rung", fmt.si(ladder.rungs[-1].bytes_per_s, "B/s"))], className="stats"),
        html.Div([card(dcc.Graph(figure=trajectory(ladder), config={"displaylogo": False})),
                  card(dcc.Graph(figure=step_speedups(ladder), config={"displaylogo": False}))], className="two"),
        card(plain_table(["rung", "change", "reason", "prediction", "predicted", "measured", "DRAM rate",
                          "speed-up", "why they differ"], rows,
                         numeric=[False, False, False, False, True, True, True, True, False])),
    ], id=f"ladder-{ladder.ladder}")


def trajectory(ladder: Ladder) -> go.Figure:
    """Rungs at (intensity, achieved FLOP/s), joined in order, under the GPU's DRAM roof when known.

    A pure data-movement ladder (no FLOPs) has no place on a log intensity axis; its trajectory is
    drawn as achieved bandwidth per rung against the DRAM ceiling instead.
    """
    gpu = hw.match(ladder.gpu)
    roofs = hw.ceilings(gpu) if gpu is not None else None
    fig = go.Figure()
    names = [r.rung for r in ladder.rungs]
    if all(r.flops > 0 for r in ladder.rungs):
        xs, ys = [r.intensity for r in ladder.rungs], [r.flop_per_s for r in ladder.rungs]
        if roofs is not None and roofs.bandwidth["dram"].value:
            bw = roofs.bandwidth["dram"].value
            lo, hi = min(xs) / 4, max(xs) * 4
            fig.add_trace(go.Scatter(x=[lo, hi], y=[lo * bw, hi * bw], mode="lines", name=f"DRAM {fmt.si(bw, 'B/s')}",
                                     line=dict(color=GRID, width=3)))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers+text", text=names, textposition="top center",
                                 name="rungs", line=dict(color=ACCENT), marker=dict(size=9)))
        fig.update_xaxes(type="log", title_text="arithmetic intensity (FLOP per DRAM byte)")
        fig.update_yaxes(type="log", title_text="achieved (FLOP/s)")
    else:
        fig.add_trace(go.Scatter(x=names, y=[r.bytes_per_s / 1e9 for r in ladder.rungs], mode="lines+markers",
                                 name="rungs", line=dict(color=ACCENT), marker=dict(size=9)))
        if roofs is not None and roofs.bandwidth["dram"].value:
            bw = roofs.bandwidth["dram"].value / 1e9
            fig.add_hline(y=bw, line=dict(color=SERIES[1], dash="dash"),
                          annotation_text=f"DRAM ceiling {fmt.si(bw * 1e9, 'B/s')}")
        fig.update_xaxes(title_text="rung")
        fig.update_yaxes(title_text="achieved DRAM bandwidth (GB/s)", rangemode="tozero")
    fig.update_layout(template=TEMPLATE, title="Trajectory", height=380, showlegend=False)
    return fig


def step_speedups(ladder: Ladder) -> go.Figure:
    steps = ladder.speedups()[1:]
    fig = go.Figure(go.Bar(x=[r.rung for r in ladder.rungs[1:]], y=steps, marker_color=ACCENT,
                           text=[fmt.ratio(s) for s in steps], textposition="outside"))
    fig.add_hline(y=1.0, line=dict(color="#9ca3af", dash="dot"))
    fig.update_layout(template=TEMPLATE, title="Speed-up of each step over the one before", height=380)
    fig.update_xaxes(title_text="rung")
    fig.update_yaxes(title_text="speed-up (×)", rangemode="tozero")
    return fig


def register(app: Dash, ctx: Context) -> None:
    """The page is static: everything is drawn when it loads."""
