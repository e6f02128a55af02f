"""Scenario walkthrough: symptom -> your first check -> evidence -> bottleneck -> fix -> result.

A stepper over one ``coach.app.walkthrough.Walkthrough``. At "your first check" the user writes what
they would look at first and commits to it before the evidence is shown; only then does the page
show what a strong answer names and let them go on.

Where the user is lives in two places: the step in the address bar (``?step=3``, 1-based), so that
reload, Back and Forward show it, and the committed answer with the step in the browser's session
storage (per scenario), so that coming back to a scenario finds the answer still committed. A
``?step=`` past the answer step without a committed answer shows the answer step: the evidence
still waits for an answer.
"""

from __future__ import annotations

from typing import Any

from dash import Dash, Input, Output, State, ctx as callback_ctx, dcc, html, no_update

from coach.app import analysis, ids, timeline_view
from coach.app import format as fmt
from coach.app.components import alert, badge, card, empty, finding_card, guarded, header, plain_table, quantity, stat
from coach.app.context import Context
from coach.app.source_view import source_panel, where_line
from coach.app.theme import fit
from coach.app.walkthrough import ANSWER_STEP, STEPS, UNKNOWN, Walkthrough, side_by_side
from coach.recordings import fmt_evidence

PREFIX = "/scenario/"
PATH = "/scenario"
NAV_LABEL = "Scenario"
TITLE = "Scenario walkthrough"

START = {"step": 0, "answer": ""}


def wanted_step(query: dict[str, str]) -> int | None:
    """The 0-based step a ``?step=N`` (1-based) asks for, clamped; None where none is asked."""
    try:
        n = int(query.get("step", ""))
    except ValueError:
        return None
    return min(max(n - 1, 0), len(STEPS) - 1)


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    wid = rest.strip("/")
    walk = ctx.walkthrough(wid)
    if walk is None:
        known = ctx.walkthroughs()
        return html.Div([
            header(TITLE),
            empty(f"No scenario '{wid}'" if wid else "No scenario chosen",
                  ["Pick one from the ", dcc.Link("gallery", href="/"), "."] if known else
                  "No scenario walkthroughs are recorded yet."),
            *_controls(hidden=True),
        ])
    return html.Div([
        html.Div([badge(walk.level), badge(walk.id, "muted")], className="badges"),
        header(walk.title),
        None if walk.recorded else alert("This scenario's traces are not recorded yet: its numbers show as "
                                         f"{UNKNOWN} and its evidence, roofline and timelines appear once they are.",
                                         "info"),
        html.Div(id=ids.SCN_STEPPER),
        html.Div(id=ids.SCN_BODY),
        *_controls(hidden=False),
        dcc.Store(id=ids.SCN_ID, data=walk.id),
        dcc.Store(id=ids.SCN_WANTED, data=wanted_step(query)),
        dcc.Store(id=ids.SCN_STEP),
    ])


def _controls(hidden: bool) -> list[Any]:
    style = {"display": "none"} if hidden else {}
    answer = html.Div([
        dcc.Textarea(id=ids.SCN_ANSWER, className="text",
                     placeholder="What would you check first, and what number would confirm it?"),
        html.Button("Commit my answer", id=ids.SCN_COMMIT, className="btn", n_clicks=0, style={"marginTop": "8px"}),
    ], id=ids.SCN_ANSWER + "-box", style={"display": "none"})
    actions = html.Div([
        html.Button("← Back", id=ids.SCN_BACK, className="btn secondary", n_clicks=0),
        html.Button("Next →", id=ids.SCN_NEXT, className="btn", n_clicks=0),
    ], className="step-actions", style=style)
    stores = [dcc.Store(id=ids.SCN_ID), dcc.Store(id=ids.SCN_STEP), dcc.Store(id=ids.SCN_WANTED)] if hidden else []
    # the session's answers and steps, per scenario; kept across pages and reloads
    return [answer, actions, dcc.Store(id=ids.SCN_SAVED, storage_type="session"), dcc.Store(id=ids.SCN_URL_SYNC),
            *stores]


# --------------------------------------------------------------------------------------------
# The steps
# --------------------------------------------------------------------------------------------


def advance(state: dict[str, Any] | None, action: str, answer: str | None = None) -> dict[str, Any]:
    """The stepper's next state. The answer step cannot be passed before an answer is committed."""
    s = dict(START, **(state or {}))
    if action == "commit" and (answer or "").strip() and s["step"] == ANSWER_STEP:
        s["answer"] = answer.strip()
    elif action == "next" and (s["step"] != ANSWER_STEP or s["answer"]):
        s["step"] = min(s["step"] + 1, len(STEPS) - 1)
    elif action == "back":
        s["step"] = max(s["step"] - 1, 0)
    return s


