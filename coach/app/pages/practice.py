"""Practice: estimation drills answered in the browser, and a preparation plan of any length.

Drills come from ``coach.exercises.drills`` (the same templates and grading as `coach drill`) and
are recorded in the progress database like the CLI's; plans from ``coach.exercises.planner`` (the
same curated plans as `coach plan`), weighted by that progress.
"""

from __future__ import annotations

import random
from typing import Any

import polars as pl
from dash import Dash, Input, Output, State, dcc, html, no_update

from coach.analyze import hardware as hw
from coach.app import ids
from coach.app.components import alert, badge, card, header
from coach.app.context import Context
from coach.errors import CoachError

PATH = "/practice"
NAV_LABEL = "Practice"
TITLE = "Practice"

DEFAULT_DAYS = 7
ANY = "any"


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    from coach.exercises.drills import KIND_HELP
    from coach.exercises.planner import MAX_DAYS, plan_lengths

    kinds = [{"label": "any kind", "value": ANY}] + [{"label": f"{k}: {v}", "value": k} for k, v in KIND_HELP.items()]
    gpus = [{"label": "any GPU", "value": ANY}] + [{"label": g.name, "value": g.id} for g in hw.gpus().values()]
    kind = query.get("kind", ANY)
    try:
        days = int(query.get("days", DEFAULT_DAYS))
    except ValueError:
        days = DEFAULT_DAYS
    return html.Div([
        header(TITLE, "Work out a number as you would at a whiteboard, then see the worked solution with every "
                      "datasheet figure it uses; or lay out a preparation plan weighted by your weak topics."),
        html.H2("Estimation drills"),
        card(
            html.Div([
                html.Div([html.Label("kind", htmlFor=ids.PRC_KIND),
                          dcc.Dropdown(id=ids.PRC_KIND, options=kinds, value=kind if kind in KIND_HELP else ANY,
                                       clearable=False)], className="field", style={"minWidth": "420px"}),
                html.Div([html.Label("GPU", htmlFor=ids.PRC_GPU),
                          dcc.Dropdown(id=ids.PRC_GPU, options=gpus, value=ANY, clearable=False)],
                         className="field", style={"minWidth": "300px"}),
                html.Button("New drill", id=ids.PRC_NEW, className="btn", n_clicks=0),
            ], className="controls"),
            dcc.Store(id=ids.PRC_DRILL),
            html.Div(id=ids.PRC_QUESTION, style={"marginTop": "16px"}),
            html.Div([
                html.Div([html.Label("your answer (with its unit)", htmlFor=ids.PRC_ANSWER),
                          dcc.Input(id=ids.PRC_ANSWER, type="text", value="", className="text",
                                    placeholder="e.g. 160 us, 42 ms, 27%, 21.5 GB", debounce=False)],
                         className="field", style={"minWidth": "320px"}),
                html.Button("Check", id=ids.PRC_CHECK, className="btn secondary", n_clicks=0),
            ], className="controls", style={"marginTop": "12px"}),
            html.Div(id=ids.PRC_FEEDBACK, style={"marginTop": "12px"}),
        ),
        html.H2("Preparation plan"),
        card(
            html.Div([
                html.Div([html.Label(f"days (1 to {MAX_DAYS})", htmlFor=ids.PRC_DAYS),
                          dcc.Input(id=ids.PRC_DAYS, type="number", value=days, min=1, max=MAX_DAYS, step=1,
                                    debounce=True, className="text")], className="field"),
                html.P(["Curated: ", *[dcc.Link(f"{n} days", href=f"{PATH}?days={n}", style={"marginRight": "10px"})
                                       for n in plan_lengths()]], className="small"),
            ], className="controls"),
            html.Div(id=ids.PRC_PLAN, style={"marginTop": "12px"}),
        ),
    ])


def _drill(params: dict[str, Any]):
    from coach.exercises.drills import generate

    return generate(params.get("kind"), params.get("gpu"), params.get("seed"))


def question(params: dict[str, Any]) -> html.Div:
    try:
        d = _drill(params)
    except CoachError as err:
        return alert(str(err), "error")
    return html.Div([
        html.Div([badge(d.kind), badge(f"seed {params.get('seed')}", "muted"),
                  *([badge(d.gpu, "muted")] if d.gpu else []),
                  badge(f"tolerance ±{d.tolerance:.0%}", "muted")], className="badges"),
        html.P(d.question, className="prc-question", style={"fontSize": "16px", "margin": "10px 0 0"}),
    ])


