"""``coach glossary``, ``coach ref`` and ``coach numbers``: the reference material, in the terminal."""

from __future__ import annotations

from typing import Optional

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json
from coach.errors import CoachError


def _say(text: str, style: str = "", indent: int = 0) -> None:
    """Plain text wrapped to the terminal (at most 80 columns), continuation lines indented."""
    import textwrap

    width = min(max(40, console.width), 80)
    lines = textwrap.wrap(text, width=width, initial_indent=" " * indent, subsequent_indent=" " * (indent + 2),
                          break_long_words=False, break_on_hyphens=False) or [""]
    for line in lines:
        console.print(line, style=style or None, markup=False, highlight=False, soft_wrap=True)


@app.command("glossary")
def glossary_cmd(
    term: Optional[list[str]] = typer.Argument(None, help="The term to look up (misspellings are forgiven)."),
    topic: Optional[str] = typer.Option(None, "--topic", help="List only the terms of one quiz topic."),
    as_json: bool = typer.Option(False, "--json", help="Write the entry (or the list) as JSON on stdout."),
) -> None:
    """The GPU performance glossary: a definition, where it shows in a profile, and related terms.

    Without a term, lists every term by topic.

    Examples:

        coach glossary occupancy

        coach glossary "bank conflict"

        coach glossary --topic hopper-blackwell
    """
    from coach.reference.glossary import load

    g = load()
    if term:
        query = " ".join(term)
        found = g.lookup(query)
        if found.term is None:
            hint = f"; did you mean: {', '.join(found.suggestions)}?" if found.suggestions else ""
            raise CoachError(f"no glossary entry for '{query}'{hint} (`coach glossary` lists them)")
        t = found.term
        if as_json:
            print_json({"term": t.term, "aliases": list(t.aliases), "topic": t.topic, "definition": t.definition,
                        "profile": t.profile, "see": list(t.see), "matched": found.how, "query": query})
            return
        title = t.term + (f"  (for '{query}')" if found.how == "fuzzy" else "")
        _say(title, "bold")
        if t.aliases:
            _say(f"also: {', '.join(t.aliases)}", "dim")
        console.print()
        _say(t.definition)
        console.print()
        _say(f"In a profile: {t.profile}")
        if t.see:
            _say(f"See also: {', '.join(t.see)}")
        return
    groups = g.by_topic()
    if topic is not None:
        if topic not in groups:
            raise CoachError(f"--topic: no terms for '{topic}'; topics: {', '.join(sorted(groups))}")
        groups = {topic: groups[topic]}
    if as_json:
        print_json([{"term": t.term, "topic": t.topic, "aliases": list(t.aliases)}
                    for ts in groups.values() for t in ts])
        return
    total = sum(len(ts) for ts in groups.values())
    _say(f"{total} terms. `coach glossary TERM` shows one.", "bold")
    for name in sorted(groups):
        console.print()
        _say(name, "bold")
        _say(", ".join(t.term for t in groups[name]), indent=2)


@app.command("ref")
def ref_cmd(
    language: str = typer.Argument(..., help="cuda or triton."),
    section: Optional[str] = typer.Argument(None, help="One section (e.g. warp, shared-memory, matmul); default: all."),
    list_sections: bool = typer.Option(False, "--list", help="List the sections only."),
    as_json: bool = typer.Option(False, "--json", help="Write the sections as JSON on stdout."),
) -> None:
    """Quick reference of the CUDA or Triton you write on a whiteboard, as short checked snippets.

    Every CUDA snippet compiles with nvcc -arch=sm_90 and every Triton snippet runs under
    TRITON_INTERPRET=1 in the project's tests.

    Examples:

        coach ref cuda --list

        coach ref cuda warp

        coach ref triton matmul
    """
    from coach.reference.quickref import sheet

    s = sheet(language)
    chosen = [s.section(section)] if section else list(s.sections)
    if as_json:
        print_json([{"id": x.id, "title": x.title, "code": x.code, "notes": list(x.notes)} for x in chosen])
        return
    if list_sections:
        for x in s.sections:
            _say(f"{x.id:<20} {x.title}")
        return
    for i, x in enumerate(chosen):
        if i:
            console.print()
        _say(f"{s.language.upper()} · {x.title}  [{x.id}]", "bold")
        _code(x.code, "cuda" if s.language == "cuda" else "python")
        for note in x.notes:
            _say(f"- {note}")


def _code(code: str, lexer: str) -> None:
    """The snippet as it is written (lines fit 80 columns with the indent); coloured on a terminal."""
    if console.is_terminal:
        from rich.padding import Padding
        from rich.syntax import Syntax

        console.print(Padding(Syntax(code, lexer, theme="ansi_dark", background_color="default", word_wrap=False),
                              (0, 0, 0, 2)))
        return
    for line in code.splitlines():
        console.print(f"  {line}" if line else "", markup=False, highlight=False, soft_wrap=True)


@app.command("numbers")
def numbers_cmd(
    gpu: Optional[list[str]] = typer.Option(None, "--gpu", help="GPU id (repeat to compare; default h200). See `coach gpus`."),
    group: Optional[str] = typer.Option(None, "--group", help="memory, compute, ridge points, links, launch or latency."),
    datasheet: bool = typer.Option(False, "--datasheet", help="Ignore measured ceilings (and your own calibrations)."),
    as_json: bool = typer.Option(False, "--json", help="Write the rows as JSON on stdout."),
) -> None:
    """The numbers to carry into an interview: bandwidths, peaks, ridge points, link speeds, launch costs.

    Computed from the hardware tables, never typed in: each row says whether it is a datasheet
    figure, a value measured on that GPU, derived from others (and how), or missing (and why).
    One GPU shows every row with its source; several GPUs are compared side by side.

    Examples:

        coach numbers

        coach numbers --gpu b200 --group links

        coach numbers --gpu h100-sxm --gpu h200 --gpu b200
    """
    from coach.reference.numbers import GROUPS, compare, sheet

    ids = gpu or ["h200"]
    if group is not None and group not in GROUPS:
        raise CoachError(f"--group: '{group}' is not one of {', '.join(GROUPS)}")
    if len(ids) == 1:
        frame = sheet(ids[0], measured=not datasheet)
    else:
        frame = compare(ids, measured=not datasheet)
    if group is not None:
        frame = frame.filter(group=group)
    if as_json:
        print_json(frame.to_dicts())
        return
    from rich.table import Table

    if len(ids) == 1:
        name = frame["gpu"][0] if frame.height else ids[0]
        table = Table(title=f"Numbers for {name}", title_justify="left", show_lines=False, expand=False)
        table.add_column("quantity", overflow="fold", ratio=3)
        table.add_column("value", justify="right", no_wrap=True)
        table.add_column("from", no_wrap=True)
        table.add_column("source", overflow="fold", ratio=4)
        last = None
        for r in frame.iter_rows(named=True):
            if r["group"] != last:
                table.add_row(f"[bold]{r['group']}[/]", "", "", "")
                last = r["group"]
            table.add_row(r["quantity"], r["shown"], r["origin"], r["source"])
    else:
        table = Table(title="Numbers side by side (one GPU at a time shows the sources)", title_justify="left")
        table.add_column("quantity", overflow="fold")
        for c in frame.columns[2:]:
            table.add_column(c, justify="right", no_wrap=True)
        for r in frame.iter_rows():
            table.add_row(*(str(v) for v in r[1:]))
    console.print(table, width=min(console.width, 80) if not console.is_terminal or console.width > 80 else None)
