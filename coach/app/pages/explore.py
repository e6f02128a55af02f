"""Report explorer: open an upload or a shipped trace and see its kernels, roofline, findings and,
for timelines, a zoomable timeline.

The page only renders: reading is ``coach.ingest`` (through ``coach.app.uploads`` and
``coach.app.reports``), analysis is ``coach.app.analysis``, and the timeline's window is drawn by
``coach.app.timeline_view``. A file's problem is shown as its one-line ``InputError`` message.
"""

from __future__ import annotations

import logging
from typing import Any

import polars as pl
from dash import Dash, Input, Output, State, ctx as callback_ctx, dcc, html, no_update

from coach.app import analysis, ids, timeline_view
from coach.app import format as fmt
from coach.app.components import alert, card, data_table, empty, finding_card, guarded, header, plain_table, stat
from coach.app.context import Context
from coach.app.reports import OpenReport, open_shipped, shipped_traces
from coach.app.source_view import source_panel
from coach.app.theme import fit
from coach.app.uploads import read_upload
from coach.errors import CoachError
from coach.model import KernelProfile, Timeline

PATH = "/explore"
NAV_LABEL = "Explore a report"
TITLE = "Report explorer"

log = logging.getLogger(__name__)

#: Kernel-profile columns in the table, with their headers (times converted to microseconds).
KERNEL_COLUMNS = {
    "launch_id": "ID",
    "kernel_name": "kernel",
    "grid_size": "blocks",
    "block_size": "threads/block",
    "registers_per_thread": "registers/thread",
    "duration_us": "duration (µs)",
    "dram_throughput_pct": "DRAM throughput (%)",
    "memory_throughput_pct": "memory throughput (%)",
    "sm_throughput_pct": "SM throughput (%)",
    "achieved_occupancy_pct": "achieved occupancy (%)",
    "dram_gb": "DRAM traffic (GB)",
}

#: Severities of Nsight Compute's own rule results worth showing beside coach's findings.
NCU_SEVERITIES = ("warning", "error")

ALL_KERNELS = "__all__"

UPLOAD_CHECK_JS = """
function(contents, filename, limit) {
    if (!contents) { return [window.dash_clientside.no_update, window.dash_clientside.no_update]; }
    var comma = contents.indexOf(',');
    var size = Math.floor((contents.length - comma - 1) * 3 / 4);
    if (size > limit) {
        var mb = function(b) { return (b / 1048576).toFixed(1) + ' MB'; };
        return [null, filename + ': is ' + mb(size) + ', over the upload limit of ' + mb(limit)
                + ' (run `coach dash --max-upload-mb N` to raise it, or `coach load` on the command line)'];
    }
    return [{contents: contents, filename: filename}, null];
}
"""


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    """The page; a trace named in the URL (``?trace=h200/...``) is drawn with it, in one round trip."""
    traces = shipped_traces(ctx.settings.traces_dir)
    limit = ctx.settings.upload_limit_bytes
    body: Any = None
    if query.get("trace"):
        try:
            body = report_body(open_shipped(ctx.reports, ctx.settings.traces_dir, query["trace"]))
        except CoachError as err:
            body = alert(str(err), "error", id="exp-error")
    return html.Div([
        header(TITLE, "Open a profile to see its kernels, where they sit on the roofline, what coach finds in "
                      "them, and for Nsight Systems or PyTorch traces the timeline."),
        html.Div([
            dcc.Upload(
                id=ids.EXP_UPLOAD,
                children=html.Div([html.Strong("Drop a report here or click to choose one"), html.Br(),
                                   html.Span(f".ncu-rep, ncu CSV, nsys .sqlite / .nsys-rep, PyTorch-profiler JSON; "
                                             f"up to {fmt.si(limit, 'B')}. The file is read, never run.",
                                             className="small")]),
                className="upload", multiple=False,
            ),
            html.Div([
                html.Label("or open a trace recorded on the H200", htmlFor=ids.EXP_PICK),
                dcc.Dropdown(id=ids.EXP_PICK, options=[{"label": t.id, "value": t.id} for t in traces],
                             placeholder="no traces shipped yet" if not traces else "choose a trace",
                             disabled=not traces, value=query.get("trace")),
            ], className="field", style={"minWidth": "340px", "flex": "1"}),
        ], className="two"),
        dcc.Store(id=ids.EXP_PENDING),
        dcc.Store(id=ids.EXP_LIMIT, data=limit),
        html.Div(id=ids.EXP_MESSAGE),
        dcc.Loading(html.Div(body, id=ids.EXP_BODY), type="dot", color="#4f46e5"),
    ])


