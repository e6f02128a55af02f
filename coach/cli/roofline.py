"""``coach roofline FILE``: the hierarchical roofline of a kernel profile, as a figure and in words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import typer

from coach.cli.main import app
from coach.cli.output import _clean, console
from coach.errors import InputError, ToolError

OUT_FORMATS = (".html", ".png", ".json")


@app.command("roofline")
def roofline_cmd(
    file: Path = typer.Argument(..., help="An Nsight Compute report (.ncu-rep, or its CSV export)."),
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the figure: .html (interactive), .png (needs kaleido and Chrome), or .json (the tables and the figure)."),
    compare: Path | None = typer.Option(None, "--compare", help="A second report of the same kernels after a change: arrows go from FILE's points to its points."),
    kernel: str | None = typer.Option(None, "--kernel", "-k", help="Only kernels whose name matches this regular expression."),
) -> None:
    """Place each kernel on the GPU's roofline: intensity and FLOP/s against DRAM, L2 and L1
    bandwidth and the compute peak of each precision, and say how far below its roof it runs.

    Examples:

        coach roofline report.ncu-rep --out roofline.html

        coach roofline before.ncu-rep --compare after.ncu-rep --kernel gemm --out gemm.png
    """
    import re

    import polars as pl

    from coach.analyze.roofline import explain_ridges, headline, precision_label, roofline, with_hardware
    from coach.analyze.roofline_plot import figure

    if out.suffix.lower() not in OUT_FORMATS:
        raise InputError(out, f"--out must end in {', '.join(OUT_FORMATS)}")
    if not out.parent.is_dir():
        raise InputError(out, f"--out names a folder that does not exist ({out.parent})")
    if kernel is not None:
        try:
            re.compile(kernel)
        except re.error as err:
            raise InputError("--kernel", f"{kernel!r} is not a regular expression ({err})") from None

    before = with_hardware(roofline(_kernel_profile(file), kernel))
    after = with_hardware(roofline(_kernel_profile(compare), kernel)) if compare is not None else None
    for path, rl in ((file, before), (compare, after)):
        if rl is not None and rl.table.height == 0:
            raise InputError(path, _nothing_to_draw(rl, kernel))

    fig = figure(before, compare=after)
    explanation = explain_ridges(before)
    if out.suffix.lower() == ".html":
        _write(out, lambda tmp: fig.write_html(tmp, include_plotlyjs=True, full_html=True))
    elif out.suffix.lower() == ".png":
        _write(out, lambda tmp: _write_png(fig, tmp))
    else:
        doc: dict[str, Any] = {
            "roofline": before.table.to_dicts(),
            "ceilings": before.ceilings.to_dicts(),
            "missing": before.missing.to_dicts(),
            "ridges": explanation,
            "figure": json.loads(fig.to_json()),
        }
        if after is not None:
            doc["compare"] = {"roofline": after.table.to_dicts(), "ceilings": after.ceilings.to_dicts(), "missing": after.missing.to_dicts()}
        _write(out, lambda tmp: tmp.write_text(json.dumps(_clean(doc), indent=1, allow_nan=False) + "\n"))

    from rich.table import Table

    for label, rl in (("", before), (" (after)", after)):
        if rl is None:
            continue
        t = Table(title=f"Roofline{label}", show_lines=False)
        for col in ("kernel", "level", "precision", "FLOP/byte", "FLOP/s", "% of roof", "bound"):
            t.add_column(col, justify="right" if col[0] in "F%" else "left")
        rows = headline(rl.table).select("kernel_name", "level", "precision", "intensity_flop_per_byte", "flop_per_s", "pct_of_roof", "bound", "flop")
        for k, level, precision, intensity, rate, pct, bound, flop in rows.iter_rows():
            t.add_row(k, level, precision_label(precision) if flop else "none", f"{intensity:.3g}" if intensity is not None else "-",
                      f"{rate:.3g}", f"{pct:.1f}", bound or "idle")
        console.print(t)
        gaps = rl.missing.filter(pl.col("part") == "level").unique("name", maintain_order=True)
        for g in gaps.iter_rows(named=True):
            console.print(f"[yellow]{g['name']} level not in the report[/]: it needs {g['needs']} (record with ncu --set full)")
    for sentence in explanation:
        console.print(sentence)
    console.print(f"wrote {out}")


def _kernel_profile(path: Path):
    from coach.ingest import load
    from coach.model import KernelProfile

    profile = load(path)
    if not isinstance(profile, KernelProfile):
        raise InputError(path, f"is a {profile.kind} ({profile.source.tool}); the roofline needs a kernel profile from Nsight Compute")
    return profile


def _nothing_to_draw(rl, kernel: str | None) -> str:
    import polars as pl

    what = "has no launch to place on the roofline" + (f" whose kernel name matches {kernel!r}" if kernel else "")
    levels = rl.missing.filter(pl.col("part") == "level").unique("name", maintain_order=True)
    if levels.height:
        what += f" (its launches lack the metrics of every memory level, e.g. {levels['needs'][0]}: record with ncu --set full)"
    return what


def _write_png(fig, tmp: Path) -> None:
    try:
        fig.write_image(tmp, format="png", width=fig.layout.width, height=fig.layout.height, scale=2)
    except Exception as err:  # kaleido missing, or it found no Chrome to drive
        reason = " ".join(str(err).split())
        raise ToolError(f"writing PNG needs the kaleido package and a Chrome it can drive ({reason}); write .html or .json instead") from None


def _write(out: Path, write: Callable[[Path], Any]) -> None:
    """Write beside ``out`` and rename into place: an interrupted run leaves no half-written file."""
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        write(tmp)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)


