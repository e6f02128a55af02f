"""Source evidence for findings: the lines that cause each one, selected by the counter that matches it.

The rules judge a launch from its totals and stay as they are; this step runs after them and, for
each finding of a launch whose profile has source counters, picks the lines whose counter for that
kind of problem is largest:

=========================  ==================================================================
finding                    lines with the most ...
=========================  ==================================================================
uncoalesced access         L2 sectors of global loads and stores beyond a coalesced access
                           (``l2_global_excess_sectors``: Nsight Compute's "L2 Theoretical
                           Sectors Global Excessive")
shared bank conflicts      shared-memory wavefronts beyond one per request
                           (``shared_excess_wavefronts``)
local memory               L2 sectors of local loads and stores (``l2_local_sectors``), else
                           the local instructions executed (LDL, STL)
divergence                 divergent executions of a branch (``divergent_branches``: Nsight
                           Compute's "Divergent Branches"), else the lanes a branch splits off:
                           its executions times the drop in active threads from the branch to
                           the instruction after it, else the idle lanes of partly filled warps
atomics                    global atomic instructions executed (ATOM, ATOMG, RED)
FP64                       FP64 instructions executed
a dominant stall reason    warp-state samples of that reason
DRAM or cache bound        L2 sectors of global accesses: where the bytes come from
anything else at a line    warp-state samples (where the warps spend their time)
=========================  ==================================================================

Findings about the launch configuration (tail effect, launch overhead) get no lines. A line is
kept when it holds at least ``MIN_SHARE_PCT`` of the launch's total of the counter, at most
``MAX_LINES`` of them, largest first; the largest is kept whatever its share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from coach.analyze import source
from coach.analyze.findings import Bottleneck, Finding, Location
from coach.model import KernelProfile

#: A line that holds less of the counter than this is not where the problem is.
MIN_SHARE_PCT = 10.0
MAX_LINES = 3
#: Launch-level stall columns whose Nsight Compute sampling reason is spelled differently.
STALL_REASONS = {"stall_no_instruction": "no_instructions", "stall_dispatch": "dispatch_stall"}


@dataclass(frozen=True)
class Pick:
    counter: str  # column of ``source.sass_rows`` (or "<reason>_samples" for a stall reason)
    label: str  # what the counter counts, for the note
    fallbacks: tuple[str, ...] = ()  # used in turn when the counter is zero or missing everywhere


SAMPLES = Pick("samples", "warp-state samples")
BY_RULE: dict[str, Pick] = {
    "uncoalesced-global-access": Pick("l2_global_excess_sectors", "L2 sectors beyond a coalesced access"),
    "shared-bank-conflicts": Pick("shared_excess_wavefronts", "shared-memory wavefronts beyond one per request"),
    "local-memory-spills": Pick("l2_local_sectors", "L2 sectors of local memory", fallbacks=("local_inst",)),
    "warp-divergence": Pick("divergent_branches", "divergent executions of the branch",
                            fallbacks=("divergent_lanes", "idle_lanes")),
    "atomics-contention": Pick("global_atomic_inst", "global atomic instructions executed"),
    "fp64": Pick("fp64_inst", "FP64 instructions executed"),
}
BY_CATEGORY: dict[Bottleneck, Pick | None] = {
    Bottleneck.DRAM: Pick("l2_global_sectors", "L2 sectors of global accesses"),
    Bottleneck.CACHE: Pick("l2_global_sectors", "L2 sectors of global accesses"),
    Bottleneck.TAIL: None,
    Bottleneck.LAUNCH: None,
    Bottleneck.MEASUREMENT: None,
    Bottleneck.OTHER: None,
}
LABELS = {"local_inst": "local loads and stores executed", "idle_lanes": "idle lanes of partly filled warps",
          "divergent_lanes": "lanes the branch splits off"}


def attach(findings: list[Finding], profile: KernelProfile) -> list[Finding]:
    """``findings`` with the lines that cause each (``Finding.locations``), where the profile has
    source counters for the finding's launch; the others unchanged."""
    if profile.sass.is_empty():
        return findings
    cache: dict[int, pl.DataFrame] = {}
    out = []
    for f in findings:
        pick = pick_for(f)
        if pick is None or f.launch_id is None or not source.has_counters(profile, f.launch_id):
            out.append(f)
            continue
        if f.launch_id not in cache:
            cache[f.launch_id] = _instructions(profile, f.launch_id)
        found = locations(cache[f.launch_id], pick, profile)
        out.append(replace(f, locations=found) if found else f)
    return out


def pick_for(f: Finding) -> Pick | None:
    """The counter that locates finding ``f``, or None for findings about no line."""
    if f.rule_id.startswith("not-checked:"):
        return None
    if f.rule_id in BY_RULE:
        return BY_RULE[f.rule_id]
    if f.rule_id == "warp-stalls" and f.evidence:
        reason = STALL_REASONS.get(f.evidence[0].metric, f.evidence[0].metric.removeprefix("stall_"))
        return Pick(f"{reason}_samples", f"warp-state samples stalled on {reason.replace('_', ' ')}", fallbacks=("samples",))
    return BY_CATEGORY.get(f.category, SAMPLES)


