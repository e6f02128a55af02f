"""Ladders: every recorded version ladder at a glance (``/ladders``), and each one in full
(``/ladders/<name>``, the name as ``coach.ladders.ladder_names`` gives it): its rungs as a trajectory
against the measured ceiling, the speed-up of each step, the peers timed in the same run, the goal
met or missed, and for every rung the reason and the prediction next to what was measured. The
numbers are ``coach ladder NAME``'s: ``coach.ladders.rung_table``'s rows, through
``coach.app.ladder_view``."""

from __future__ import annotations

from typing import Any

from dash import Dash, dcc, html

from coach.analyze.ladder_evidence import Recorded
from coach.app import format as fmt
from coach.app import ids
from coach.app import ladder_view as view
from coach.app.components import alert, badge, card, empty, header, plain_table, stat
from coach.app.context import Context
from coach.app.ladder_view import Listing, median, ok
from coach.ladders import Row

PREFIX = "/ladders/"
PATH = "/ladders"
NAV_LABEL = "Ladders"
TITLE = "Version ladders"
LEDE = ("From a naive kernel to a fast one, one justified step at a time: what each step predicted, what it "
        "measured, and how close it came to the hardware's measured ceiling.")
GRAPH = {"displaylogo": False}


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    listings = view.recorded_ladders(ctx)
    name = rest.strip("/")
    return ladder_page(name, query.get("gpu"), listings) if name else overview_page(ctx, listings)


def href(item: Listing) -> str:
    """The page of one recording of a ladder."""
    return f"{PREFIX}{item.name}?gpu={item.gpu}"


# --------------------------------------------------------------------------------------------
# /ladders: every ladder
# --------------------------------------------------------------------------------------------


def overview_page(ctx: Context, listings: list[Listing]) -> html.Div:
    intro = header(TITLE, LEDE)
    waiting = view.unrecorded(ctx, listings)
    if not listings:
        defined = (f"{len(waiting)} ladders are defined under kernels/ ({', '.join(waiting)}); "
                   if waiting else "No ladder is defined under kernels/ yet; ")
        return html.Div([intro, html.Div(empty("No ladder results are recorded yet", [
            defined, "a ladder appears here once its rungs are measured on a GPU (",
            html.Code("python3 -m coach.capture.ladder run NAME --ncu --out OUTDIR"), ", see kernels/README.md) and "
            "kept under ", html.Code("traces/<gpu>/ladders/NAME/"), "."]), id=ids.LAD_BODY)])
    read = [item for item in listings if item.recorded is not None]
    return html.Div([intro, html.Div([
        *[alert(f"{item.name}: {item.problem}", "error") for item in listings if item.problem],
        card(dcc.Graph(figure=view.overview(listings), config=GRAPH)) if read else None,
        card(overview_table(read), id=ids.LAD_OVERVIEW) if read else None,
        html.P(f"Defined but not recorded yet: {', '.join(waiting)}.", className="small muted") if waiting else None,
    ], id=ids.LAD_BODY)])


def overview_table(read: list[Listing]) -> html.Table:
    rows = []
    for item in read:
        rec = item.recorded
        g = view.goal(rec)
        ms, last, peer = view.measure(rec), g.last, view.strongest_peer(rec.results)
        m = last.result if last else None
        rows.append([
            dcc.Link(rec.defn.title, href=href(item)), rec.results.gpu, str(len(rec.rows)),
            f"{last.rung.id} {last.rung.title}" if last else fmt.MISSING, median(m and m.time_s),
            ms.show(ms.rate(m)), view.percent(last and last.pct_of_ceiling), view.times(last and last.vs_first),
            f"{view.times(peer.time_s / m.time_s)} {peer.key}" if peer and m else fmt.MISSING,
            view.goal_badge(g),
        ])
    return plain_table(["ladder", "GPU", "rungs", "last rung", "median", "rate", "% of ceiling", "× rung 00",
                        "× strongest peer", "goal"], rows,
                       numeric=[False, False, True, False, True, True, True, True, True, False])


# --------------------------------------------------------------------------------------------
# /ladders/<name>: one ladder
# --------------------------------------------------------------------------------------------


