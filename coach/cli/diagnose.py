"""``coach diagnose FILE...``: per kernel, the ranked findings with their evidence and the next step."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json, progress
from coach.errors import CoachError


@app.command("diagnose")
def diagnose_cmd(
    files: list[Path] = typer.Argument(..., help="Profiles: .ncu-rep, ncu CSV, nsys .sqlite/.nsys-rep, PyTorch JSON, or folders of them."),
    as_json: bool = typer.Option(False, "--json", help="Write the findings as JSON on stdout."),
    top: int = typer.Option(0, "--top", min=0, help="Show at most N findings per kernel (0: all)."),
    kernel: str = typer.Option("", "--kernel", metavar="REGEX", help="Only kernels whose name matches this regular expression."),
    csv: Path | None = typer.Option(None, "--csv", metavar="FILE", help="Write the findings, one row each (evidence as JSON text) as CSV."),
    parquet: Path | None = typer.Option(None, "--parquet", metavar="FILE", help="Write the findings as Parquet."),
) -> None:
    """Find each kernel's bottleneck: ranked findings with evidence, estimated gain and the next step.

    Findings are ranked by the time their fix would save. Each names the bottleneck class, the
    evidence (metric, value, healthy value, threshold), the gain model, what to do next, and where
    Nsight Compute's own rules agree or differ. Checks that a profile lacks the metrics for are
    listed as not checked.

    Examples:

        coach diagnose report.ncu-rep

        coach diagnose report.ncu-rep --kernel 'copy_.*' --top 3

        coach diagnose run.sqlite --json

        coach diagnose report.ncu-rep --csv findings.csv

        cat report.ncu-rep | coach diagnose -
    """
    from coach.analyze.diagnose import diagnose  # noqa: PLC0415 - polars-heavy, imported on use
    from coach.cli.output import stdin_paths, write_frame  # noqa: PLC0415
    from coach.ingest import expand, load  # noqa: PLC0415

    try:
        pattern = re.compile(kernel) if kernel else None
    except re.error as err:
        raise CoachError(f"--kernel: not a regular expression ({err})") from None
    reports = []
    with stdin_paths(list(files)) as (given, shown):
        paths = expand(given)
        with progress("diagnosing", total=len(paths)) as advance:
            for path in paths:
                profile = load(path)
                if profile.kind == "kernel-profile":  # the text of the lines findings point at, where a local copy matches
                    from coach.ingest import source_text  # noqa: PLC0415

                    profile = source_text.fill(profile, source_text.search_folders(path, profile))
                if pattern is not None and profile.kind == "kernel-profile":
                    profile = _only_kernels(profile, pattern)
                report = _report(profile, diagnose(profile), pattern, top)
                report["path"] = shown.get(report["path"], report["path"])
                reports.append(report)
                advance()
        paths = [shown.get(str(p), p) for p in paths]
    if pattern is not None and not any(r["kernels"] for r in reports):
        raise CoachError(f"no kernel matches --kernel {kernel!r} in {', '.join(str(p) for p in paths)}")
    if csv is not None or parquet is not None:
        write_frame(findings_frame(reports), csv, parquet)
    if as_json:
        print_json(reports if len(reports) > 1 else reports[0])
        return
    for report in reports:
        _print_report(report)


def findings_frame(reports: list[dict[str, Any]]):
    """One row per finding (not-checked notes included, ``not_checked`` true): the report, the
    kernel launch or scope, and the finding's fields; lists and mappings as JSON text."""
    import json  # noqa: PLC0415

    import polars as pl  # noqa: PLC0415

    rows = []
    for report in reports:
        for k in report["kernels"]:
            for key, note in (("findings", False), ("not_checked", True)):
                for f in k[key]:
                    row = {"path": report["path"], "launch_id": k.get("launch_id"), "kernel": k.get("kernel"),
                           "scope": f.get("scope"), "not_checked": note}
                    row.update({name: json.dumps(v, default=str) if isinstance(v, (list, dict, tuple)) else v
                                for name, v in f.items() if name not in row})
                    rows.append(row)
    if not rows:
        return pl.DataFrame({"path": [], "rule_id": []}, schema={"path": pl.Utf8, "rule_id": pl.Utf8})
    return pl.from_dicts(rows, infer_schema_length=None)


def _only_kernels(profile, pattern: re.Pattern[str]):
    import polars as pl  # noqa: PLC0415

    try:
        launches = profile.launches.filter(pl.col("kernel_name").fill_null("").str.contains(pattern.pattern)
                                           | pl.col("demangled_name").fill_null("").str.contains(pattern.pattern))
    except pl.exceptions.ComputeError as err:
        raise CoachError(f"--kernel: not a regular expression Polars accepts ({err})") from None
    ids = launches["launch_id"].implode()
    return replace(profile, launches=launches, rules=profile.rules.filter(pl.col("launch_id").is_in(ids)),
                   metrics=profile.metrics.filter(pl.col("launch_id").is_in(ids)))


