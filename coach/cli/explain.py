"""``coach explain FILE``: say it in two minutes: talking points for the top findings."""

from __future__ import annotations

from pathlib import Path

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json


@app.command("explain")
def explain_cmd(
    file: Path = typer.Argument(..., help="A profile: .ncu-rep, ncu CSV, nsys .sqlite/.nsys-rep, PyTorch JSON."),
    top: int = typer.Option(1, "--top", min=1, help="Findings per kernel (timelines: in all) to explain."),
    as_json: bool = typer.Option(False, "--json", help="Write the talking points as JSON on stdout."),
) -> None:
    """Talking points for the top findings, as an interview answer: the bottleneck, the three numbers
    that prove it, the first-principles estimate, the fix and the gain to expect, and the follow-up
    questions to be ready for. Built from the analysis (no language model). For a before/after
    comparison, use `coach diff BEFORE AFTER --talk`.

    Examples:

        coach explain report.ncu-rep

        coach explain run.sqlite --top 3
    """
    from rich.markup import escape  # noqa: PLC0415

    from coach.analyze.diagnose import diagnose  # noqa: PLC0415 - polars-heavy, imported on use
    from coach.analyze.talking_points import explain  # noqa: PLC0415
    from coach.ingest import load  # noqa: PLC0415

    profile = load(file)
    points = explain(profile, diagnose(profile), top=top)
    if as_json:
        print_json([p.to_dict() for p in points])
        return
    if not points:
        console.print("Nothing to explain: no finding in this profile.")
    for p in points:
        for line in p.lines():
            console.print(escape(line), highlight=False)
        console.print()
