"""Nsight Systems recipes: run ``nsys recipe`` on reports and read what it writes into Polars.

A recipe is one of NVIDIA's own analyses (kernel sums, GPU gaps, NVTX projection, ...). It reads one
or many ``.nsys-rep`` reports at once and writes Parquet tables (CSV with ``--csv``) to a folder.
Coach uses them as a second opinion on its own numbers (``coach.analyze.recipes``) and, for folders
of many reports, as a way to analyse them out of process (``--mode dask-futures``).

    out = run_recipe("cuda_gpu_kern_sum", ["rank0.nsys-rep", "rank1.nsys-rep"])
    out.table        # canonical columns: report, rank, name, count, total_ns, mean_ns, ...
    out = read_output("gpu_gaps", Path("nvidia/recipe_gpu_gaps"))   # an output made elsewhere

Running one: the reports are linked into a temporary folder (the recipe exports each report beside
its input, and a user's folder may be read-only or must stay clean), ``nsys recipe NAME --input ...
--output TMP/out`` runs as an argument list in its own process group with a timeout, the tables are
read, and the temporary folder is removed whatever happens.

Reading one: each recipe writes one table coach reads (``nsys_recipes.csv``: the recipe's shape, its
file, and the unit of its statistics), whose columns get canonical names and types
(``nsys_recipe_columns.csv``; NVIDIA's Parquet columns have display names such as ``Q1 (approx)``).
Columns the tables do not name are kept, in snake case. ``files.parquet`` lists the input reports in
rank order; its names become the ``report`` column. Per-rank tables are read (``rank_stats``), not
NVIDIA's cross-rank merge (``all_stats``, whose quantiles are approximate).

The ``nsys`` used is ``$COACH_NSYS``, else the one on ``PATH``, else the copy inside Nsight Compute
(``coach.capture.tools``). ``nsys`` 2022.4 has no ``recipe`` command (2025.3 has); recipes also need
Python packages (pandas, pyarrow, ...) that NVIDIA lists in ``requirements/common.txt``, and say so
when one is missing. Each of these ends as one ``ToolError`` line that names the fix.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Iterable, Sequence

import polars as pl

from coach.capture import tools
from coach.errors import CoachError, InputError, ToolError
from coach.ingest.detect import detect

_HERE = Path(__file__).resolve().parent
RECIPES_CSV = _HERE / "nsys_recipes.csv"
COLUMNS_CSV = _HERE / "nsys_recipe_columns.csv"

#: Seconds one recipe may run. A recipe first exports each report's tables (as ``nsys export`` does:
#: seconds per million events) and then runs pandas over them; ten minutes is what coach allows one
#: ``nsys export`` (``coach.ingest.nsys_rep.EXPORT_TIMEOUT_S``). ``--timeout`` raises it.
RECIPE_TIMEOUT_S = 600

#: Seconds for ``nsys recipe --help``, which starts nsys and lists the recipes without running one.
HELP_TIMEOUT_S = 60

#: Execution modes of ``nsys recipe --mode``: ``none`` (one report after another), ``concurrent``
#: (a process pool on this machine) and ``dask-futures`` (a Dask cluster: the one named by
#: ``DASK_SCHEDULER_ADDRESS``, else a ``LocalCluster`` it starts). NVIDIA's recipe arguments.
MODES = ("none", "concurrent", "dask-futures")

#: What nsys prints when it has no such command (2022.4: "Unknown command: recipe").
_NO_RECIPE_COMMAND = re.compile(r"unknown command", re.IGNORECASE)
#: One line per recipe in ``nsys recipe --help``: "  cuda_api_sum -- CUDA API Summary".
_HELP_LINE = re.compile(r"^\s+([a-z][a-z0-9_]*) -- (.+?)\s*$", re.MULTILINE)
#: Where ``nsys recipe --help`` says the recipes' Python requirements are listed.
_REQUIREMENTS = re.compile(r"'([^']*requirements[^']*\.txt)'")
#: A recipe whose Python lacks a package: the module it names, or NVIDIA's own words for it.
_NO_MODULE = re.compile(r"No module named '([^']+)'")
_MISSING_PACKAGES = re.compile(r"ModuleNotFoundError|[Mm]issing (?:required )?(?:Python )?packages?")
#: A recipe that ran and found nothing to write (it then writes no output folder).
_NO_DATA = re.compile(r"no data was found|No output generated", re.IGNORECASE)
#: pandas' row index, which pyarrow stores as a column when a recipe writes a frame whose index is
#: not 0..n-1 (the multi-report outputs, where the per-report frames are concatenated): not data.
_PANDAS_INDEX = re.compile(r"^__index_level_\d+__$")

_DTYPES: dict[str, pl.DataType] = {"int": pl.Int64, "float": pl.Float64, "str": pl.Utf8, "lower": pl.Utf8}


@dataclass(frozen=True)
class Recipe:
    """What coach knows about one recipe: its title, the table coach reads and that table's shape."""

    name: str
    title: str
    shape: str  # stats, nvtx_trace, util_map, gaps, memcpy, api_sync
    file: str  # the table coach reads, without its .parquet / .csv suffix
    unit: str  # unit of the statistics columns: ns, or bytes