def restore(saved: dict[str, Any] | None, wid: str, wanted: int | None) -> dict[str, Any]:
    """The state to open a walkthrough in: the session's answer for it, at the step the URL asks for
    (else the session's step), never past the answer step without an answer."""
    mine = dict(START, **((saved or {}).get(wid) or {}))
    step = mine["step"] if wanted is None else wanted
    if step > ANSWER_STEP and not mine["answer"]:
        step = ANSWER_STEP
    return {"step": int(step), "answer": mine["answer"]}


def stepper(step: int) -> html.Ol:
    return html.Ol([
        html.Li([html.Span(f"step {i + 1}", className="n"), name],
                className="step " + ("current" if i == step else "done" if i < step else ""))
        for i, name in enumerate(STEPS)
    ], className="stepper")


def symptom(ctx: Context, w: Walkthrough) -> list[Any]:
    parts: list[Any] = [card(dcc.Markdown(w.symptom))]
    if w.slow_timeline is not None:
        ev = ctx.view((w.id, "slow-events"), lambda: timeline_view.events(w.slow_timeline))
        parts.append(card(dcc.Graph(figure=timeline_view.figure(ev)[0], config={"displaylogo": False})))
    if w.before is not None:
        row = w.before.launches.row(0, named=True)
        parts.append(html.Div([
            stat("kernel", row["kernel_name"] or fmt.MISSING),
            stat("duration", fmt.duration_ns(row["duration_ns"])),
            stat("DRAM throughput", fmt.pct(row["dram_throughput_pct"])),
            stat("SM throughput", fmt.pct(row["sm_throughput_pct"])),
        ], className="stats"))
    parts.append(html.P([html.Strong("Before you go on: "), w.question]))
    return parts


def first_check(ctx: Context, w: Walkthrough, answer: str) -> list[Any]:
    parts: list[Any] = [html.H3(w.question)]
    if not answer:
        parts.append(html.P("Write down what you would check first and commit to it: the evidence comes after.",
                            className="muted"))
        return parts
    parts += [html.P("Your answer", className="small muted"), html.Div(answer, className="answer", id="scn-your-answer")]
    exercise = ctx.view((w.id, "exercise"), lambda: analysis.exercise(w.id))
    if exercise is not None:
        graded = analysis.grade(exercise, answer)
        parts += [html.H3(f"Against the rubric: {graded.score} of {graded.max_score}", style={"marginTop": "16px"},
                          id="scn-grade"),
                  html.Ul([html.Li(line) for line in graded.feedback()[:-1]], className="small"),
                  html.P(["The whole exercise, with the fix and the expected gain: ",
                          html.Code(f"coach exercise {w.id}")], className="small muted")]
    if w.strong:
        parts += [html.H3("What a strong answer names", style={"marginTop": "16px"}),
                  html.Ul([html.Li(s) for s in w.strong])]
    if w.red_flags:
        parts += [html.H3("Red flags"), html.Ul([html.Li(s) for s in w.red_flags])]
    if w.hints:
        parts.append(html.Details([html.Summary("Hints"), html.Ul([html.Li(h) for h in w.hints])], className="more"))
    return [card(*parts)]


def evidence(ctx: Context, w: Walkthrough) -> list[Any]:
    if not w.evidence:
        return [empty("No evidence recorded", "This scenario's traces are not recorded yet.")]
    return [*evidence_table_card(w), *slow_source(ctx, w)]


def slow_source(ctx: Context, w: Walkthrough) -> list[Any]:
    """The slow kernel's source with a heat column, the lines of coach's top finding highlighted
    (where the recording has source counters); nothing where there is no slow kernel profile."""
    if w.before is None or w.before.launches.is_empty():
        return []
    found = ctx.view((w.id, "findings"), lambda: analysis.findings(w.before)) or []
    located = next((f for f in found if f.locations), None)
    launch_id = located.launch_id if located is not None else int(w.before.launches["launch_id"][0])
    panel = source_panel(w.before, launch_id, located.locations if located is not None else (), id=ids.SCN_SOURCE)
    return [card(html.H3("The slow kernel's source"), where_line(located.locations) if located is not None else None,
                 panel)]


def evidence_table_card(w: Walkthrough) -> list[Any]:
    # a scenario's evidence in its own units, as coach run prints it; two reports' numbers in the analysis's
    show = (lambda v, unit: fmt_evidence(v, unit, fmt.MISSING)) if w.scenario else quantity
    rows = [[e.label, html.Code(e.metric), show(e.slow, e.unit), show(e.fixed, e.unit), e.healthy or fmt.MISSING]
            for e in w.evidence]
    return [card(
        html.P("The numbers that decide it, highlighted; the fixed version shows what healthy looks like.",
               className="muted"),
        plain_table(["what", "metric", "slow", "fixed", "healthy"], rows,
                    numeric=[False, False, True, True, False], highlight=[e.key for e in w.evidence]),
        id="scn-evidence",
    )]


