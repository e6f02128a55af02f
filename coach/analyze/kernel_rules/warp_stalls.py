"""Warp-stall reasons: what the warps were waiting on between two issued instructions.

Each stall metric counts the warps in that state per issued instruction; their sum is the average
warp cycles between issues (Kernel Profiling Guide, "Warp Scheduler States"). The dominant reason
says what the latency is made of; it is a symptom, so this rule names it and points at the cause.

The details page of ``--set full`` (text or CSV) prints the cycles between issues but not the stall
reasons; Nsight Compute's CPIStall warnings there name the dominant reason and its share ("57.9 cycles
being stalled waiting for a scoreboard dependency on a L1TEX ... about 82.9% of the total average of
69.8 cycles" on the H200 coalesced copy of tests/data/ncu_pages_2025). Where the report has none of
the stall columns, the finding rests on those numbers, held to this rule's threshold (``_ncu_fallback``).
"""

from __future__ import annotations

import re
from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules import _ncu_fallback as fallback
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_time

SPEC = RuleSpec(
    id="warp-stalls",
    name="Warp-stall reasons",
    category=Bottleneck.LATENCY,
    table="launches",
    requires=("duration_ns", "warp_cycles_per_issued_inst", "stall_long_scoreboard"),
    optional=("issue_active_pct", "stall_barrier", "stall_mio_throttle", "stall_lg_throttle",
              "stall_math_pipe_throttle", "stall_short_scoreboard", "stall_wait", "stall_tex_throttle",
              "stall_membar", "stall_branch_resolving", "stall_drain", "stall_no_instruction", "stall_gmma"),
    doc="The stall reason with the largest share of the cycles between issues, with its meaning.",
)

# Nsight Compute's CPIStall rule reports a stall reason that makes up more than 30% of the cycles
# between two issued instructions, when the schedulers issue in fewer than 80% of cycles.
SHARE = 0.30
ISSUE_ACTIVE_PCT = 80.0

#: stall column -> (class, what the warp waits on, what to do)
STALLS: dict[str, tuple[Bottleneck, str, str]] = {
    "stall_long_scoreboard": (
        Bottleneck.LATENCY, "data from global or local memory (an L1TEX scoreboard dependency)",
        "Find the load feeding the stalled instruction. Keep more bytes in flight (wide loads, several "
        "independent loads per thread, prefetch into shared memory with cp.async or TMA) and make the access "
        "coalesced so each request costs fewer sectors."),
    "stall_barrier": (
        Bottleneck.LATENCY, "sibling warps at a __syncthreads() barrier",
        "Even out the work done before the barrier, use smaller blocks so fewer warps wait on the slowest, or "
        "split producer and consumer phases with asynchronous barriers."),
    "stall_mio_throttle": (
        Bottleneck.SHARED_MEMORY, "room in the MIO queue (shared memory, special math, dynamic branches)",
        "Issue fewer, wider shared-memory accesses, remove bank conflicts, and move special-function math "
        "off the hot loop."),
    "stall_short_scoreboard": (
        Bottleneck.SHARED_MEMORY, "a shared-memory or special-function result (an MIO scoreboard dependency)",
        "Remove bank conflicts, keep reused values in registers, and interleave independent work between a "
        "shared-memory load and its use."),
    "stall_lg_throttle": (
        Bottleneck.MEMORY_ACCESS, "room in the local/global memory instruction queue",
        "Issue fewer, wider memory instructions (16-byte vector loads) and remove local-memory spills."),
    "stall_math_pipe_throttle": (
        Bottleneck.FMA, "a busy math pipe (the kernel is compute-bound on one pipe)",
        "Move the work to a faster pipe (tensor cores for matrix products) or issue fewer instructions; "
        "balance the mix across pipes."),
    "stall_wait": (
        Bottleneck.LATENCY, "a fixed-latency dependency between back-to-back instructions",
        "Expose instruction-level parallelism: unroll and interleave independent chains."),
    "stall_tex_throttle": (
        Bottleneck.CACHE, "room in the texture/L1 queue", "Issue fewer texture or surface fetches; use global loads."),
    "stall_membar": (
        Bottleneck.OTHER, "a memory fence", "Remove fences (__threadfence) that the algorithm does not need."),
    "stall_branch_resolving": (
        Bottleneck.DIVERGENCE, "a branch target to be resolved", "Use fewer, more uniform branches."),
    "stall_drain": (
        Bottleneck.DRAM, "outstanding stores to drain after the warp exits",
        "Coalesce the final stores; write less at the end of the kernel."),
    "stall_no_instruction": (
        Bottleneck.LAUNCH, "instructions to be fetched (an instruction-cache miss or a very short kernel)",
        "Give each warp more work; avoid huge unrolled code that overflows the instruction cache."),
    "stall_gmma": (
        Bottleneck.TENSOR, "a warpgroup matrix-multiply (wgmma) to finish",
        "Overlap wgmma with the next tile's loads (deeper pipeline) so the tensor cores never wait."),
}