def _instructions(profile: KernelProfile, launch_id: int) -> pl.DataFrame:
    """The launch's instructions with their derived columns and one ``<reason>_samples`` column per reason."""
    rows = source.sass_rows(profile, launch_id)
    stalls = profile.stall_samples.filter(pl.col("launch_id") == launch_id)
    if not stalls.is_empty():
        wide = (stalls.with_columns((pl.col("reason") + "_samples").alias("reason"))
                .pivot(on="reason", index="pc_offset", values="samples", aggregate_function="sum"))
        rows = rows.join(wide, on="pc_offset", how="left")
    return rows


def counter_of(rows: pl.DataFrame, pick: Pick) -> tuple[str, str] | None:
    """(column, what it counts) that locates ``pick`` in ``rows``: its counter, else its fallback
    where the counter is zero or missing throughout; None where neither counts anything."""
    for counter in (pick.counter, *pick.fallbacks):
        if counter in rows.columns and (rows[counter].fill_null(0) > 0).any():
            return counter, (pick.label if counter == pick.counter else LABELS.get(counter, SAMPLES.label))
    return None


def line_values(profile: KernelProfile, launch_id: int, f: Finding) -> tuple[str, str, pl.DataFrame] | None:
    """(column, what it counts, per (file_id, line) its ``value`` and ``share_pct`` of the launch's
    total) for the counter that locates finding ``f``: how ``coach source`` ranks lines by a finding.
    None for a finding about no line, or where its counter counts nothing."""
    pick = pick_for(f)
    if pick is None:
        return None
    rows = _instructions(profile, launch_id)
    found = counter_of(rows, pick)
    if found is None:
        return None
    counter, label = found
    total = float(rows[counter].fill_null(0).sum())
    values = (rows.group_by("file_id", "line").agg(pl.col(counter).fill_null(0).sum().alias("value"))
              .with_columns((100 * pl.col("value") / total).alias("share_pct")))
    return counter, label, values


def locations(rows: pl.DataFrame, pick: Pick, profile: KernelProfile) -> tuple[Location, ...]:
    """The lines with the most of ``pick``'s counter (its fallback where that is zero throughout)."""
    found = counter_of(rows, pick)
    if found is None:
        return ()
    counter, label = found
    total = float(rows[counter].fill_null(0).sum())
    hits = rows.filter(pl.col(counter) > 0).with_columns(
        pl.when(pl.col("line").is_null()).then(pl.col("pc_offset")).otherwise(None).alias("pc_key"))
    per_line = (hits.group_by("file_id", "line", "pc_key")
                .agg(pl.col(counter).sum().alias("value"),
                     pl.col("opcode").drop_nulls().unique(maintain_order=True).alias("opcodes"),
                     pl.col("threads_after").min().alias("threads_after"), pl.col("avg_threads").max().alias("threads"),
                     pl.col("pc_offset").min().alias("first_pc"))
                .with_columns((100 * pl.col("value") / total).alias("share_pct"))
                .sort(["value", "first_pc"], descending=[True, False]))
    kept = pl.concat([per_line.head(1), per_line.slice(1).filter(pl.col("share_pct") >= MIN_SHARE_PCT)]).head(MAX_LINES)
    kept = (kept.join(profile.source_files.select("file_id", "path", "local_path"), on="file_id", how="left")
            .join(source.line_texts(profile), on=["file_id", "line"], how="left")
            .join(source.call_sites(profile, -1, rows), on=["file_id", "line"], how="left", nulls_equal=True)
            .with_columns(source.file_label(pl.coalesce("local_path", "path")).alias("file_name")))
    return tuple(_location(r, counter, label) for r in kept.iter_rows(named=True))


def _location(r: dict, counter: str, label: str) -> Location:
    if r["line"] is None:
        where = f"SASS +0x{r['pc_key']:x}"
    else:
        where = f"{r['file_name']}:{r['line']}"
    note = f"{r['share_pct']:.0f}% of the launch's {label}"
    if counter in ("divergent_branches", "divergent_lanes") and r["threads"] is not None and r["threads_after"] is not None:
        note += f"; {r['threads']:.1f} threads active at the branch, {r['threads_after']:.1f} after it"
    if r["line"] is not None and r["inlined_at"]:
        note += f"; inlined at {', '.join(r['inlined_at'][:2])}"
    return Location(where=where, file=r["path"], line=r["line"], text=r["text"], counter=counter,
                    value=float(r["value"]), share_pct=float(r["share_pct"]), opcodes=tuple(r["opcodes"]), note=note)