# --------------------------------------------------------------------------------------------
# Rendering a report
# --------------------------------------------------------------------------------------------


def summary(report: OpenReport) -> html.Div:
    p = report.profile
    src = p.source
    device = p.devices["name"].first() if p.devices.height else None
    tool = f"{src.tool} {src.tool_version}" if src.tool_version else src.tool
    stats = [stat("report", report.name), stat("recorded with", tool)]
    if device:
        stats.append(stat("GPU", device))
    if isinstance(p, KernelProfile):
        stats += [stat("kernel launches", f"{p.launches.height:,}"),
                  stat("kernel time", fmt.duration_ns(p.launches["duration_ns"].sum()))]
    else:
        span = p.span_ns
        stats += [stat("kernels", f"{p.kernels.height:,}"), stat("memory copies", f"{p.memcpy.height:,}"),
                  stat("API calls", f"{p.api.height:,}"), stat("NVTX ranges", f"{p.nvtx.height:,}")]
        if span:
            stats.append(stat("span", fmt.duration_ns(span[1] - span[0])))
    return html.Div(stats, className="stats", id=ids.EXP_SUMMARY)


def kernel_table(profile: KernelProfile) -> Any:
    frame = profile.launches.with_columns(
        duration_us=pl.col("duration_ns") / 1e3,
        dram_gb=pl.col("dram_bytes") / 1e9,
    )
    return data_table(ids.EXP_TABLE, frame, KERNEL_COLUMNS)


#: Headers of the timeline summary's kernel table (``coach.analyze.timeline_summary.top_kernels``);
#: a column it adds later is shown under its own name.
TIMELINE_KERNEL_LABELS = {"name": "kernel", "count": "launches", "total_us": "total (µs)", "avg_us": "mean (µs)",
                          "min_us": "min (µs)", "max_us": "max (µs)", "time_pct": "share of kernel time (%)",
                          "demangled_name": "signature"}


def timeline_kernel_table(timeline: Timeline) -> Any:
    table = analysis.timeline_kernels(timeline)
    if table is None:
        return empty("Kernel summary not available", "This version of coach has no timeline summary yet.")
    time_cols = [c for c in table.columns if c.endswith("_ns")]
    shown = table.with_columns([(pl.col(c) / 1e3).alias(c.removesuffix("_ns") + "_us") for c in time_cols])
    labels = {c: TIMELINE_KERNEL_LABELS.get(c, c.replace("_", " ")) for c in shown.columns if c not in time_cols}
    return data_table(ids.EXP_TABLE, shown, labels)


def roofline_section(profile: KernelProfile) -> Any:
    fig = analysis.roofline_figure(profile, title="Every kernel on the roofline")
    if fig is None:
        return empty("Roofline not available", "This version of coach has no roofline analysis yet.")
    return dcc.Graph(id=ids.EXP_ROOFLINE, figure=fit(fig, 560), config={"displaylogo": False})


def kernel_options(report: OpenReport) -> list[dict[str, Any]]:
    p = report.profile
    options = [{"label": "all kernels", "value": ALL_KERNELS}]
    if isinstance(p, KernelProfile):
        options += [{"label": f"{lid}: {name}", "value": str(lid)}
                    for lid, name in p.launches.select("launch_id", "kernel_name").iter_rows()]
    return options


