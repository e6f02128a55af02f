"""Ladders: every recorded version ladder at a glance (``/ladders``), and each one in full
(``/ladders/<name>?gpu=<gpu>&size=<size>``, the name as ``coach.ladders.ladder_names`` gives it, the
size one of those it was measured at, its main one by default): its rungs as a trajectory against
the measured ceiling (bandwidth, or FLOP/s for a compute-bound ladder, whose rungs also sit on the
roofline), the speed-up of each step, the peers timed in the same run, the goal met or missed, and
for every rung the reason and the prediction next to what was measured. The numbers are
``coach ladder NAME --size SIZE``'s: ``coach.ladders.rung_table``'s rows, through
``coach.app.ladder_view``."""

from __future__ import annotations

from typing import Any, Mapping

from dash import Dash, dcc, html

from coach.analyze.ladder_evidence import Recorded
from coach.app import format as fmt
from coach.app import ids
from coach.app import ladder_view as view
from coach.app.components import alert, badge, card, empty, header, plain_table, stat
from coach.app.context import Context
from coach.app.ladder_view import Listing, median, ok
from coach.errors import CoachError
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
    return ladder_page(name, query.get("gpu"), query.get("size"), listings) if name else overview_page(ctx, listings)


def href(item: Listing, size: str | None = None) -> str:
    """The page of one recording of a ladder, at ``size`` (None: its main size)."""
    return f"{PREFIX}{item.name}?gpu={item.gpu}" + (f"&size={size}" if size else "")


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
            html.Span([view.goal_badge(g), sizes_met(item)]),
        ])
    return plain_table(["ladder", "GPU", "rungs", "last rung", "median", "rate", "% of ceiling", "× rung 00",
                        "× strongest peer", "goal"], rows,
                       numeric=[False, False, True, False, True, True, True, True, True, False])


def sizes_met(item: Listing) -> html.Span | None:
    """For a ladder measured at several sizes, at how many of them its last rung meets the goal."""
    if len(item.sizes) < 2:
        return None
    goals = view.size_goals(item)
    met = sum(1 for _, g in goals if g is not None and g.met)
    return html.Span(f" at {item.sizes[0]}; met at {met} of {len(goals)} sizes", className="small muted")


# --------------------------------------------------------------------------------------------
# /ladders/<name>: one ladder
# --------------------------------------------------------------------------------------------


def ladder_page(name: str, gpu: str | None, size: str | None, listings: list[Listing]) -> html.Div:
    """One recording of ladder ``name``: on ``gpu`` (a folder under traces/) or the first recorded, at
    ``size`` or its main one."""
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
    if item.recorded is None:
        body = alert(f"{item.name}: {item.problem}", "error")
    else:
        try:
            body = ladder_section(item, view.at_size(item, size))
        except CoachError as err:
            body = alert(f"{item.name}: {err}", "error")
    return html.Div([links, size_links(item, size), html.Div(body, id=ids.LAD_BODY)])


def size_links(item: Listing, size: str | None) -> html.Div | None:
    """One link per size the ladder was measured at on this GPU, with its goal met or missed there;
    the one shown marked."""
    if len(item.sizes) < 2:
        return None
    shown = size or item.sizes[0]
    return html.Div([html.Span("Size:", className="muted"),
                     *[dcc.Link(f"{s}: {goal_words(g)}", href=href(item, None if s == item.sizes[0] else s),
                                className="active" if s == shown else "") for s, g in view.size_goals(item)]],
                    className="chips", id=ids.LAD_SIZES)


def goal_words(g: view.Goal | None) -> str:
    return "unreadable" if g is None else "goal met" if g.met else "goal missed"


def ladder_section(item: Listing, rec: Recorded) -> html.Section:
    """The ladder ``rec`` (``item`` at one of its sizes) in full."""
    defn, res = rec.defn, rec.results
    ms, g = view.measure(rec), view.goal(rec)
    main = rec is item.recorded
    activity = item.activity_of(rec)
    last = g.last
    peer = view.strongest_peer(res)
    return html.Section([
        html.Div([badge("ladder"), badge(res.gpu, "muted"), badge(f"{len(rec.rows)} rungs", "muted"),
                  badge("compute-bound, FLOP/s" if ms.compute_bound else "memory-bound, bytes/s", "muted"),
                  *([badge(f"size {res.size_name}", "muted")] if len(item.sizes) > 1 else []), view.goal_badge(g)],
                 className="badges"),
        header(defn.title, defn.size if main else
               f"Measured at size {view.size_words(res)} (the main size: {defn.size})."),
        html.P(["Computes ", html.Code(defn.operation), "."], className="small"),
        alert("Synthetic results (a test fixture), not a measurement.", "error") if res.synthetic else None,
        html.Div([
            stat("first to last", view.times(last and last.vs_first)),
            stat("last rung", ms.show(last and last.rate)),
            stat("of the ceiling", view.percent(last and last.pct_of_ceiling)),
            stat(f"over {peer.key}" if peer else "over the peers",
                 view.times(peer.time_s / last.result.time_s) if peer and last else fmt.MISSING),
        ], className="stats"),
        goal_panel(ms, g, view.conclusion(defn)),
        html.Div([card(dcc.Graph(figure=view.trajectory(rec), config=GRAPH), id=ids.LAD_TRAJECTORY),
                  card(dcc.Graph(figure=view.step_speedups(rec), config=GRAPH), id=ids.LAD_STEPS)],
                 className="two wide-left"),
        roofline_card(item, rec, activity) if ms.compute_bound else None,
        html.H2("Rungs"),
        card(rung_table(rec, activity), id=ids.LAD_RUNGS),
        html.H2("Peers, timed in the same run"),
        card(peer_table(rec), id=ids.LAD_PEERS),
        html.H2("Each step: the reason and the prediction, then what was measured"),
        None if main else html.P(f"The words under Measured were written from the main size, {defn.main_size}; the "
                                 f"numbers beside each rung's title are of {res.size_name}.", className="small muted"),
        *[rung_card(ms, row, rec.profiles.get(row.rung.key), None if main else defn.main_size) for row in rec.rows],
        html.P(provenance(item, rec), className="small muted"),
    ], id=f"ladder-{view.slug(defn.name)}")


