"""Many timelines side by side: one row per report (one per rank, or one per run), and which report
is slowest and why.

    folders = cache_reports(paths)           # each report read once, kept as Parquet
    result = side_by_side(folders)
    result.table      # report, steps, step_ns, step_gpu_ns, ..., wall_ns, kernels, kernel_ns, ...
    result.verdict    # "rank5 is the slowest: its median step takes 2.88 ms, ..."

Steady state first. A performance engineer compares ranks by the time of a training step, not by how
long each process took from its first to its last CUDA call: that includes start-up (imports, CUDA
context and module loading), which on the recorded 8 ranks takes 150-260 ms per process against
steps of 1.6-3.0 ms, and differs between processes that start together for reasons that have nothing
to do with the program. The steps are the report's top-level NVTX ranges (depth 0: the program's
own ``step`` ranges, or PyTorch's ``ProfilerStep#N``). Per report:

``steps``        how many top-level ranges it has.
``step_ns``      their median duration: robust to a warm-up step (and to one stalled step).
``step_gpu_ns``  the median over steps of the time inside the step when the report's GPU work ran
                 (the union of its kernels, copies and memsets, clipped to the step).
``step_gap_ns``  the median of the rest of each step: the time the GPU sat idle during it.
``step_sync_calls``, ``step_sync_ns``  the median count of synchronisation calls overlapping a step
                 and of the time the host spent in them inside it.

When every report has at least ``MIN_STEPS`` steps the slowest is the one with the longest median
step, and why is told in per-step numbers. Otherwise (reports without NVTX ranges, or too few) the
slowest is the one with the longest ``wall_ns``, and the verdict says that start-up is included. The
whole-report columns stay in the table either way:

``wall_ns``      first start to last end over its kernels, copies, memsets and CUDA calls (the
                 window of ``coach.analyze.timeline``): how long the report's CUDA work took.
``kernels``, ``kernel_ns``   kernel count and summed kernel time.
``busy_pct``     the union of GPU work over the window, averaged over the report's devices.
``gap_ns``, ``max_gap_ns``, ``gaps``   idle stretches between a device's first and last operation
                 (NVIDIA's ``gpu_gaps`` looks at the same stretches): their sum, the longest, how many.
``sync_calls``, ``sync_ns``  device, context, stream and event synchronisation calls and the time
                 the host spent in them (the host-sync rule's calls; NVIDIA's ``cuda_api_sync``
                 recipe, which ``side_by_side_from_recipes`` uses, lists device and stream
                 synchronisation only).
``memcpy_ns``    summed copy time.

In a data-parallel job every rank waits for the slowest at each collective, so its step time is the
job's. Why it is slow: each of its numbers (per step, or over the whole report) is set against the
median of the other reports; those it exceeds by more than run-to-run noise are named, largest first.

Memory. A folder of reports may not fit in memory together. Each report is read once (by its own
reader, one report at a time in each of as many worker processes as there are cores) and saved as Parquet tables into a cache folder (``$COACH_CACHE``, else
``~/.cache/coach``), keyed by the report's path, size, modification time and coach's version; later
runs read only the cache. The report's row of the side-by-side table (its sums: kernel time,
synchronisation, copies, window; and its busy time, gaps and steps, which need its operations in
time order) is computed there too, from the report in the worker's memory, and kept beside its
tables (``ROW_FILE``): a comparison reads one small file per report, and memory holds one report
at a time in each worker, never the folder. A saved profile without that file (one written by
``coach profile``, or by an older coach) has its row computed from its Parquet tables, one report at
a time: its GPU operations (four integer columns), its calls and its top-level ranges. Where Nsight Systems has
recipes, ``side_by_side_from_recipes`` gets the same per-report numbers from NVIDIA's recipes
instead, which can run on a Dask cluster (``--mode dask-futures``) for folders too big for one
process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import polars as pl

from coach import __version__
from coach.analyze.parallel import map_reports
from coach.analyze.timeline import idle_gaps, interval_join, merge_intervals
from coach.analyze.timeline_rules._shared import REPORTABLE_SHARE_PCT, base_api_name, ns
from coach.analyze.timeline_rules.host_sync import SYNC_CALLS
from coach.errors import InputError
from coach.ingest import load
from coach.ingest.detect import detect
from coach.ingest.recipes import RECIPE_TIMEOUT_S, RecipeOutput, run_recipes
from coach.model import SAVED_MARKER, Timeline, save

CACHE_ENV = "COACH_CACHE"

#: zstd level of the cache's Parquet files: a cache is written once per report and read a few times,
#: so fast writing (level 1) beats the smallest files (traces/ keeps its recordings at 19).
CACHE_COMPRESSION_LEVEL = 1

#: Formats that hold a timeline. A saved coach profile may hold either kind: its header says which.
TIMELINE_FORMATS = frozenset({"nsys-sqlite", "nsys-rep", "kineto-json"})

#: When one report has both its .nsys-rep and the .sqlite export of it, the export is read: it needs
#: no nsys, and nsys can open only reports no newer than itself.
_PREFERENCE = {"coach-profile": 0, "nsys-sqlite": 1, "kineto-json": 2, "nsys-rep": 3}

#: The whole-report numbers set against the other reports to say why the slowest is slow (when
#: compared by wall time), with how to say it.
REASONS = {
    "sync_ns": "in synchronisation calls",
    "gap_ns": "in GPU gaps between operations",
    "kernel_ns": "of kernel time",
    "memcpy_ns": "of copy time",
}

#: The per-step numbers set against the other reports when compared by median step.
STEP_REASONS = {
    "step_gpu_ns": "of GPU work",
    "step_sync_ns": "in synchronisation calls",
    "step_gap_ns": "with the GPU idle",
}

#: Steps a report needs for its median to stand for its steady state: of three steps the median
#: discards one that is out of line either way (the warm-up step, which loads modules and builds
#: caches, or a one-off stall); with two, the median is their mean and the warm-up step counts half.
MIN_STEPS = 3

#: The depth of the ranges taken as steps: the outermost on their thread.
STEP_DEPTH = 0

_WORK_TABLES = ("kernels", "memcpy", "memset")


# --------------------------------------------------------------------------------------------
# Which inputs are timelines, and the Parquet cache
# --------------------------------------------------------------------------------------------


def timeline_format(path: Path) -> str | None:
    """The format of ``path`` when it holds a timeline, else None."""
    try:
        st = Path(path).stat()
    except OSError:
        return _timeline_format(Path(path), None)
    return _timeline_format(Path(path), (st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=65536)  # asked several times per report (which reports, which of two, cached?)
def _timeline_format(path: Path, version: tuple[int, int] | None) -> str | None:
    fmt = detect(path)
    if fmt == "coach-profile":
        try:
            kind = json.loads((path / SAVED_MARKER).read_text()).get("kind")
        except (OSError, ValueError):
            return None
        return fmt if kind == "timeline" else None
    return fmt if fmt in TIMELINE_FORMATS else None


def distinct_reports(paths: Sequence[Path]) -> list[Path]:
    """``paths`` with one entry per report: of a report's .nsys-rep and its .sqlite export in the
    same folder, the export."""
    best: dict[tuple[Path, str], Path] = {}
    for p in paths:
        key = (p.parent.resolve(), p.name.split(".")[0])
        kept = best.get(key)
        if kept is None or _rank(p) < _rank(kept):
            best[key] = p
    return sorted(best.values(), key=lambda p: (str(p.parent), p.name))


def _rank(path: Path) -> int:
    return _PREFERENCE.get(timeline_format(path) or "", len(_PREFERENCE))


def cache_root() -> Path:
    """Where report caches go: ``$COACH_CACHE``, else ``$XDG_CACHE_HOME/coach``, else ``~/.cache/coach``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "coach"


