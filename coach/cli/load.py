"""``coach load FILE...``: read profiles and print the summary a performance engineer wants first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json, progress

TOP_FINDINGS = 3


@app.command("load")
def load_cmd(
    files: list[Path] = typer.Argument(..., help="Profiles: .ncu-rep, ncu CSV, nsys .sqlite/.nsys-rep, PyTorch JSON, or folders of them."),
    as_json: bool = typer.Option(False, "--json", help="Write the summary as JSON on stdout."),
    top: int = typer.Option(10, "--top", min=1, help="How many kernels, API calls and ranges to list."),
) -> None:
    """Read profiles and summarise them: top kernels, bandwidth, FLOP/s and occupancy for kernel
    profiles; GPU busy %, kernels, copies, API calls and NVTX ranges for timelines; and the first
    findings of the diagnosis.

    Examples:

        coach load report.ncu-rep

        coach load run.sqlite --json

        coach load traces/h200/scenario-01/slow/ncu

        coach load ranks/          (several timelines: one row per report, the slowest named)
    """
    from coach.ingest import expand, load  # polars: imported only when the command runs

    paths = expand(list(files))
    if len(paths) > 1 and side_by_side(paths, as_json):
        return
    summaries = []
    with progress("reading profiles", total=len(paths)) as advance:
        for p in paths:
            summaries.append(summarize(load(p), top))
            advance()
    if as_json:
        print_json([_jsonable(s) for s in summaries] if len(summaries) > 1 else _jsonable(summaries[0]))
        return
    for s in summaries:
        show(s)


def summarize(profile: Any, top: int) -> dict[str, Any]:
    """The summary of one profile, plus its first findings."""
    from coach.analyze.diagnose import diagnose  # noqa: PLC0415

    analysis = None
    if profile.kind == "kernel-profile":
        from coach.analyze.kernel_summary import summarize_kernels  # noqa: PLC0415

        body = summarize_kernels(profile, top)
    elif profile.kind == "sanitizer-report":
        from coach.analyze.sanitizer_summary import summarize_report  # noqa: PLC0415

        body = summarize_report(profile, top)
    else:
        from coach.analyze.timeline import TimelineAnalysis  # noqa: PLC0415
        from coach.analyze.timeline_summary import summarize_timeline  # noqa: PLC0415

        analysis = TimelineAnalysis(profile)  # one set of derived tables for the summary and the findings
        body = summarize_timeline(profile, top, analysis=analysis)
    findings = [f for f in diagnose(profile, analysis=analysis)
                if f.estimated_saving_ns is not None or f.category != "other"]
    src = profile.source
    return {
        "path": str(src.path),
        "kind": profile.kind,
        "format": src.format,
        "tool": src.tool,
        "tool_version": src.tool_version,
        "summary": body,
        "findings": findings[:TOP_FINDINGS],
    }


def _jsonable(s: dict[str, Any]) -> dict[str, Any]:
    from coach.analyze import kernel_summary, sanitizer_summary, timeline_summary  # noqa: PLC0415

    to_json = {"kernel-profile": kernel_summary.to_jsonable,
               "sanitizer-report": sanitizer_summary.to_jsonable}.get(s["kind"], timeline_summary.to_jsonable)
    return {**s, "summary": to_json(s["summary"]), "findings": [f.to_dict() for f in s["findings"]]}


def show(s: dict[str, Any]) -> None:
    from rich.markup import escape  # noqa: PLC0415 - kernel names and messages may hold brackets


    version = f" {s['tool_version']}" if s["tool_version"] else ""
    console.print(f"\n[bold]{s['path']}[/]  [dim]{s['kind']}, {s['tool']}{version}[/]")
    if s["kind"] == "kernel-profile":
        _show_kernels(s["summary"])
    elif s["kind"] == "sanitizer-report":
        _show_sanitizer(s["summary"])
    else:
        _show_timeline(s["summary"])
    if s["findings"]:
        console.print("[bold]First findings[/] [dim](coach diagnose FILE for the evidence)[/]")
        for i, f in enumerate(s["findings"], 1):
            gain = f"  [green]~{_time(f.estimated_saving_ns)} to gain[/]" if f.estimated_saving_ns else ""
            scope = f"[dim]{escape(f.scope)}:[/] " if f.scope else ""
            console.print(f"  {i}. {scope}\\[{f.category}] {escape(f.title)}{gain}", highlight=False)


def _table(title: str, columns: list[tuple[str, str]]):
    from rich.table import Table  # noqa: PLC0415

    t = Table(title=title, title_justify="left", title_style="bold", header_style="dim", box=None, padding=(0, 1))
    for name, justify in columns:
        t.add_column(name, justify=justify, overflow="fold")
    return t


def _show_kernels(k: dict[str, Any]) -> None:
    dev = k["device"]
    if dev.get("name"):
        peak = (f", Nsight Compute's DRAM peak {_rate(dev['memory_bandwidth_bytes_per_s'])}"
                if dev.get("memory_bandwidth_bytes_per_s") else "")
        console.print(f"{dev['name']}, {dev.get('sm_count')} SMs{peak}; {k['launches']} launches profiled")
    t = _table("Kernels by time", [("kernel", "left"), ("n", "right"), ("time", "right"), ("% time", "right"),
                                   ("DRAM", "right"), ("% of peak", "right"), ("SM %", "right"), ("FLOP/s", "right"),
                                   ("occup.", "right"), ("grid x block", "right")])
    t.columns[0].min_width = 14
    derived = False
    for r in k["kernels"].iter_rows(named=True):
        derived |= r.get("dram_rate_source") == "throughput %"
        t.add_row(_short(r["kernel_name"], 40), str(r["launches"]), _time(r["total_ns"]), _pct(r["time_pct"]),
                  _rate(r["dram_bytes_per_s"]), _pct(r["dram_pct_of_peak"]), _pct(r["sm_throughput_pct"]),
                  _flops(r["flop_per_s"]), _pct(r["achieved_occupancy_pct"]), f"{r['grid_size']}x{r['block_size']}")
    console.print(t)
    note = "% of peak: of Nsight Compute's own DRAM peak."
    if derived:
        note += " DRAM: no byte count in the report; Nsight Compute's DRAM throughput x its peak."
    console.print(f"[dim]{note}[/]")


def _show_timeline(s: dict[str, Any]) -> None:
    from rich.markup import escape  # noqa: PLC0415

    for warning in s.get("warnings", []):
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if not s["window_ns"]:
        console.print("No CUDA activity recorded (was it profiled with --trace=cuda?)")
    else:
        console.print(f"CUDA activity over {_time(s['window_ns'])}")
    for d in s["devices"].iter_rows(named=True):
        console.print(f"  GPU {d.get('device_id')}: busy {_pct(d.get('busy_pct'))} ({_time(d.get('busy_ns'))})")
    t = _table("Kernels by time", [("kernel", "left"), ("count", "right"), ("total", "right"), ("avg", "right"), ("% kernel time", "right")])
    for r in s["top_kernels"].iter_rows(named=True):
        t.add_row(_short(r["name"] or r["demangled_name"]), str(r["count"]), _time(r["total_ns"]), _time(r["avg_ns"]), _pct(r["time_pct"]))
    if s["top_kernels"].height:
        console.print(t)
    if s["memcpy"].height:
        t = _table("Copies by kind", [("kind", "left"), ("count", "right"), ("bytes", "right"), ("time", "right"), ("rate", "right"), ("pageable", "right")])
        for r in s["memcpy"].iter_rows(named=True):
            rate = r["gb_per_s"] * 1e9 if r["gb_per_s"] is not None else None
            t.add_row(r["kind"], str(r["count"]), _bytes(r["bytes"]), _time(r["total_ns"]), _rate(rate), str(r["pageable"]))
        console.print(t)
    if s["top_api"].height:
        t = _table("API calls by time", [("call", "left"), ("count", "right"), ("total", "right"), ("avg", "right")])
        for r in s["top_api"].iter_rows(named=True):
            t.add_row(r["name"], str(r["count"]), _time(r["total_ns"]), _time(r["avg_ns"]))
        console.print(t)
    if s["nvtx"].height:
        t = _table("NVTX ranges", [("range", "left"), ("domain", "left"), ("count", "right"), ("wall", "right"), ("GPU (projected)", "right")])
        for r in s["nvtx"].iter_rows(named=True):
            t.add_row(r["text"], r.get("domain") or "", str(r["count"]), _time(r["wall_ns"]), _time(r["proj_ns"]))
        console.print(t)


def _show_sanitizer(s: dict[str, Any]) -> None:
    t = s["totals"]
    tool = s["tool"] or "tool not named in the report"
    counts = []
    if t.get("errors") is not None:
        counts.append(_count(t["errors"], "error"))
    if t.get("hazards_displayed") is not None:
        counts.append(f"{_count(t['hazards_displayed'], 'race')} ({_count(t.get('race_errors'), 'error')}, "
                      f"{_count(t.get('race_warnings'), 'warning')})")
    if t.get("errors_not_printed"):
        counts.append(f"{t['errors_not_printed']:,} not printed")
    if t.get("leaked_bytes"):
        counts.append(f"{_bytes(t['leaked_bytes'])} leaked")
    finished = "" if t.get("complete") else "; the report stops before its summary (the run was cut short)"
    console.print(f"compute-sanitizer {tool}: {', '.join(counts) or 'no totals printed'}{finished}")
    if s["by_line"].height:
        races = s["by_line"]["hazards"].fill_null(0).sum() > 0
        tbl = _table("Errors by source line", [("kind", "left"), ("kernel", "left"), ("line", "left"),
                                               ("records", "right"), ("threads", "right"), ("blocks", "right"),
                                               *([("hazards", "right")] if races else [])])
        for r in s["by_line"].iter_rows(named=True):
            where = f"{Path(r['file']).name}:{r['line']}" if r.get("file") else "-"
            tbl.add_row(_SANITIZER_KINDS.get(r["kind"], r["kind"]), _short(r.get("kernel") or "-", 40), where,
                        str(r["count"]), str(r["threads"]), str(r["blocks"]),
                        *([f"{r['hazards']:,}" if r.get("hazards") else "-"] if races else []))
        console.print(tbl)
    if s["api_errors"].height:
        tbl = _table("Failed CUDA calls", [("call", "left"), ("error", "left"), ("count", "right")])
        for r in s["api_errors"].iter_rows(named=True):
            tbl.add_row(r.get("api_call") or "-", f"{r.get('api_error') or '-'} ({r.get('api_error_code')})",
                        str(r["count"]))
        console.print(tbl)


_SANITIZER_KINDS = {"memory-access": "invalid access", "hardware-exception": "device fault",
                    "uninitialized-read": "uninit. read", "uninitialized-copy": "uninit. copy",
                    "shared-race": "race", "shared-hazard": "hazard", "barrier": "barrier", "leak": "leak",
                    "device-malloc": "malloc/free", "sanitizer-error": "tool error"}


def _count(n: int | None, word: str) -> str:
    return f"? {word}s" if n is None else f"{n:,} {word}{'' if n == 1 else 's'}"


def _short(name: str | None, width: int = 70) -> str:
    return "" if name is None else name if len(name) <= width else name[: width - 1] + "…"


#: A value the report lacks (never shown as 0).
MISSING = "not in report"


def _time(ns: float | None) -> str:
    if ns is None:
        return MISSING
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(ns) >= scale:
            return f"{ns / scale:.2f} {unit}"
    return f"{ns:.0f} ns"


def _si(x: float | None, unit: str) -> str:
    if x is None:
        return MISSING
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.2f} {prefix}{unit}"
    return f"{x:.0f} {unit}"


def _rate(x: float | None) -> str:
    return _si(x, "B/s")


def _bytes(x: float | None) -> str:
    return _si(x, "B")


def _flops(x: float | None) -> str:
    return _si(x, "FLOP/s")


def _pct(x: float | None) -> str:
    return MISSING if x is None else f"{x:.1f}%"


def _num(x: float | None) -> str:
    return MISSING if x is None else f"{x:.3g}"


# --------------------------------------------------------------------------------------------
# Several timelines: the per-report table side by side (coach.analyze.multi)
# --------------------------------------------------------------------------------------------


def side_by_side(paths: list[Path], as_json: bool) -> bool:
    """Show several timeline reports side by side and return True; return False (showing nothing)
    when the paths are not at least two timelines."""
    from coach.analyze.multi import cache_reports, distinct_reports, timeline_format
    from coach.analyze.multi import side_by_side as summarize_reports

    if not all(timeline_format(p) for p in paths):
        return False
    reports = distinct_reports(paths)
    if len(reports) < 2:
        return False
    with progress("reading reports into the cache", total=len(reports)) as advance:
        folders = cache_reports(reports, on_each=advance)
    print_side_by_side(summarize_reports(folders), as_json)
    return True


def print_side_by_side(result, as_json: bool) -> None:  # result: coach.analyze.multi.SideBySide
    """The per-report table (times in ms; --json has every column), the slowest report's row in
    bold, and the verdict."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    if as_json:
        print_json({"reports": result.table.to_dicts(), "slowest": result.slowest, "measured_by": result.measured_by,
                    "reasons": result.reasons.to_dicts(), "verdict": result.verdict})
        return
    table = Table(title="Reports side by side (times in ms)", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    columns = [c for c in _SIDE_BY_SIDE_COLUMNS if c in result.table.columns]
    for c in columns:
        header = _SIDE_BY_SIDE_COLUMNS[c]
        table.add_column(header, justify="left" if c == "report" else "right", min_width=len(header))
    for row in result.table.iter_rows(named=True):
        style = "bold red" if row["report"] == result.slowest else None
        table.add_row(*(escape(_side_by_side_cell(c, row[c])) for c in columns), style=style)
    console.print(table)
    console.print(escape(result.verdict))


_SIDE_BY_SIDE_COLUMNS = {"report": "report", "steps": "steps", "step_ns": "step", "wall_ns": "wall", "span_ns": "span",
                         "kernels": "kernels",
                         "kernel_ns": "kernel", "busy_pct": "busy %", "gap_ns": "gaps", "max_gap_ns": "max gap",
                         "sync_calls": "syncs", "sync_ns": "sync"}


def _side_by_side_cell(column: str, value) -> str:
    if value is None:
        return "-"
    if column.endswith("_ns"):
        return f"{value / 1e6:,.1f}"
    if column.endswith("_pct"):
        return f"{value:.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)