def _report(profile, findings: list, pattern: re.Pattern[str] | None, top: int) -> dict[str, Any]:
    """Findings grouped per kernel launch (timelines: per scope), notes apart, in ranked order."""
    from coach.analyze.diagnose import is_not_checked  # noqa: PLC0415

    groups: dict[Any, dict[str, Any]] = {}
    if profile.kind == "kernel-profile":
        for row in profile.launches.sort("launch_id").iter_rows(named=True):
            groups[row["launch_id"]] = {
                "launch_id": row["launch_id"], "kernel": row["kernel_name"], "demangled_name": row["demangled_name"],
                "duration_ns": row["duration_ns"], "grid_size": row["grid_size"], "block_size": row["block_size"],
                "findings": [], "not_checked": []}
    for f in findings:
        if profile.kind != "kernel-profile" and pattern is not None and not pattern.search(f.scope):
            continue
        key = f.launch_id if profile.kind == "kernel-profile" else f.scope
        group = groups.setdefault(key, {"scope": f.scope, "findings": [], "not_checked": []})
        group["not_checked" if is_not_checked(f) else "findings"].append(f.to_dict())
    if top:
        for g in groups.values():
            g["findings"] = g["findings"][:top]
    out = {"path": str(profile.source.path), "kind": profile.kind, "kernels": list(groups.values())}
    if profile.source.meta.get("truncated"):  # a text report cut short: what is missing was not diagnosed
        out["truncated"] = profile.source.meta["truncated"]
    return out


def _print_report(report: dict[str, Any]) -> None:
    from rich.markup import escape  # noqa: PLC0415

    from coach.analyze.findings import saving_is_upper_bound  # noqa: PLC0415
    from rich.panel import Panel  # noqa: PLC0415

    console.print(f"[bold]{report['path']}[/]  ({report['kind']})")
    if report.get("truncated"):
        console.print(f"  [yellow]note:[/] the file is cut short: {escape(report['truncated'])}", highlight=False)
    if not report["kernels"]:  # a timeline on which no rule fired and none said what it could not check
        console.print("  nothing found: no rule fired on this profile")
    for k in report["kernels"]:
        head = k.get("kernel") or k.get("scope") or ""
        if k.get("duration_ns") is not None:
            head += f"  {_time(k['duration_ns'])}"
            if k["grid_size"] is not None or k["block_size"] is not None:  # a 2022 launch line may give neither
                head += f"  grid {k['grid_size']} x block {k['block_size']}"
        console.print(Panel(f"[bold]{escape(head)}[/]", expand=False))
        if not k["findings"]:
            console.print("  nothing found")
        for i, f in enumerate(k["findings"], 1):
            gain = ""
            if f["estimated_saving_ns"] is not None and saving_is_upper_bound(f):
                # the gap to a roof nothing narrows: at most that, and no share of the time claimed
                gain = f"  [yellow]at most ~{_time(f['estimated_saving_ns'])} (an upper bound, not an estimate)[/]"
            elif f["estimated_saving_ns"] is not None:
                gain = f"  [green]saves ~{_time(f['estimated_saving_ns'])} ({f['estimated_gain_pct']:.0f}%)[/]"
            console.print(f"[bold]{i}. \\[{f['category']}] {escape(f['title'])}[/]{gain}")
            console.print(f"   {escape(f['message'])}", highlight=False)
            for e in f["evidence"]:  # one line each: readable at any terminal width
                threshold = f"; fires at {_num(e['threshold'], e['unit'])}" if e["threshold"] is not None else ""
                healthy = f"  [dim](healthy: {escape(e['healthy'])}{threshold})[/]" if e["healthy"] or threshold else ""
                console.print(f"   - {e['metric']} = [bold]{_num(e['value'], e['unit'])}[/]{healthy}", highlight=False)
            for loc in f.get("locations") or ():  # the lines that cause it (source counters)
                text = f"  {escape(loc['text'])}" if loc["text"] else ""
                console.print(f"   [cyan]at {escape(loc['where'])}[/]{text}  [dim]({escape(loc['note'])})[/]", highlight=False)
            if f["gain_model"]:
                console.print(f"   [dim]gain model:[/] {escape(f['gain_model'])}", highlight=False)
            console.print(f"   [bold]next:[/] {escape(f['next_step'])}", highlight=False)
            if f["ncu_rule"]:
                pct = f" ({f['ncu_speedup_pct']:.0f}% estimated)" if f["ncu_speedup_pct"] is not None else ""
                console.print(f"   [dim]matching Nsight Compute rule:[/] {f['ncu_rule']}{pct}", highlight=False)
            if f["differs_from_ncu"]:
                console.print(f"   [yellow]where Nsight Compute differs:[/] {f['differs_from_ncu']}", highlight=False)
        for n in k["not_checked"]:
            console.print(f"  [dim]not checked: {n['message']}[/]", highlight=False)
        console.print()


def _time(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    return f"{ns / 1e6:.2f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} us" if ns >= 1e3 else f"{ns:.0f} ns"


def _num(x: float | None, unit: str) -> str:
    """A value with its unit, as ``coach explain`` and ``coach diff`` print it (one formatter, so
    the same evidence reads the same in each); "not in report" where the value is missing."""
    from coach.analyze.diff import fmt_value  # noqa: PLC0415

    return fmt_value(x, unit)