def cached_report(path: Path, cache: Path | None = None) -> Path:
    """The saved-profile folder holding ``path``'s tables: ``path`` itself when it is one, else a
    folder in the cache, written on first use (into a temporary name, renamed when complete)."""
    if timeline_format(path) == "coach-profile":
        return path
    folder = _cache_folder(path, cache)
    if (folder / SAVED_MARKER).is_file():
        return folder
    cache = folder.parent
    cache.mkdir(parents=True, exist_ok=True)
    profile = load(path)
    if profile.kind != "timeline":
        raise InputError(path, "is not a timeline (only timelines are compared side by side)")
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=cache))
    try:
        save(profile, staging, compression_level=CACHE_COMPRESSION_LEVEL)
        (staging / ROW_FILE).write_text(json.dumps(_row_of(profile)))
        staging.replace(folder)
    except OSError:
        if not (folder / SAVED_MARKER).is_file():  # not a concurrent writer that got there first
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _cache_folder(path: Path, cache: Path | None) -> Path:
    """Where ``path``'s tables are cached: keyed by its path, size, modification time and coach's version."""
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{__version__}".encode()).hexdigest()[:16]
    return (cache or cache_root()) / "reports" / f"{path.name.split('.')[0]}-{key}"


def _is_cached(path: Path, cache: Path | None) -> bool:
    return timeline_format(path) == "coach-profile" or (_cache_folder(path, cache) / SAVED_MARKER).is_file()