def findings_view(report: OpenReport, kernel: str | None) -> Any:
    found = report.view("findings", lambda: analysis.findings(report.profile))
    if found is None:
        body = [empty("Diagnosis not available", "This version of coach has no diagnosis yet.")]
    else:
        chosen = [f for f in found if kernel in (None, ALL_KERNELS) or str(f.launch_id) == kernel]
        real = [f for f in chosen if not analysis.is_note(f)]
        notes = [f for f in chosen if analysis.is_note(f)]
        body = with_source(report, real)
        if not real:
            where = "" if kernel in (None, ALL_KERNELS) else " in this kernel"
            body.append(alert(f"No problems found{where}.", "ok") if not notes else
                        alert(f"No findings{where}, but {len(notes)} of the checks could not run (below).", "info"))
        if notes:
            body.append(html.Details([html.Summary(f"{len(notes)} checks could not run on this report"),
                                      html.Ul([html.Li(n.message) for n in notes])], className="more"))
    p = report.profile
    if isinstance(p, KernelProfile) and p.rules.height:
        rules = p.rules.filter(pl.col("severity").is_in(NCU_SEVERITIES))
        if kernel not in (None, ALL_KERNELS):
            rules = rules.filter(pl.col("launch_id") == int(kernel))
        if rules.height:
            rules = rules.sort("speedup_pct", descending=True, nulls_last=True)
            body.append(html.Details([
                html.Summary(f"Nsight Compute's own rules: {rules.height} warnings"),
                plain_table(["ID", "rule", "title", "estimated speed-up", "message"],
                            [[lid, rid, title or fmt.MISSING, fmt.pct(sp, 2), msg]
                             for lid, rid, title, sp, msg in rules.select(
                                 "launch_id", "rule_id", "title", "speedup_pct", "message").iter_rows()],
                            numeric=[True, False, False, True, False]),
            ], className="more", style={"marginTop": "12px"}))
    return html.Div(body)


def with_source(report: OpenReport, found: list[Any]) -> list[Any]:
    """The finding cards; the first finding of each launch that points at source lines is drawn
    beside the kernel's source, those lines highlighted (one panel per launch keeps the page light)."""
    out: list[Any] = []
    placed: set[int] = set()
    for i, f in enumerate(found):
        item = finding_card(f, top=(i == 0))
        if f.locations and f.launch_id is not None and f.launch_id not in placed:
            placed.add(f.launch_id)
            panel = report.view(("source", f.launch_id, f.rule_id),
                                lambda f=f: source_panel(report.profile, f.launch_id, f.locations,
                                                         id=f"{ids.EXP_SOURCE}-{f.launch_id}"))
            item = html.Div([item, card(html.H3("Where in the source"), panel)], className="finding-source")
        out.append(item)
    return out


def timeline_section(report: OpenReport) -> Any:
    ev = report.view("events", lambda: timeline_view.events(report.profile))
    fig, bars = timeline_view.figure(ev)
    return html.Div([
        html.P(window_note(ev, bars), id=ids.EXP_TIMELINE_NOTE, className="small muted"),
        dcc.Graph(id=ids.EXP_TIMELINE, figure=fig, config={"displaylogo": False, "scrollZoom": True}),
    ])


def window_note(ev: timeline_view.Events, bars: pl.DataFrame) -> str:
    if not bars.height:
        return "This timeline has no events to draw."
    shown = int(bars["events"].sum())
    return (f"{shown:,} of {ev.count:,} events in view, drawn as {bars.height:,} bars: events closer than a pixel "
            f"are merged. Drag to zoom in; double-click to see everything.")


def report_body(report: OpenReport) -> html.Div:
    p = report.profile
    parts: list[Any] = [
        dcc.Store(id=ids.EXP_SHOWN, data={"token": report.token, "name": report.name}),
        # A timeline's diagnosis can take seconds on a large trace: it starts once the timeline is
        # drawn, so that it does not compete with drawing it for the CPU. A kernel profile's is quick.
        dcc.Store(id=ids.EXP_DRAWN, data=None if isinstance(p, Timeline) else True),
        summary(report),
    ]
    if isinstance(p, Timeline):
        parts += [html.H2("Timeline"), card(guarded(lambda: timeline_section(report), "timeline")),
                  html.H2("Kernels"), card(guarded(lambda: timeline_kernel_table(p), "kernel table"))]
    else:
        parts += [html.H2("Kernels"), card(guarded(lambda: kernel_table(p), "kernel table")),
                  html.H2("Roofline"), card(guarded(lambda: roofline_section(p), "roofline"))]
    parts += [
        html.H2("Findings"),
        html.Div([html.Label("kernel", htmlFor=ids.EXP_KERNEL),
                  dcc.Dropdown(id=ids.EXP_KERNEL, options=kernel_options(report), value=ALL_KERNELS, clearable=False)],
                 className="field", style={"maxWidth": "420px", "marginBottom": "12px"}),
        dcc.Loading(html.Div(id=ids.EXP_FINDINGS), type="dot", color="#4f46e5"),
    ]
    return html.Div(parts)


# --------------------------------------------------------------------------------------------
# Callbacks
# --------------------------------------------------------------------------------------------


