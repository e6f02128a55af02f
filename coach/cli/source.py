"""``coach source REPORT``: which lines of a kernel take its time, from Nsight Compute's source counters."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json
from coach.errors import CoachError

#: Instruction text longer than this is cut in the --sass table (80-column terminals).
SASS_WIDTH = 44


@app.command("source")
def source_cmd(
    report: Path = typer.Argument(..., help="A .ncu-rep, or a saved kernel profile folder (traces/...)."),
    kernel: str = typer.Option("", "--kernel", help="Only launches of kernels whose name matches this regular expression."),
    top: int = typer.Option(5, "--top", min=0, help="Show the N hottest lines per launch (0: all)."),
    sass: bool = typer.Option(False, "--sass", help="Also show the SASS instructions of the hottest line."),
    source_dir: list[Path] = typer.Option([], "--source-dir", help="Where to look for sources the report lacks (repeatable)."),
    rank: str = typer.Option("finding", "--rank", help="Order lines by the counter of the launch's leading finding "
                             "that points at lines (finding), or by warp-state samples (samples)."),
    as_json: bool = typer.Option(False, "--json", help="Write the lines as JSON on stdout."),
) -> None:
    """The hot lines of each kernel: share of warp-state samples, what the warps wait on, excess sectors.

    Lines are ranked by the counter of the launch's leading finding in `coach diagnose` that points
    at lines (divergence: the lanes a branch splits off; uncoalesced access: the L2 sectors beyond a
    coalesced access; a stall reason: its samples; ...), ties and the rest by their share of the
    warp-state samples (where the warps spend their time); --rank samples ranks by samples alone. A
    line that a finding points at says so ("cause of: ..."). Inlined code is charged to the callee's
    line, with the line it is inlined at beside it, where the report's binary says so.

    Reads the source counters of an Nsight Compute report (--set full, or --section SourceCounters):
    per line, its share of the warp-state samples with the dominant stall reasons, the L2 sectors
    its global accesses fetch beyond a coalesced pattern, the shared-memory wavefronts beyond one per
    request (bank conflicts), and its local-memory sectors. Lines need -lineinfo at build time; the
    text needs --import-source yes, or a local copy of the source (the report's folder, a recorded
    scenario's folder, or --source-dir).

    Examples:

        coach source report.ncu-rep

        coach source report.ncu-rep --kernel 'copy_strided' --top 3 --sass

        coach source traces/h200/scenario-01/slow/report.ncu-rep.xz --json
    """
    from coach.analyze import source  # noqa: PLC0415 - polars-heavy, imported on use
    from coach.ingest import load, source_text  # noqa: PLC0415

    if rank not in ("finding", "samples"):
        raise CoachError(f"--rank: {rank!r} is not one of finding, samples")
    try:
        pattern = re.compile(kernel) if kernel else None
    except re.error as err:
        raise CoachError(f"--kernel: not a regular expression ({err})") from None
    profile = load(report)
    if profile.kind != "kernel-profile":
        raise CoachError(f"{report}: is a {profile.kind}; source lines come from an Nsight Compute report (.ncu-rep)")
    profile = source_text.fill(profile, [*source_dir, *source_text.search_folders(report, profile)])
    launches = profile.launches.sort("launch_id").select("launch_id", "kernel_name", "demangled_name").to_dicts()
    if pattern is not None:
        launches = [l for l in launches if pattern.search(l["kernel_name"] or "") or pattern.search(l["demangled_name"] or "")]
        if not launches:
            raise CoachError(f"no kernel matches --kernel {kernel!r} in {report}")
    missing = source.gap(profile, name=str(report))
    if missing and not source.has_counters(profile):
        raise CoachError(missing)
    from coach.analyze.diagnose import diagnose  # noqa: PLC0415

    pointed: dict[tuple[int, str], list[str]] = {}  # (launch, file:line) -> the findings that point there
    leading: dict[int, Any] = {}  # launch -> its first finding (in diagnose's order) that points at a line
    for f in diagnose(profile):
        for loc in f.locations:
            pointed.setdefault((f.launch_id, loc.where), []).append(f.rule_id)
        if f.launch_id is not None and f.launch_id not in leading and any(loc.line is not None for loc in f.locations):
            leading[f.launch_id] = f
    if rank == "samples":
        leading = {}
    out = {"path": str(report), "launches": [_launch(profile, l, top, sass, pointed, leading.get(l["launch_id"]))
                                             for l in launches]}
    if as_json:
        print_json(out)
        return
    for item in out["launches"]:
        _print_launch(item)


def _launch(profile, launch: dict[str, Any], top: int, with_sass: bool,
            pointed: dict[tuple[int, str], list[str]], lead=None) -> dict[str, Any]:
    import polars as pl  # noqa: PLC0415

    from coach.analyze import source, source_evidence  # noqa: PLC0415

    lid = launch["launch_id"]
    item: dict[str, Any] = {"launch_id": lid, "kernel": launch["kernel_name"],
                            "note": source.gap(profile, lid), "lines_note": source.attribution(profile, lid)}
    if not source.has_counters(profile, lid):
        item.update(samples=None, lines=[], instructions=[])
        return item
    if source.has_lines(profile, lid):
        table = source.lines(profile, lid)
        by = source_evidence.line_values(profile, lid, lead) if lead is not None else None
        if by is None:
            item["ranked_by"] = {"counter": "samples", "label": source_evidence.SAMPLES.label, "finding": None}
            table = table.with_columns(pl.col("samples").alias("rank_value"), pl.col("samples_pct").alias("rank_share_pct"))
        else:
            counter, label, values = by
            item["ranked_by"] = {"counter": counter, "label": label, "finding": lead.rule_id}
            table = (table.join(values.rename({"value": "rank_value", "share_pct": "rank_share_pct"}),
                                on=["file_id", "line"], how="left", nulls_equal=True)
                     .sort(["rank_value", "samples", "warp_inst", "first_pc"], descending=[True, True, True, False],
                           nulls_last=True))
        table = table.head(top) if top else table
        item["samples"] = float(source.sass_rows(profile, lid)["samples"].sum())
        item["lines"] = [_line(r) for r in table.iter_rows(named=True)]
        for line in item["lines"]:
            line["findings"] = pointed.get((lid, line["where"]), [])
        item["instructions"] = []
        if with_sass and item["lines"]:
            first = table.row(0, named=True)
            item["sass"] = [_instruction(r) for r in
                            source.line_sass(profile, lid, first["file_id"], first["line"]).iter_rows(named=True)]
    else:
        rows = source.hot_instructions(profile, lid, top)
        item["samples"] = float(source.sass_rows(profile, lid)["samples"].sum())
        item["lines"] = []
        item["instructions"] = [_instruction(r) for r in rows.iter_rows(named=True)]
        for r in item["instructions"]:
            r["findings"] = pointed.get((lid, f"SASS +0x{r['pc_offset']:x}"), [])
    return item


def _line(r: dict[str, Any]) -> dict[str, Any]:
    where = f"{r['file']}:{r['line']}" if r["line"] is not None else "(no line information)"
    return {"where": where, "file": r["path"], "local_file": r["local_path"], "line": r["line"], "text": r["text"],
            "samples": r["samples"], "samples_pct": r["samples_pct"],
            "reasons": [{"reason": x["reason"], "pct": x["pct"]} for x in (r["top_reasons"] or [])],
            "warp_inst": r["warp_inst"], "avg_threads": r["avg_threads"],
            "l2_global_sectors": r["l2_global_sectors"], "l2_global_sectors_ideal": r["l2_global_sectors_ideal"],
            "l2_global_excess_sectors": r["l2_global_excess_sectors"] if r["l2_global_sectors"] is not None else None,
            "shared_wavefronts": r["shared_wavefronts"], "shared_wavefronts_ideal": r["shared_wavefronts_ideal"],
            "shared_excess_wavefronts": r["shared_excess_wavefronts"] if r["shared_wavefronts"] is not None else None,
            "l2_local_sectors": r["l2_local_sectors"], "opcodes": list(r["opcodes"]),
            "inlined_at": list(r["inlined_at"] or []), "rank_value": r["rank_value"],
            "rank_share_pct": r["rank_share_pct"]}


def _instruction(r: dict[str, Any]) -> dict[str, Any]:
    return {"pc_offset": r["pc_offset"], "sass": r["sass"], "opcode": r["opcode"], "line": r["line"],
            "warp_inst": r["warp_inst"], "samples": r["samples"], "samples_pct": r["samples_pct"],
            "top_reason": r["top_reason"], "l2_global_excess_sectors": r["l2_global_excess_sectors"],
            "shared_excess_wavefronts": r["shared_excess_wavefronts"], "l2_local_sectors": r["l2_local_sectors"]}


def _print_launch(item: dict[str, Any]) -> None:
    from rich.markup import escape  # noqa: PLC0415

    samples = f"{item['samples']:,.0f} warp samples" if item["samples"] else "no warp samples"
    console.print(f"[bold]{escape(item['kernel'] or '?')}[/]  launch {item['launch_id']}  ({samples})", highlight=False)
    for note in (item["note"], item.get("lines_note")):
        if note:
            console.print(f"  [dim]{escape(note)}[/]", highlight=False)
    ranked = item.get("ranked_by")
    if ranked and ranked["finding"]:
        console.print(f"  [dim]ranked by: {escape(ranked['finding'])} ({escape(ranked['label'])})[/]",
                      highlight=False, overflow="ellipsis", no_wrap=True)
    for r in item["lines"]:
        reasons = ", ".join(f"{x['reason'].replace('_', ' ')} {x['pct']:.0f}%" for x in r["reasons"])
        pct = f"{r['samples_pct']:5.1f}%" if r["samples_pct"] is not None else "    - "
        head = f"{pct}  {r['where']}"
        if reasons and len(head) + 2 + len(reasons) <= console.width:
            console.print(f"[bold]{pct}[/]  {escape(r['where'])}  [dim]{reasons}[/]", highlight=False)
        else:  # a long path: the reasons go on a line of their own rather than wrap
            console.print(f"[bold]{pct}[/]  {escape(r['where'])}", highlight=False)
            if reasons:
                console.print(f"        [dim]{reasons}[/]", highlight=False)
        if r["text"]:
            console.print(f"        {escape(r['text'])}", highlight=False, overflow="ellipsis", no_wrap=True)
        if r["inlined_at"]:
            more = f" (+{len(r['inlined_at']) - 2} more)" if len(r["inlined_at"]) > 2 else ""
            console.print(f"        [dim]inlined at {escape(', '.join(r['inlined_at'][:2]))}{more}[/]", highlight=False)
        if ranked and ranked["finding"] and ranked["counter"] != "samples" and r["rank_value"]:
            share = f"{r['rank_share_pct']:.0f}%" if r["rank_share_pct"] >= 0.5 else "<1%"
            console.print(f"        [cyan]{share} of the launch's {escape(ranked['label'])}[/]", highlight=False)
        for extra in _excess(r):
            console.print(f"        [yellow]{extra}[/]", highlight=False)
        if r["findings"]:
            console.print(f"        [cyan]cause of: {', '.join(r['findings'])}[/]", highlight=False)
    for r in item["instructions"]:
        pct = f"{r['samples_pct']:5.1f}%" if r["samples_pct"] is not None else "    - "
        reason = f"  [dim]{r['top_reason'].replace('_', ' ')}[/]" if r["top_reason"] else ""
        console.print(f"[bold]{pct}[/]  +0x{r['pc_offset']:04x}  {escape(_cut(r['sass'] or ''))}{reason}", highlight=False)
    if item.get("sass"):
        first = item["lines"][0]
        console.print(f"  SASS of {escape(first['where'])}:", highlight=False)
        for r in item["sass"]:
            pct = f"{r['samples_pct']:5.1f}%" if r["samples_pct"] is not None else "      "
            reason = r["top_reason"].replace("_", " ") if r["top_reason"] and r["samples"] else ""
            console.print(f"  +0x{r['pc_offset']:04x} {escape(_cut(r['sass'] or '')):<{SASS_WIDTH}} {pct} [dim]{reason}[/]",
                          highlight=False, overflow="ellipsis", no_wrap=True)
    console.print()


def _cut(text: str) -> str:
    return text if len(text) <= SASS_WIDTH else text[: SASS_WIDTH - 1] + "…"


def _excess(r: dict[str, Any]) -> list[str]:
    """The counters that say why a line is slow, where they are non-zero."""
    out = []
    sectors, ideal, excess = r["l2_global_sectors"], r["l2_global_sectors_ideal"], r["l2_global_excess_sectors"]
    if excess and ideal:
        out.append(f"global: {_count(excess)} L2 sectors beyond a coalesced access ({sectors / ideal:.1f}x the ideal)")
    waves, wideal, wexcess = r["shared_wavefronts"], r["shared_wavefronts_ideal"], r["shared_excess_wavefronts"]
    if wexcess and wideal:
        out.append(f"shared: {_count(wexcess)} wavefronts beyond one per request ({waves / wideal:.1f}x: bank conflicts)")
    if r["l2_local_sectors"]:
        out.append(f"local: {_count(r['l2_local_sectors'])} L2 sectors of local memory (spills or an indexed array)")
    return out


def _count(x: float) -> str:
    for suffix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g}{suffix}"
    return f"{x:.0f}"