def cache_reports(paths: Iterable[Path], cache: Path | None = None,
                  on_each: Callable[[], None] | None = None) -> list[Path]:
    """``cached_report`` for each path, in order; ``on_each`` is called after each (progress). The
    reports not cached yet are read on every core (``coach.analyze.parallel``), each written once."""
    paths = list(paths)
    cache = cache or cache_root()  # here, not in a worker started under another environment
    todo = [p for p in paths if not _is_cached(p, cache)]
    done = dict(zip(todo, map_reports(cached_report, todo, cache, on_each=on_each)))
    folders = []
    for p in paths:
        if p not in done:
            done[p] = cached_report(p, cache)
            if on_each:
                on_each()
        folders.append(done[p])
    return folders


def report_name(folder: Path) -> str:
    """The name of the report a saved profile came from (``rank5`` for ``rank5.sqlite``)."""
    try:
        source = json.loads((folder / SAVED_MARKER).read_text()).get("source", {}).get("path")
    except (OSError, ValueError):
        source = None
    return Path(source).name.split(".")[0] if source else folder.name


# --------------------------------------------------------------------------------------------
# The side-by-side table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SideBySide:
    """One row per report, the slowest one, and why (``reasons``: one row per number it exceeds the
    others' median in, largest first)."""

    table: pl.DataFrame
    slowest: str | None
    reasons: pl.DataFrame
    verdict: str
    measured_by: str  # the column the slowest report is chosen by: step_ns, else wall_ns (or span_ns)


#: The per-step columns, by how each step's value is computed (see module doc).
_STEP_COLUMNS = {"steps": pl.Int64, "step_ns": pl.Float64, "step_gpu_ns": pl.Float64, "step_gap_ns": pl.Float64,
                 "step_sync_calls": pl.Float64, "step_sync_ns": pl.Float64}
#: A report's step columns from its table of steps: the count, and the median of each number.
_STEP_MEDIANS = [pl.len().cast(pl.Int64).alias("steps"), *(pl.col(c).median() for c in _STEP_COLUMNS if c != "steps")]


def side_by_side(folders: Sequence[Path], names: Sequence[str] | None = None) -> SideBySide:
    """The per-report summary of saved timeline profiles (``cache_reports``), slowest named."""
    if len(folders) < 2:
        raise InputError(folders[0] if folders else ".", "a side-by-side summary needs at least two reports")
    names = list(names) if names is not None else [report_name(f) for f in folders]
    table = _per_report(folders, names)
    table = table.with_columns(busy_pct=pl.col("busy_ns") / (pl.col("wall_ns") * pl.col("devices")) * 100.0).select(
        "report", *_STEP_COLUMNS, "wall_ns", "kernels", "kernel_ns", "busy_pct", "gaps", "gap_ns", "max_gap_ns",
        "sync_calls", "sync_ns", "memcpy_ns", "api_calls")
    return compare_reports(table, "wall_ns")


def compare_reports(table: pl.DataFrame, whole: str) -> SideBySide:
    """Name the slowest report of ``table``: by median step when every report has ``MIN_STEPS``
    steps, else by the whole-report column ``whole`` (saying why)."""
    steps = table.get_column("steps").fill_null(0)
    if table.height >= 2 and steps.min() >= MIN_STEPS:
        return explain(table, "step_ns", STEP_REASONS)
    result = explain(table, whole, REASONS)
    if table.height < 2:
        return result
    fewest = table.sort(pl.col("steps").fill_null(0)).row(0, named=True)
    why = (f" Compared over the whole report, start-up included: {fewest['report']} has {fewest['steps'] or 0} "
           f"top-level NVTX ranges, and a steady-state step time needs at least {MIN_STEPS} in every report.")
    return SideBySide(result.table, result.slowest, result.reasons, result.verdict + why, result.measured_by)


