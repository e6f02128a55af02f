"""Shared-memory races: racecheck's "Race reported between Write access at ... and Read access at ...".

Threads of a block talk through shared memory: one writes a slot, another reads it. Unless a
barrier orders the two, the read can run first and get an older value (read-after-write), or the
write can land before a slower thread has read the old one (write-after-read, typically the next
iteration of a loop over tiles overwriting what a slow warp still reads). racecheck follows every
shared-memory access and reports each pair of source locations that touch the same bytes from
different threads with no barrier between them; the count in brackets is of byte-level hazards.
Its analysis report (the default) gives one record per race with every location in it; its hazard
report (``--racecheck-report hazard``) one record per byte and pair of threads.

Severity: "Error" races are between threads of different warps, which only ``__syncthreads()``
orders. "Warning" races are between threads of one warp ("Warp Level Programming"): code that
assumed the warp runs in lock-step, which has not been guaranteed since Volta; ``__syncwarp()``
orders them. Write-after-write alone means two threads store to one slot: the survivor depends on
scheduling; one writer per slot is the fix, not a barrier.

racecheck sees shared memory only: races through global memory are not reported.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import BugClass, Finding, RuleSpec
from coach.analyze.sanitizer_rules._common import RANK_DEVICE, ReportContext, ev, finding, plural, where

SPEC = RuleSpec(
    id="shared-memory-race",
    name="Shared-memory race",
    category=BugClass.SHARED_RACE,
    table="records",
    requires=("kind",),
    optional=("hazard_count", "severity"),
    doc="racecheck's races: the write and read locations of each, with their hazard counts.",
)
KINDS = ("shared-race", "shared-hazard")


def apply(ctx: ReportContext) -> list[Finding]:
    races = ctx.records.filter(pl.col("kind").is_in(list(KINDS)))
    if not races.height:
        return []
    locs = ctx.report.locations.filter(pl.col("role").is_in(["at", "race", "hazard"])
                                       & pl.col("record_id").is_in(races["record_id"].implode()))
    # One row per race: its distinct (access, file, line) locations, as a key to merge identical races.
    per_record = (locs.lazy()
                  .with_columns(pl.concat_str(pl.col("access").fill_null("?"), pl.lit("@"),
                                              pl.col("file").fill_null("?"), pl.lit(":"),
                                              pl.col("line").cast(pl.Utf8).fill_null("?")).alias("site"))
                  .group_by("record_id")
                  .agg(pl.col("site").unique().sort().str.join(" ").alias("sites"),
                       pl.col("hazards").sum().alias("hazards_in_lines"))
                  .collect())
    merged = (races.lazy()
              .join(per_record.lazy(), on="record_id", how="left")
              .with_columns(pl.coalesce("hazard_count", "hazards_in_lines").alias("hazards"))
              .sort("record_id")
              .group_by(["kernel", "kind", "severity", "sites"], maintain_order=True)
              .agg(pl.len().alias("count"), pl.col("record_id").alias("record_ids"),
                   pl.col("record_id").min().alias("first_record"), pl.col("hazards").sum(),
                   pl.col("hazard_type").drop_nulls().unique().sort().alias("hazard_types"))
              .collect())
    out = []
    for g in merged.to_dicts():
        sites = locs.filter(pl.col("record_id").is_in(g["record_ids"])).unique(["access", "file", "line"])
        out.append(_one(g, sites.sort("line", nulls_last=True).to_dicts(), ctx))
    return out


def _lines(sites: list[dict[str, Any]], access: str) -> list[dict[str, Any]]:
    return [s for s in sites if s.get("access") == access]


def _one(g: dict[str, Any], sites: list[dict[str, Any]], ctx: ReportContext) -> Finding:
    kernel = g.get("kernel") or "an unnamed kernel"
    writes, reads = _lines(sites, "write"), _lines(sites, "read")
    w_text = ", ".join(where(s["file"], s["line"]) for s in writes) or "?"
    r_text = ", ".join(where(s["file"], s["line"]) for s in reads)
    warp_level = g["severity"] == "warning"
    hazards = g.get("hazards")
    count_text = plural(hazards, "byte-level hazard") if hazards else plural(g["count"], "hazard report")
    barrier = "__syncwarp()" if warp_level else "__syncthreads()"
    between = "threads of one warp" if warp_level else "threads of different warps"
    if reads:
        title = f"Shared-memory race in {kernel}: written at {w_text}, read at {r_text} with no barrier between"
        message = (f"racecheck reports {count_text} between the shared-memory write at {w_text} and the read at "
                   f"{r_text} ({between}). A thread reads a slot another thread writes, and nothing orders the two: "
                   "it can read before the write lands (and get whatever the slot held, an older tile or another "
                   "block's data), or, in a loop, the next write can overwrite a value a slower warp has not read. "
                   "The result then depends on how the warps happen to be scheduled: wrong in some runs, right in "
                   "others.")
        next_step = (f"Put {barrier} after the writes at {w_text} and before the reads at {r_text}, outside any "
                     "branch so every thread of the block reaches it. If the read and the next write are in a loop "
                     f"(a loop over tiles), a second {barrier} at the end of the loop body keeps the next tile's "
                     "writes from overtaking this tile's reads. Rerun racecheck until it prints 0 hazards.")
    else:
        title = f"Shared-memory write-write race in {kernel} at {w_text}"
        message = (f"racecheck reports {count_text} where threads write the same shared-memory bytes at {w_text} "
                   f"({between}) with nothing ordering the writes: which value survives depends on scheduling.")
        next_step = ("Give each thread its own slot, or let one thread write (the others skip the store); a barrier "
                     "does not decide which of two writes wins.")
    if warp_level:
        message += (" The tool rates it a warning: warp-level code that assumes the threads of a warp run in "
                    "lock-step, which has not been guaranteed since Volta.")
    evidence = [ev("hazards", hazards, "hazard", "0: every write and read of a slot ordered by a barrier", 1)]
    evidence += [ev(f"{s['access']}_line", s["line"], "", where(s["file"], s["line"])) for s in sites if s.get("line")]
    lines = sorted({s["line"] for s in sites if s.get("line") is not None})
    return finding(SPEC, title=title, message=message, next_step=next_step, evidence=evidence, scope=g.get("kernel"),
                   rank=RANK_DEVICE + (0.5 if warp_level else 0), first_record=g["first_record"],
                   details={"file": (writes or reads or [{}])[0].get("file"), "line": (writes or reads or [{}])[0].get("line"),
                            "lines": lines, "write_lines": [s["line"] for s in writes],
                            "read_lines": [s["line"] for s in reads], "kernel": kernel, "hazards": hazards,
                            "records": g["record_ids"], "tool": "racecheck", "severity": g["severity"],
                            "hazard_types": g.get("hazard_types")})