@dataclass(frozen=True)
class RecipeOutput:
    """One recipe's result: its canonical ``table`` (one row per rank and item) and the reports it
    read, in rank order (``table["rank"]`` indexes ``reports``)."""

    recipe: str
    table: pl.DataFrame
    reports: tuple[str, ...]
    note: str = ""  # e.g. that the recipe found no data and wrote nothing


@cache
def known_recipes() -> dict[str, Recipe]:
    """The recipes whose output coach reads, by name (``nsys_recipes.csv``)."""
    rows = pl.read_csv(RECIPES_CSV, infer_schema=False).iter_rows(named=True)
    return {r["recipe"]: Recipe(r["recipe"], r["title"], r["shape"], r["file"], r["unit"]) for r in rows}


@cache
def _columns() -> pl.DataFrame:
    return pl.read_csv(COLUMNS_CSV, infer_schema=False)


def recipe(name: str) -> Recipe:
    """The recipe called ``name``; a ``CoachError`` naming the known ones otherwise."""
    found = known_recipes().get(name)
    if found is None:
        raise CoachError(f"coach does not read the output of recipe {name!r}; it reads: {', '.join(known_recipes())}")
    return found


# --------------------------------------------------------------------------------------------
# Reading an output folder
# --------------------------------------------------------------------------------------------


def read_output(name: str, folder: str | Path) -> RecipeOutput:
    """Read the output folder that ``nsys recipe NAME --output FOLDER`` wrote."""
    r = recipe(name)
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, f"is not a folder (expected the output of nsys recipe {name})")
    raw = _read_table(folder, r.file, name)
    reports = _reports(folder)
    table = canonical(raw, r)
    if reports and "rank" in table.columns:
        names = pl.DataFrame({"rank": range(len(reports)), "report": list(reports)},
                             schema={"rank": pl.Int64, "report": pl.Utf8})
        table = table.join(names, on="rank", how="left", maintain_order="left").select("report", "rank", pl.exclude("report", "rank"))
    return RecipeOutput(recipe=name, table=table, reports=reports)


def canonical(raw: pl.DataFrame, r: Recipe) -> pl.DataFrame:
    """``raw`` (a recipe table as NVIDIA writes it) with canonical column names and types; columns
    the mapping does not name are kept in snake case (except pandas' stored row index, dropped), and
    ``end_ns`` is added where a table has a start and a duration."""
    spec = _columns().filter(pl.col("shape") == r.shape)
    mapping = {row["raw"]: (row["column"].replace("{unit}", r.unit), row["dtype"])
               for row in spec.iter_rows(named=True)}
    exprs = []
    for col in raw.columns:
        if _PANDAS_INDEX.match(col):
            continue
        name, dtype = mapping.get(col, (snake_case(col), None))
        if name == "-":
            continue
        expr = pl.col(col)
        if dtype == "lower":
            expr = expr.cast(pl.Utf8).str.to_lowercase()
        elif dtype in _DTYPES:
            expr = expr.cast(_DTYPES[dtype], strict=False)
        exprs.append(expr.alias(name))
    table = raw.select(exprs)
    if {"start_ns", "dur_ns"} <= set(table.columns) and "end_ns" not in table.columns:
        table = table.with_columns(end_ns=pl.col("start_ns") + pl.col("dur_ns"))
    return table