#: CPIStall's wording of each stall reason (Nsight Compute 2025.3.1 on the H200, and the rule's 2021
#: source: coach/ingest/ncu_text_rules.csv) -> the stall column it is about
NCU_STALL_WORDS = {
    "stall_long_scoreboard": r"waiting for a scoreboard dependency on a L1TEX",
    "stall_short_scoreboard": r"waiting for a scoreboard dependency on an MIO",
    "stall_barrier": r"waiting for sibling warps at a CTA barrier",
    "stall_mio_throttle": r"waiting for the MIO",
    "stall_lg_throttle": r"waiting for the (?:L1 instruction queue for local and global \(LG\)|local/global instruction queue)",
    "stall_math_pipe_throttle": r"waiting for a math execution pipeline",
    "stall_drain": r"(?:after EXIT waiting|waiting after an EXIT instruction)",
}
#: the cycles of one reason and of all, as CPIStall's message gives them
_CPI_SHARE = (r"(?P<first>each warp of this (?:kernel|workload) spends (?P<stall>[\d.,]+) cycles being stalled {words}"
              r"[^.]*)\..*?(?P<last>This stall type represents about [\d.]+% of the total average of (?P<all>[\d.,]+) "
              r"cycles between issuing two instructions)")
NCU_CLAIMS = tuple(
    fallback.Claim("CPIStall", re.compile(_CPI_SHARE.format(words=words), re.S),
                   lambda m: (fallback.count(m["stall"]), fallback.count(m["all"])),
                   f"of the cycles between two issued instructions go waiting for {STALLS[column][1]}",
                   measure=f"{column} share", quote=lambda m: f"{m['first']} ... {m['last']}")
    for column, words in NCU_STALL_WORDS.items())
_CLAIM_STALL = dict(zip(NCU_CLAIMS, NCU_STALL_WORDS))
#: Nsight Compute's results back a finding only where the report has none of this rule's own counts.
NCU_ONLY_WITHOUT = tuple(STALLS)


def from_ncu(launch: dict[str, Any], ctx: KernelContext, notes: list[Finding]) -> Finding | None:
    """The finding from Nsight Compute's CPIStall warnings where the report lacks the stall reasons
    (``notes``): the reason with the largest share past this rule's threshold."""
    issue = launch.get("issue_active_pct")
    if issue is not None and issue >= ISSUE_ACTIVE_PCT:
        return None
    found = sorted(fallback.backing(ctx, NCU_CLAIMS, lambda share: share > SHARE), key=lambda b: -b.share)
    if not found:
        return None
    column = _CLAIM_STALL[found[0].claim]
    category, _, step = STALLS[column]
    name = column.removeprefix("stall_").replace("_", " ")
    return fallback.backed_finding(
        SPEC, launch, found, notes, own="stall reasons", category=category,
        title=f"Warps mostly stalled on {name} ({100 * found[0].share:.0f}% of cycles)", next_step=step,
        weight=1.0, weight_name="all of it", threshold_share=SHARE,
        healthy=f"well under {SHARE:.0%}", cap=lambda saving: ctx.cap(saving, launch))


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    cycles = launch["warp_cycles_per_issued_inst"]
    issue = launch.get("issue_active_pct")
    if not cycles or (issue is not None and issue >= ISSUE_ACTIVE_PCT):
        return []
    shares = {c: launch[c] / cycles for c in STALLS if launch.get(c) is not None}
    top = max(shares, key=shares.__getitem__, default=None)
    if top is None or shares[top] <= SHARE:
        return []
    category, waits_on, step = STALLS[top]
    name = top.removeprefix("stall_").replace("_", " ")
    stall = launch[top]
    message = (f"Warps spend {stall:.1f} of the {cycles:.1f} cycles between two issued instructions "
               f"({100 * shares[top]:.0f}%) waiting for {waits_on}.")
    if issue is not None:
        message += f" The schedulers issue an instruction in {issue:.0f}% of cycles."
    others = [f"{c.removeprefix('stall_').replace('_', ' ')} {100 * s:.0f}%" for c, s in
              sorted(shares.items(), key=lambda kv: -kv[1]) if c != top and s > SHARE]
    if others:
        message += " Also above the mark: " + ", ".join(others) + "."
    saving = ctx.cap(launch["duration_ns"] * shares[top], launch)
    evidence = [ev(top, stall, "cycle/inst", f"well under {SHARE:.0%} of warp_cycles_per_issued_inst", SHARE * cycles),
                ev("warp_cycles_per_issued_inst", cycles, "cycle/inst")]
    if issue is not None:
        evidence.append(ev("issue_active_pct", issue, "%", f">= {ISSUE_ACTIVE_PCT:.0f}%", ISSUE_ACTIVE_PCT))
    return [finding(
        SPEC, launch, category=category, title=f"Warps mostly stalled on {name} ({100 * shares[top]:.0f}% of cycles)",
        message=message, next_step=step, evidence=evidence, saving_ns=saving,
        gain_model=(f"time x the stall's share of cycles between issues ({100 * shares[top]:.0f}%), capped at the gap "
                    f"to the roof (Nsight Compute's model); saves {fmt_time(saving)}"),
        ncu=ctx.ncu("CPIStall"),
        details={"stall": name, "share": shares[top], "shares": shares},
    )]
