"""``coach load FILE...``: read profiles and print the summary a performance engineer wants first."""

from __future__ import annotations

from pathlib import Path

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json, progress


@app.command("load")
def load_cmd(
    files: list[Path] = typer.Argument(..., help="Profiles: .ncu-rep, ncu CSV, nsys .sqlite/.nsys-rep, PyTorch JSON, or folders of them."),
    as_json: bool = typer.Option(False, "--json", help="Write the summary as JSON on stdout."),
) -> None:
    """Read profiles into coach's model and summarise them.

    Examples:

        coach load report.ncu-rep

        coach load run.sqlite --json
    """
    from coach.ingest import expand, load  # polars: imported only when the command runs

    paths = expand(list(files))
    profiles = []
    with progress("reading profiles", total=len(paths)) as advance:
        for p in paths:
            profiles.append(load(p))
            advance()
    summaries = [{"path": str(p.source.path), "kind": p.kind, "format": p.source.format,
                  "tables": {k: v.height for k, v in p.tables().items()}} for p in profiles]
    if as_json:
        print_json(summaries if len(summaries) > 1 else summaries[0])
        return
    for s in summaries:
        console.print(f"[bold]{s['path']}[/]  {s['kind']} ({s['format']})")
        for k, n in s["tables"].items():
            console.print(f"  {k}: {n} rows")
