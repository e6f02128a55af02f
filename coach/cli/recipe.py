"""``coach recipe NAME FILE...``: run one of Nsight Systems' recipes and show its result, optionally
beside coach's own numbers for the same reports."""

from __future__ import annotations

import re
import shlex
from typing import Any

import typer

from coach.cli.main import app
from coach.cli.output import console, err_console, print_json, progress
from coach.errors import CoachError, ToolError


@app.command("recipe")
def recipe_cmd(
    args: list[str] = typer.Argument(None, metavar="NAME FILE...", show_default=False,
                                     help="The recipe, then .nsys-rep reports or folders of them."),
    list_recipes: bool = typer.Option(False, "--list", help="List the recipes coach reads, and which this nsys has."),
    check: bool = typer.Option(False, "--check", help="Also compute the same numbers from each report with coach "
                               "and show where they differ."),
    side: bool = typer.Option(False, "--side-by-side", help="Instead of one recipe: the per-report summary side by "
                              "side (kernel, sync and gap time, the slowest report), from NVIDIA's recipes."),
    mode: str | None = typer.Option(None, "--mode", help="How nsys runs the recipe: none, concurrent, or "
                                    "dask-futures (a Dask cluster: DASK_SCHEDULER_ADDRESS, else a local one)."),
    recipe_args: str = typer.Option("", "--args", help="Arguments passed to the recipe as they are, e.g. "
                                    "--args '--gap 0'."),
    timeout: float | None = typer.Option(None, "--timeout", min=1, help="Seconds each recipe may run (default 600)."),
    rows: int = typer.Option(30, "--rows", min=1, help="Rows shown per table."),
    as_json: bool = typer.Option(False, "--json", help="Write the result as JSON on stdout."),
) -> None:
    """Run an Nsight Systems recipe (NVIDIA's own analysis) on reports and show its table, with
    canonical column names and units (times in ns).

    Needs an nsys with recipes (Nsight Systems 2025.3 has them; 2022.4 does not) and the Python
    packages the recipes list. Several reports go to the recipe together: their rows carry a
    report name and rank. Everything else in coach works without nsys.

    Examples:

        coach recipe --list

        coach recipe cuda_gpu_kern_sum run.nsys-rep

        coach recipe gpu_gaps run.nsys-rep --args '--gap 1' --check

        coach recipe cuda_api_sync ranks/ --mode dask-futures

        coach recipe --side-by-side ranks/ --mode dask-futures
    """
    words = list(args or [])
    if list_recipes:
        _list(as_json)
        return
    if side:
        _side_by_side(words, mode, timeout, as_json)
        return
    if len(words) < 2:
        raise CoachError("give a recipe and at least one report: coach recipe NAME FILE... "
                         "(coach recipe --list shows them)")
    name, files = words[0], words[1:]

    from coach.ingest.recipes import RECIPE_TIMEOUT_S, run_recipe  # polars: imported only when the command runs

    with progress(f"nsys recipe {name}"):
        out = run_recipe(name, files, mode=mode, args=shlex.split(recipe_args),
                         timeout=timeout or RECIPE_TIMEOUT_S)
    checks = _checks(out, files, recipe_args) if check else None
    if as_json:
        doc: dict[str, Any] = {"recipe": name, "reports": list(out.reports), "note": out.note,
                               "table": out.table.to_dicts()}
        if checks is not None:
            doc["checks"] = checks.to_dicts()
        print_json(doc)
        return
    _print_table(f"nsys recipe {name}", _for_reading(out.table, len(out.reports)), rows)
    if out.note:
        console.print(out.note)
    if checks is not None:
        _print_checks(checks, rows)


