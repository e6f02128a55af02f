"""Source lines of a launch: Nsight Compute's source counters summed per CUDA C / Python line.

A kernel profile's ``sass`` table holds the counters per SASS instruction with the line each was
compiled from; this module sums them per line (``lines``), ranks the hot lines by warp-state
samples (``hot_lines``), and says in one line what a report lacks where it cannot (``gap``).

The warp-state samples are Nsight Compute's "Warp Stall Sampling (All Samples)": at a fixed
interval each SM sub-partition records the state of one warp and the instruction it is at. A line's
share of the samples is its share of the warps' time, stalled or issuing (the ``selected`` reason);
the dominant reasons say what the warps at that line wait on. A stall is charged to the instruction
that waits, not to the one it waits for: a load's latency shows at the first use of its result,
usually on the same line or the next.

Inlined code is charged to its innermost line (the callee's: the ``switch`` of an inlined device
function, not the call), where the report's binary says so (``coach.ingest.cubin_lines``); the
lines it is inlined at are the line's context (``inlined_at``).

The counters that say why a line is slow come from the memory instructions on it: L2 sectors the
global accesses need beyond a fully coalesced pattern (``l2_global_excess_sectors``), shared-memory
wavefronts beyond one per request (``shared_excess_wavefronts``: bank conflicts), L2 sectors of
local memory (``l2_local_sectors``: spills, dynamically indexed arrays).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePath

import polars as pl

from coach.model import KernelProfile

WARP_SIZE = 32
#: Counters summed per line, from the ``sass`` table.
SUMMED = ("warp_inst", "thread_inst", "thread_inst_pred_on", "samples", "l1_global_requests", "l2_global_sectors",
          "l2_global_sectors_ideal", "l2_global_excess_sectors", "shared_wavefronts", "shared_wavefronts_ideal",
          "shared_excess_wavefronts", "l2_local_sectors", "divergent_branches")
#: Reasons shown beside a line: those with at least this share of its samples, at most TOP_REASONS.
REASON_MIN_PCT = 10.0
TOP_REASONS = 2
#: Instruction families, by SASS opcode, that the findings point at.
OPCODE_FAMILIES: dict[str, frozenset[str]] = {
    "global_atomic": frozenset({"ATOM", "ATOMG", "RED", "REDG"}),
    "local": frozenset({"LDL", "STL"}),
    "branch": frozenset({"BRA", "BRX", "BRXU", "JMX", "JMXU"}),
    "fp64": frozenset({"DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DMMA"}),
}
#: How a re-recording gets what is missing, by what is missing.
NEED_COUNTERS = "profile with ncu --set full (or --section SourceCounters) --import-source yes and build with -lineinfo"
NEED_LINEINFO = ("build with -lineinfo (nvcc, NVRTC) to map instructions to source lines; Triton kernels carry "
                 "line information already")
NEED_TEXT = "profile with --import-source yes where the source files exist, or pass the sources with --source-dir"


def has_counters(profile: KernelProfile, launch_id: int | None = None) -> bool:
    sass = profile.sass if launch_id is None else profile.sass.filter(pl.col("launch_id") == launch_id)
    return not sass.is_empty()


def has_lines(profile: KernelProfile, launch_id: int | None = None) -> bool:
    sass = profile.sass if launch_id is None else profile.sass.filter(pl.col("launch_id") == launch_id)
    return sass["line"].is_not_null().any()


def gap(profile: KernelProfile, launch_id: int | None = None, name: str | None = None) -> str | None:
    """One line on what the profile lacks for a source view, with what to re-record with; None when
    it has counters, lines and text."""
    where = name or short_path(str(profile.source.path), Path(str(profile.source.path)).is_dir())
    if not has_counters(profile, launch_id):
        if str((profile.source.meta or {}).get("reader", "")).startswith("ncu --csv"):
            return f"source counters of {where} not read: they need NVIDIA's ncu_report module (pip install ncu-report)"
        return f"no source counters in {where}: {NEED_COUNTERS}"
    if not has_lines(profile, launch_id):
        return f"SASS only in {where} (no line information): {NEED_LINEINFO}"
    used = profile.sass.filter(pl.col("file_id").is_not_null())
    if launch_id is not None:
        used = used.filter(pl.col("launch_id") == launch_id)
    files = profile.source_files.filter(pl.col("file_id").is_in(used["file_id"].unique().implode()))
    if files["text"].is_null().all():
        return f"no source text in {where} (lines only): {NEED_TEXT}"
    return None


def attribution(profile: KernelProfile, launch_id: int) -> str | None:
    """One line where the launch's lines may put inlined code at its call (the lines are Nsight
    Compute's ``source_info``'s, not the binary's innermost ones), saying why; None where the lines
    are the innermost ones, or there are none."""
    if not has_counters(profile, launch_id) or not has_lines(profile, launch_id):
        return None
    status = ((profile.source.meta or {}).get("source_lines") or {}).get(str(launch_id))
    if status == "innermost":
        return None
    why = ("saved before coach read inlined lines from the binary: load the .ncu-rep itself" if status is None
           else status.removeprefix("source_info: "))
    return f"lines as Nsight Compute's source_info gives them ({why}): inlined code may show at the line calling it"


def short_path(path: str, folder: bool = False) -> str:
    """A report's name for a message: its file name, or for a saved profile folder (traces/.../slow/ncu)
    the last three parts, which name the recording."""
    parts = PurePath(path).parts
    return "/".join(parts[-3:]) if folder and len(parts) >= 3 else (parts[-1] if parts else path)


def display_name(path: str | None) -> str:
    """A short name for a source path: what follows site-packages/ for a library file, else the file name."""
    if not path:
        return "?"
    m = re.search(r"(?:site|dist)-packages/(.+)$", path)
    return m.group(1) if m else PurePath(path).name


def file_label(path: pl.Expr) -> pl.Expr:
    """``display_name`` as an expression (give it ``coalesce(local_path, path)`` to name matched files locally)."""
    library = path.str.extract(r"(?:site|dist)-packages/(.+)$", 1)
    return pl.coalesce(library, path.str.extract(r"([^/\\]+)$", 1), pl.lit("?"))


def line_texts(profile: KernelProfile) -> pl.DataFrame:
    """(file_id, line, text) for every line of the files whose text the profile has, stripped."""
    return (profile.source_files.filter(pl.col("text").is_not_null())
            .select("file_id", pl.col("text").str.split("\n").alias("text"))
            .explode("text")
            .with_columns((pl.int_range(pl.len()).over("file_id") + 1).alias("line"),
                          pl.col("text").str.strip_chars())
            .select("file_id", "line", "text"))


def sass_rows(profile: KernelProfile, launch_id: int) -> pl.DataFrame:
    """The launch's instructions with the derived per-instruction columns: average active threads,
    idle lanes, the instruction families, and the divergence a branch causes."""
    sass = profile.sass.filter(pl.col("launch_id") == launch_id).sort("pc_offset")
    active = pl.col("thread_inst") / pl.col("warp_inst")
    out = sass.with_columns(
        pl.when(pl.col("warp_inst") > 0).then(active).otherwise(None).alias("avg_threads"),
        (WARP_SIZE * pl.col("warp_inst") - pl.col("thread_inst")).clip(lower_bound=0).alias("idle_lanes"),
        *[pl.when(pl.col("opcode").is_in(list(ops))).then(pl.col("warp_inst")).otherwise(0.0).alias(f"{family}_inst")
          for family, ops in OPCODE_FAMILIES.items()],
    )
    # A branch that splits its warps: the instruction after it (the fall-through, 16 bytes on) runs
    # with fewer threads than the branch did. The lanes lost there, per execution of the branch,
    # times its executions, is the divergence charged to the branch.
    nxt = pl.col("avg_threads").shift(-1)
    adjacent = pl.col("pc_offset").shift(-1) == pl.col("pc_offset") + 16
    return out.with_columns(
        pl.when((pl.col("branch_inst") > 0) & adjacent & (nxt < pl.col("avg_threads")))
        .then(pl.col("warp_inst") * (pl.col("avg_threads") - nxt)).otherwise(0.0).alias("divergent_lanes"),
        pl.when((pl.col("branch_inst") > 0) & adjacent).then(nxt).otherwise(None).alias("threads_after"),
    )


def lines(profile: KernelProfile, launch_id: int, *, with_reasons: bool = True) -> pl.DataFrame:
    """One row per (file, line) of the launch's instructions, counters summed, with the line's text
    where the profile has it, its share of the launch's samples, and its dominant stall reasons.
    Instructions without line information form one row with null file and line."""
    sass = sass_rows(profile, launch_id)
    total = sass["samples"].sum() or 0.0
    per_line = sass.group_by("file_id", "line").agg(
        *[pl.col(c).sum() for c in (*SUMMED, "idle_lanes", "divergent_lanes",
                                     *(f"{f}_inst" for f in OPCODE_FAMILIES))],
        *[pl.col(c).is_not_null().any().alias(f"has_{c}") for c in ("l2_global_sectors", "shared_wavefronts",
                                                                     "l2_local_sectors")],
        pl.col("opcode").drop_nulls().unique(maintain_order=True).alias("opcodes"),
        pl.col("pc_offset").min().alias("first_pc"),
        pl.len().alias("instructions"),
    )
    for c in ("l2_global_sectors", "shared_wavefronts", "l2_local_sectors"):
        # a sum of nothing is 0 in Polars: keep "not measured" apart from "measured zero"
        per_line = per_line.with_columns(pl.when(pl.col(f"has_{c}")).then(pl.col(c)).otherwise(None).alias(c))
    per_line = per_line.drop([c for c in per_line.columns if c.startswith("has_")])
    per_line = per_line.with_columns(
        (100 * pl.col("samples") / total if total else pl.lit(None, pl.Float64)).alias("samples_pct"),
        pl.when(pl.col("warp_inst") > 0).then(pl.col("thread_inst") / pl.col("warp_inst")).otherwise(None)
        .alias("avg_threads"),
    )
    per_line = (per_line.join(profile.source_files.select("file_id", "path", "local_path"), on="file_id", how="left")
                .join(line_texts(profile), on=["file_id", "line"], how="left")
                .with_columns(file_label(pl.coalesce("local_path", "path")).alias("file")))
    per_line = per_line.join(call_sites(profile, launch_id), on=["file_id", "line"], how="left", nulls_equal=True)
    if with_reasons:
        per_line = per_line.join(reasons(profile, launch_id), on=["file_id", "line"], how="left", nulls_equal=True)
    return per_line.sort(["samples", "warp_inst", "first_pc"], descending=[True, True, False], nulls_last=True)


def call_sites(profile: KernelProfile, launch_id: int, sass: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per (file, line) of inlined code: the lines it is inlined at, as "file:line", the one with
    the most executed instructions first (``inlined_at``; a line inlined nowhere has no row)."""
    rows = profile.sass.filter(pl.col("launch_id") == launch_id) if sass is None else sass
    files = profile.source_files.select(pl.col("file_id").alias("call_file_id"),
                                        file_label(pl.coalesce("local_path", "path")).alias("call_file"))
    return (rows.filter(pl.col("call_line").is_not_null())
            .group_by("file_id", "line", "call_file_id", "call_line")
            .agg(pl.col("warp_inst").fill_null(0).sum().alias("n"), pl.col("pc_offset").min().alias("pc"))
            .join(files, on="call_file_id", how="left")
            .sort(["n", "pc"], descending=[True, False])
            .group_by("file_id", "line", maintain_order=True)
            .agg((pl.col("call_file").fill_null("?") + ":" + pl.col("call_line").cast(pl.Utf8)).alias("inlined_at")))


