"""``coach check FILE...``: can this measurement be trusted? Measurement hygiene, flag by flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json

STATUS = {"warning": "[red]FLAG[/]", "info": "[yellow]note[/]", "passed": "[green]ok[/]", "not-checked": "[dim]not checked[/]"}


@app.command("check")
def check_cmd(
    files: list[Path] = typer.Argument(..., help="A trace (.nsys-rep, nsys .sqlite, PyTorch JSON, .ncu-rep, ncu CSV) and/or "
                                                 "a benchmark's JSON output (with times_ms): give a benchmark run "
                                                 "under Nsight Systems as its JSON and its trace together."),
    expected_bytes: float = typer.Option(None, "--bytes", min=0, help="The bytes model of one profiled kernel launch "
                                                                      "(Nsight Compute): flags DRAM traffic far below it."),
    as_json: bool = typer.Option(False, "--json", help="Write the checks as JSON on stdout."),
) -> None:
    """Check what makes a number untrustworthy: inputs warm in L2, timing without synchronisation,
    compilation inside the timed region, too few repetitions or a large spread, zeros as inputs,
    clocks, a persisting-L2 window. Each flag comes with its evidence and the fix.

    Exits with status 1 when a warning is raised (a CI job can gate on it), 0 otherwise.

    Examples:

        coach check bench.json

        coach check bench.json bench.sqlite

        coach check report.ncu-rep --bytes 805306368
    """
    from coach.analyze.hygiene import check, looks_like_benchmark, read_benchmark  # noqa: PLC0415 - polars on use
    from coach.errors import CoachError  # noqa: PLC0415
    from coach.ingest import load  # noqa: PLC0415

    benchmarks = [p for p in files if p.is_file() and looks_like_benchmark(p)]
    if len(benchmarks) > 1:
        raise CoachError(f"give one benchmark result at a time (got {', '.join(map(str, benchmarks))})")
    benchmark = read_benchmark(benchmarks[0]) if benchmarks else None
    profiles = [load(p) for p in files if p not in benchmarks]
    report = check(profiles, benchmark, expected_bytes=expected_bytes)
    if as_json:
        print_json({"files": [str(p) for p in files], **report.to_dict()})
    else:
        _print(report, files)
    if not report.clean:
        raise typer.Exit(1)


def _print(report: Any, files: list[Path]) -> None:
    from rich.markup import escape  # noqa: PLC0415

    from coach.analyze.diff import fmt_value  # noqa: PLC0415 - the one format of a measured value
    from coach.analyze.hygiene import CHECKS  # noqa: PLC0415

    console.print(f"[bold]{escape(', '.join(map(str, files)))}[/]")
    from coach.cli.output import fit_table  # noqa: PLC0415

    rows = [(f.details["severity"], f.rule_id, f.title) for f in report.flags]
    rows += [("passed", c, s) for c, s in report.passed]
    rows += [("not-checked", c, s) for c, s in report.not_checked]
    fit_table(None, [("", "left"), ("check", "left"), ("what was seen", "left")],
              [[STATUS[status], CHECKS.get(check_id, check_id), text] for status, check_id, text in rows],
              names=(1, 2), wrap=True, name_min=1)
    for f in report.flags:
        console.print(f"\n{STATUS[f.details['severity']]} [bold]{escape(f.title)}[/]  [dim]({f.scope})[/]")
        console.print(f"  {escape(f.message)}", highlight=False)
        for e in f.evidence:
            healthy = f"  [dim](healthy: {escape(e.healthy)})[/]" if e.healthy else ""
            console.print(f"  - {e.metric} = [bold]{escape(fmt_value(e.value, e.unit))}[/]{healthy}", highlight=False)
        console.print(f"  [bold]fix:[/] {escape(f.next_step)}", highlight=False)
    n = len(report.warnings)
    console.print()
    console.print(f"[red]{n} warning{'s' if n != 1 else ''}: the numbers cannot be trusted as they are.[/]" if n else
                  f"[green]No warning[/] ({len(report.passed)} checks passed, {len(report.not_checked)} not checked).")