def coach_finding(ctx: Context, w: Walkthrough) -> tuple[Any, int, int, str] | None:
    """coach's finding on the slow version that names the scenario's bottleneck (else its first),
    its rank among the findings, how many there are, and which profile it comes from."""
    for label, profile in (("Nsight Compute report", w.before), ("timeline", w.slow_timeline)):
        if profile is None:
            continue
        found = ctx.view((w.id, "findings", label), lambda profile=profile: analysis.findings(profile))
        real = [f for f in found or [] if not analysis.is_note(f)]
        if not real:
            continue
        match = next((i for i, f in enumerate(real) if str(f.category) == w.bottleneck), 0)
        return real[match], match + 1, len(real), label
    return None


def bottleneck(ctx: Context, w: Walkthrough) -> list[Any]:
    parts: list[Any] = [card(html.Div([badge(w.bottleneck, "bad")], className="badges"),
                             html.P(f"The bottleneck: {w.bottleneck.replace('-', ' ')}."))]
    if not analysis.available(analysis.DIAGNOSE):
        parts.append(html.P("coach's own diagnosis is not part of this version.", className="small muted"))
        return parts
    got = coach_finding(ctx, w)
    if got is None:
        if w.before is not None or w.slow_timeline is not None:
            parts.append(html.P("coach finds nothing to report in the slow version's profile.", className="small muted"))
        return parts
    f, rank, total, where = got
    ranked = "coach's first finding" if rank == 1 else f"coach's finding {rank} of {total}"
    parts += [html.H3(f"What coach finds in the slow version's {where}", style={"marginTop": "16px"}),
              html.P(f"{ranked}, with the numbers that prove it:" if total > 1 else "with the numbers that prove it:",
                     className="small muted"),
              finding_card(f, top=True)]
    return parts


def fix(w: Walkthrough) -> list[Any]:
    def code(lines):
        return html.Pre(html.Div([html.Span(line.text or " ", className=f"ln {line.change}".strip()) for line in lines],
                                 className="lines"))

    parts: list[Any] = [card(html.H3(w.fix_summary), dcc.Markdown(w.fix_details) if w.fix_details else None)]
    blocks = []
    for change in w.code:
        left, right = side_by_side(change.slow, change.fixed)
        blocks.append(html.Div([html.H3(change.label, className="change-label"),
                                html.Div([html.Div([html.H3("slow"), code(left)]),
                                          html.Div([html.H3("fixed"), code(right)])], className="diff")],
                               className="change"))
    if blocks:
        parts.append(card(*blocks, id="scn-diff"))
    else:
        parts.append(card(html.P("The two variants' code could not be told apart from the scenario's files.",
                                 className="muted"), id="scn-diff"))
    if w.wrong_fix:
        parts.append(card(html.H3("A fix that does not help"), dcc.Markdown(w.wrong_fix)))
    return parts


def aligned_timelines(ctx: Context, w: Walkthrough) -> list[Any]:
    """The slow and fixed timelines on one time axis: each from its GPU's first work, both over the
    longer of the two, so that the fixed one is visibly shorter."""
    evs = {label: ctx.view((w.id, f"{label}-events"), lambda tl=tl: timeline_view.events(tl))
           for label, tl in (("slow", w.slow_timeline), ("fixed", w.fixed_timeline)) if tl is not None}
    spans = {k: ev.gpu_span_ns or ev.span_ns for k, ev in evs.items()}
    spans = {k: v for k, v in spans.items() if v is not None}
    if not spans:
        return []
    length = max(hi - lo for lo, hi in spans.values())
    pad = max(int(length * timeline_view.OPEN_MARGIN), 1)
    out = []
    for label, ev in evs.items():
        if label not in spans:
            continue
        start = spans[label][0]
        fig, _ = timeline_view.figure(ev, start - pad, start + length + pad, origin_ns=start,
                                      axis_title="time since the GPU's first work (ms), the same scale for both",
                                      x_range_ms=(-pad / 1e6, (length + pad) / 1e6))
        fig.update_layout(title=f"Timeline, {label}: GPU work over {fmt.duration_ns(spans[label][1] - start)}")
        out.append(card(dcc.Graph(figure=fig, config={"displaylogo": False, "responsive": True},
                                  id=f"scn-timeline-{label}")))
    return out