#: The sums of a report's row: counts and times that are filled with 0 where the report has none.
_COUNTS = ("kernels", "kernel_ns", "api_calls", "sync_calls", "sync_ns", "memcpy_ns")


def _sums(tables: Callable[[str, Sequence[str]], pl.LazyFrame]) -> dict:
    """Counts, sums and the window of one report, from its tables (``tables(name, columns)``, a lazy
    frame of those columns): one query."""
    spans = pl.concat([tables(t, ("start_ns", "end_ns")) for t in (*_WORK_TABLES, "api")])
    api = tables("api", ("name", "dur_ns")).with_columns(sync=base_api_name(pl.col("name")).str.contains(SYNC_CALLS))
    parts = [
        spans.select(wall_ns=pl.col("end_ns").max() - pl.col("start_ns").min()),
        tables("kernels", ("dur_ns",)).select(kernels=pl.len(), kernel_ns=pl.col("dur_ns").sum()),
        api.select(api_calls=pl.len(), sync_calls=pl.col("sync").sum(), sync_ns=pl.col("dur_ns").filter(pl.col("sync")).sum()),
        tables("memcpy", ("dur_ns",)).select(memcpy_ns=pl.col("dur_ns").sum()),
    ]
    row = pl.concat(parts, how="horizontal").with_columns(
        pl.col(c).fill_null(0).cast(pl.Int64) for c in _COUNTS).collect(engine="in-memory").row(0, named=True)
    return row


def _per_report(folders: Sequence[Path], names: Sequence[str]) -> pl.DataFrame:
    """Busy time, gaps and steps per report, one report in memory at a time in each worker (see
    module doc)."""
    reports = list(zip(folders, names))
    computed = iter(map_reports(_report_row, [r for r in reports if not (r[0] / ROW_FILE).is_file()]))
    rows = [_report_row(r) if (r[0] / ROW_FILE).is_file() else next(computed) for r in reports]
    return pl.DataFrame(rows, schema={"report": pl.Utf8, "wall_ns": pl.Int64, **{c: pl.Int64 for c in _COUNTS},
                                      "devices": pl.Int64, "busy_ns": pl.Int64, "gaps": pl.Int64,
                                      "gap_ns": pl.Int64, "max_gap_ns": pl.Int64, **_STEP_COLUMNS})


#: Beside a cached report's tables: its row of the side-by-side table (less its name), computed when
#: the report is cached, so that a later comparison reads one small file per report. The number is
#: the row's version: change it with what the row holds or how it is computed, and older rows are
#: computed afresh.
ROW_FILE = "side-by-side-row-2.json"


def _report_row(report: tuple[Path, str]) -> dict:
    folder, name = report
    cached = folder / ROW_FILE
    if cached.is_file():
        try:
            return {"report": name, **json.loads(cached.read_text())}
        except (OSError, ValueError):
            pass  # recomputed below
    scan = lambda table, *cols: pl.scan_parquet(folder / f"{table}.parquet").select(*cols)  # noqa: E731
    ops = pl.concat([scan(t, "device_id", "start_ns", "end_ns") for t in _WORK_TABLES]).collect()
    return {"report": name, **_sums(lambda table, cols: scan(table, *cols)),
            **_row(ops, scan("nvtx", "depth", "start_ns", "end_ns").collect(), scan("api", "name", "start_ns", "end_ns").collect())}


