"""Reference: the glossary, the numbers per GPU, and the CUDA and Triton quick references.

Everything comes from ``coach.reference`` (the same entries, rows and snippets the CLI prints:
`coach glossary`, `coach numbers`, `coach ref`); this page only lays them out.
"""

from __future__ import annotations

from urllib.parse import quote

from dash import Dash, Input, Output, dcc, html

from coach.analyze import hardware as hw
from coach.app import ids
from coach.app.components import alert, badge, card, header
from coach.app.context import Context
from coach.errors import CoachError
from coach.reference import glossary, numbers, quickref

PATH = "/reference"
NAV_LABEL = "Reference"
TITLE = "Reference"

DEFAULT_GPU = "h200"
DEFAULT_TERM = "occupancy"
ORIGIN_BADGE = {"datasheet": "", "measured": "good", "derived": "muted", "missing": "warn"}


def layout(ctx: Context, rest: str, query: dict[str, str]) -> html.Div:
    g = glossary.load()
    gpu = query.get("gpu", DEFAULT_GPU)
    return html.Div([
        header(TITLE, "The terms, numbers and syntax an interview takes for granted: look a term up (typos are "
                      "forgiven), read a GPU's numbers with where each comes from, and keep the CUDA and Triton "
                      "you write on a whiteboard at hand."),
        html.H2("Glossary"),
        card(
            html.Div([html.Label("term", htmlFor=ids.REF_TERM),
                      dcc.Input(id=ids.REF_TERM, type="text", value=query.get("term", DEFAULT_TERM), debounce=True,
                                className="text", placeholder="occupancy, bank conflict, TMA, paged KV ...")],
                     className="field", style={"maxWidth": "420px"}),
            html.Div(id=ids.REF_ENTRY, style={"marginTop": "14px"}),
            html.Details([html.Summary(f"All {len(g.terms)} terms, by topic"), terms_list(g)], className="more",
                         id=ids.REF_TERMS, style={"marginTop": "12px"}),
        ),
        html.H2("Numbers to carry into the room"),
        card(
            html.Div([html.Label("GPU", htmlFor=ids.REF_GPU),
                      dcc.Dropdown(id=ids.REF_GPU, options=[{"label": x.name, "value": x.id} for x in hw.gpus().values()],
                                   value=gpu if gpu in hw.gpus() else DEFAULT_GPU, clearable=False)],
                     className="field", style={"maxWidth": "420px"}),
            html.Div(id=ids.REF_NUMBERS, style={"marginTop": "14px"}),
        ),
        html.H2("Quick references"),
        dcc.Tabs(id=ids.REF_SHEETS, value="cuda", children=[
            dcc.Tab(label="CUDA", value="cuda", children=sheet_view("cuda")),
            dcc.Tab(label="Triton", value="triton", children=sheet_view("triton")),
        ]),
    ])


def terms_list(g: glossary.Glossary) -> html.Div:
    return html.Div([
        html.P([html.Strong(topic), ": ",
                *_joined([dcc.Link(t.term, href=f"{PATH}?term={quote(t.term)}") for t in terms])], className="small")
        for topic, terms in sorted(g.by_topic().items())
    ])


def _joined(items: list) -> list:
    out: list = []
    for i, item in enumerate(items):
        if i:
            out.append(", ")
        out.append(item)
    return out


def entry(query: str | None) -> html.Div:
    """The glossary entry for ``query``, or the suggestions when nothing is close enough."""
    q = (query or "").strip()
    if not q:
        return html.Div(alert("Type a term and press Enter.", "info"))
    found = glossary.load().lookup(q)
    if found.term is None:
        hint = (["Did you mean: ", *_joined([dcc.Link(s, href=f"{PATH}?term={quote(s)}") for s in found.suggestions]), "?"]
                if found.suggestions else ["Nothing close; the list below has every term."])
        return html.Div([alert(f"No glossary entry for '{q}'.", "error"), html.P(hint)])
    t = found.term
    return html.Div([
        html.H3([t.term, " ", badge(t.topic, "muted"),
                 *([badge(f"for '{q}'", "warn")] if found.how == "fuzzy" else [])], className="ref-term"),
        html.P(f"also: {', '.join(t.aliases)}", className="small muted") if t.aliases else None,
        html.P(t.definition, className="ref-definition"),
        html.P([html.Strong("In a profile: "), t.profile], className="small"),
        html.P([html.Strong("See also: "),
                *_joined([dcc.Link(s, href=f"{PATH}?term={quote(s)}") for s in t.see])], className="small"),
    ], className="ref-entry")


def numbers_table(gpu_id: str) -> html.Div:
    try:
        frame = numbers.sheet(gpu_id)
    except CoachError as err:
        return alert(str(err), "error")
    rows = []
    last = None
    for r in frame.iter_rows(named=True):
        if r["group"] != last:
            rows.append(html.Tr(html.Td(html.Strong(r["group"]), colSpan=4), className="group"))
            last = r["group"]
        rows.append(html.Tr([html.Td(r["quantity"]), html.Td(r["shown"], className="num"),
                             html.Td(badge(r["origin"], ORIGIN_BADGE.get(r["origin"], ""))),
                             html.Td(r["source"], className="small muted")]))
    return html.Div([
        html.P("Datasheet figures are dense peaks as published; measured ones were run on that GPU; derived rows "
               "say their formula; a dash is a number nobody has published or measured yet.", className="small"),
        html.Table([html.Thead(html.Tr([html.Th(h) for h in ("quantity", "value", "from", "source")])),
                    html.Tbody(rows)], className="plain"),
    ])


def sheet_view(language: str) -> html.Div:
    s = quickref.sheet(language)
    checked = ("Every snippet compiles with nvcc -arch=sm_90 in the project's tests." if language == "cuda"
               else "Every snippet runs under TRITON_INTERPRET=1, checked against PyTorch, in the project's tests.")
    return html.Div([
        html.P(checked, className="small muted", style={"margin": "12px 0"}),
        *[card(html.H3([x.title, " ", badge(x.id, "muted")]),
               html.Pre(html.Code(x.code), className="ref-code"),
               html.Ul([html.Li(n) for n in x.notes], className="small"),
               id=f"ref-{language}-{x.id}") for x in s.sections],
    ], className="ref-sheet")


def register(app: Dash, ctx: Context) -> None:
    @app.callback(Output(ids.REF_ENTRY, "children"), Input(ids.REF_TERM, "value"))
    def show_entry(query):
        return entry(query)

    @app.callback(Output(ids.REF_NUMBERS, "children"), Input(ids.REF_GPU, "value"))
    def show_numbers(gpu_id):
        return numbers_table(gpu_id or DEFAULT_GPU)