def result(ctx: Context, w: Walkthrough) -> list[Any]:
    stats = html.Div([
        stat("slow", fmt.duration_ns(w.slow_time_ns)), stat("fixed", fmt.duration_ns(w.fixed_time_ns)),
        stat("speed-up", fmt.ratio(w.speedup)),
        stat(f"{w.rate_label}, slow", fmt.si(w.slow_rate, w.rate_unit)),
        stat(f"{w.rate_label}, fixed", fmt.si(w.fixed_rate, w.rate_unit)),
        *((stat("% of floor, slow", fmt.pct(100 * w.slow_floor_ns / w.slow_time_ns)),
           stat("% of floor, fixed", fmt.pct(100 * w.fixed_floor_ns / w.fixed_time_ns)))
          if w.slow_floor_ns and w.fixed_floor_ns and w.slow_time_ns and w.fixed_time_ns else ()),
    ], className="stats", id="scn-result-stats")
    parts: list[Any] = [stats]
    if w.before is not None and w.after is not None:
        def roof():
            fig = ctx.view((w.id, "roofline"), lambda: analysis.roofline_figure(w.before, compare=w.after,
                                                                              title="Before → after"))
            if fig is None:
                return empty("Roofline not available", "This version of coach has no roofline analysis yet.")
            return dcc.Graph(figure=fit(fig), config={"displaylogo": False, "responsive": True}, id="scn-roofline")
        parts.append(card(guarded(roof, "roofline")))
    parts += aligned_timelines(ctx, w)
    return parts


def body(ctx: Context, w: Walkthrough, state: dict[str, Any]) -> list[Any]:
    step = state["step"]
    if step == 0:
        return symptom(ctx, w)
    if step == ANSWER_STEP:
        return first_check(ctx, w, state["answer"])
    if step == 2:
        return evidence(ctx, w)
    if step == 3:
        return bottleneck(ctx, w)
    if step == 4:
        return fix(w)
    return result(ctx, w)


# --------------------------------------------------------------------------------------------
# Callbacks
# --------------------------------------------------------------------------------------------

ACTIONS = {ids.SCN_NEXT: "next", ids.SCN_BACK: "back", ids.SCN_COMMIT: "commit"}


def register(app: Dash, ctx: Context) -> None:
    # One callback owns the state: it opens the walkthrough from the session (on the page's arrival,
    # or when the session's store has read the browser's storage) and moves it on a button.
    @app.callback(Output(ids.SCN_STEP, "data"), Output(ids.SCN_SAVED, "data"),
                  Input(ids.SCN_NEXT, "n_clicks"), Input(ids.SCN_BACK, "n_clicks"), Input(ids.SCN_COMMIT, "n_clicks"),
                  Input(ids.SCN_SAVED, "data"),
                  State(ids.SCN_ANSWER, "value"), State(ids.SCN_STEP, "data"), State(ids.SCN_ID, "data"),
                  State(ids.SCN_WANTED, "data"))
    def move(_next, _back, _commit, saved, answer, state, wid, wanted):
        return move_state(callback_ctx.triggered_id, saved, answer, state, wid, wanted)

    @app.callback(Output(ids.SCN_STEPPER, "children"), Output(ids.SCN_BODY, "children"),
                  Output(ids.SCN_NEXT, "disabled"), Output(ids.SCN_BACK, "disabled"),
                  Output(ids.SCN_ANSWER + "-box", "style"),
                  Input(ids.SCN_STEP, "data"), State(ids.SCN_ID, "data"))
    def show(state, wid):
        if state is None:
            return no_update, no_update, no_update, no_update, no_update
        return render_step(ctx, wid, state)

    # the step into the address bar (assets/coach.js): a new history entry per step moved
    app.clientside_callback("function(state) { return window.coachStep ? window.coachStep(state) : "
                            "window.dash_clientside.no_update; }",
                            Output(ids.SCN_URL_SYNC, "data"), Input(ids.SCN_STEP, "data"), prevent_initial_call=True)


def move_state(trigger: Any, saved: dict[str, Any] | None, answer: str | None, state: dict[str, Any] | None,
               wid: str | None, wanted: int | None):
    """The stepper's new state and the session's store (see ``register``)."""
    if not wid:
        return no_update, no_update
    action = ACTIONS.get(trigger)
    if action is None:  # opening: the page arrived, or the session's store was read
        mine = (saved or {}).get(wid) or {}
        if state is not None and (state.get("answer") or not mine.get("answer")):
            return no_update, no_update  # already open, and the session knows nothing newer
        return restore(saved, wid, wanted if state is None else state.get("step")), no_update
    new = advance(state or restore(saved, wid, wanted), action, answer)
    return new, {**(saved or {}), wid: new}


def render_step(ctx: Context, wid: str | None, state: dict[str, Any] | None):
    w = ctx.walkthrough(wid or "")
    if w is None:
        return no_update, no_update, no_update, no_update, no_update
    s = dict(START, **(state or {}))
    step = s["step"]
    locked = step == ANSWER_STEP and not s["answer"]
    answer_box = {"display": "block", "marginTop": "12px"} if locked else {"display": "none"}
    content = guarded(lambda: body(ctx, w, s), STEPS[step].lower())
    return stepper(step), content, locked or step == len(STEPS) - 1, step == 0, answer_box
