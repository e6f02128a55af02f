"""Home: the scenarios and ladders as a gallery, and the way in to the user's own report."""

from __future__ import annotations

from dash import Dash, dcc, html

from coach.app import analysis
from coach.app import format as fmt
from coach.app import ids
from coach.app import ladder_view as view
from coach.app.components import alert, badge, empty, header
from coach.app.context import Context
from coach.app.pages import ladders
from coach.errors import CoachError

PATH = "/"
NAV_LABEL = "Home"
TITLE = "coach"

LEVEL_BADGE = {"beginner": "good", "intermediate": "warn", "advanced": "bad"}


def exercise_badge(status: dict[str, tuple[int, float]] | None, wid: str) -> list[html.Span]:
    """The user's exercise on this scenario: best score so far, or not tried yet."""
    if status is None:
        return []
    if wid not in status:
        return [badge("exercise not tried", "muted")]
    attempts, best = status[wid]
    tries = f"{attempts} {'try' if attempts == 1 else 'tries'}"
    return [badge(f"exercise: best {fmt.pct(100 * best, 2)}, {tries}", "good" if best >= 0.7 else "warn")]


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    walks = ctx.walkthroughs()
    problems = list(ctx.walkthrough_problems)
    try:
        status = analysis.exercise_status(ctx.settings.progress_path)
    except CoachError as err:
        status, problems = None, [*problems, f"exercise progress: {err}"]
    scenario_tiles = [
        dcc.Link([
            html.Div([badge(w.level, LEVEL_BADGE.get(w.level, "")), badge(w.id, "muted"),
                      *([] if w.recorded else [badge("not recorded yet", "muted")]),
                      *(exercise_badge(status, w.id) if w.scenario else [])], className="badges"),
            html.H3(w.title),
            html.P(w.one_line),
        ], href=f"/scenario/{w.id}", className="card tile", id=f"tile-{w.id}")
        for w in walks
    ]
    ladder_tiles = [ladder_tile(item) for item in view.recorded_ladders(ctx) if item.recorded is not None]
    return html.Div([
        header("Find the bottleneck. Prove it. Fix it.",
               "Walk through real performance problems recorded on an NVIDIA H200, climb the kernel ladders, or "
               "open a profile of your own: coach reads Nsight Compute, Nsight Systems and PyTorch-profiler traces."),
        html.Div([
            dcc.Link([html.Div(badge("your report", "good"), className="badges"),
                      html.H3("Open your own report"),
                      html.P("Upload a .ncu-rep, an ncu CSV, an nsys .sqlite or .nsys-rep, or a PyTorch-profiler "
                             "JSON and see its kernels, roofline, findings and timeline.")],
                     href="/explore", className="card tile", id="tile-explore"),
            dcc.Link([html.Div(badge("hardware", "muted"), className="badges"),
                      html.H3("How fast should it run?"),
                      html.P("Rooflines and ridge points of common GPUs, and the floor time of any kernel from its "
                             "bytes and FLOPs.")],
                     href="/hardware", className="card tile", id="tile-hardware"),
        ], className="grid"),
        html.H2("Scenarios"),
        *[alert(problem, "error") for problem in problems],
        html.Div(scenario_tiles, className="grid", id=ids.HOME_GALLERY) if scenario_tiles else html.Div(
            empty("No scenarios recorded yet", "Scenario walkthroughs appear here once their traces are recorded."),
            id=ids.HOME_GALLERY),
        html.H2("Ladders"),
        html.Div(ladder_tiles, className="grid", id=ids.HOME_LADDERS) if ladder_tiles else empty(
            "No ladder results recorded yet", "Each ladder's rungs appear here once they are measured on a GPU."),
    ])


def ladder_tile(item: view.Listing) -> dcc.Link:
    """A recorded ladder and where its last rung ended: time, rate against the ceiling (and, for a
    goal set against the baseline peer, against it), speed-up over rung 00. (A ladder that cannot be
    read is left out here; the Ladders page shows its error in full.)"""
    rec = item.recorded
    ms, g = view.measure(rec), view.goal(rec)
    last = g.last
    ratio = last and g.of_baseline(last)
    result = ("No rung was correct." if last is None else
              f"Last rung {last.rung.id}, {last.rung.title}: {view.median(last.result.time_s)}, "
              f"{ms.show(last.rate)} ({view.percent(last.pct_of_ceiling)} of the measured ceiling)"
              f"{f', {ratio}' if ratio else ''}, {view.times(last.vs_first)} over rung 00.")
    return dcc.Link([
        html.Div([badge("ladder"), badge(f"{len(rec.rows)} rungs", "muted"),
                  *([badge(f"{len(item.sizes)} sizes", "muted")] if len(item.sizes) > 1 else []),
                  view.goal_badge(g)], className="badges"),
        html.H3(rec.defn.title),
        html.P(result),
    ], href=ladders.href(item), className="card tile", id=f"tile-ladder-{view.slug(item.name)}")


def register(app: Dash, ctx: Context) -> None:
    """The page is static: everything is drawn when it loads."""