def _list(as_json: bool) -> None:
    from coach.analyze.recipes import DEFINITIONS
    from coach.ingest.recipes import known_recipes, recipe_tool

    try:
        nsys = recipe_tool()
        here, problem = set(nsys.recipes), None
    except ToolError as err:
        here, problem = None, str(err)
    rows = [{"recipe": r.name, "title": r.title, "reads": f"{r.file}.parquet",
             "checked_by_coach": r.name in DEFINITIONS, "in_this_nsys": None if here is None else r.name in here}
            for r in known_recipes().values()]
    if as_json:
        print_json({"recipes": rows, "nsys_problem": problem})
        return
    from rich import box
    from rich.table import Table

    yes_no = {True: "yes", False: "no", None: "-"}
    table = Table(title="Recipes coach reads", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("recipe", no_wrap=True)
    table.add_column("title")
    table.add_column("coach checks it")
    table.add_column("this nsys has it")
    for r in rows:
        table.add_row(r["recipe"], r["title"], yes_no[r["checked_by_coach"]], yes_no[r["in_this_nsys"]])
    console.print(table)
    if problem:
        err_console.print(f"nsys: {problem}", markup=False, soft_wrap=True)


def _checks(out: Any, files: list[str], recipe_args: str) -> Any:
    """Coach's numbers for each report beside the recipe's (``coach.analyze.recipes.compare``)."""
    import polars as pl

    from coach.analyze.recipes import ALIGNED_RECIPES, NVIDIA_GAP_THRESHOLD_NS, compare, session_origin_ns
    from coach.ingest import load
    from coach.ingest.recipes import report_files

    gap = re.search(r"--gap[= ](\S+)", " ".join(shlex.split(recipe_args)))
    try:
        gap_ns = int(float(gap.group(1)) * 1e6) if gap else NVIDIA_GAP_THRESHOLD_NS
    except ValueError:
        raise CoachError(f"--args: --gap takes milliseconds, not {gap.group(1)!r}") from None
    parts = []
    reports = report_files(files)
    origin = None
    if out.recipe in ALIGNED_RECIPES and len(reports) > 1:  # one time axis for all: first each session start
        origin = session_origin_ns(load(path) for path in reports)
    with progress("coach's own numbers", total=len(reports)) as advance:
        for path in reports:
            parts.append(compare(out, load(path), path.name.split(".")[0], gap_threshold_ns=gap_ns,
                                 session_origin_ns=origin))
            advance()
    return pl.concat(parts)


def _print_checks(checks: Any, rows: int) -> None:
    import polars as pl

    from coach.analyze.recipes import summary

    differ = checks.filter(~pl.col("agrees"))
    for s in summary(checks).iter_rows(named=True):
        console.print(f"coach and NVIDIA agree on {s['agree']} of {s['compared']} values ({s['items']} items) "
                      f"of {s['recipe']}.")
    if differ.height:
        _print_table("Where they differ", differ.drop("recipe"), rows)


def _side_by_side(files: list[str], mode: str | None, timeout: float | None, as_json: bool) -> None:
    from coach.analyze.multi import side_by_side_from_recipes
    from coach.cli.load import print_side_by_side

    if len(files) < 1:
        raise CoachError("give reports or a folder of them: coach recipe --side-by-side FILE...")
    with progress("nsys recipes"):
        result = side_by_side_from_recipes(files, mode=mode, timeout=timeout)
    print_side_by_side(result, as_json)


#: Columns left out of the text table (--json has them): spread statistics, and raw ids.
_DETAIL_PREFIXES = ("std_", "q1_", "q3_", "median_", "range_stack", "green_context_id", "context_id", "children",
                    "range_id", "parent_id", "end_ns")


def _for_reading(df: Any, reports: int) -> Any:
    """The columns worth a glance: without the spread statistics, and without report and rank when
    there is one report."""
    single = ("report", "rank") if reports <= 1 else ()
    drop = [c for c in df.columns if c.startswith(_DETAIL_PREFIXES) or c in single]
    return df.drop(drop)


def _print_table(title: str, df: Any, rows: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, header_style="bold", pad_edge=False)
    for c in df.columns:
        table.add_column(c, overflow="fold")
    for row in df.head(rows).iter_rows():
        table.add_row(*(escape(_cell(v)) for v in row))
    console.print(table)
    if df.height > rows:
        console.print(f"({df.height - rows} more rows; --rows or --json shows them)")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
