"""Report explorer: open an upload or a shipped trace and see its kernels, roofline, findings and,
for timelines, a zoomable timeline; compare it with a baseline as ``coach diff`` does.

The page only renders: reading is ``coach.ingest`` (through ``coach.app.uploads`` and
``coach.app.reports``), analysis is ``coach.app.analysis``, the timeline's window is drawn by
``coach.app.timeline_view`` and findings are grouped and paged by ``coach.app.finding_groups``. A
file's problem is shown as its one-line ``InputError`` message, naming the file as the user knows it.

An upload is the file's bytes in the body of one POST to ``UPLOAD_PATH``: ``assets/coach.js``
takes the file from the drop zone, sends it and shows the transfer's progress, so a large report is neither held as base64 text in
the page nor decoded from it; the answer opens the report as picking a trace does. The report
open is kept in the browser's session storage: reloading the page, or leaving and coming back,
shows it again while the server still holds it; a trace named in the URL (``?trace=``) wins.
"""

from __future__ import annotations

import logging
from typing import Any

import flask
import polars as pl
from dash import Dash, Input, Output, State, ctx as callback_ctx, dcc, html, no_update

from coach.app import analysis, finding_groups, ids, timeline_view
from coach.app import format as fmt
from coach.app.components import alert, card, data_table, empty, guarded, header, plain_table, quantity, stat
from coach.app.context import Context
from coach.app.reports import OpenReport, open_shipped, shipped_traces
from coach.app.source_view import source_panel
from coach.app.theme import fit
from coach.app.uploads import display_name, read_path, receive_stream
from coach.errors import CoachError
from coach.model import KernelProfile, Timeline

PATH = "/explore"
NAV_LABEL = "Explore a report"
TITLE = "Report explorer"

#: Where the page sends an upload (``assets/coach.js``); the request must carry UPLOAD_HEADER, which
#: a page of another site cannot add without the browser asking this server first (and it says no).
UPLOAD_PATH = "/_coach/upload"
UPLOAD_HEADER = "X-Coach-Upload"

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

