"""Building blocks every page shares: headers, messages, key numbers, tables, findings."""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import polars as pl
from dash import dash_table, html

from coach.analyze.findings import Evidence, Finding, saving_is_upper_bound
from coach.app import format as fmt
from coach.errors import CoachError

log = logging.getLogger("coach.app")


def header(title: str, lede: str | None = None) -> html.Div:
    return html.Div([html.H1(title), html.P(lede, className="lede") if lede else None])


def alert(text: str, kind: str = "info", id: str | None = None) -> html.Div:
    """A one-line message; ``kind`` is "info", "error" or "ok"."""
    props = {"id": id} if id else {}
    return html.Div(text, className=f"alert {kind}", role="alert" if kind == "error" else "status", **props)


def empty(title: str, text: str | Sequence[Any]) -> html.Div:
    return html.Div([html.H3(title), html.P(text)], className="empty")


def badge(text: str, kind: str = "") -> html.Span:
    return html.Span(text, className=f"badge {kind}".strip())


def stat(label: str, value: str) -> html.Div:
    return html.Div([html.Div(label, className="label"), html.Div(value, className="value")], className="stat")


def card(*children: Any, className: str = "", **props: Any) -> html.Div:
    return html.Div(list(children), className=f"card {className}".strip(), **props)


def plain_table(header_row: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[bool] | None = None,
                highlight: Sequence[bool] | None = None) -> html.Table:
    """A small read-only table; ``numeric`` right-aligns columns, ``highlight`` marks rows."""
    numeric = numeric or [False] * len(header_row)
    highlight = highlight or [False] * len(rows)
    return html.Table([
        html.Thead(html.Tr([html.Th(h) for h in header_row])),
        html.Tbody([
            html.Tr([html.Td(v, className="num" if n else None) for v, n in zip(row, numeric)],
                    className="hl" if hl else None)
            for row, hl in zip(rows, highlight)
        ]),
    ], className="plain")


def data_table(id: str, frame: pl.DataFrame, labels: dict[str, str], page_size: int = 15) -> dash_table.DataTable:
    """A sortable, filterable table of ``frame``'s columns named in ``labels`` (column -> header).

    Numbers stay numbers (so sorting is numeric) and are shown to three significant digits; a value
    the report lacks (null) reads "not in report", never 0 or blank.
    """
    columns = []
    for col, label in labels.items():
        spec: dict[str, Any] = {"name": label, "id": col}
        dtype = frame.schema[col]
        if dtype.is_integer():
            spec.update(type="numeric", format={"specifier": ",d", "nully": fmt.NOT_IN_REPORT})
        elif dtype.is_numeric():
            spec.update(type="numeric", format={"specifier": ",.2f", "nully": fmt.NOT_IN_REPORT})
        columns.append(spec)
    return dash_table.DataTable(
        id=id,
        columns=columns,
        data=frame.select(list(labels)).to_dicts(),
        sort_action="native",
        filter_action="native",
        page_action="native",
        page_size=page_size,
        style_as_list_view=True,
        style_table={"overflowX": "auto"},
        style_cell={"fontFamily": "inherit", "fontSize": "14px", "padding": "6px 10px", "textAlign": "left",
                    "maxWidth": "360px", "overflow": "hidden", "textOverflow": "ellipsis"},
        style_cell_conditional=[{"if": {"column_type": "numeric"}, "textAlign": "right"}],
        style_header={"fontWeight": "600", "backgroundColor": "#f9fafb", "borderBottom": "1px solid #e5e7eb",
                      "whiteSpace": "normal", "height": "auto"},
        style_filter={"backgroundColor": "#ffffff"},
        tooltip_duration=None,
    )


def quantity(value: float | None, unit: str) -> str:
    """A value in one of the units the analysis speaks (byte, byte/s, ns, %, ...), readably."""
    if fmt.missing(value):
        return fmt.MISSING
    if unit in ("%", "pct"):
        return fmt.pct(value)
    if unit in ("byte", "bytes", "B"):
        return fmt.si(value, "B")
    if unit in ("byte/s", "bytes/s", "B/s"):
        return fmt.si(value, "B/s")
    if unit == "ns":
        return fmt.duration_ns(value)
    if unit == "s":
        return fmt.si(value, "s")
    return f"{fmt.number(value)} {unit}".strip()


def evidence_value(e: Evidence) -> str:
    return quantity(e.value, e.unit)


def evidence_table(evidence: Sequence[Evidence]) -> html.Table:
    return plain_table(
        ["metric", "measured", "healthy", "source"],
        [[html.Code(e.metric), evidence_value(e), e.healthy or fmt.MISSING, e.source or fmt.MISSING] for e in evidence],
        numeric=[False, True, False, False],
    )


def finding_card(f: Finding, top: bool = False, evidence: bool = True, before: Sequence[Any] = (),
                 after: Sequence[Any] = ()) -> html.Div:
    """One finding: what, the numbers, the evidence with healthy values, and the next step.
    ``before`` goes above the title, ``after`` in place of the evidence table where ``evidence`` is
    False (a group of findings shows its own, with the spread over its launches)."""
    meta = [badge(str(f.category))]
    if f.estimated_gain_pct is not None and saving_is_upper_bound(f):
        meta.append(badge("gain not estimated (an upper bound only)", "muted"))
    elif f.estimated_gain_pct is not None:
        # the share of the time the fix could save, as `coach diagnose` prints it ("saves ~2.66 ms
        # (82%)"): an 82% saving is 5.6x faster, not "82% faster"
        meta.append(badge(f"saves up to {fmt.pct(f.estimated_gain_pct, 2)} of its time", "good"))
    if f.ncu_rule:
        meta.append(badge(f"Nsight Compute: {f.ncu_rule}", "muted"))
    body = [
        *before,
        html.Div(meta, className="badges"),
        html.H3(f.title, style={"marginTop": "8px"}),
        html.P(f.message),
    ]
    if f.evidence and evidence:
        body.append(evidence_table(f.evidence))
    body += list(after)
    if f.locations:  # the source lines that cause it (coach.analyze.source_evidence)
        from coach.app.source_view import where_line  # noqa: PLC0415 - source_view imports this module

        body.append(where_line(f.locations))
    if f.differs_from_ncu:
        body.append(html.P(["Where coach differs from Nsight Compute: ", f.differs_from_ncu], className="small muted"))
    if f.next_step:
        body.append(html.P([html.Strong("Next: "), f.next_step], className="next"))
    if f.gain_model:
        body.append(html.P(["Gain estimated by: ", f.gain_model], className="small muted"))
    return card(*body, className="finding top" if top else "finding")


def guarded(build: Callable[[], Any], what: str) -> Any:
    """Build one section; a problem becomes a one-line message in the page instead of a failed page."""
    try:
        return build()
    except CoachError as err:
        return alert(f"{what}: {err}", "error")
    except Exception as err:  # a bug in coach: say so in one line, keep the traceback in the server log
        log.exception("building %s failed", what)
        return alert(f"{what}: internal error ({type(err).__name__}: {err})", "error")
