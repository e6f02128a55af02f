"""Hardware and predictions: a GPU's roofline and ridge points, and how fast some work should run.

Every number comes from ``coach.analyze.hardware`` (ceilings with their sources) and
``coach.analyze.predict`` (the floor and the term that sets it); this page only draws them.
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go
from dash import Dash, Input, Output, dcc, html

from coach.analyze import hardware as hw
from coach.analyze.predict import Prediction, Work, predict
from coach.app import format as fmt
from coach.app import ids
from coach.app.components import alert, badge, card, header, plain_table, stat
from coach.app.context import Context
from coach.app.theme import ACCENT, SERIES, TEMPLATE
from coach.errors import CoachError

PATH = "/hardware"
NAV_LABEL = "Hardware"
TITLE = "Hardware and predictions"

DEFAULT_GPU = "h200"
#: Compute roofs drawn on the chart: the precisions an interview asks about (the table lists all).
DRAWN_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp8")
PRECISION_LABELS = {"fp64": "FP64", "fp64_tensor": "FP64 tensor", "fp32": "FP32", "fp16_simt": "FP16 (non-tensor)",
                    "tf32": "TF32 tensor", "bf16": "BF16 tensor", "fp16": "FP16 tensor", "fp8": "FP8 tensor",
                    "int8": "INT8 tensor"}
LEVEL_LABELS = {"dram": "DRAM", "l2": "L2", "shared": "L1 / shared"}
#: Intensity range drawn, FLOP per byte: from a copy (no arithmetic) to a large GEMM.
X_RANGE = (1e-2, 1e4)


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    options = [{"label": g.name, "value": g.id} for g in hw.gpus().values()]
    gpu = query.get("gpu", DEFAULT_GPU)
    return html.Div([
        header(TITLE, "Pick a GPU to see its roofline and ridge points, then work out the fastest a kernel can "
                      "run from the bytes it must move and the FLOPs it must do."),
        html.Div([
            html.Div([html.Label("GPU", htmlFor=ids.HW_GPU),
                      dcc.Dropdown(id=ids.HW_GPU, options=options, value=gpu if gpu in hw.gpus() else DEFAULT_GPU,
                                   clearable=False)], className="field", style={"minWidth": "320px"}),
            dcc.Checklist(id=ids.HW_DATASHEET, options=[{"label": " datasheet numbers only (ignore measured ceilings)",
                                                         "value": "datasheet"}], value=[]),
        ], className="controls"),
        html.Div([
            card(dcc.Graph(id=ids.HW_ROOFLINE, config={"displaylogo": False}, style={"height": "460px"})),
            card(html.H3("Ridge points"), html.Div(id=ids.HW_RIDGES)),
        ], className="two", style={"marginTop": "16px"}),
        html.H2("How fast should it run?"),
        card(
            html.Div([
                _number_field("DRAM bytes moved (read + written)", ids.HW_BYTES, 5.4e8),
                _number_field("FLOPs", ids.HW_FLOPS, 0),
                html.Div([html.Label("precision of the FLOPs", htmlFor=ids.HW_DTYPE),
                          dcc.Dropdown(id=ids.HW_DTYPE, value="fp32", clearable=False,
                                       options=[{"label": PRECISION_LABELS[p], "value": p} for p in hw.PRECISION_FIELDS])],
                         className="field"),
                _number_field("measured time, ms (optional)", ids.HW_MEASURED, None),
            ], className="controls"),
            html.Div(id=ids.HW_PREDICTION, style={"marginTop": "14px"}),
        ),
        html.H2("Datasheet"),
        card(html.Div(id=ids.HW_DATASHEET + "-table")),
    ])


def _number_field(label: str, id: str, value: float | None) -> html.Div:
    return html.Div([html.Label(label, htmlFor=id),
                     dcc.Input(id=id, type="number", value=value, min=0, debounce=True, className="text")],
                    className="field")


def gpu_ceilings(gpu_id: str, datasheet_only: bool) -> hw.Ceilings:
    return hw.ceilings(gpu_id, measured=not datasheet_only)


def roofline_figure(roofs: hw.Ceilings, point: Prediction | None = None) -> go.Figure:
    """The GPU's roofs on log-log axes: a diagonal per memory level, a horizontal per precision,
    each precision's ridge point against DRAM marked, and ``point`` (a prediction) if given."""
    fig = go.Figure()
    x_lo, x_hi = X_RANGE
    dram = roofs.bandwidth["dram"].value
    top = max((roofs.compute[p].value or 0) for p in DRAWN_PRECISIONS)
    for i, (level, c) in enumerate(roofs.bandwidth.items()):
        if not c.value:
            continue
        x_end = top / c.value
        fig.add_trace(go.Scatter(
            x=[x_lo, x_end], y=[x_lo * c.value, top], mode="lines",
            name=f"{LEVEL_LABELS[level]} {fmt.si(c.value, 'B/s')} ({_source(c.origin)})",
            line=dict(color=SERIES[i], width=3 if level == "dram" else 1.5, dash="solid" if level == "dram" else "dot"),
            hovertemplate=f"{LEVEL_LABELS[level]}: {fmt.si(c.value, 'B/s')} ({c.origin})<extra></extra>"))
    for j, p in enumerate(DRAWN_PRECISIONS):
        c = roofs.compute[p]
        if not c.value or not dram:
            continue
        ridge = c.value / dram
        fig.add_trace(go.Scatter(
            x=[ridge, x_hi], y=[c.value, c.value], mode="lines",
            name=f"{PRECISION_LABELS[p]} {fmt.si(c.value, 'FLOP/s')} ({_source(c.origin)})",
            line=dict(color=SERIES[(j + 3) % len(SERIES)], width=2),
            hovertemplate=f"{PRECISION_LABELS[p]}: {fmt.si(c.value, 'FLOP/s')} ({c.origin})<extra></extra>"))
        fig.add_trace(go.Scatter(
            x=[ridge], y=[c.value], mode="markers", showlegend=False,
            marker=dict(color=SERIES[(j + 3) % len(SERIES)], size=9, symbol="diamond"),
            hovertemplate=f"{PRECISION_LABELS[p]} ridge point: {fmt.number(ridge)} FLOP/byte<extra></extra>"))
    if point is not None and point.intensity_flop_per_byte:
        achieved = point.achieved_flop_per_s
        y = achieved if achieved else point.work.total_flops / point.floor_s
        fig.add_trace(go.Scatter(
            x=[point.intensity_flop_per_byte], y=[y], mode="markers", name="your kernel" + ("" if achieved else " (at the floor)"),
            marker=dict(color=ACCENT, size=13, symbol="star", line=dict(color="white", width=1))))
    fig.update_layout(template=TEMPLATE, title=f"Roofline of the {roofs.gpu.name}", height=460,
                      legend=dict(font=dict(size=11), x=1.0, xanchor="right", y=0.02, yanchor="bottom"))
    fig.update_xaxes(type="log", title_text="arithmetic intensity (FLOP per DRAM byte)",
                     range=[math.log10(x_lo), math.log10(x_hi)], dtick=1)
    fig.update_yaxes(type="log", title_text="attainable performance (FLOP/s)", dtick=1, exponentformat="SI")
    return fig