def empty_output(name: str, note: str) -> RecipeOutput:
    """The result of a recipe that ran and found nothing: its table with no rows and no columns."""
    recipe(name)
    return RecipeOutput(recipe=name, table=pl.DataFrame(), reports=(), note=note)


def snake_case(text: str) -> str:
    """``"Green Context ID"`` -> ``"green_context_id"``."""
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_")


def _read_table(folder: Path, stem: str, name: str) -> pl.DataFrame:
    for suffix, reader in ((".parquet", pl.read_parquet), (".csv", pl.read_csv)):
        path = folder / f"{stem}{suffix}"
        if path.is_file():
            try:
                return reader(path)
            except Exception as err:  # polars raises several kinds for damaged files
                raise InputError(path, f"is not a readable {suffix[1:]} table ({type(err).__name__}: {err})") from None
    raise InputError(folder, f"holds no {stem}.parquet or {stem}.csv: not an output of nsys recipe {name}?")


def _reports(folder: Path) -> tuple[str, ...]:
    """Report names by rank, from ``files.parquet`` (or ``files.csv``); empty when absent."""
    for suffix, reader in ((".parquet", pl.read_parquet), (".csv", pl.read_csv)):
        path = folder / f"files{suffix}"
        if path.is_file():
            files = reader(path)
            if "File" in files.columns:
                return tuple(Path(str(f)).name for f in files["File"])
    return ()


# --------------------------------------------------------------------------------------------
# Running nsys recipe
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecipeTool:
    """An nsys that has recipes: its path, version line, the recipes it lists, and where it says
    their Python requirements are."""

    path: str
    version: str
    recipes: dict[str, str]  # name -> title
    requirements: str | None


def recipe_tool() -> RecipeTool:
    """The nsys to run recipes with, or a ``ToolError`` saying what is missing and how to get it."""
    tool = tools.find("nsys")
    if not tool.found:
        raise ToolError("nsys recipes need Nsight Systems, which is not installed here: "
                        f"{tools.INSTALL_HINT['nsys']}; everything else in coach works without it")
    path = tool.path
    assert path is not None
    version = tools.version_line(path) or "this nsys"
    done = tools.run([path, "recipe", "--help"], what="nsys recipe --help", timeout=HELP_TIMEOUT_S, check=False)
    text = done.stdout + "\n" + done.stderr
    listed = dict(_HELP_LINE.findall(text))
    if not listed:
        why = "no recipe command" if _NO_RECIPE_COMMAND.search(text) else f"no recipes ({tools.last_line(text)})"
        raise ToolError(f"{_short(version)} ({path}) has {why}: recipes need a newer Nsight Systems (2025.3 has them); "
                        "install one (or set COACH_NSYS to its nsys); everything else in coach works without it")
    found = _REQUIREMENTS.search(text)
    return RecipeTool(path=path, version=version, recipes=listed, requirements=found.group(1) if found else None)


def run_recipe(name: str, inputs: Sequence[str | Path], *, mode: str | None = None, args: Iterable[str] = (),
               timeout: float = RECIPE_TIMEOUT_S, nsys: RecipeTool | None = None) -> RecipeOutput:
    """Run recipe ``name`` on ``inputs`` (``.nsys-rep`` reports, or folders of them) and read its
    output; ``args`` are passed to the recipe as they are (``["--gap", "0"]``)."""
    return run_recipes([name], inputs, mode=mode, args={name: list(args)}, timeout=timeout, nsys=nsys)[name]