def register(app: Dash, ctx: Context) -> None:
    app.clientside_callback(UPLOAD_CHECK_JS, Output(ids.EXP_PENDING, "data"), Output(ids.EXP_MESSAGE, "children"),
                            Input(ids.EXP_UPLOAD, "contents"), State(ids.EXP_UPLOAD, "filename"),
                            State(ids.EXP_LIMIT, "data"), prevent_initial_call=True)

    @app.callback(Output(ids.REPORT, "data"), Output(ids.EXP_MESSAGE, "children", allow_duplicate=True),
                  Input(ids.EXP_PENDING, "data"), Input(ids.EXP_PICK, "value"), prevent_initial_call=True)
    def open_report(pending: dict[str, str] | None, trace_id: str | None):
        return open_report_from(ctx, callback_ctx.triggered_id, pending, trace_id)

    @app.callback(Output(ids.EXP_BODY, "children"), Input(ids.REPORT, "data"), State(ids.URL, "search"))
    def render_report(data: dict[str, str] | None, search: str | None):
        if callback_ctx.triggered_id is None and "trace=" in (search or ""):
            return no_update  # the layout drew the trace the URL names
        return render(ctx, data)

    # The timeline reports its first draw (plotly's first relayout event) and only then is it diagnosed.
    app.clientside_callback("function(relayout, drawn) { return drawn ? window.dash_clientside.no_update : true; }",
                            Output(ids.EXP_DRAWN, "data"), Input(ids.EXP_TIMELINE, "relayoutData"),
                            State(ids.EXP_DRAWN, "data"), prevent_initial_call=True)

    @app.callback(Output(ids.EXP_FINDINGS, "children"), Input(ids.EXP_KERNEL, "value"), Input(ids.EXP_DRAWN, "data"),
                  State(ids.EXP_SHOWN, "data"))
    def filter_findings(kernel: str | None, drawn: bool | None, data: dict[str, str] | None):
        report = ctx.reports.get((data or {}).get("token"))
        if report is None:
            return no_update
        if not drawn:
            return html.P("Diagnosing once the timeline is drawn…", className="muted")
        return guarded(lambda: findings_view(report, kernel), "findings")

    @app.callback(Output(ids.EXP_TIMELINE, "figure"), Output(ids.EXP_TIMELINE_NOTE, "children"),
                  Input(ids.EXP_TIMELINE, "relayoutData"), State(ids.EXP_SHOWN, "data"), prevent_initial_call=True)
    def zoom(relayout: dict[str, Any] | None, data: dict[str, str] | None):
        return zoom_timeline(ctx, relayout, data)


def open_report_from(ctx: Context, trigger: Any, pending: dict[str, str] | None, trace_id: str | None):
    """The report store's new value and a message, for an upload or a pick from the shipped traces."""
    try:
        if trigger == ids.EXP_PENDING:
            if not pending:
                return no_update, no_update
            profile = read_upload(pending.get("contents"), pending.get("filename"), ctx.upload_dir,
                                  ctx.settings.upload_limit_bytes)
            report = ctx.reports.add(pending.get("filename") or "uploaded file", profile)
        elif trace_id:
            report = open_shipped(ctx.reports, ctx.settings.traces_dir, trace_id)
        else:
            return no_update, no_update
    except CoachError as err:
        return no_update, alert(str(err), "error", id="exp-error")
    except Exception as err:  # a reader's bug: one line, the traceback in the server log
        log.exception("opening a report failed")
        return no_update, alert(f"internal error while reading the report ({type(err).__name__}: {err})", "error",
                                id="exp-error")
    return {"token": report.token, "name": report.name}, None


def render(ctx: Context, data: dict[str, str] | None) -> Any:
    report = ctx.reports.get((data or {}).get("token"))
    if report is None:
        if data:
            return alert(f"{data.get('name', 'The report')} is no longer open (the server was restarted or opened "
                         "newer reports): open it again.", "info")
        return empty("No report open", "Upload a report above or pick a recorded trace.")
    return report_body(report)


def zoom_timeline(ctx: Context, relayout: dict[str, Any] | None, data: dict[str, str] | None):
    report = ctx.reports.get((data or {}).get("token"))
    win = timeline_view.visible_window(relayout)
    if report is None or win is None or not isinstance(report.profile, Timeline):
        return no_update, no_update
    ev = report.view("events", lambda: timeline_view.events(report.profile))
    fig, bars = timeline_view.figure(ev) if win == "all" else timeline_view.figure(ev, *win)
    return fig, window_note(ev, bars)