def _source(origin: str) -> str:
    """A ceiling's source as the pages label it: measured, datasheet, derived from the datasheet."""
    return {"published": "datasheet", "recorded": "datasheet", "derived": "derived", "device": "the report's device"}.get(
        origin, origin)


def ridges(roofs: hw.Ceilings) -> html.Div:
    rows, notes = [], []
    for p in hw.PRECISION_FIELDS:
        c = roofs.compute[p]
        if not c.value:
            continue
        ridge = roofs.ridge_point(p)
        rows.append([PRECISION_LABELS[p], fmt.si(c.value, "FLOP/s" if c.unit == "flop/s" else "OP/s"),
                     fmt.number(ridge), badge(c.origin, "good" if c.origin == "measured" else "muted")])
    dram = roofs.bandwidth["dram"]
    notes.append(html.P([f"DRAM bandwidth {fmt.si(dram.value, 'B/s')} ", badge(dram.origin, "good" if dram.origin == "measured" else "muted"),
                         html.Br(), html.Span(dram.source, className="small muted")]))
    bf16 = roofs.ridge_point("bf16")
    if bf16:
        notes.append(html.P(f"A kernel needs about {fmt.number(bf16)} BF16 FLOPs per DRAM byte to be limited by the "
                            "tensor cores rather than by memory; below its ridge point, more bandwidth (fewer bytes) "
                            "is the only thing that makes it faster.", className="small"))
    return html.Div([*notes, plain_table(["precision", "peak", "ridge (FLOP/byte)", "source"], rows,
                                         numeric=[False, True, True, False])])