#: Matches of a timeline search listed by name.
SEARCH_ROWS = 12


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    """The page; a trace named in the URL (``?trace=h200/...``) is drawn with it, in one round trip."""
    traces = shipped_traces(ctx.settings.traces_dir)
    limit = ctx.settings.upload_limit_bytes
    body: Any = None
    drawn = None
    if query.get("trace"):
        drawn = query["trace"]
        try:
            body = report_body(ctx, open_shipped(ctx.reports, ctx.settings.traces_dir, query["trace"]))
        except CoachError as err:
            body = alert(str(err), "error", id="exp-error")
    return html.Div([
        header(TITLE, "Open a profile to see its kernels, where they sit on the roofline, what coach finds in "
                      "them, and for Nsight Systems or PyTorch traces the timeline."),
        html.Div([
            html.Div(dcc.Upload(
                id=ids.EXP_UPLOAD,
                children=html.Div([html.Strong("Drop a report here or click to choose one"), html.Br(),
                                   html.Span(f".ncu-rep, ncu CSV, nsys .sqlite / .nsys-rep, PyTorch-profiler JSON; "
                                             f"up to {fmt.si(limit, 'B')}. The file is read, never run.",
                                             className="small")]),
                className="upload", multiple=False,
            ), **{"data-limit": str(limit), "data-url": UPLOAD_PATH}),
            html.Div([
                html.Label("or open a trace recorded on the H200", htmlFor=ids.EXP_PICK),
                dcc.Dropdown(id=ids.EXP_PICK, options=[{"label": t.id, "value": t.id} for t in traces],
                             placeholder="no traces shipped yet" if not traces else "choose a trace",
                             disabled=not traces, value=query.get("trace")),
            ], className="field pick"),
        ], className="two"),
        html.Div(id=ids.EXP_PROGRESS, className="progress", role="status"),
        # what the layout drew (the trace the URL names), so that the page's arrival does not draw over it
        dcc.Store(id=ids.EXP_ARRIVED, data={"drawn": drawn}),
        dcc.Store(id=ids.EXP_OPENED),
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


#: Launches the kernel table holds at most (the longest first beyond it): the table travels whole
#: to the browser, which pages and sorts it there.
MAX_TABLE_LAUNCHES = 500


def kernel_table(profile: KernelProfile) -> Any:
    frame = profile.launches.with_columns(
        duration_us=pl.col("duration_ns") / 1e3,
        dram_gb=pl.col("dram_bytes") / 1e9,
    )
    if frame.height <= MAX_TABLE_LAUNCHES:
        return data_table(ids.EXP_TABLE, frame, KERNEL_COLUMNS)
    longest = frame.sort("duration_ns", descending=True, nulls_last=True).head(MAX_TABLE_LAUNCHES)
    return html.Div([
        html.P(f"The {MAX_TABLE_LAUNCHES:,} longest of {frame.height:,} launches are listed; the roofline and the "
               "findings below cover every launch.", className="small muted", id=ids.EXP_TABLE + "-note"),
        data_table(ids.EXP_TABLE, longest, KERNEL_COLUMNS),
    ])


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
    return dcc.Graph(id=ids.EXP_ROOFLINE, figure=fit(fig), config={"displaylogo": False, "responsive": True})


def kernel_options(report: OpenReport) -> list[dict[str, Any]]:
    """"All kernels" and one entry per kernel name (with its launches), not one per launch."""
    p = report.profile
    options = [{"label": "all kernels", "value": ALL_KERNELS}]
    if isinstance(p, KernelProfile) and p.launches.height:
        counts = p.launches.group_by(pl.col("kernel_name").fill_null(""), maintain_order=True).agg(pl.len().alias("n"))
        options += [{"label": f"{name or '(unnamed)'} · {n:,} launch{'es' if n > 1 else ''}", "value": f"k:{name}"}
                    for name, n in counts.iter_rows()]
    return options


def _found(report: OpenReport) -> list[Any] | None:
    return report.view("findings", lambda: analysis.findings(report.profile))


def _groups(report: OpenReport, kernel: str | None) -> tuple[list[finding_groups.Group], list[Any], dict[int, str]]:
    """The finding groups (kernel-filtered), the notes, and launch id -> kernel name."""
    names = report.view("launch-names", lambda: finding_groups.launches_named(
        report.profile.launches if isinstance(report.profile, KernelProfile) else pl.DataFrame()))

    def build():
        found = _found(report) or []
        real = [f for f in found if not analysis.is_note(f)]
        notes = [f for f in found if analysis.is_note(f)]
        return finding_groups.group(real, names), notes

    groups, notes = report.view("finding-groups", build)
    if kernel not in (None, ALL_KERNELS):
        wanted = _kernel_name(kernel)
        groups = [g for g in groups if g.kernel == wanted]
        notes = [n for n in notes if names.get(n.launch_id) == wanted]
    return groups, notes, names


def _kernel_name(value: str) -> str:
    """A kernel filter's value: "k:<name>", or a launch id (the form of older links) as its name."""
    return value[2:] if value.startswith("k:") else value


def findings_view(report: OpenReport, kernel: str | None, page: int = 0) -> tuple[html.Div, int, int]:
    """The findings on ``page``, the page shown and the number of pages."""
    found = _found(report)
    if found is None:
        return html.Div([empty("Diagnosis not available", "This version of coach has no diagnosis yet.")]), 0, 1
    if kernel not in (None, ALL_KERNELS) and not kernel.startswith("k:"):  # a launch id
        names = finding_groups.launches_named(report.profile.launches) if isinstance(report.profile, KernelProfile) else {}
        kernel = f"k:{names.get(int(kernel), kernel)}" if kernel.isdigit() else kernel
    groups, notes, names = _groups(report, kernel)
    shown, page, pages = finding_groups.page_of(groups, page)
    body: list[Any] = []
    count = sum(len(g.findings) for g in groups)
    if groups and count > len(groups):
        body.append(html.P(finding_groups.summary_line(groups, count), className="small muted", id=ids.EXP_FINDINGS_LEAD))
    placed: set[int] = set()  # one source panel per launch keeps the page light
    body += finding_groups.render_groups(shown, source=lambda g: _source_beside(report, g, placed), first=page == 0)
    if not groups:
        where = "" if kernel in (None, ALL_KERNELS) else " in this kernel"
        body.append(alert(f"No problems found{where}.", "ok") if not notes else
                    alert(f"No findings{where}, but {len({n.rule_id for n in notes})} of the checks could not run "
                          "(below).", "info"))
    if notes and page == pages - 1:
        body.append(finding_groups.notes_list(notes, names))
    if page == pages - 1:
        body += ncu_rules(report, kernel)
    return html.Div(body), page, pages


def _source_beside(report: OpenReport, g: finding_groups.Group, placed: set[int]) -> Any:
    """The kernel's source beside the first group on the page whose top finding, in a launch not yet
    shown, points at source lines."""
    f = g.top
    if not f.locations or f.launch_id is None or f.launch_id in placed:
        return None
    placed.add(f.launch_id)
    panel = report.view(("source", f.launch_id, f.rule_id),
                        lambda: source_panel(report.profile, f.launch_id, f.locations,
                                             id=f"{ids.EXP_SOURCE}-{f.launch_id}"))
    return card(html.H3("Where in the source"), panel)


def ncu_rules(report: OpenReport, kernel: str | None) -> list[Any]:
    p = report.profile
    if not isinstance(p, KernelProfile) or not p.rules.height:
        return []
    rules = p.rules.filter(pl.col("severity").is_in(NCU_SEVERITIES))
    if kernel not in (None, ALL_KERNELS):
        keep = p.launches.filter(pl.col("kernel_name").fill_null("") == _kernel_name(kernel))["launch_id"]
        rules = rules.filter(pl.col("launch_id").is_in(keep.implode()))
    if not rules.height:
        return []
    return [html.Details([
        html.Summary(f"Nsight Compute's own rules: {rules.height:,} warnings"),
        finding_groups.rules_summary(rules, p.launches),
    ], className="more", style={"marginTop": "12px"})]


def pager(page: int, pages: int) -> tuple[str, bool, bool, dict[str, str]]:
    """The pager's label, whether back and next are disabled, and its style (hidden for one page)."""
    return (f"page {page + 1} of {pages}", page <= 0, page >= pages - 1,
            {"display": "flex"} if pages > 1 else {"display": "none"})


# --------------------------------------------------------------------------------------------
# The timeline
# --------------------------------------------------------------------------------------------


def _events(report: OpenReport) -> timeline_view.Events:
    return report.view("events", lambda: timeline_view.events(report.profile))


def timeline_section(report: OpenReport) -> Any:
    ev = _events(report)
    fig, _ = timeline_view.figure(ev)
    # the window's summary follows the first draw (``zoom_timeline``), off the path to the drawn timeline
    note = (f"{ev.count:,} events; the summary of the window shown follows…" if ev.count
            else "This timeline has no events to draw.")
    return html.Div([
        html.Div([
            dcc.Input(id=ids.EXP_TIMELINE_SEARCH, type="search", debounce=True, className="text",
                      placeholder="find events by name (a kernel, an NVTX range, cudaMemcpy…)"),
        ], className="field search"),
        html.P(note, id=ids.EXP_TIMELINE_NOTE, className="small muted"),
        dcc.Graph(id=ids.EXP_TIMELINE, figure=fig, config={"displaylogo": False, "scrollZoom": True,
                                                           "responsive": True}),
        html.P("Drag across the plot to zoom into a range and see what happened in it; double-click for the "
               "whole trace; click a bar for what it holds.", className="small muted"),
        html.Div(id=ids.EXP_TIMELINE_MATCHES),
        html.Div(id=ids.EXP_TIMELINE_DETAIL),
    ])


def window_note(ev: timeline_view.Events, win: tuple[int, int] | None) -> str:
    if win is None:
        return "This timeline has no events to draw."
    text = timeline_view.summary_text(timeline_view.window_summary(ev, *win))
    return text + " Events closer than a pixel are merged, drawn as pale as they are idle."


def matches_view(ev: timeline_view.Events, text: str | None) -> Any:
    """What a search found: each name with its count, total time and first start."""
    if not (text or "").strip():
        return None
    found = timeline_view.search(ev, text)
    table = timeline_view.matches_table(found)
    if table.is_empty():
        return alert(f"No event's name contains \"{text.strip()}\".", "info", id=ids.EXP_TIMELINE_MATCHES + "-none")
    rows = [[n, timeline_view.CATEGORY_LABELS.get(c, c), f"{k:,}", fmt.duration_ns(t), fmt.duration_ns(f)]
            for n, c, k, t, f in table.head(SEARCH_ROWS).iter_rows()]
    more = table.height - SEARCH_ROWS
    return card(html.H3(f"{found.count:,} events match \"{text.strip()}\" (outlined on the plot)"),
                plain_table(["name", "kind", "events", "total time", "first at"], rows,
                            numeric=[False, False, True, True, True]),
                html.P(f"and {more:,} more names", className="small muted") if more > 0 else None,
                id=ids.EXP_TIMELINE_MATCHES + "-card")


def details_view(report: OpenReport, point: dict[str, Any] | None) -> Any:
    """The bar the user clicked: one event's record, or what a merged bar holds."""
    data = (point or {}).get("customdata")
    if not data or len(data) < 5 or not isinstance(report.profile, Timeline):
        return no_update
    kind, row, t0, t1, _ = (int(v) for v in data[:5])
    d = timeline_view.details(_events(report), report.profile, kind, row, t0, t1, str(point.get("y", "")))
    if d["single"]:
        rec = d["record"]
        rows = [[html.Code(k), _value(k, v)] for k, v in rec.items() if k not in ("row",)]
        return card(html.H3(d["name"]), html.P(d["lane"], className="small muted"),
                    plain_table(["field", "value"], rows, numeric=[False, True]), id=ids.EXP_TIMELINE_DETAIL + "-card")
    rows = [[n["name"], f"{n['count']:,}", fmt.duration_ns(n["total_ns"])] for n in d["names"]]
    return card(html.H3(f"{d['events']:,} events merged into one bar"),
                html.P(f"{d['lane']}: {fmt.duration_ns(d['t1_ns'] - d['t0_ns'])}, {fmt.pct(d['busy_pct'], 3)} busy. "
                       "Zoom in to see each one.", className="small muted"),
                plain_table(["name", "events", "total time"], rows, numeric=[False, True, True]),
                html.P(f"and {d['more_names']:,} more names", className="small muted") if d["more_names"] else None,
                id=ids.EXP_TIMELINE_DETAIL + "-card")


def _value(column: str, v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if column.endswith("_ns"):
        return fmt.duration_ns(v)
    if column.endswith("bytes"):
        return fmt.si(v, "B")
    return fmt.number(v)


# --------------------------------------------------------------------------------------------
# Comparing with a baseline
# --------------------------------------------------------------------------------------------


def compare_options(ctx: Context, report: OpenReport) -> list[dict[str, str]]:
    """Every other report this server has open, then the shipped traces."""
    opened = [{"label": f"open: {r.name}", "value": f"open:{r.token}"} for r in ctx.reports.all()
              if r.token != report.token and not r.token.startswith("trace:")]
    shipped = [{"label": t.id, "value": f"trace:{t.id}"} for t in shipped_traces(ctx.settings.traces_dir)
               if f"trace:{t.id}" != report.token]
    return opened + shipped


def compare_section(ctx: Context, report: OpenReport) -> html.Div:
    return html.Div([
        html.P(["Pick the report from before the change (upload it first, or choose a trace): coach compares "
                "the two as ", html.Code("coach diff BASELINE THIS"), " does."], className="small muted"),
        html.Div([html.Label("baseline (before)", htmlFor=ids.EXP_COMPARE_PICK),
                  dcc.Dropdown(id=ids.EXP_COMPARE_PICK, options=compare_options(ctx, report),
                               placeholder="choose the baseline")], className="field pick"),
        dcc.Loading(html.Div(id=ids.EXP_COMPARE), type="dot", color="#4f46e5"),
    ])


def _baseline(ctx: Context, value: str) -> OpenReport | None:
    if value.startswith("open:"):
        return ctx.reports.get(value[5:])
    if value.startswith("trace:"):
        return open_shipped(ctx.reports, ctx.settings.traces_dir, value[6:])
    return None


def comparison(ctx: Context, report: OpenReport, value: str | None) -> Any:
    """``coach diff`` of the baseline ``value`` against ``report``, as the command prints it."""
    if not value:
        return None
    base = _baseline(ctx, value)
    if base is None:
        return alert("That report is no longer open: upload it again.", "info")
    d = report.view(("diff", base.token), lambda: analysis.diff(base.profile, report.profile))
    parts: list[Any] = [html.H3(f"{base.name} → {report.name}"),
                        html.Ul([html.Li(line) for line in d.get("verdict", [])], id=ids.EXP_COMPARE + "-verdict")]
    moves = [m for m in d.get("movements", []) if m.get("direction") in ("up", "down")]
    if moves:
        shown = moves[:12]
        parts += [html.H3("What moved", style={"marginTop": "12px"}),
                  plain_table(["metric", "before", "after", "change", "direction"],
                              [[m.get("label") or m.get("metric"), _moved(m, "before"), _moved(m, "after"),
                                fmt.pct(m.get("change_pct"), 3), m.get("direction")] for m in shown],
                              numeric=[False, True, True, True, False])]
    if d.get("comparability"):
        parts += [html.H3("Do the runs compare?", style={"marginTop": "12px"}),
                  plain_table(["aspect", "before", "after", "same", "note"],
                              [[r.get("aspect"), str(r.get("before") or fmt.MISSING), str(r.get("after") or fmt.MISSING),
                                {True: "yes", False: "no"}.get(r.get("same"), "not in the profiles"), r.get("note") or ""]
                               for r in d["comparability"]])]
    parts.append(html.P(["The same on the command line: ", html.Code(f"coach diff {base.name} {report.name}")],
                        className="small muted"))
    return card(*parts, id=ids.EXP_COMPARE + "-card")


def _moved(m: dict[str, Any], side: str) -> str:
    unit = {"byte": "B", "byte/s": "B/s"}.get(m.get("unit") or "", m.get("unit") or "")
    return quantity(m.get(side), unit)


# --------------------------------------------------------------------------------------------
# The body
# --------------------------------------------------------------------------------------------


def report_body(ctx: Context, report: OpenReport) -> html.Div:
    p = report.profile
    parts: list[Any] = [
        dcc.Store(id=ids.EXP_SHOWN, data={"token": report.token, "name": report.name}),
        # A timeline's diagnosis can take seconds on a large trace: it starts once the timeline is
        # drawn, so that it does not compete with drawing it for the CPU. A kernel profile's is quick.
        dcc.Store(id=ids.EXP_DRAWN, data=None if isinstance(p, Timeline) else True),
        dcc.Store(id=ids.EXP_FINDINGS_PAGE, data=0),
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
                 className="field pick", style={"maxWidth": "520px", "marginBottom": "12px"}),
        dcc.Loading(html.Div(id=ids.EXP_FINDINGS), type="dot", color="#4f46e5"),
        html.Div([html.Button("← Previous", id=ids.EXP_PAGE_PREV, className="btn secondary", n_clicks=0),
                  html.Span(id=ids.EXP_PAGE_LABEL, className="small muted"),
                  html.Button("Next →", id=ids.EXP_PAGE_NEXT, className="btn secondary", n_clicks=0)],
                 className="pager", id=ids.EXP_PAGER, style={"display": "none"}),
        html.H2("Compare with a baseline"),
        card(guarded(lambda: compare_section(ctx, report), "comparison")),
    ]
    return html.Div(parts)


# --------------------------------------------------------------------------------------------
# Callbacks
# --------------------------------------------------------------------------------------------


def register(app: Dash, ctx: Context) -> None:
    app.server.add_url_rule(UPLOAD_PATH, "coach_upload", lambda: upload(ctx), methods=["POST"])

    @app.callback(Output(ids.REPORT, "data"), Output(ids.EXP_OPENED, "data", allow_duplicate=True),
                  Output(ids.EXP_MESSAGE, "children", allow_duplicate=True),
                  Input(ids.EXP_PICK, "value"), prevent_initial_call=True)
    def open_report(trace_id: str | None):
        data, message = open_trace(ctx, trace_id)
        return data, data, message

    # The report to draw when the page arrives: the one the session keeps (the shell's report store,
    # read from the browser's session storage itself, so that it is there however early this runs),
    # unless the layout drew the trace the URL names.
    app.clientside_callback(
        """function(arrived) {
            if (arrived && arrived.drawn) { return window.dash_clientside.no_update; }
            var kept = window.sessionStorage.getItem('""" + ids.REPORT + """');
            try { return kept ? JSON.parse(kept) || {} : {}; } catch (e) { return {}; }
        }""",
        Output(ids.EXP_OPENED, "data"), Input(ids.EXP_ARRIVED, "data"))

    # EXP_OPENED: a report the user opened (a pick here, an upload from assets/coach.js) or the
    # session's, on arrival.
    @app.callback(Output(ids.EXP_BODY, "children"), Input(ids.EXP_OPENED, "data"), prevent_initial_call=True)
    def render_report(data: dict[str, str] | None):
        return render(ctx, data)

    # The timeline reports its first draw (plotly's first relayout event) and only then is it diagnosed.
    app.clientside_callback("function(relayout, drawn) { return drawn ? window.dash_clientside.no_update : true; }",
                            Output(ids.EXP_DRAWN, "data"), Input(ids.EXP_TIMELINE, "relayoutData"),
                            State(ids.EXP_DRAWN, "data"), prevent_initial_call=True)

    @app.callback(Output(ids.EXP_FINDINGS, "children"), Output(ids.EXP_FINDINGS_PAGE, "data"),
                  Output(ids.EXP_PAGE_LABEL, "children"), Output(ids.EXP_PAGE_PREV, "disabled"),
                  Output(ids.EXP_PAGE_NEXT, "disabled"), Output(ids.EXP_PAGER, "style"),
                  Input(ids.EXP_KERNEL, "value"), Input(ids.EXP_DRAWN, "data"),
                  Input(ids.EXP_PAGE_PREV, "n_clicks"), Input(ids.EXP_PAGE_NEXT, "n_clicks"),
                  State(ids.EXP_FINDINGS_PAGE, "data"), State(ids.EXP_SHOWN, "data"))
    def filter_findings(kernel: str | None, drawn: bool | None, _prev: int | None, _next: int | None,
                        page: int | None, data: dict[str, str] | None):
        report = ctx.reports.get((data or {}).get("token"))
        if report is None:
            return (no_update,) * 6
        if not drawn:
            return (html.P("Diagnosing once the timeline is drawn…", className="muted"), 0, *pager(0, 1))
        step = {ids.EXP_PAGE_PREV: -1, ids.EXP_PAGE_NEXT: 1}.get(callback_ctx.triggered_id)
        wanted = 0 if step is None else int(page or 0) + step
        shown: list[tuple[int, int]] = []

        def build():
            body, at, pages = findings_view(report, kernel, wanted)
            shown.append((at, pages))
            return body
        body = guarded(build, "findings")
        at, pages = shown[0] if shown else (0, 1)
        return (body, at, *pager(at, pages))

    @app.callback(Output(ids.EXP_TIMELINE, "figure"), Output(ids.EXP_TIMELINE_NOTE, "children"),
                  Output(ids.EXP_TIMELINE_MATCHES, "children"),
                  Input(ids.EXP_TIMELINE, "relayoutData"), Input(ids.EXP_TIMELINE_SEARCH, "value"),
                  State(ids.EXP_TIMELINE, "figure"), State(ids.EXP_SHOWN, "data"), prevent_initial_call=True)
    def zoom(relayout: dict[str, Any] | None, text: str | None, shown: dict[str, Any] | None,
             data: dict[str, str] | None):
        return zoom_timeline(ctx, relayout, data, text, shown, callback_ctx.triggered_id == ids.EXP_TIMELINE_SEARCH)

    @app.callback(Output(ids.EXP_TIMELINE_DETAIL, "children"), Input(ids.EXP_TIMELINE, "clickData"),
                  State(ids.EXP_SHOWN, "data"), prevent_initial_call=True)
    def click(click_data: dict[str, Any] | None, data: dict[str, str] | None):
        report = ctx.reports.get((data or {}).get("token"))
        points = (click_data or {}).get("points") or []
        if report is None or not points:
            return no_update
        return guarded(lambda: details_view(report, points[0]), "details")

    @app.callback(Output(ids.EXP_COMPARE, "children"), Input(ids.EXP_COMPARE_PICK, "value"),
                  State(ids.EXP_SHOWN, "data"), prevent_initial_call=True)
    def compare(value: str | None, data: dict[str, str] | None):
        report = ctx.reports.get((data or {}).get("token"))
        if report is None:
            return no_update
        return guarded(lambda: comparison(ctx, report, value), "comparison")


def upload(ctx: Context) -> flask.Response:
    """``POST UPLOAD_PATH?name=<file name>`` with the file's bytes as the body: the report's token
    and name, or (still status 200: the request worked, the file did not) a one-line error naming
    the file."""
    req = flask.request
    name = display_name(req.args.get("name"))
    if req.headers.get(UPLOAD_HEADER) != "1":
        return flask.jsonify(error=f"{name}: refused (the upload did not come from coach's own page)"), 403
    try:
        path = receive_stream(req.stream, req.args.get("name"), ctx.upload_dir, ctx.settings.upload_limit_bytes,
                              length=req.content_length)
        report = ctx.reports.add(name, read_path(path, req.args.get("name"), ctx.upload_dir))
    except CoachError as err:  # an answer about the file, not a failed request: the page shows it
        return flask.jsonify(error=str(err))
    except Exception as err:  # a reader's bug: one line, the traceback in the server log
        log.exception("opening an upload failed")
        return flask.jsonify(error=f"{name}: internal error while reading it ({type(err).__name__})"), 500
    return flask.jsonify(token=report.token, name=report.name)


def open_trace(ctx: Context, trace_id: str | None):
    """The report store's new value and a message, for a pick from the shipped traces."""
    if not trace_id:
        return no_update, no_update
    try:
        report = open_shipped(ctx.reports, ctx.settings.traces_dir, trace_id)
    except CoachError as err:
        return no_update, alert(str(err), "error", id="exp-error")
    except Exception as err:  # a reader's bug: one line, the traceback in the server log
        log.exception("opening a report failed")
        return no_update, alert(f"{trace_id}: internal error while reading it ({type(err).__name__}: {err})", "error",
                                id="exp-error")
    return {"token": report.token, "name": report.name}, None


def render(ctx: Context, data: dict[str, str] | None) -> Any:
    report = ctx.reports.get((data or {}).get("token"))
    if report is None:
        if data:
            return alert(f"{data.get('name', 'The report')} is no longer open (the server was restarted or opened "
                         "newer reports): open it again.", "info")
        return empty("No report open", "Upload a report above or pick a recorded trace.")
    return report_body(ctx, report)


def zoom_timeline(ctx: Context, relayout: dict[str, Any] | None, data: dict[str, str] | None,
                  text: str | None = None, shown: dict[str, Any] | None = None, searched: bool = False):
    report = ctx.reports.get((data or {}).get("token"))
    if report is None or not isinstance(report.profile, Timeline):
        return no_update, no_update, no_update
    ev = _events(report)
    win = timeline_view.visible_window(relayout)
    rng = (((shown or {}).get("layout") or {}).get("xaxis") or {}).get("range")
    if searched:  # a new search keeps the window on screen
        win = timeline_view.visible_window({"xaxis.range": rng}) if rng else None
    elif win is None:  # the first draw (or a resize): sum up the window on screen, redraw nothing
        here = timeline_view.visible_window({"xaxis.range": rng}) if rng else None
        return no_update, window_note(ev, timeline_view.resolve(ev, *here) if isinstance(here, tuple)
                                      else timeline_view.resolve(ev, None, None)), no_update
    hits = timeline_view.search(ev, text) if (text or "").strip() else None
    if win in (None, "all"):
        t0, t1 = (ev.span_ns if win == "all" else timeline_view.resolve(ev, None, None)) or (0, 0)
    else:
        t0, t1 = win
    fig, _ = timeline_view.figure(ev, t0, t1, highlight=hits)
    resolved = timeline_view.resolve(ev, t0, t1)
    return fig, window_note(ev, resolved), matches_view(ev, text) if searched or hits is not None else no_update
