"""``coach profile -- CMD ...``: run a command under Nsight Systems and/or Nsight Compute, then
read the reports and diagnose them."""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from coach.cli.main import app
from coach.cli.output import console, err_console, print_json

#: Findings shown per profile; the rest are in --json.
TOP_FINDINGS = 5
#: How coach.analyze.diagnose marks a rule that could not run for want of metrics.
NOT_CHECKED_PREFIX = "not-checked:"


@app.command(
    "profile",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False},
)
def profile_cmd(
    command: list[str] = typer.Argument(..., metavar="-- CMD [ARGS]...", help="The program to profile, after '--'."),
    nsys: bool = typer.Option(False, "--nsys", help="Nsight Systems timeline (the default when --ncu is not given)."),
    ncu: str | None = typer.Option(None, "--ncu", metavar="SET", help="Nsight Compute with this section set: full, detailed, basic, ..."),
    kernel: str | None = typer.Option(None, "--kernel", metavar="REGEX", help="Nsight Compute: profile only kernels whose name matches."),
    launch_count: int | None = typer.Option(None, "--launch-count", min=1, metavar="N", help="Nsight Compute: profile at most N launches."),
    out: Path | None = typer.Option(None, "--out", help="New folder for the reports (default: ./coach-profile-DATE-TIME)."),
    timeout: float = typer.Option(600.0, "--timeout", min=1, metavar="S", help="Limit for each profiled run, in seconds."),
    as_json: bool = typer.Option(False, "--json", help="Write the files and findings as JSON on stdout."),
) -> None:
    """Profile a command, keep the reports, and diagnose them.

    The command runs from a scratch folder with a minimal environment (Nsight Systems stores both in
    its report); arguments naming existing files are made absolute. Nsight Systems traces CUDA and
    NVTX only (--trace=cuda,nvtx --sample=none --cpuctxsw=none); Nsight Compute runs with
    --clock-control none and --import-source yes. Where coach's readers are installed, the
    reports are read and diagnosed right away; otherwise read them later with coach load.

    Examples:

        coach profile --nsys -- python train.py --steps 20

        coach profile --ncu full --kernel 'softmax' --launch-count 2 -- python bench.py
    """
    from coach.capture.profile import NcuOptions, profile

    options = NcuOptions(set=ncu, kernel=kernel, launch_count=launch_count) if ncu else None
    if options is None and (kernel or launch_count):
        raise typer.BadParameter("--kernel and --launch-count apply to Nsight Compute: add --ncu SET")
    folder = out or Path(f"coach-profile-{datetime.now():%Y%m%d-%H%M%S}")
    files = profile(command, folder, nsys=nsys or options is None, ncu=options, timeout=timeout)
    reports = [f for f in files if f.suffix in (".sqlite", ".ncu-rep")]
    err_console.print(f"reports in {folder}: {', '.join(f.name for f in files)}")
    if importlib.util.find_spec("polars") is None:
        err_console.print("coach's readers are not installed here: read the reports elsewhere with "
                          f"`coach load {folder}`")
        if as_json:
            print_json({"folder": str(folder), "files": [str(f) for f in files]})
        return
    from coach.errors import CoachError
    from coach.ingest import load

    try:
        analyses = [{"report": str(r), **analyse(load(r))} for r in reports]
    except CoachError as err:
        raise CoachError(f"the reports are kept in {folder}, but reading them failed: {err}") from None
    if as_json:
        print_json({"folder": str(folder), "files": [str(f) for f in files], "analyses": analyses})
        return
    for a in analyses:
        console.print(f"\n[bold]{a['report']}[/]")
        show_analysis(a)


def diagnose(profile: Any) -> list[Any] | None:
    """``coach.analyze.diagnose.diagnose(profile)``, or None where that module does not exist yet."""
    try:
        from coach.analyze.diagnose import diagnose as run
    except ModuleNotFoundError as err:
        if err.name in ("coach.analyze.diagnose", "coach.analyze"):
            return None
        raise
    return list(run(profile))


def analyse(profile: Any) -> dict[str, Any]:
    """The findings of a profile (as dicts), or its table sizes where no diagnosis is available."""
    findings = diagnose(profile)
    summary = {"kind": profile.kind, "tables": {k: v.height for k, v in profile.tables().items()}}
    if findings is None:
        return {**summary, "findings": None}
    return {**summary, "findings": [f.to_dict() if hasattr(f, "to_dict") else dict(f) for f in findings]}


def show_analysis(analysis: dict[str, Any], *, expected_rule: str | None = None) -> None:
    findings = analysis.get("findings")
    if findings is None:
        rows = ", ".join(f"{k} {n}" for k, n in analysis["tables"].items() if n)
        console.print(f"  {analysis['kind']}: {rows or 'no rows'}")
        console.print("  [dim](no diagnosis: coach.analyze.diagnose is not part of this version)[/]")
        return
    from coach.analyze.findings import saving_is_upper_bound  # noqa: PLC0415 - findings came from coach.analyze

    notes = [f for f in findings if str(f.get("rule_id", "")).startswith(NOT_CHECKED_PREFIX)]
    findings = [f for f in findings if f not in notes]
    if not findings:
        console.print("  no findings")
    for i, f in enumerate(findings[:TOP_FINDINGS], 1):
        gain = f.get("estimated_gain_pct")
        gain_text = f"  [dim](up to {gain:.0f}% of its time)[/]" if isinstance(gain, (int, float)) else ""
        if gain_text and saving_is_upper_bound(f):
            gain_text = "  [dim](gain not estimated: an upper bound only)[/]"
        where = f"{f.get('category')}, {f.get('scope') or 'whole profile'}"
        console.print(f"  {i}. [bold]{escape(str(f.get('title')))}[/] [dim]({escape(where)})[/]{gain_text}")
        console.print(f"     {escape(str(f.get('message')))}")
        if f.get("next_step"):
            console.print(f"     [dim]next:[/] {escape(str(f['next_step']))}")
    if notes:
        names = ", ".join(str(n.get("rule_id"))[len(NOT_CHECKED_PREFIX):] for n in notes)
        console.print(f"  [dim]not checked (the profile lacks their metrics): {escape(names)}[/]")
    if expected_rule is not None:
        first = findings[0].get("rule_id") if findings else None
        verdict = "[green]matches[/]" if first == expected_rule else f"[red]differs[/] (first: {first})"
        console.print(f"  expected first finding: {expected_rule}: {verdict}")