def _row(ops: pl.DataFrame, nvtx: pl.DataFrame, api: pl.DataFrame) -> dict:
    """Busy time, gaps and steps of one report from its GPU operations (``device_id, start_ns,
    end_ns``), NVTX ranges and API calls."""
    ops = ops.filter(pl.col("start_ns").is_not_null())
    busy = merge_intervals(ops, ["device_id"])
    edges = (int(busy["start_ns"].min()), int(busy["end_ns"].max())) if busy.height else None
    gaps = idle_gaps(busy, edges).filter(pl.col("position") == "between")
    return {"devices": max(busy["device_id"].n_unique(), 1),
            "busy_ns": int(busy["dur_ns"].sum()), "gaps": gaps.height, "gap_ns": int(gaps["dur_ns"].sum()),
            "max_gap_ns": int(gaps["dur_ns"].max()) if gaps.height else 0, **_steps(ops, nvtx, api)}


def _row_of(profile: Timeline) -> dict:
    ops = pl.concat([getattr(profile, t).select("device_id", "start_ns", "end_ns") for t in _WORK_TABLES])
    return {**_sums(lambda table, cols: getattr(profile, table).lazy().select(*cols)), **_row(ops, profile.nvtx, profile.api)}


def _steps(ops: pl.DataFrame, nvtx: pl.DataFrame, api: pl.DataFrame) -> dict:
    """The report's steps (top-level NVTX ranges) and the median over them of each per-step number."""
    steps = (nvtx.filter((pl.col("depth") == STEP_DEPTH) & (pl.col("end_ns") > pl.col("start_ns")))
             .select("start_ns", "end_ns").with_row_index("step"))
    if steps.is_empty():
        return {"steps": 0}
    syncs = api.filter(base_api_name(pl.col("name")).str.contains(SYNC_CALLS)).select("start_ns", "end_ns")
    # GPU work of the report on any of its devices: the time in a step when some GPU of it was busy
    union = merge_intervals(ops.select("start_ns", "end_ns", _all=pl.lit(0)), ["_all"]).select("start_ns", "end_ns")
    gpu = _inside(steps, union).select("step", step_gpu_ns="overlap_ns")
    per_step = (_per_step(steps, syncs).join(gpu, on="step", how="left", maintain_order="left")
                .with_columns(pl.col("step_gpu_ns").fill_null(0))
                .with_columns(step_gap_ns=pl.col("step_ns") - pl.col("step_gpu_ns")))
    return per_step.select(_STEP_MEDIANS).row(0, named=True)


def _per_step(steps: pl.DataFrame, syncs: pl.DataFrame, by: list[str] | None = None) -> pl.DataFrame:
    """``steps`` (``step``, ``start_ns``, ``end_ns``) with their duration and the synchronisation
    calls overlapping each: ``step_ns``, ``step_sync_calls``, ``step_sync_ns`` (the part inside)."""
    sync = _inside(steps, syncs, by).select("step", step_sync_calls="calls", step_sync_ns="overlap_ns")
    return (steps.join(sync, on="step", how="left", maintain_order="left")
            .with_columns(pl.col("step_sync_calls", "step_sync_ns").fill_null(0),
                          step_ns=pl.col("end_ns") - pl.col("start_ns")))


def _inside(steps: pl.DataFrame, intervals: pl.DataFrame, by: list[str] | None = None) -> pl.DataFrame:
    """Per step, the ``intervals`` overlapping it: how many (``calls``) and for how long inside it
    (``overlap_ns``)."""
    return (interval_join(steps, intervals, "overlap", by=by).group_by("step")
            .agg(calls=pl.len(), overlap_ns=pl.col("overlap_ns").sum()))