def goal_panel(ms: view.Measure, g: view.Goal, notes: str) -> html.Div:
    """The goal against the last correct rung (and the fastest, where another), and the notes'
    conclusion: open where the goal is missed."""
    if g.last is None:
        verdict = f"Goal: {g.text}. No rung was correct, so none could meet it."
    else:
        verdict = (f"Goal: {g.text} (needs {g.needs(ms)}). The last rung, {g.last.rung.id} ({g.last.rung.title}), "
                   f"reaches {g.reaches(ms, g.last)}: {g.judged(ms, g.last)}.")
        if not g.met and g.reached_by:
            verdict += f" Reached by rung {', '.join(r.rung.id for r in g.reached_by)}."
        if g.best is not None and g.best is not g.last:
            verdict += (f" The fastest, rung {g.best.rung.id} ({g.best.rung.title}), reaches {g.reaches(ms, g.best)}: "
                        f"{g.judged(ms, g.best)}.")
    return html.Div([
        alert(verdict, "ok" if g.met else "error"),
        html.Details([html.Summary("Why the goal is missed, from the ladder's notes" if not g.met
                                   else "What the ladder's notes conclude"),
                      dcc.Markdown(notes, className="notes")], open=not g.met, className="more")
        if notes else None,
    ], id=ids.LAD_GOAL)


def roofline_card(item: Listing, rec: Recorded, activity: Mapping[str, Mapping[str, Any]]) -> html.Div:
    """A compute-bound ladder's rungs on the roofline, or why they cannot be placed."""
    fig = view.roofline(rec, activity)
    if fig is None:
        why = (f"Nsight Compute profiled the main size, {rec.defn.main_size}, only: its page places each rung on "
               "the roofline." if rec is not item.recorded else
               "No rung has Nsight Compute's DRAM traffic, or the GPU is not in coach's hardware tables.")
        return card(empty("No roofline at this size", why), id=ids.LAD_ROOFLINE)
    return card(dcc.Graph(figure=fig, config=GRAPH), html.P(
        "Where each rung sits: its FLOPs (the work model) over the DRAM bytes Nsight Compute counted in all its "
        "launches, at the FLOP rate it achieved. A rung left of the ridge is held back by DRAM; reuse in shared "
        "memory and registers moves it right, towards the intensity of the compulsory traffic alone, and a rung "
        "under the flat roof is held back by the pipe it uses (see the pipe columns below).",
        className="small muted"), id=ids.LAD_ROOFLINE)


