"""``coach record``: run scenarios on a GPU and keep their reports; ``coach record --import`` turns
those raw reports into the compact traces/ that ``coach run`` reads."""

from __future__ import annotations

from pathlib import Path

import typer

from coach.cli.main import app
from coach.cli.output import console, err_console
from coach.errors import CoachError


@app.command("record")
def record_cmd(
    scenario_ids: list[str] = typer.Argument(None, metavar="[SCENARIO]...", help="Scenario ids: scenario-01, 01, 1."),
    all_: bool = typer.Option(False, "--all", help="Every scenario."),
    only: str | None = typer.Option(None, "--only", metavar="LIST", help="Comma-separated ids, e.g. 01,02,15."),
    out: Path | None = typer.Option(None, "--out", help="Folder for the raw reports (one subfolder per scenario)."),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="Skip scenarios already recorded in --out."),
    time_budget: float | None = typer.Option(None, "--time-budget", min=0, metavar="S", help="Start no scenario after S seconds (then rerun with --skip-existing)."),
    no_nsys: bool = typer.Option(False, "--no-nsys", help="Skip Nsight Systems even where a scenario asks for it."),
    no_ncu: bool = typer.Option(False, "--no-ncu", help="Skip Nsight Compute even where a scenario asks for it."),
    import_dir: Path | None = typer.Option(None, "--import", metavar="RAW_DIR", help="Import raw reports into traces/ instead of recording."),
    traces: Path | None = typer.Option(None, "--traces", help="With --import: the traces folder (default: the project's traces/)."),
) -> None:
    """Record scenarios on a GPU, or import a recording into traces/.

    Each scenario's slow and fixed programs run plain (checked and timed), then under Nsight Systems
    and Nsight Compute as the scenario says; the raw reports and their provenance land in --out.
    Recording needs a GPU, the profilers and the scenario programs' packages (torch, cupy), but not
    coach's readers: `PYTHONPATH=. python3 -m coach.capture record ...` does the same with the
    standard library alone. Importing needs coach's readers but no GPU.

    Examples:

        coach record scenario-01 scenario-15 --out /tmp/raw

        coach record --all --out /tmp/raw --skip-existing --time-budget 480

        coach record --import /tmp/raw
    """
    if import_dir is not None:
        if scenario_ids or all_ or only or out:
            raise CoachError("--import converts a recording: give it no scenario ids, --all, --only or --out")
        _import(import_dir, traces)
        return
    if traces is not None:
        raise CoachError("--traces applies to --import")
    if out is None:
        raise CoachError("--out is required: the folder for the raw reports")
    from coach.capture.record import raise_for_failures, record, select

    outcomes = record(select(scenario_ids or [], all_=all_, only=only), out, nsys=not no_nsys, ncu=not no_ncu,
                      skip_existing=skip_existing, time_budget_s=time_budget)
    for o in outcomes:
        console.print(f"{o.scenario}  {o.status}" + (f"  {o.seconds:.0f} s" if o.seconds else "")
                      + (f"  {o.message}" if o.message else ""))
    raise_for_failures(outcomes)


def _import(raw: Path, traces: Path | None) -> None:
    from coach import recordings
    from coach.paths import traces_dir

    target = traces or traces_dir()
    done = recordings.import_raw(raw, target, log=lambda line: err_console.print(line, highlight=False))
    for item in done:
        if item.results.get("kind") == "correctness":
            d = item.results.get("diagnosis") or {}
            named = "names" if d.get("names_planted_line") else "[red]does not name[/]"
            clean = "clean" if item.results.get("fixed_clean") else "[red]not clean[/]"
            console.print(f"{item.scenario}  {item.size_bytes / 1e6:.2f} MB  diagnosis {d.get('first_rule')} "
                          f"({named} the planted line), fixed run {clean}")
            continue
        speedup = item.results.get("speedup")
        verdict = "" if item.results.get("meets_min_speedup") is not False else \
            f"  [red]below the scenario's minimum {item.results.get('min_speedup')}x[/]"
        console.print(f"{item.scenario}  {item.size_bytes / 1e6:.2f} MB  speed-up "
                      f"{'n/a' if speedup is None else f'{speedup:.2f}x'}{verdict}")
    total = recordings.folder_size(target)
    budget = recordings.TRACES_BUDGET_BYTES
    style = "red" if total > budget else "green"
    console.print(f"{target}: [{style}]{total / 1e6:.2f} MB[/] in all (budget {budget / 1e6:.0f} MB)")
