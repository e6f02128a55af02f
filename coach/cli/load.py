"""``coach load FILE...``: read profiles and print the summary a performance engineer wants first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json, progress

TOP_FINDINGS = 3


SORTS = ("total", "count", "avg", "median", "min", "max", "stddev", "name")


@app.command("load")
def load_cmd(
    files: list[Path] = typer.Argument(..., metavar="FILE...", help="Profiles: .ncu-rep, ncu CSV, nsys .sqlite/.nsys-rep, "
                                                                    "PyTorch JSON, or folders of them; - reads stdin."),
    as_json: bool = typer.Option(False, "--json", help="Write the summary as JSON on stdout."),
    top: int = typer.Option(10, "--top", min=1, help="How many kernels, API calls and ranges to list."),
    kernel: str | None = typer.Option(None, "--kernel", metavar="REGEX", help="Only kernels whose name matches."),
    nvtx: str | None = typer.Option(None, "--nvtx", metavar="REGEX",
                                    help="Only the work launched inside NVTX ranges whose text matches."),
    start: float | None = typer.Option(None, "--start", metavar="MS", help="Timeline: only events from MS "
                                                                           "milliseconds after the first one."),
    end: float | None = typer.Option(None, "--end", metavar="MS", help="Timeline: only events before MS milliseconds."),
    sort: str = typer.Option("total", "--sort", metavar="|".join(SORTS),
                             help="Order kernels (and API calls) by this column, largest first (name: A to Z)."),
    stats: bool = typer.Option(False, "--stats", help="Timeline: the columns of nsys stats: count, total, "
                                                      "avg, median, min, max and stddev per kernel and API call."),
    brief: bool = typer.Option(False, "--brief", help="The kernels and the first findings only."),
    csv: Path | None = typer.Option(None, "--csv", metavar="FILE", help="Write the kernel table (every row) as CSV."),
    parquet: Path | None = typer.Option(None, "--parquet", metavar="FILE", help="Write the kernel table as Parquet."),
) -> None:
    """Read profiles and summarise them: top kernels, bandwidth, FLOP/s and occupancy for kernel
    profiles; GPU busy %, kernels, copies, API calls and NVTX ranges for timelines; and the first
    findings of the diagnosis.

    Kernels with one short name but different template arguments are named apart by those
    arguments. --csv and --parquet write the whole kernel table (all rows, every column, a path
    column with several files); --json writes everything.

    Examples:

        coach load report.ncu-rep

        coach load run.sqlite --json

        coach load traces/h200/scenario-01/slow/ncu

        coach load run.sqlite --kernel softmax --stats --sort max

        coach load run.sqlite --nvtx 'step[12]' --csv kernels.csv

        coach load run.sqlite --start 100 --end 250

        coach load - < run.sqlite          (a profile on stdin: told apart by its content)

        coach load ranks/          (several timelines: one row per report, the slowest named)
    """
    from coach.cli.output import stdin_paths, write_frame
    from coach.errors import CoachError

    selecting = any(x is not None for x in (kernel, nvtx, start, end))
    if not selecting and csv is None and parquet is None and (len(files) > 1 or any(f.is_dir() for f in files)):
        # likely several timelines side by side: the workers' fork server imports the readers while
        # this process imports its own and finds the reports (coach.analyze.parallel)
        from coach.analyze.parallel import warm_up

        warm_up()
    from coach.ingest import expand, load  # polars: imported only when the command runs

    if sort not in SORTS:
        raise CoachError(f"--sort {sort!r}: use one of {', '.join(SORTS)}")
    with stdin_paths(list(files)) as (given, shown):
        paths = expand(given)
        if len(paths) > 1 and not selecting and csv is None and parquet is None and side_by_side(paths, as_json):
            return
        summaries = []
        with progress("reading profiles", total=len(paths)) as advance:
            for p in paths:
                s = summarize(load(p), top, kernel=kernel, nvtx=nvtx, start_ms=start, end_ms=end, sort=sort)
                s["path"] = shown.get(s["path"], s["path"])
                summaries.append(s)
                advance()
    if csv is not None or parquet is not None:
        write_frame(kernel_frame(summaries), csv, parquet)
    if as_json:
        print_json([_jsonable(s) for s in summaries] if len(summaries) > 1 else _jsonable(summaries[0]))
        return
    for s in summaries:
        show(s, stats=stats, brief=brief)


def summarize(profile: Any, top: int, *, kernel: str | None = None, nvtx: str | None = None,
              start_ms: float | None = None, end_ms: float | None = None, sort: str = "total") -> dict[str, Any]:
    """The summary of one profile (or of the part selected: ``coach.analyze.select``), plus its
    first findings. ``all_kernels`` holds every kernel row, sorted; ``summary`` the top ones."""
    from coach.analyze.diagnose import diagnose  # noqa: PLC0415
    from coach.analyze.select import select  # noqa: PLC0415

    profile = select(profile, kernel=kernel, nvtx=nvtx, start_ms=start_ms, end_ms=end_ms)
    analysis = None
    every = 1 << 62
    if profile.kind == "kernel-profile":
        from coach.analyze.kernel_summary import summarize_kernels  # noqa: PLC0415

        body = summarize_kernels(profile, every)
        body["kernels"] = _named(_sorted(body["kernels"], sort, "kernel"), "kernel_name")
        all_kernels = body["kernels"]
        body["kernels"] = all_kernels.head(top)
    elif profile.kind == "sanitizer-report":
        from coach.analyze.sanitizer_summary import summarize_report  # noqa: PLC0415

        body = summarize_report(profile, top)
        all_kernels = None
    else:
        from coach.analyze.timeline import TimelineAnalysis  # noqa: PLC0415
        from coach.analyze.timeline_summary import summarize_timeline  # noqa: PLC0415

        analysis = TimelineAnalysis(profile)  # one set of derived tables for the summary and the findings
        body = summarize_timeline(profile, every, analysis=analysis)
        all_kernels = _named(_sorted(body["top_kernels"], sort, "timeline"), "name")
        body["top_kernels"] = all_kernels.head(top)
        body["top_api"] = _sorted(body["top_api"], sort, "timeline").head(top)
        body["nvtx"] = body["nvtx"].filter(pl_rank_in_domain() < top)
    findings = [f for f in diagnose(profile, analysis=analysis)
                if f.estimated_saving_ns is not None or f.category != "other"]
    src = profile.source
    # a whole-program capture diagnosed in its steady window: what the window is, as the start-up finding says
    steady = next((f.message.split(", reported here")[0] for f in findings
                   if f.scope == "start-up" and "steady_window" in f.details), None)
    return {
        **({"steady_window": steady} if steady else {}),
        "path": str(src.path),
        "kind": profile.kind,
        "format": src.format,
        "tool": src.tool,
        "tool_version": src.tool_version,
        "summary": body,
        "findings": findings[:TOP_FINDINGS],
        "all_kernels": all_kernels,
    }


def pl_rank_in_domain():
    import polars as pl  # noqa: PLC0415

    return pl.int_range(pl.len()).over("domain")


_SORT_COLUMNS = {"kernel": {"total": "total_ns", "count": "launches", "avg": "avg_ns", "name": "kernel_name"},
                 "timeline": {"total": "total_ns", "count": "count", "avg": "avg_ns", "median": "median_ns",
                              "min": "min_ns", "max": "max_ns", "stddev": "stddev_ns", "name": "name"}}


def _sorted(frame: Any, sort: str, kind: str) -> Any:
    from coach.errors import CoachError  # noqa: PLC0415

    column = _SORT_COLUMNS[kind].get(sort)
    if column is None:
        raise CoachError(f"--sort {sort}: a kernel profile sorts by {', '.join(_SORT_COLUMNS['kernel'])} "
                         "(median, min, max and stddev are over a timeline's launches)")
    if sort == "total" or column not in frame.columns:
        return frame  # the summary's own order: largest total first, ties by full name
    descending = sort != "name"
    tie = "name" if "name" in frame.columns else "kernel_name"
    return frame.sort([column, tie], descending=[descending, False], nulls_last=True, maintain_order=True)


def _named(frame: Any, column: str) -> Any:
    """The frame with ``display_name``: the short name, with the distinguishing template arguments
    where two kernels share it (``coach.analyze.names``)."""
    import polars as pl  # noqa: PLC0415

    from coach.analyze.names import display_names  # noqa: PLC0415

    labels = display_names(frame[column].to_list(), frame["demangled_name"].to_list()) if frame.height else []
    return frame.with_columns(display_name=pl.Series(labels, dtype=pl.Utf8))


def kernel_frame(summaries: list[dict[str, Any]]) -> Any:
    """Every kernel row of the summaries, one frame (a path column first where there are several)."""
    import polars as pl  # noqa: PLC0415

    from coach.errors import CoachError  # noqa: PLC0415

    frames = [s["all_kernels"].with_columns(pl.lit(s["path"]).alias("path")).select("path", pl.exclude("path"))
              for s in summaries if s["all_kernels"] is not None]
    if not frames:
        raise CoachError("--csv/--parquet write the kernel table: a compute-sanitizer report has none")
    return frames[0].drop("path") if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")


def _jsonable(s: dict[str, Any]) -> dict[str, Any]:
    from coach.analyze import kernel_summary, sanitizer_summary, timeline_summary  # noqa: PLC0415

    to_json = {"kernel-profile": kernel_summary.to_jsonable,
               "sanitizer-report": sanitizer_summary.to_jsonable}.get(s["kind"], timeline_summary.to_jsonable)
    body = to_json(s["summary"])
    for key in ("kernels", "top_kernels"):  # display_name is the table's; the JSON keeps its own fields
        if key in body and isinstance(body[key], list):
            body[key] = [{k: v for k, v in row.items() if k != "display_name"} for row in body[key]]
    rest = {k: v for k, v in s.items() if k != "all_kernels"}
    return {**rest, "summary": body, "findings": [f.to_dict() for f in s["findings"]]}


def show(s: dict[str, Any], *, stats: bool = False, brief: bool = False) -> None:
    from rich.markup import escape  # noqa: PLC0415 - kernel names and messages may hold brackets

    version = f" {s['tool_version']}" if s["tool_version"] else ""
    console.print(f"\n[bold]{escape(s['path'])}[/]  [dim]{s['kind']}, {s['tool']}{version}[/]")
    if s["kind"] == "kernel-profile":
        _show_kernels(s["summary"], brief=brief)
    elif s["kind"] == "sanitizer-report":
        _show_sanitizer(s["summary"])
    else:
        _show_timeline(s["summary"], stats=stats, brief=brief, source_format=s["format"])
    if s.get("steady_window"):
        console.print(f"[bold]{escape(s['steady_window'])}[/]: the findings are of the steady window, the start-up "
                      "is reported apart", highlight=False)
    if s["findings"]:
        from coach.analyze.findings import saving_is_upper_bound  # noqa: PLC0415

        console.print("[bold]First findings[/] [dim](coach diagnose FILE for the evidence)[/]")
        for i, f in enumerate(s["findings"], 1):
            gain = f"  [green]~{_time(f.estimated_saving_ns)} to gain[/]" if f.estimated_saving_ns else ""
            if gain and saving_is_upper_bound(f):
                gain = f"  [yellow]at most ~{_time(f.estimated_saving_ns)} (an upper bound)[/]"
            scope = f"[dim]{escape(f.scope)}:[/] " if f.scope else ""
            console.print(f"  {i}. {scope}\\[{f.category}] {escape(f.title)}{gain}", highlight=False)


def _show_kernels(k: dict[str, Any], *, brief: bool = False) -> None:
    from coach.cli.output import fit_table  # noqa: PLC0415

    dev = k["device"]
    if dev.get("name") and not brief:
        peak = (f", Nsight Compute's DRAM peak {_rate(dev['memory_bandwidth_bytes_per_s'])}"
                if dev.get("memory_bandwidth_bytes_per_s") else "")
        console.print(f"{dev['name']}, {dev.get('sm_count')} SMs{peak}; {k['launches']} launch{'' if k['launches'] == 1 else 'es'} profiled")
    columns = [("kernel", "left"), ("n", "right"), ("time", "right"), ("% time", "right"), ("DRAM", "right"),
               ("% peak", "right"), ("SM %", "right"), ("FLOP/s", "right"), ("occup.", "right"),
               ("grid x block", "right")]
    rows, derived = [], False
    for r in k["kernels"].iter_rows(named=True):
        derived |= r.get("dram_rate_source") == "throughput %"
        rows.append([r.get("display_name") or r["kernel_name"], str(r["launches"]), _time(r["total_ns"]),
                     _pct(r["time_pct"]), _rate(r["dram_bytes_per_s"]), _pct(r["dram_pct_of_peak"]),
                     _pct(r["sm_throughput_pct"]), _flops(r["flop_per_s"]), _pct(r["achieved_occupancy_pct"]),
                     _launch_shape(r["grid_size"], r["block_size"])])
    fit_table("Kernels by time", columns, rows, drop=("grid x block", "FLOP/s", "occup.", "SM %"))
    if brief:
        return
    from rich.markup import escape  # noqa: PLC0415 - section names may hold brackets

    for line in k.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(line)}", highlight=False)
    note = "% peak: of Nsight Compute's own DRAM peak."
    if derived:
        note += " DRAM: no byte count in the report; Nsight Compute's DRAM throughput x its peak."
    console.print(f"[dim]{note}[/]")


def _show_timeline(s: dict[str, Any], *, stats: bool = False, brief: bool = False, source_format: str = "") -> None:
    from rich.markup import escape  # noqa: PLC0415

    from coach.analyze.coverage import no_gpu_activity  # noqa: PLC0415
    from coach.cli.output import fit_table  # noqa: PLC0415

    for warning in s.get("warnings", []):
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if not s["window_ns"]:
        console.print(no_gpu_activity(source_format))
    else:
        console.print(f"CUDA activity over {_time(s['window_ns'])}")
    for d in s["devices"].iter_rows(named=True):
        console.print(f"  GPU {d.get('device_id')}: busy {_pct(d.get('busy_pct'))} ({_time(d.get('busy_ns'))})")
    stat_cols = [("med", "right"), ("min", "right"), ("max", "right"), ("stddev", "right")] if stats else []

    def stat_cells(r: dict[str, Any]) -> list[str]:
        if not stats:
            return []
        # one instance has no spread: nsys stats prints 0, coach says so
        sd = "-" if r["count"] < 2 else _time(r["stddev_ns"])
        return [_time(r["median_ns"]), _time(r["min_ns"]), _time(r["max_ns"]), sd]

    if s["top_kernels"].height:
        rows = [[r.get("display_name") or r["name"] or r["demangled_name"], str(r["count"]), _time(r["total_ns"]),
                 _time(r["avg_ns"]), *stat_cells(r), _pct(r["time_pct"])] for r in s["top_kernels"].iter_rows(named=True)]
        fit_table("Kernels by time", [("kernel", "left"), ("count", "right"), ("total", "right"), ("avg", "right"),
                                      *stat_cols, ("% time", "right")], rows, drop=("stddev", "min", "max", "% time"),
                  name_min=30)
    if brief:
        return
    if s["memcpy"].height:
        rows = []
        for r in s["memcpy"].iter_rows(named=True):
            rate = r["gb_per_s"] * 1e9 if r["gb_per_s"] is not None else None
            rows.append([r["kind"], str(r["count"]), _bytes(r["bytes"]), _time(r["total_ns"]), _rate(rate), str(r["pageable"])])
        fit_table("Copies by kind", [("kind", "left"), ("count", "right"), ("bytes", "right"), ("time", "right"),
                                     ("rate", "right"), ("pageable", "right")], rows, name_min=6)
    if s["top_api"].height:
        rows = [[r["name"], str(r["count"]), _time(r["total_ns"]), _time(r["avg_ns"]), *stat_cells(r)]
                for r in s["top_api"].iter_rows(named=True)]
        fit_table("API calls by time", [("call", "left"), ("count", "right"), ("total", "right"), ("avg", "right"),
                                        *stat_cols], rows, drop=("stddev", "min"))
    if s["nvtx"].height:
        rows = [[r["text"] or "", r.get("domain") or "", str(r["count"]), _time(r["wall_ns"]), _time(r["proj_ns"])]
                for r in s["nvtx"].iter_rows(named=True)]
        fit_table("NVTX ranges", [("range", "left"), ("domain", "left"), ("count", "right"), ("wall", "right"),
                                  ("GPU (proj.)", "right")], rows, names=2, name_min=10)


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
        from coach.cli.output import fit_table  # noqa: PLC0415

        rows = []
        for r in s["by_line"].iter_rows(named=True):
            where = f"{Path(r['file']).name}:{r['line']}" if r.get("file") else "-"
            rows.append([r.get("kernel") or "-", _SANITIZER_KINDS.get(r["kind"], r["kind"]), where,
                         str(r["count"]), str(r["threads"]), str(r["blocks"]),
                         *([f"{r['hazards']:,}" if r.get("hazards") else "-"] if races else [])])
        fit_table("Errors by source line", [("kernel", "left"), ("kind", "left"), ("line", "left"),
                                            ("records", "right"), ("threads", "right"), ("blocks", "right"),
                                            *([("hazards", "right")] if races else [])], rows, name_min=12)
    if s["api_errors"].height:
        from coach.cli.output import fit_table  # noqa: PLC0415

        rows = [[r.get("api_call") or "-", f"{r.get('api_error') or '-'} ({r.get('api_error_code')})", str(r["count"])]
                for r in s["api_errors"].iter_rows(named=True)]
        fit_table("Failed CUDA calls", [("call", "left"), ("error", "left"), ("count", "right")], rows,
                  names=(0, 1), wrap=True, name_min=1)


_SANITIZER_KINDS = {"memory-access": "invalid access", "hardware-exception": "device fault",
                    "uninitialized-read": "uninit. read", "uninitialized-copy": "uninit. copy",
                    "shared-race": "race", "shared-hazard": "hazard", "barrier": "barrier", "leak": "leak",
                    "device-malloc": "malloc/free", "sanitizer-error": "tool error"}


def _count(n: int | None, word: str) -> str:
    return f"? {word}s" if n is None else f"{n:,} {word}{'' if n == 1 else 's'}"


#: A value the report lacks (never shown as 0).
MISSING = "not in report"


def _launch_shape(grid: int | None, block: int | None) -> str:
    """grid x block; "not in report" where the report gives neither (a launch line of 2022 without them)."""
    if grid is None and block is None:
        return MISSING
    return f"{MISSING if grid is None else grid}x{MISSING if block is None else block}"


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
    from coach.analyze.kernel_rules._common import fmt_pct  # noqa: PLC0415 - a measured 0.00008% is not "0.0%"

    return fmt_pct(x)  # "not in report" where missing, as MISSING here


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
    from rich.markup import escape

    if as_json:
        print_json({"reports": result.table.to_dicts(), "slowest": result.slowest, "measured_by": result.measured_by,
                    "reasons": result.reasons.to_dicts(), "verdict": result.verdict})
        return
    from coach.cli.output import fit_table  # noqa: PLC0415

    columns = [c for c in _SIDE_BY_SIDE_COLUMNS if c in result.table.columns]
    rows = []
    for row in result.table.iter_rows(named=True):
        cells = [_side_by_side_cell(c, row[c]) for c in columns]
        mark = "[bold red]" if row["report"] == result.slowest else ""
        rows.append([cells[0]] + [f"{mark}{escape(x)}[/]" if mark else escape(x) for x in cells[1:]])
    fit_table("Reports side by side (times in ms; the slowest in red)",
              [(_SIDE_BY_SIDE_COLUMNS[c], "left" if c == "report" else "right") for c in columns], rows,
              drop=("span", "max gap", "sync", "gaps", "wall"), name_min=10)
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
