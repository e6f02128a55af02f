"""Shared-memory bank conflicts: one warp's shared access split into several wavefronts.

Shared memory has 32 banks, 4 bytes wide; a warp's request is served in one pass (wavefront) unless
several threads address different words in the same bank, which serialises them (CUDA C++
Programming Guide, "Shared Memory"). The report counts the extra wavefronts as bank conflicts.

Where the report lacks those counts but has Nsight Compute's own rule results (the ``--set full``
details page, as text or CSV), its SharedMemoryConflicts warning gives the same share ("65315200 bank
conflicts, which represent 96.89% of the overall 67412352 wavefronts" on the H200 transpose of
tests/data/ncu_pages_2025; one result for loads, one for stores): the finding rests on those numbers,
held to this rule's threshold (``_ncu_fallback``). Where the report has any of the counts, they decide.

The counts decide without the kernel's duration: a ``--metrics`` run of the bank-conflict and wavefront
counters alone (the transposes of tests/data/wild_public/cts_hw8_*, Nsight Compute 2022) has none. The
finding then stands unranked by time and says the gain is not estimated.

The hardware counters count every extra wavefront, whatever made it; the SASS-patched bytes per
wavefront (``smsp__sass_average_data_bytes_per_wavefront_mem_shared.pct``) come from the instructions'
own addresses. Where a report has both and the latter says the wavefronts carry all they can (under
10% wasted), the access pattern has no bank conflict to fix and the rule stays silent: on the padded
transpose of tests/data/wild_public/cts_hw8_task3.profile 241,690 counted conflicts (10% of the
wavefronts) beside 100%, and a kernel time equal to the conflicting version's. A low value proves
nothing alone (1-byte accesses fill a quarter of a wavefront without any conflict).
"""

from __future__ import annotations

import re
from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules import _ncu_fallback as fallback
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_count, fmt_time

SPEC = RuleSpec(
    id="shared-bank-conflicts",
    name="Shared-memory bank conflicts",
    category=Bottleneck.SHARED_MEMORY,
    table="launches",
    requires=("shared_bank_conflicts", "shared_load_wavefronts", "shared_store_wavefronts"),
    optional=("duration_ns", "shared_bytes_per_wavefront_pct", "shared_load_requests", "shared_store_requests", "l1_throughput_pct", "stall_mio_throttle",
              "stall_short_scoreboard"),
    doc="Bank conflicts as a share of shared-memory wavefronts; n-way conflict from wavefronts per request.",
)

# Nsight Compute's SharedMemoryConflicts rule reports conflicts from 10% of the shared wavefronts on.
CONFLICT_FRACTION = 0.10


#: Nsight Compute's rule that states bank conflicts of shared loads and stores (one result for each),
#: as this rule counts them. Not UncoalescedSharedAccess: its excess wavefronts count every shared
#: instruction, atomics too (scenario-08/fixed's shared-atomic histogram: "50% of the total" where its
#: loads and stores have 7 conflicts).
NCU_CLAIMS = (
    fallback.Claim("SharedMemoryConflicts", re.compile(
        r"This results in ([\d,]+) bank conflicts,\s+which represent [\d.]+% of the overall ([\d,]+) wavefronts for "
        r"shared (?:loads|stores)"), lambda m: (fallback.count(m[1]), fallback.count(m[2])),
        "of the shared wavefronts are bank-conflict replays"),
)
NCU_NEIGHBOURS = (fallback.Neighbour(
    "UncoalescedSharedAccess", re.compile(r"uncoalesced shared accesses"),
    "its excess wavefronts count every shared instruction, atomics too, not the bank conflicts of loads and "
    "stores alone"),)
#: Nsight Compute's results back a finding only where the report has none of this rule's own counts.
NCU_ONLY_WITHOUT = ("shared_bank_conflicts", "shared_load_wavefronts", "shared_store_wavefronts")


def from_ncu(launch: dict[str, Any], ctx: KernelContext, notes: list[Finding]) -> Finding | None:
    """The finding from Nsight Compute's own rule results where the report lacks the bank-conflict
    counts (``notes``); None where no warning of the report states the problem."""
    found = fallback.backing(ctx, NCU_CLAIMS, lambda share: share >= CONFLICT_FRACTION)
    if not found:
        return None
    l1 = launch.get("l1_throughput_pct")
    return fallback.backed_finding(
        SPEC, launch, found, notes, own="bank-conflict counts",
        title=f"Shared-memory bank conflicts: {100 * found[0].share:.0f}% of wavefronts replayed",
        next_step=("Pad the shared array (e.g. tile[32][33] for a 32x32 float tile) or swizzle the index (XOR "
                   "the column with the row) so a warp's 32 words fall in 32 different banks."),
        weight=1.0 if l1 is None else min(1.0, l1 / 100), weight_name="L1/shared throughput share",
        threshold_share=CONFLICT_FRACTION, healthy="0 (one wavefront per request for 4-byte accesses)")


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    frac = launch.get("bank_conflict_fraction")
    if frac is None or frac < CONFLICT_FRACTION:
        return []
    sass_pct = launch.get("shared_bytes_per_wavefront_pct")
    if sass_pct is not None and 1 - sass_pct / 100 < CONFLICT_FRACTION:
        return []  # the addresses conflict-free: the counted replays are not the access pattern's
    conflicts, wavefronts = launch["shared_bank_conflicts"], launch["shared_wavefronts"]
    per_request = launch.get("wavefronts_per_shared_request")
    l1 = launch.get("l1_throughput_pct")
    weight = 1.0 if l1 is None else min(1.0, l1 / 100)
    model = f"x {weight:.2f} (L1/shared throughput share) x conflicts/wavefronts ({100 * frac:.0f}%), Nsight Compute's model"
    if launch.get("duration_ns") is None:
        saving, gain_model = None, f"not estimated: the report has no duration (gpu__time_duration.sum); time {model}"
    else:
        saving = launch["duration_ns"] * weight * frac
        gain_model = f"time {model}; saves {fmt_time(saving)}"
    message = (f"{fmt_count(conflicts)} of {fmt_count(wavefronts)} shared-memory wavefronts ({100 * frac:.0f}%) are "
               "bank-conflict replays")
    message += f": on average a {per_request:.1f}-way access per request." if per_request else "."
    evidence = [ev("bank_conflict_fraction", frac, "", "0 (one wavefront per request for 4-byte accesses)", CONFLICT_FRACTION)]
    if sass_pct is not None:
        evidence.append(ev("shared_bytes_per_wavefront_pct", sass_pct, "%", "100 (every wavefront full)"))
    if per_request is not None:
        evidence.append(ev("wavefronts_per_shared_request", per_request, "wavefront/request", "1 for 4-byte accesses"))
    for stall in ("stall_mio_throttle", "stall_short_scoreboard"):
        if launch.get(stall) is not None:
            evidence.append(ev(stall, launch[stall], "cycle/inst", "small against warp_cycles_per_issued_inst"))
    return [finding(
        SPEC, launch, title=f"Shared-memory bank conflicts: {100 * frac:.0f}% of wavefronts replayed",
        message=message,
        next_step=("Pad the shared array (e.g. tile[32][33] for a 32x32 float tile) or swizzle the index (XOR "
                   "the column with the row) so a warp's 32 words fall in 32 different banks."),
        evidence=evidence, saving_ns=saving,
        gain_model=gain_model,
        ncu=ctx.ncu("SharedMemoryConflicts"),
        details={"conflict_fraction": frac, "wavefronts_per_request": per_request},
    )]
