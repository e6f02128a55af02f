"""``coach doctor``: what works on this machine, what does not, and what to install."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from coach.cli.main import app
from coach.cli.output import console, err_console, print_json

_STYLE = {"ok": "green", "limited": "yellow", "missing": "red", "broken": "bold red"}


@app.command("doctor")
def doctor_cmd(
    as_json: bool = typer.Option(False, "--json", help="Write the report as JSON on stdout."),
    quick: bool = typer.Option(False, "--quick", help="Skip the nsys test run (a one-second capture of `true`)."),
) -> None:
    """Check the GPU, driver, CUDA, Nsight Compute, Nsight Systems, nvcc and the Python GPU stack.

    Says what works, what does not, and how to fix it. Honours COACH_NSYS and COACH_NCU (paths to
    the tools) and COACH_NCU_ROOT (an Nsight Compute installation).

    Examples:

        coach doctor

        coach doctor --json
    """
    from coach.capture import doctor

    # The checks take seconds (nvidia-smi, ncu/nsys --version, a one-second nsys capture): say so first.
    note = "checking the GPU tools" + ("" if quick else " (a few seconds; --quick skips the nsys test run)")
    if err_console.is_terminal:
        with err_console.status(note + "..."):
            checks = doctor.run_checks(self_test=not quick)
    else:
        err_console.print(note + "...", highlight=False)
        checks = doctor.run_checks(self_test=not quick)
    if as_json:
        print_json(doctor.report(checks))
        return
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("status")
    table.add_column("component")
    table.add_column("found / fix", overflow="fold")
    for c in checks:
        detail = escape(c.detail) + (f"\n[dim]fix:[/] {escape(c.fix)}" if c.fix and c.status != doctor.OK else "")
        table.add_row(f"[{_STYLE[c.status]}]{c.status}[/]", escape(c.name), detail)
    console.print(table)
    console.print()
    console.print("[bold]What works here[/]")
    for cap in doctor.capabilities(checks):
        mark = "[green]yes[/]" if cap.ok else "[red]no[/] "
        needs = f"  [dim](needs {escape(', '.join(cap.needs))})[/]" if cap.needs else ""
        console.print(f"  {mark}  {cap.what}{needs}")
