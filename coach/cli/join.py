"""``coach join TIMELINE NCU_REPORT``: the timeline's kernels and Nsight Compute's metrics in one table."""

from __future__ import annotations

from pathlib import Path

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json


@app.command("join")
def join_cmd(
    timeline: Path = typer.Argument(..., help="The program's timeline: nsys .sqlite/.nsys-rep (or PyTorch JSON)."),
    report: Path = typer.Argument(..., help="Nsight Compute's profile of the same program: .ncu-rep or ncu CSV."),
    top: int = typer.Option(15, "--top", min=1, help="Kernels to show, largest total time first."),
    as_json: bool = typer.Option(False, "--json", help="Write the joined table as JSON on stdout."),
    csv: Path | None = typer.Option(None, "--csv", metavar="FILE", help="Write the joined kernel table (every row) as CSV."),
    parquet: Path | None = typer.Option(None, "--parquet", metavar="FILE", help="Write the joined kernel table as Parquet."),
) -> None:
    """Put the timeline's kernel rows and Nsight Compute's per-kernel metrics of one program in one
    table: which of the kernels that dominate the timeline is bound by what.

    Launches are matched by kernel name, launch configuration (grid, block) and invocation order;
    compare the two tools' durations of a matched launch to check the pairing (Nsight Compute
    clears the caches before each replay, so its duration is usually a little longer).

    Examples:

        coach join run.sqlite run.ncu-rep

        coach join run.nsys-rep run.ncu-rep --json

        coach join run.sqlite run.ncu-rep --parquet joined.parquet
    """
    from rich.markup import escape  # noqa: PLC0415

    from coach.analyze.diff import fmt_value  # noqa: PLC0415 - polars-heavy, imported on use
    from coach.analyze.joined import join  # noqa: PLC0415
    from coach.ingest import load  # noqa: PLC0415

    from coach.cli.output import write_frame  # noqa: PLC0415

    joined = join(load(timeline), load(report))
    if csv is not None or parquet is not None:
        write_frame(joined.kernels, csv, parquet)
    if as_json:
        print_json(joined.to_dict())
        return
    from coach.cli.output import fit_table  # noqa: PLC0415

    console.print(f"[bold]{escape(joined.timeline_path)}[/] + [bold]{escape(joined.profile_path)}[/]")
    rows, findings = [], []
    for r in joined.kernels.head(top).iter_rows(named=True):
        grid = "x".join(str(r[f"grid_{a}"]) for a in "xyz") + " x " + "x".join(str(r[f"block_{a}"]) for a in "xyz")
        bound = f"{r['bound']}, {r['regime']} {r['busiest_pct']:.0f}%" if r["bound"] else "-"
        profiled = r["ncu_ns"] is not None
        rows.append([r["name"] or "", bound, str(r["launches"]), fmt_value(r["total_ns"], "ns"), f"{r['time_pct']:.1f}%",
                     str(r["profiled"]), fmt_value(r["nsys_ns_of_profiled"], "ns") if profiled else "-",
                     fmt_value(r["ncu_ns"], "ns") if profiled else "-", grid])
        findings.append((r["name"] or "", r["top_finding"] or ("not profiled" if not r["profiled"] else "")))
    fit_table(None, [("kernel", "left"), ("bound", "left"), ("n", "right"), ("time", "right"), ("share", "right"),
                     ("prof.", "right"), ("nsys", "right"), ("ncu", "right"), ("grid x block", "right")],
              rows, names=2, drop=("grid x block",), name_min=14,
              caption="prof.: launches Nsight Compute profiled; nsys / ncu: the durations of the profiled launch")
    for name, finding in findings:
        if finding:
            console.print(f"  [bold]{escape(name)}[/]: {escape(finding)}", highlight=False)
    shown = min(top, joined.kernels.height)
    profiled = joined.kernels.head(shown).filter(joined.kernels.head(shown)["profiled"] > 0)
    covered = profiled["time_pct"].sum() if profiled.height else 0.0
    console.print(f"Nsight Compute profiled kernels making {covered:.1f}% of the timeline's kernel time "
                  f"(of the {shown} shown).", highlight=False)
    if joined.unmatched.height:
        names = ", ".join(sorted(set(joined.unmatched["name"].to_list())))
        console.print(f"[yellow]Profiled but not on this timeline:[/] {escape(names)} (another run or process?)")