def reasons(profile: KernelProfile, launch_id: int) -> pl.DataFrame:
    """Per (file, line): the stall reasons with their samples, largest first (``reasons``), and the
    dominant ones with their share of the line's samples (``top_reasons``)."""
    stalls = profile.stall_samples.filter(pl.col("launch_id") == launch_id)
    where = profile.sass.filter(pl.col("launch_id") == launch_id).select("pc_offset", "file_id", "line")
    by_reason = (stalls.join(where, on="pc_offset", how="left")
                 .group_by("file_id", "line", "reason").agg(pl.col("samples").sum())
                 .with_columns((100 * pl.col("samples") / pl.col("samples").sum().over("file_id", "line")).alias("pct"))
                 .sort(["samples", "reason"], descending=[True, False]))
    return by_reason.group_by("file_id", "line", maintain_order=True).agg(
        pl.struct("reason", "samples", "pct").alias("reasons"),
        pl.struct("reason", "pct").filter(pl.col("pct") >= REASON_MIN_PCT).head(TOP_REASONS).alias("top_reasons"),
    )


def hot_lines(profile: KernelProfile, launch_id: int, top: int = 10) -> pl.DataFrame:
    """The launch's lines with the most warp-state samples (ties: executed instructions)."""
    return lines(profile, launch_id).head(top) if top else lines(profile, launch_id)