def rung_table(rec: Recorded, activity: Mapping[str, Mapping[str, Any]]) -> html.Div:
    """``coach ladder NAME``'s table: every rung, its median and spread, its rate and share of the
    ceiling, its speed-ups, and what Nsight Compute measured of its longest kernel: DRAM and issue
    activity (memory-bound), or which pipe was busiest and how busy the tensor and FMA pipes were
    (compute-bound)."""
    res, ms = rec.results, view.measure(rec)
    ncu = (["busiest pipe (ncu)", *[f"{words} (ncu)" for words in view.PIPES.values()]] if ms.compute_bound
           else ["DRAM % of peak (ncu)", "issue active (ncu)"])
    rows, slower = [], []
    for row in rec.rows:
        m, p, a = row.result, rec.profiles.get(row.rung.key), activity.get(row.rung.key)
        if not ok(m):
            rows.append([row.rung.id, row.rung.title, "not run" if m is None else m.status,
                         *[fmt.MISSING] * (6 + len(ncu))])
            slower.append(False)
            continue
        profiled = ([view.pipe(p and p.get("busiest_pipe_metric"), p and p.get("busiest_pipe_pct")),
                     *[view.percent(a and a[c]) for c in view.PIPES]] if ms.compute_bound
                    else [view.percent(p and p["dram_throughput_pct"]), view.percent(p and p["sm_issue_active_pct"])])
        rows.append([
            row.rung.id, row.rung.title, median(m.time_s), f"{median(m.p20_s)} – {median(m.p80_s)}",
            ms.show(row.rate), view.percent(row.pct_of_ceiling), view.times(row.vs_previous),
            view.times(row.vs_first), view.times(row.vs_baseline), *profiled,
        ])
        slower.append(row.vs_previous is not None and row.vs_previous < 1)
    where = ("Nsight Compute columns: the rung's longest kernel, profiled once with clocks unlocked"
             + (f", at the main size ({rec.defn.main_size}) only." if ms.compute_bound else "."))
    pipes = (" Busiest pipe: the pipe most used of its peak (ComputeWorkloadAnalysis: instructions issued to it, or "
             "cycles it was active); tensor and FMA pipes: cycles active, % of peak." if ms.compute_bound else "")
    return html.Div([
        plain_table(["rung", "change", "median", "p20 – p80", ms.label, "% of ceiling", "× previous", "× rung 00",
                     f"× {res.baseline}", *ncu], rows,
                    numeric=[False, False, *[True] * (7 + len(ncu))], highlight=slower),
        html.P([f"{ms.title}: the ladder's model of the work (", fmt.si(work(rec, ms), ms.work_unit),
                " per call, the same for every rung) over the median time. Ceiling: ", html.Code(res.ceiling_name),
                ", ", ms.show(ms.ceiling), ", measured on this GPU. ×: time ratios, > 1 is faster; a "
                f"highlighted rung is slower than the one before it. {where}{pipes}"], className="small muted"),
    ])


def work(rec: Recorded, ms: view.Measure) -> int | None:
    """One call's work by the ladder's model, as the runner recorded it with the first rung."""
    return next((ms.work(m) for m in rec.results.rungs if ms.work(m)), None)


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


def rung_card(ms: view.Measure, row: Row, profile: Mapping[str, Any] | None, written_at: str | None = None) -> html.Div:
    """One rung: the change; why and what was predicted, beside what was measured and why it differs.
    ``written_at``: the main size, where the page shows another (the words are of the main size, the
    badges of the page's)."""
    m, rung = row.result, row.rung
    if ok(m):
        numbers = [badge(median(m.time_s), "muted"), badge(ms.show(row.rate), "muted"),
                   badge(f"{view.percent(row.pct_of_ceiling)} of the ceiling", "muted")]
        if row.vs_previous is not None:
            numbers.append(badge(f"{view.times(row.vs_previous)} the previous rung",
                                 "good" if row.vs_previous >= 1 else "bad"))
        if ms.compute_bound and profile and profile.get("busiest_pipe_metric"):
            busiest = view.pipe(profile["busiest_pipe_metric"], profile["busiest_pipe_pct"])
            numbers.append(badge(f"busiest pipe: {busiest}", "muted"))
    else:
        numbers = [badge("not run" if m is None else f"{m.status}: {m.error}", "bad")]
    measured: list[Any] = [html.P(rung.measured or "Not written up yet; the numbers above are the recording's.")]
    if rung.why:
        measured += [html.H4("Why it differs from the prediction"), html.P(rung.why)]
    return card(
        html.Div([badge(rung.id), badge("Triton" if rung.language == "triton" else "CUDA C++", "muted"),
                  *([badge(rung.arch, "muted")] if rung.arch else []), *numbers],
                 className="badges"),
        html.H3(rung.title, style={"marginTop": "8px"}),
        html.P([html.Strong("Change: "), rung.change]),
        html.Div([
            html.Div([html.H4("Reason"), html.P(rung.reason), html.H4("Prediction, before measuring"),
                      html.P(rung.prediction)]),
            html.Div([html.H4(f"Measured at the main size, {written_at}" if written_at else "Measured"), *measured]),
        ], className="two"),
        className="rung", id=f"rung-{rung.key}",
    )


def provenance(item: Listing, rec: Recorded) -> str:
    res = rec.results
    prov = res.provenance
    timing = res.extra.get("timing", {})
    parts = [prov.get("gpu_name", res.gpu), f"driver {prov.get('driver')}", f"CUDA {prov.get('cuda')}",
             f"torch {prov.get('torch')}", f"triton {prov.get('triton')}", str(prov.get("date")),
             f"commit {str(prov.get('git_commit'))[:12]}"]
    method = f" Timing: {timing['method']}." if isinstance(timing, dict) and timing.get("method") else ""
    return (f"Recorded on the {', '.join(parts)}.{method} Files: traces/{item.gpu}/ladders/{item.name}/ "
            f"({res.path.name}, ncu/); the rungs' words: kernels/{item.name}/ladder.toml and NOTES.md.")


def register(app: Dash, ctx: Context) -> None:
    """The pages are static: everything is drawn when they load."""