def ladder_page(name: str, gpu: str | None, listings: list[Listing]) -> html.Div:
    """One recording of ladder ``name``: on ``gpu`` (a folder under traces/) or the first recorded."""
    mine = [item for item in listings if item.name == name]
    item = next((x for x in mine if x.gpu == gpu), mine[0] if mine else None)
    names = dict.fromkeys(x.name for x in listings)
    links = html.Div([dcc.Link("All ladders", href=PATH),
                      *[dcc.Link(n, href=PREFIX + n, className="active" if n == name else "") for n in names],
                      *([html.Span("GPU:", className="muted")] + [dcc.Link(x.gpu, href=href(x),
                                                                           className="active" if x is item else "")
                                                                  for x in mine] if len(mine) > 1 else [])],
                     className="chips")
    if item is None:
        return html.Div([links, header(TITLE), html.Div(empty(
            f"No recorded ladder '{name}'", ["Pick one above or from ", dcc.Link("all ladders", href=PATH), "."]),
            id=ids.LAD_BODY)])
    body = ladder_section(item) if item.recorded is not None else alert(f"{item.name}: {item.problem}", "error")
    return html.Div([links, html.Div(body, id=ids.LAD_BODY)])


def ladder_section(item: Listing) -> html.Section:
    rec = item.recorded
    defn, res = rec.defn, rec.results
    ms, g = view.measure(rec), view.goal(rec)
    last = g.last
    peer = view.strongest_peer(res)
    return html.Section([
        html.Div([badge("ladder"), badge(res.gpu, "muted"), badge(f"{len(rec.rows)} rungs", "muted"), view.goal_badge(g)],
                 className="badges"),
        header(defn.title, defn.size),
        html.P(["Computes ", html.Code(defn.operation), "."], className="small"),
        alert("Synthetic results (a test fixture), not a measurement.", "error") if res.synthetic else None,
        html.Div([
            stat("first to last", view.times(last and last.vs_first)),
            stat("last rung", ms.show(last and ms.rate(last.result))),
            stat("of the ceiling", view.percent(last and last.pct_of_ceiling)),
            stat(f"over {peer.key}" if peer else "over the peers",
                 view.times(peer.time_s / last.result.time_s) if peer and last else fmt.MISSING),
        ], className="stats"),
        goal_panel(ms, g, view.conclusion(defn)),
        html.Div([card(dcc.Graph(figure=view.trajectory(rec), config=GRAPH), id=ids.LAD_TRAJECTORY),
                  card(dcc.Graph(figure=view.step_speedups(rec), config=GRAPH), id=ids.LAD_STEPS)],
                 className="two wide-left"),
        html.H2("Rungs"),
        card(rung_table(rec), id=ids.LAD_RUNGS),
        html.H2("Peers, timed in the same run"),
        card(peer_table(rec), id=ids.LAD_PEERS),
        html.H2("Each step: the reason and the prediction, then what was measured"),
        *[rung_card(ms, row) for row in rec.rows],
        html.P(provenance(item), className="small muted"),
    ], id=f"ladder-{view.slug(defn.name)}")


def goal_panel(ms: view.Measure, g: view.Goal, notes: str) -> html.Div:
    """The goal against the last correct rung, and the notes' conclusion: open where the goal is missed."""
    if g.last is None:
        verdict = f"Goal: {g.text}. No rung was correct, so none could meet it."
    else:
        verdict = (f"Goal: {g.text}. The last rung, {g.last.rung.id} ({g.last.rung.title}), reaches "
                   f"{ms.show(ms.rate(g.last.result))}: {'met' if g.met else 'missed'}.")
        if not g.met and g.reached_by:
            verdict += f" Reached by rung {', '.join(r.rung.id for r in g.reached_by)}."
    return html.Div([
        alert(verdict, "ok" if g.met else "error"),
        html.Details([html.Summary("Why the goal is missed, from the ladder's notes" if not g.met
                                   else "What the ladder's notes conclude"),
                      dcc.Markdown(notes, className="notes")], open=not g.met, className="more")
        if notes else None,
    ], id=ids.LAD_GOAL)