def instructions(profile: KernelProfile, launch_id: int) -> pl.DataFrame:
    """The launch's instructions in address order (``sass_rows``), each with its share of the
    launch's samples and its dominant stall reason."""
    rows = sass_rows(profile, launch_id)
    total = rows["samples"].sum() or 0.0
    stalls = (profile.stall_samples.filter(pl.col("launch_id") == launch_id)
              .sort(["samples", "reason"], descending=[True, False])
              .group_by("pc_offset", maintain_order=True).agg(pl.col("reason").first().alias("top_reason")))
    return (rows.join(stalls, on="pc_offset", how="left")
            .with_columns((100 * pl.col("samples") / total if total else pl.lit(None, pl.Float64)).alias("samples_pct"))
            .sort("pc_offset"))


def line_sass(profile: KernelProfile, launch_id: int, file_id: int | None, line: int | None) -> pl.DataFrame:
    """The instructions of one line, in address order (see ``instructions``)."""
    return instructions(profile, launch_id).filter(pl.col("file_id").eq_missing(file_id) & pl.col("line").eq_missing(line))


def hot_instructions(profile: KernelProfile, launch_id: int, top: int = 10) -> pl.DataFrame:
    """The launch's instructions with the most warp-state samples: the view of a report without
    line information (SASS only)."""
    ranked = instructions(profile, launch_id).sort(["samples", "warp_inst", "pc_offset"], descending=[True, True, False],
                                                    nulls_last=True)
    return ranked.head(top) if top else ranked
