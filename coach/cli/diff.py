"""``coach diff BEFORE AFTER``: what a change did, read from two profiles of the program."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json


@app.command("diff")
def diff_cmd(
    before: Path = typer.Argument(..., help="The profile before the change: .ncu-rep, ncu CSV, nsys .sqlite/.nsys-rep, "
                                            "PyTorch JSON, or a saved profile folder."),
    after: Path = typer.Argument(..., help="The profile after the change, of the same kind."),
    fix: str = typer.Option("", "--fix", help="Check the movements against this fix (an id from coach/analyze/fixes.toml, "
                                              "such as coalesce or pinned-memory, or a rule id such as "
                                              "uncoalesced-global-access)."),
    scenario: str = typer.Option("", "--scenario", help="Also check this scenario's evidence (e.g. scenario-01 or 01)."),
    before_kernel: str = typer.Option("", "--before-kernel", help="Only the before side's kernels whose name matches "
                                                                  "this regular expression (Nsight Compute)."),
    after_kernel: str = typer.Option("", "--after-kernel", help="Only the after side's kernels whose name matches this "
                                                                "regular expression (Nsight Compute)."),
    talk: bool = typer.Option(False, "--talk", help="Say it in two minutes: the talking points instead of the tables."),
    top: int = typer.Option(10, "--top", min=1, help="Rows per table."),
    as_json: bool = typer.Option(False, "--json", help="Write the comparison as JSON on stdout."),
    csv: Path | None = typer.Option(None, "--csv", metavar="FILE", help="Write the metric movements (metric, before, after, change) as CSV."),
    parquet: Path | None = typer.Option(None, "--parquet", metavar="FILE", help="Write the metric movements as Parquet."),
) -> None:
    """Compare two profiles of a program: what got faster and by how much, which metrics moved and in
    which direction, whether that is the movement the fix should cause, and whether the runs compare.

    Kernel launches are matched by name and launch configuration, then by name, then by
    configuration (a renamed kernel), in the order they ran. Timelines are compared end to end, per
    kernel name, per NVTX range and per copy kind. Without --fix, the fixes whose movements all
    happened are named.

    Examples:

        coach diff slow.ncu-rep fixed.ncu-rep --fix coalesce

        coach diff report.ncu-rep report.ncu-rep --before-kernel copy_strided --after-kernel copy_coalesced

        coach diff before.sqlite after.sqlite --fix pinned-memory --talk

        coach diff traces/h200/scenario-01/slow/ncu traces/h200/scenario-01/fixed/ncu --scenario 01

        coach diff slow.sqlite fixed.sqlite --csv movements.csv
    """
    from coach import scenarios  # noqa: PLC0415 - polars-heavy imports only when the command runs
    from coach.analyze.diff import diff, only_kernels
    from coach.analyze.talking_points import for_diff
    from coach.errors import CoachError
    from coach.ingest import load

    b, a = load(before), load(after)
    for flag, pattern, side in (("--before-kernel", before_kernel, "b"), ("--after-kernel", after_kernel, "a")):
        if not pattern:
            continue
        profile = b if side == "b" else a
        if profile.kind != "kernel-profile":
            raise CoachError(f"{flag} selects Nsight Compute kernels; {profile.source.path} is a {profile.kind}")
        if side == "b":
            b = only_kernels(b, pattern)
        else:
            a = only_kernels(a, pattern)
    scen = scenarios.find(scenario) if scenario else None
    d = diff(b, a, fix=fix or None, scenario=scen)
    points = for_diff(d, b, a) if talk else None
    if csv is not None or parquet is not None:
        from coach.cli.output import write_frame  # noqa: PLC0415

        write_frame(d.movements, csv, parquet)
    if as_json:
        out = d.to_dict()
        if points is not None:
            out["talking_points"] = points.to_dict()
        print_json(out)
        return
    _print(d, points, top)


def _print(d: Any, points: Any, top: int) -> None:
    from rich.markup import escape  # noqa: PLC0415

    console.print(f"[bold]{escape(d.before_path)}[/] -> [bold]{escape(d.after_path)}[/]  ({d.kind}s)")
    if points is not None:
        for line in points.lines():
            console.print(escape(line), highlight=False)
        return
    from coach.analyze.diff import verdict  # noqa: PLC0415

    for line in verdict(d):
        console.print(f"- {escape(line)}", highlight=False)
    console.print()
    _checks_table(d)
    if d.kind == "kernel-profile":
        _moves_table(d, top)
        _ncu_table(d)
        _unmatched(d)
    else:
        _moves_table(d, top)
        _timeline_tables(d, top)
    _table("Comparability", d.comparability.to_dicts(),
           [("aspect", "aspect"), ("before", "before"), ("after", "after"), ("same", "same"), ("note", "note")])


def _table(title: str, rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> None:
    from coach.cli.output import fit_table  # noqa: PLC0415

    if not rows:
        return
    # every column may wrap at a space (a value and its unit, "32 sector/request", onto two lines),
    # never inside a word or a number
    fit_table(title, [(h, "left") for h, _ in columns],
              [["" if r.get(k) is None else str(r[k]) for _, k in columns] for r in rows],
              names=tuple(range(len(columns))), wrap=True, name_min=1)


def _fmt(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from coach.analyze.diff import fmt_value  # noqa: PLC0415

    out = []
    for r in rows:
        unit = r.get("unit", "")
        change = r.get("change_pct")
        out.append({**r, "before": fmt_value(r.get("before"), unit), "after": fmt_value(r.get("after"), unit),
                    "target": "" if r.get("target") is None else fmt_value(r["target"], unit),
                    "change": "" if change is None else f"{change:+.0f}%",
                    "ok": {True: "yes", False: "NO", None: "not measured"}[r.get("met")] if "met" in r else ""})
    return out


def _checks_table(d: Any) -> None:
    rows = d.headline_checks().to_dicts()
    if d.fix is None and d.suggested:  # the credited fix's movements (the others are named in the verdict)
        rows = [r for r in rows if r.get("fix") == d.suggested[0] or r.get("why") == "scenario evidence"]
    if not rows:
        return
    title = (f"Movements the fix '{d.fix.id}' should cause" if d.fix
             else f"Movements of the fix '{d.suggested[0]}'" if d.suggested else "Expected movements")
    if d.scenario and not d.fix and not d.suggested:
        title = f"{d.scenario}'s evidence"
    _table(title, _fmt(rows), [("fix", "fix"), ("metric", "label"), ("before", "before"), ("after", "after"),
                               ("expected", "direction"), ("target", "target"), ("as expected", "ok")])


def _moves_table(d: Any, top: int) -> None:
    import polars as pl  # noqa: PLC0415

    moves = d.movements.filter(pl.col("direction").is_in(["up", "down"]))
    title = "Metrics that moved"
    if "pair" in moves.columns:
        moves = moves.filter(pl.col("pair") == d.headline["pair"])
        title += f" ({d.headline['kernel_before']} -> {d.headline['kernel_after']}, matched by {d.headline['match']})"
    _table(title, _fmt(moves.head(top).to_dicts()),
           [("metric", "label"), ("before", "before"), ("after", "after"), ("change", "change")])


def _ncu_table(d: Any) -> None:
    import polars as pl  # noqa: PLC0415

    if d.ncu.is_empty():
        return
    rows = d.ncu.filter(pl.col("pair") == d.headline["pair"]).to_dicts()
    for r in rows:
        r["estimated"] = f"{r['estimated_pct']:.0f}%"
        r["realised"] = f"{r['realised_pct']:.0f}%"
        r["for_fix"] = "yes" if r["for_fix"] else "no"
    _table("Nsight Compute's estimated speed-ups (before report) against the saving realised", rows,
           [("rule", "rule_id"), ("type", "speedup_type"), ("estimated", "estimated"), ("realised", "realised"),
            ("for the fix", "for_fix")])


def _unmatched(d: Any) -> None:
    _table("Launches on one side only", d.unmatched.to_dicts(),
           [("side", "side"), ("launch", "launch_id"), ("kernel", "kernel_name")])


def _timeline_tables(d: Any, top: int) -> None:
    from coach.analyze.diff import fmt_value  # noqa: PLC0415

    def t(v: Any) -> str:
        return fmt_value(v, "ns")

    def change(v: Any) -> str:  # a change of time, signed both ways: "+2.63 ms", "-4.02 ms"
        return ("+" if v is not None and v > 0 else "") + t(v)

    def n(v: Any) -> str:  # a count: 65,536
        return fmt_value(v, "")

    kernels = [{**r, "before": f"{n(r['count_before'])} x, {t(r['total_ns_before'])}",
                "after": f"{n(r['count_after'])} x, {t(r['total_ns_after'])}", "change": change(r["change_ns"])}
               for r in d.kernels.head(top).to_dicts()]
    _table("Kernels by name", kernels, [("kernel", "name"), ("before", "before"), ("after", "after"), ("change", "change")])
    nvtx = [{**r, "before": f"{n(r['count_before'])} x, {t(r['wall_ns_before'])} (GPU {t(r['gpu_time_ns_before'])})",
             "after": f"{n(r['count_after'])} x, {t(r['wall_ns_after'])} (GPU {t(r['gpu_time_ns_after'])})",
             "change": change(r["change_ns"])} for r in d.nvtx.head(top).to_dicts()]
    _table("NVTX ranges (wall time, GPU time of the work launched inside)", nvtx,
           [("range", "text"), ("domain", "domain"), ("before", "before"), ("after", "after"), ("change", "change")])
    copies = [{**r, "before": f"{n(r['count_before'])} x, {fmt_value(r['bytes_before'], 'byte')}, {t(r['total_ns_before'])}, "
                              f"{n(r['pageable_before'])} pageable",
               "after": f"{n(r['count_after'])} x, {fmt_value(r['bytes_after'], 'byte')}, {t(r['total_ns_after'])}, "
                        f"{n(r['pageable_after'])} pageable"} for r in d.memcpy.to_dicts()]
    _table("Copies by kind", copies, [("kind", "kind"), ("before", "before"), ("after", "after")])