def datasheet(gpu: hw.GPU) -> html.Table:
    rows = []
    for name, unit in hw.FIELDS.items():
        value, src = gpu.value(name), gpu.source(name)
        if value is None:
            shown = fmt.MISSING
        elif unit.startswith("FLOP/s") or unit.startswith("OP/s"):
            shown = fmt.si(value, unit.split(",")[0])
        elif unit.startswith("byte/s"):
            shown = fmt.si(value, "B/s")
        elif unit == "bytes":
            shown = fmt.si(value, "B")
        elif unit == "Hz":
            shown = fmt.si(value, "Hz")
        else:
            shown = f"{fmt.number(value)} {unit}".strip()
        rows.append([name.replace("_", " "), shown, html.Span(src.describe(), className="small muted")])
    return plain_table(["field", "value", "source"], rows, numeric=[False, True, False])


def prediction(roofs: hw.Ceilings, nbytes: Any, flops: Any, dtype: str, measured_ms: Any) -> tuple[html.Div, Prediction | None]:
    try:
        work = Work(bytes=float(nbytes or 0), flops={dtype: float(flops)} if flops else {}, label="work entered here")
        pred = predict(work, roofs, measured_s=float(measured_ms) * 1e-3 if measured_ms else None)
    except (CoachError, ValueError) as err:
        return alert(str(err), "error"), None
    stats = [stat("floor", fmt.si(pred.floor_s, "s")), stat("bound by", f"{pred.bound} ({pred.dominant.name})")]
    if pred.intensity_flop_per_byte is not None:
        stats.append(stat("intensity", f"{fmt.number(pred.intensity_flop_per_byte)} FLOP/B"))
    if pred.ridge_flop_per_byte is not None:
        stats.append(stat("ridge point", f"{fmt.number(pred.ridge_flop_per_byte)} FLOP/B"))
    if pred.pct_of_floor is not None:
        stats.append(stat("measured vs floor", f"{fmt.pct(pred.pct_of_floor)} of floor speed"))
    terms = plain_table(
        ["term", "amount", "ceiling", "time at the ceiling", "ceiling from"],
        [[t.name.upper() if t.name == "dram" else PRECISION_LABELS.get(t.name, t.name),
          fmt.si(t.amount, "B" if t.unit == "byte" else "FLOP"),
          fmt.si(t.rate, "B/s" if t.rate_unit == "byte/s" else "FLOP/s"),
          fmt.si(t.floor_s, "s"), f"{t.origin}: {t.ref}" if t.ref else t.origin] for t in pred.terms],
        numeric=[False, True, True, True, False],
        highlight=[t is pred.dominant for t in pred.terms],
    )
    return html.Div([html.Div(stats, className="stats"), terms]), pred


def register(app: Dash, ctx: Context) -> None:
    @app.callback(
        Output(ids.HW_ROOFLINE, "figure"), Output(ids.HW_RIDGES, "children"),
        Output(ids.HW_DATASHEET + "-table", "children"), Output(ids.HW_PREDICTION, "children"),
        Input(ids.HW_GPU, "value"), Input(ids.HW_DATASHEET, "value"),
        Input(ids.HW_BYTES, "value"), Input(ids.HW_FLOPS, "value"), Input(ids.HW_DTYPE, "value"),
        Input(ids.HW_MEASURED, "value"),
    )
    def update(gpu_id, datasheet_only, nbytes, flops, dtype, measured_ms):
        try:
            roofs = gpu_ceilings(gpu_id or DEFAULT_GPU, bool(datasheet_only))
        except CoachError as err:
            msg = alert(str(err), "error")
            return go.Figure(layout=dict(template=TEMPLATE)), msg, None, None
        result, pred = prediction(roofs, nbytes, flops, dtype or "fp32", measured_ms)
        return roofline_figure(roofs, pred), ridges(roofs), datasheet(roofs.gpu), result
