"""The kernel's source beside a finding: each line with a heat bar (its share of the warp-state
samples) and the lines the finding points at highlighted.

Only renders: the line table is ``coach.analyze.source`` (through ``coach.app.analysis``), the
lines a finding points at are its ``locations``. Lines are shown around the ones with counters
(``CONTEXT`` lines either side, at most ``MAX_ROWS``); a profile without the file's text lists the
lines as file:line; one without source counters says in one line what to re-record with.
"""

from __future__ import annotations

from typing import Any, Sequence

import polars as pl
from dash import html

from coach.analyze.findings import Location
from coach.app import analysis
from coach.app.components import alert
from coach.model import KernelProfile

CONTEXT = 2
MAX_ROWS = 40
#: Lines below this share of the samples get no number beside their bar (it would read "0.0%").
SHOW_PCT = 0.5


def source_panel(profile: KernelProfile, launch_id: int, locations: Sequence[Location] = (),
                 id: str | None = None) -> html.Div:
    """The panel for one launch; ``locations`` are highlighted (a finding's lines)."""
    src = analysis.source_module()
    if src is None:
        return html.Div(alert("Source attribution is not part of this version of coach.", "info"), id=id)
    gap = src.gap(profile, launch_id)
    if not src.has_lines(profile, launch_id):
        return html.Div(alert(gap or "no source lines", "info"), id=id, className="source")
    table = src.lines(profile, launch_id, with_reasons=True)
    hits = {(loc.line, loc.where) for loc in locations}
    wanted_file = next((loc.file for loc in locations if loc.file), None)
    lines = table.filter(pl.col("line").is_not_null())
    if wanted_file is not None and lines.filter(pl.col("path") == wanted_file).height:
        lines = lines.filter(pl.col("path") == wanted_file)
    else:
        lines = lines.filter(pl.col("file_id") == lines["file_id"][0])
    file_id = lines["file_id"][0]
    name = lines["file"][0]
    texts = src.line_texts(profile).filter(pl.col("file_id") == file_id)
    caption = html.P([f"{name}: heat is each line's share of the warp-state samples",
                      "; highlighted: the lines this finding points at" if locations else "", "."],
                     className="small muted")
    if texts.is_empty():
        rows = [_row(r["line"], None, r["samples_pct"], (r["line"], f"{name}:{r['line']}") in hits, r)
                for r in lines.sort("line").iter_rows(named=True)]
        note = alert(gap, "info") if gap else None
        return html.Div([caption, note, html.Table(html.Tbody(rows), className="src")], id=id, className="source")
    shown = _window(lines["line"].to_list(), [loc.line for loc in locations if loc.line], texts.height)
    counters = {r["line"]: r for r in lines.iter_rows(named=True)}
    raw = dict(zip(texts["line"], _raw_lines(profile, file_id)))
    rows = []
    previous = None
    for ln in shown:
        if previous is not None and ln != previous + 1:
            rows.append(html.Tr([html.Td("⋯", className="no"), html.Td(), html.Td()], className="gap"))
        r = counters.get(ln)
        rows.append(_row(ln, raw.get(ln, ""), r["samples_pct"] if r else None, (ln, f"{name}:{ln}") in hits, r))
        previous = ln
    return html.Div([caption, html.Table(html.Tbody(rows), className="src")], id=id, className="source")


def _raw_lines(profile: KernelProfile, file_id: int) -> list[str]:
    text = profile.source_files.filter(pl.col("file_id") == file_id)["text"][0]
    return text.splitlines()


def _window(with_counters: list[int], highlighted: list[int], length: int) -> list[int]:
    """The line numbers to show: the highlighted lines and the lines with counters, with context,
    the highlighted ones first when all would not fit."""
    keep: set[int] = set()
    for ln in [*highlighted, *sorted(with_counters)]:
        near = {n for n in range(ln - CONTEXT, ln + CONTEXT + 1) if 1 <= n <= length}
        if len(keep | near) > MAX_ROWS:
            break
        keep |= near
    return sorted(keep)


def _row(line: int, text: str | None, pct: float | None, hit: bool, counters: dict[str, Any] | None) -> html.Tr:
    heat = html.Div(html.Div(style={"width": f"{min(100.0, pct or 0.0):.1f}%"}, className="bar"), className="heat",
                    title=_tooltip(pct, counters))
    label = f"{pct:.1f}%" if pct is not None and pct >= SHOW_PCT else ""
    code = html.Code(text if text is not None else f"line {line}")
    return html.Tr([html.Td(str(line), className="no"), html.Td([heat, html.Span(label, className="pct")], className="h"),
                    html.Td(code, className="code")], className="hit" if hit else None)


def _tooltip(pct: float | None, r: dict[str, Any] | None) -> str:
    if r is None or pct is None:
        return "no instructions"
    parts = [f"{pct:.1f}% of the samples"]
    reasons = ", ".join(f"{x['reason'].replace('_', ' ')} {x['pct']:.0f}%" for x in (r.get("top_reasons") or []))
    if reasons:
        parts.append(reasons)
    if r.get("l2_global_excess_sectors"):
        parts.append(f"{r['l2_global_excess_sectors']:,.0f} excess L2 sectors")
    if r.get("shared_excess_wavefronts"):
        parts.append(f"{r['shared_excess_wavefronts']:,.0f} excess shared wavefronts")
    if r.get("l2_local_sectors"):
        parts.append(f"{r['l2_local_sectors']:,.0f} local-memory sectors")
    if r.get("inlined_at"):
        parts.append(f"inlined at {', '.join(r['inlined_at'][:3])}")
    return "; ".join(parts)


def where_line(locations: Sequence[Location]) -> html.P | None:
    """A finding's lines in words: "At particles.cu:24 (LDG): 100% of the launch's ..."."""
    if not locations:
        return None
    items: list[Any] = [html.Strong("At: ")]
    for i, loc in enumerate(locations):
        if i:
            items.append("; ")
        ops = f" ({' '.join(loc.opcodes)})" if loc.opcodes else ""
        items += [html.Code(loc.where), f"{ops}, {loc.note}"]
    return html.P(items, className="small where")