def feedback(params: dict[str, Any] | None, text: str | None) -> tuple[html.Div, Any]:
    """The graded answer and the worked solution; and the drill and result to record."""
    if not params:
        return alert("Pose a drill first.", "info"), None
    if not (text or "").strip():
        return alert("Type an answer with its unit, then Check.", "info"), None
    d = _drill(params)
    result = d.check(text)
    verdict, *rest = result.feedback
    solution_at = rest.index("worked solution:") if "worked solution:" in rest else len(rest)
    return html.Div([
        alert(verdict, "ok" if result.correct else "error"),
        *[html.P(line, className="small") for line in rest[:solution_at]],
        html.H3("Worked solution", style={"marginTop": "10px"}),
        html.Ol([html.Li(step) for step in d.steps], className="prc-steps"),
    ]), (d, result)


def plan_view(ctx: Context, days: Any) -> html.Div:
    from coach.exercises.planner import make_plan

    try:
        n = int(days)
        plan = make_plan(n, _attempts(ctx))
    except (TypeError, ValueError):
        return alert("Give the number of days, 1 or more.", "error")
    except CoachError as err:
        return alert(str(err), "error")
    phases: list[Any] = []
    for day in plan.days:
        if not phases or phases[-1][0] != day.phase:
            phases.append((day.phase, day.theme, []))
        phases[-1][2].append(day)
    return html.Div([
        html.P([html.Strong(plan.title), f" · weakest first: {', '.join(plan.focus) or 'no attempts yet, all topics'}"]),
        *[html.P(note, className="small muted") for note in plan.notes],
        *[html.Details([
            html.Summary([html.Strong(theme), f"  days {ds[0].number}-{ds[-1].number}" if len(ds) > 1
                          else f"  day {ds[0].number}"]),
            *[html.Div([html.H4(f"Day {d.number} · {d.minutes} min", style={"margin": "10px 0 4px"}),
                        html.Ul([html.Li([t.title, html.Br(), html.Code(t.command),
                                          html.Span(f" · {t.why}", className="muted")], className="small prc-task")
                                 for t in d.tasks])]) for d in ds],
        ], open=k == 0, className="more prc-phase") for k, (_, theme, ds) in enumerate(phases)],
    ])


def _attempts(ctx: Context) -> pl.DataFrame:
    """The user's attempts, read without creating a database that does not exist yet."""
    from coach.exercises import progress

    path = ctx.settings.progress_path or progress.default_path()
    if not path.is_file():
        return pl.DataFrame(schema=progress.ATTEMPT_SCHEMA).with_columns(fraction=pl.lit(None, pl.Float64))
    with progress.ProgressStore(path) as store:
        return store.attempts()


def register(app: Dash, ctx: Context) -> None:
    @app.callback(Output(ids.PRC_DRILL, "data"), Output(ids.PRC_QUESTION, "children"), Output(ids.PRC_ANSWER, "value"),
                  Output(ids.PRC_FEEDBACK, "children"),
                  Input(ids.PRC_NEW, "n_clicks"), Input(ids.PRC_KIND, "value"), Input(ids.PRC_GPU, "value"))
    def new_drill(_clicks, kind, gpu):
        params = {"kind": None if kind in (None, ANY) else kind, "gpu": None if gpu in (None, ANY) else gpu,
                  "seed": random.SystemRandom().randrange(1 << 31)}
        return params, question(params), "", None

    @app.callback(Output(ids.PRC_FEEDBACK, "children", allow_duplicate=True),
                  Input(ids.PRC_CHECK, "n_clicks"), Input(ids.PRC_ANSWER, "n_submit"),
                  State(ids.PRC_DRILL, "data"), State(ids.PRC_ANSWER, "value"), prevent_initial_call=True)
    def check(_clicks, _submit, params, text):
        try:
            shown, graded = feedback(params, text)
        except CoachError as err:
            return alert(str(err), "error")
        if graded is not None:
            from coach.exercises import progress
            from coach.exercises.drills import attempt

            d, result = graded
            try:
                progress.save([attempt(d, params.get("seed"), text, result)], ctx.settings.progress_path)
            except CoachError as err:
                return html.Div([shown, alert(f"not recorded: {err}", "error")])
        return shown

    @app.callback(Output(ids.PRC_PLAN, "children"), Input(ids.PRC_DAYS, "value"))
    def show_plan(days):
        if days is None:
            return no_update
        return plan_view(ctx, days)