def explain(table: pl.DataFrame, by: str, reasons: Mapping[str, str] = REASONS) -> SideBySide:
    """Name the report with the largest ``by`` and the numbers (of ``reasons``) in which it exceeds
    the median of the others by more than run-to-run noise (``REPORTABLE_SHARE_PCT`` of its own
    ``by``)."""
    if table.height < 2 or table.get_column(by).drop_nulls().is_empty():
        return SideBySide(table, None, _no_reasons(), "Fewer than two reports with CUDA work: nothing to compare.", by)
    row = table.sort(by, descending=True, nulls_last=True).row(0, named=True)
    others = table.filter(pl.col("report") != row["report"])
    median = {c: others.get_column(c).median() for c in (by, *reasons, "step_sync_calls") if c in table.columns}
    noise = row[by] * REPORTABLE_SHARE_PCT / 100.0
    excess = row[by] - (median[by] or 0)
    found = pl.DataFrame(
        [{"metric": c, "slowest": float(row[c] or 0), "median_others": float(median[c] or 0),
          "excess_ns": float((row[c] or 0) - (median[c] or 0))} for c in reasons if c in median],
        schema={"metric": pl.Utf8, "slowest": pl.Float64, "median_others": pl.Float64, "excess_ns": pl.Float64},
    ).filter(pl.col("excess_ns") > noise).sort("excess_ns", descending=True, maintain_order=True)
    per_step = by == "step_ns"
    if excess <= noise:
        verdict = (f"No report stands out: the longest, {row['report']}, took {_measure(by, row)}, within "
                   f"{REPORTABLE_SHARE_PCT:g}% of the median of the others ({ns(median[by])}).")
        return SideBySide(table, None, _no_reasons(), verdict, by)
    head = (f"{row['report']} is the slowest: {_measure(by, row)}, {ns(excess)} more than the median of the other "
            f"{others.height} ({ns(median[by])}).")
    if found.is_empty():
        what = "per-step GPU, synchronisation or idle" if per_step else "kernel, synchronisation, gap or copy"
        verdict = (head + f" None of its {what} time differs from the others' by more than {REPORTABLE_SHARE_PCT:g}% "
                   "of its own: the difference is on the host, outside CUDA (Python, data loading, I/O).")
    else:
        parts = [f"{ns(r['excess_ns'])} more {reasons[r['metric']]} ({ns(r['median_others'])} -> {ns(r['slowest'])}"
                 + (_calls(median.get("step_sync_calls"), row.get("step_sync_calls"))
                    if r["metric"] == "step_sync_ns" else "") + ")"
                 for r in found.iter_rows(named=True)]
        verdict = head + (" Per step it spends " if per_step else " It spends ") + "; ".join(parts) + "."
    return SideBySide(table, row["report"], found, verdict, by)


def _measure(by: str, row: dict) -> str:
    if by == "step_ns":
        return f"{ns(row[by])} per step (the median of its {row['steps']} top-level NVTX ranges)"
    what = {"wall_ns": "from its first to its last CUDA activity",
            "span_ns": "of GPU operations and the gaps between them"}.get(by, by)
    return f"{ns(row[by])} {what}"


def _calls(others: float | None, slowest: float | None) -> str:
    """``", 1 -> 9 calls"``: the median synchronisation calls per step, the others' and the slowest's."""
    if others is None or slowest is None:
        return ""
    return f", {others:g} -> {slowest:g} calls"


def _no_reasons() -> pl.DataFrame:
    return pl.DataFrame(schema={"metric": pl.Utf8, "slowest": pl.Float64, "median_others": pl.Float64,
                                "excess_ns": pl.Float64})


# --------------------------------------------------------------------------------------------
# The same from NVIDIA's recipes (out of process, and across a Dask cluster with dask-futures)
# --------------------------------------------------------------------------------------------

#: The recipes the side-by-side view needs, with their arguments: gaps of any length (``--gap 0``),
#: since NVIDIA's default lists only gaps over 500 ms; the NVTX projection for the steps.
SIDE_BY_SIDE_RECIPES = {"cuda_gpu_kern_sum": [], "cuda_gpu_mem_time_sum": [], "cuda_api_sync": [],
                        "gpu_gaps": ["--gap", "0"], "nvtx_gpu_proj_trace": []}


def side_by_side_from_recipes(reports: Sequence[str | Path], *, mode: str | None = None,
                              timeout: float | None = None) -> SideBySide:
    """The side-by-side table from NVIDIA's recipes run over all ``reports`` together (``.nsys-rep``
    files or folders of them). With ``mode="dask-futures"`` the recipes spread the reports over a Dask
    cluster (``DASK_SCHEDULER_ADDRESS``, else a local one), so no single process holds them all."""
    outputs = run_recipes(list(SIDE_BY_SIDE_RECIPES), reports, mode=mode, args=SIDE_BY_SIDE_RECIPES,
                          timeout=timeout or RECIPE_TIMEOUT_S)
    return side_by_side_from_outputs(outputs)