def rung_table(rec: Recorded) -> html.Div:
    """``coach ladder NAME``'s table: every rung, its median and spread, its rate and share of the
    ceiling, its speed-ups, and what Nsight Compute measured of its longest kernel."""
    res, ms = rec.results, view.measure(rec)
    rows, slower = [], []
    for row in rec.rows:
        m, p = row.result, rec.profiles.get(row.rung.key)
        if not ok(m):
            rows.append([row.rung.id, row.rung.title, "not run" if m is None else m.status,
                         *[fmt.MISSING] * 8])
            slower.append(False)
            continue
        rows.append([
            row.rung.id, row.rung.title, median(m.time_s), f"{median(m.p20_s)} – {median(m.p80_s)}",
            ms.show(ms.rate(m)), view.percent(row.pct_of_ceiling), view.times(row.vs_previous),
            view.times(row.vs_first), view.times(row.vs_baseline),
            view.percent(p and p["dram_throughput_pct"]), view.percent(p and p["sm_issue_active_pct"]),
        ])
        slower.append(row.vs_previous is not None and row.vs_previous < 1)
    return html.Div([
        plain_table(["rung", "change", "median", "p20 – p80", ms.label, "% of ceiling", "× previous", "× rung 00",
                     f"× {res.baseline}", "DRAM % of peak (ncu)", "issue active (ncu)"], rows,
                    numeric=[False, False, *[True] * 9], highlight=slower),
        html.P([f"{ms.label.capitalize()}: the ladder's model of the work (", fmt.si(work(rec, ms), ms.work_unit),
                " per call, the same for every rung) over the median time. Ceiling: ", html.Code(res.ceiling_name),
                ", ", ms.show(ms.ceiling), ", measured on this GPU. ×: time ratios, > 1 is faster; a "
                "highlighted rung is slower than the one before it. Nsight Compute columns: the rung's longest "
                "kernel, profiled once with clocks unlocked."], className="small muted"),
    ])


def work(rec: Recorded, ms: view.Measure) -> int | None:
    """One call's work by the ladder's model, as the runner recorded it with the first rung."""
    return next((ms.work_of(m) for m in rec.results.rungs if ms.work_of(m)), None)


def peer_table(rec: Recorded) -> html.Table:
    res, ms = rec.results, view.measure(rec)
    last = view.goal(rec).last
    rows = []
    for p in res.peers:
        if not ok(p):
            rows.append([p.key, p.status, fmt.MISSING, fmt.MISSING, fmt.MISSING, p.error or fmt.MISSING])
            continue
        rows.append([p.key, median(p.time_s), f"{median(p.p20_s)} – {median(p.p80_s)}", ms.show(ms.rate(p)),
                     view.percent(ms.percent(p)),
                     view.times(p.time_s / last.result.time_s) if last else fmt.MISSING])
    return plain_table(["peer", "median", "p20 – p80", ms.label, "% of ceiling",
                        f"rung {last.rung.id} over it" if last else "last rung over it"], rows,
                       numeric=[False, True, True, True, True, True])


def rung_card(ms: view.Measure, row: Row) -> html.Div:
    """One rung: the change; why and what was predicted, beside what was measured and why it differs."""
    m, rung = row.result, row.rung
    if ok(m):
        numbers = [badge(median(m.time_s), "muted"), badge(ms.show(ms.rate(m)), "muted"),
                   badge(f"{view.percent(row.pct_of_ceiling)} of the ceiling", "muted")]
        if row.vs_previous is not None:
            numbers.append(badge(f"{view.times(row.vs_previous)} the previous rung",
                                 "good" if row.vs_previous >= 1 else "bad"))
    else:
        numbers = [badge("not run" if m is None else f"{m.status}: {m.error}", "bad")]
    measured: list[Any] = [html.P(rung.measured or "Not written up yet; the numbers above are the recording's.")]
    if rung.why:
        measured += [html.H4("Why it differs from the prediction"), html.P(rung.why)]
    return card(
        html.Div([badge(rung.id), badge("Triton" if rung.language == "triton" else "CUDA C++", "muted"), *numbers],
                 className="badges"),
        html.H3(rung.title, style={"marginTop": "8px"}),
        html.P([html.Strong("Change: "), rung.change]),
        html.Div([
            html.Div([html.H4("Reason"), html.P(rung.reason), html.H4("Prediction, before measuring"),
                      html.P(rung.prediction)]),
            html.Div([html.H4("Measured"), *measured]),
        ], className="two"),
        className="rung", id=f"rung-{rung.key}",
    )


def provenance(item: Listing) -> str:
    res = item.recorded.results
    prov = res.provenance
    timing = res.extra.get("timing", {})
    parts = [prov.get("gpu_name", res.gpu), f"driver {prov.get('driver')}", f"CUDA {prov.get('cuda')}",
             f"torch {prov.get('torch')}", f"triton {prov.get('triton')}", str(prov.get("date")),
             f"commit {str(prov.get('git_commit'))[:12]}"]
    method = f" Timing: {timing['method']}." if isinstance(timing, dict) and timing.get("method") else ""
    return (f"Recorded on the {', '.join(parts)}.{method} Files: traces/{item.gpu}/ladders/{item.name}/ "
            f"(results.json, ncu/); the rungs' words: kernels/{item.name}/ladder.toml and NOTES.md.")


def register(app: Dash, ctx: Context) -> None:
    """The pages are static: everything is drawn when they load."""