def run_recipes(names: Sequence[str], inputs: Sequence[str | Path], *, mode: str | None = None,
                args: dict[str, list[str]] | None = None, timeout: float = RECIPE_TIMEOUT_S,
                nsys: RecipeTool | None = None) -> dict[str, RecipeOutput]:
    """Run several recipes over the same reports. They share one temporary folder, so the tables
    the first recipe exports from each report are reused by the next ones."""
    for name in names:
        recipe(name)
    if mode is not None and mode not in MODES:
        raise CoachError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    reports = report_files(inputs)
    nsys = nsys or recipe_tool()
    missing = [n for n in names if n not in nsys.recipes]
    if missing:
        raise ToolError(f"{_short(nsys.version)} ({nsys.path}) has no recipe {', '.join(missing)}: install a newer "
                        "Nsight Systems (or set COACH_NSYS)")
    results = {}
    with tempfile.TemporaryDirectory(prefix="coach-recipe-") as tmp:
        linked = _link_inputs(reports, Path(tmp) / "inputs")
        for name in names:
            out = Path(tmp) / f"out-{name}"
            command = [nsys.path, "recipe", name, "--input", *map(str, linked), "--output", str(out),
                       *(["--mode", mode] if mode else []), *(args or {}).get(name, [])]
            done = tools.run(command, what=f"nsys recipe {name}", timeout=timeout, cwd=tmp, check=False)
            said = done.stdout + "\n" + done.stderr
            if done.returncode != 0:
                raise _failure(name, done.returncode, said, nsys, mode)
            if not out.is_dir():
                if _NO_DATA.search(said):
                    results[name] = empty_output(name, f"nsys recipe {name} found no data in the report(s)")
                    continue
                raise ToolError(f"nsys recipe {name} wrote no output: {tools.last_line(said)}")
            results[name] = read_output(name, out)
    return results


def report_files(inputs: Sequence[str | Path]) -> list[Path]:
    """The ``.nsys-rep`` reports named by ``inputs``: files, or the reports directly inside folders."""
    reports: list[Path] = []
    for raw in inputs:
        p = Path(raw)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.suffix in (".nsys-rep", ".qdrep") and q.is_file())
            if not found:
                raise InputError(p, "holds no .nsys-rep reports (recipes read reports, not their .sqlite exports)")
            reports.extend(found)
            continue
        fmt = detect(p)
        if fmt != "nsys-rep":
            raise InputError(p, f"is {fmt}, but nsys recipes read .nsys-rep reports")
        reports.append(p)
    if not reports:
        raise CoachError("no reports given")
    names = [p.name for p in reports]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CoachError(f"two reports share the name {twice[0]} (the recipe tells reports apart by name): rename one")
    return reports


def _link_inputs(reports: list[Path], folder: Path) -> list[Path]:
    """Symbolic links to ``reports`` (distinct names, see ``report_files``) in ``folder``, under their
    own names (the recipe reports them by name), so that what the recipe exports beside its inputs
    lands in the temporary folder."""
    folder.mkdir()
    links = []
    for p in reports:
        link = folder / p.name
        link.symlink_to(p.resolve())
        links.append(link)
    return links


def _failure(name: str, code: int, said: str, nsys: RecipeTool, mode: str | None) -> ToolError:
    module = _NO_MODULE.search(said)
    if module and mode == "dask-futures" and module.group(1).split(".")[0] in ("dask", "distributed"):
        return ToolError(f"nsys recipe {name} --mode dask-futures needs Dask in the recipes' Python (no module "
                         f"{module.group(1)!r}): python3 -m pip install 'dask[distributed]', or leave out --mode")
    if module or _MISSING_PACKAGES.search(said):
        which = f" (no module {module.group(1)!r})" if module else ""
        how = (f"python3 -m pip install -r {nsys.requirements}" if nsys.requirements
               else "install the packages its requirements/common.txt lists")
        return ToolError(f"nsys recipe {name} needs Python packages its Python lacks{which}: {how}")
    return ToolError(f"nsys recipe {name} failed (exit {code}): {tools.last_line(said)}")


def _short(version: str) -> str:
    """``"NVIDIA Nsight Systems version 2022.4.2.1-df9881f"`` -> ``"nsys 2022.4.2.1"``."""
    found = re.search(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)", version)
    return f"nsys {found.group(1)}" if found else version