def side_by_side_from_outputs(outputs: Mapping[str, RecipeOutput]) -> SideBySide:
    """The side-by-side table from the outputs of ``SIDE_BY_SIDE_RECIPES`` over the same reports.

    Steps: no recipe gives the NVTX ranges' CPU times with their nesting, so a step here is a
    top-level range projected onto the GPU (``nvtx_gpu_proj_trace``: from the first GPU operation
    launched inside it to the end of the last), and its numbers are taken inside that window: the
    gaps (``gpu_gaps``) and synchronisation calls (``cuda_api_sync``) overlapping it, GPU work the
    rest. Without enough steps, the slowest report is the one with the longest ``span_ns``: kernel,
    copy and memset time plus the gaps between operations, which equals the first-to-last operation
    span when operations do not overlap (overlapping streams count twice); the recipes give no
    window."""
    names = sorted({r for o in outputs.values() for r in o.reports})
    copies = pl.col("name").str.starts_with("CUDA_MEMCPY")
    aggs = {
        "cuda_gpu_kern_sum": [pl.col("count").sum().alias("kernels"), pl.col("total_ns").sum().alias("kernel_ns")],
        "cuda_gpu_mem_time_sum": [pl.col("total_ns").sum().alias("memops_ns"),
                                  pl.col("total_ns").filter(copies).sum().alias("memcpy_ns")],
        "cuda_api_sync": [pl.len().alias("sync_calls"), pl.col("dur_ns").sum().alias("sync_ns")],
        "gpu_gaps": [pl.len().alias("gaps"), pl.col("dur_ns").sum().alias("gap_ns"),
                     pl.col("dur_ns").max().alias("max_gap_ns")],
    }
    table = pl.DataFrame({"report": names}, schema={"report": pl.Utf8})
    for recipe, exprs in aggs.items():
        out = outputs.get(recipe)
        if out is not None and out.table.height:
            table = table.join(out.table.group_by("report").agg(exprs), on="report", how="left", maintain_order="left")
        else:
            table = table.with_columns(pl.lit(0, pl.Int64).alias(e.meta.output_name()) for e in exprs)
    table = (table.with_columns(pl.exclude("report").fill_null(0).cast(pl.Int64))
             .with_columns(span_ns=pl.col("kernel_ns") + pl.col("memops_ns") + pl.col("gap_ns"))
             .join(_recipe_steps(outputs), on="report", how="left", maintain_order="left")
             .with_columns(pl.col("steps").fill_null(0))
             .select("report", *_STEP_COLUMNS, "span_ns", "kernels", "kernel_ns", "gaps", "gap_ns", "max_gap_ns",
                     "sync_calls", "sync_ns", "memcpy_ns"))
    return compare_reports(table, "span_ns")


def _recipe_steps(outputs: Mapping[str, RecipeOutput]) -> pl.DataFrame:
    """Per report, the medians of the per-step numbers over its projected top-level ranges."""
    trace = outputs.get("nvtx_gpu_proj_trace")
    steps = (trace.table.filter(pl.col("depth") == STEP_DEPTH) if trace is not None and trace.table.height
             else pl.DataFrame(schema={"report": pl.Utf8, "proj_start_ns": pl.Int64, "proj_end_ns": pl.Int64}))
    steps = steps.select("report", start_ns="proj_start_ns", end_ns="proj_end_ns").with_row_index("step")
    gaps = _inside(steps, _intervals_of(outputs, "gpu_gaps"), ["report"]).select("step", step_gap_ns="overlap_ns")
    per_step = (_per_step(steps, _intervals_of(outputs, "cuda_api_sync"), ["report"])
                .join(gaps, on="step", how="left", maintain_order="left").with_columns(pl.col("step_gap_ns").fill_null(0))
                .with_columns(step_gpu_ns=pl.col("step_ns") - pl.col("step_gap_ns")))
    return per_step.group_by("report").agg(_STEP_MEDIANS).select("report", *_STEP_COLUMNS)


def _intervals_of(outputs: Mapping[str, RecipeOutput], recipe: str) -> pl.DataFrame:
    """``report, start_ns, end_ns`` of a recipe's rows (none where it wrote nothing)."""
    out = outputs.get(recipe)
    if out is None or out.table.is_empty():
        return pl.DataFrame(schema={"report": pl.Utf8, "start_ns": pl.Int64, "end_ns": pl.Int64})
    return out.table.select("report", "start_ns", "end_ns")
