"""Occupancy: too few resident warps to hide latency, and what limits them.

An SM holds as many blocks as its registers, shared memory, warp slots and block slots allow; the
smallest of the four ``launch__occupancy_limit_*`` values decides (Kernel Profiling Guide,
"Occupancy"). Occupancy matters for a latency-bound kernel, where warps wait and the scheduler needs
others to switch to; this rule sits in the latency subtree for that reason (CUDA C++ Best Practices
Guide: "higher occupancy does not always equate to higher performance").
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_metrics import WARP_SIZE
from coach.analyze.kernel_rules._common import (LAUNCH_LIMIT, OCCUPANCY_LIMIT, KernelContext, cannot_decide, ev, finding,
                                               fmt_time)

SPEC = RuleSpec(
    id="occupancy-limit",
    name="Occupancy limited by registers, shared memory or block size",
    category=Bottleneck.OCCUPANCY,
    table="launches",
    requires=("duration_ns", "theoretical_occupancy_pct", "blocks_limit_registers", "blocks_limit_shared_mem",
              "blocks_limit_warps", "blocks_limit_sm"),
    optional=("achieved_occupancy_pct", "waves_per_sm", "registers_per_thread", "block_size", "shared_mem_static_bytes",
              "shared_mem_dynamic_bytes", "device_registers_per_sm", "device_shared_mem_per_sm_bytes",
              "device_max_warps_per_sm"),
    doc="Theoretical occupancy and its limiter; achieved against theoretical.",
)

# Nsight Compute's TheoreticalOccupancy rule reports a theoretical occupancy below 80% of the maximum.
THEORETICAL_PCT = 80.0
# Achieved below 80% of theoretical: warps retire unevenly or blocks are too short to keep slots
# full (the same 80% mark, applied to the ratio; Nsight Compute's AchievedOccupancy rule reports
# any gap).
ACHIEVED_RATIO = 0.80
# Registers are allocated per warp in units of 256, i.e. 8 per thread (CUDA occupancy calculator,
# "register allocation unit size" for compute capability 5.0 and later).
REGISTER_GRANULE = 8
#: Where achieved occupancy is read from (the Occupancy section's "Achieved Occupancy").
ACHIEVED_METRIC = "sm__warps_active.avg.pct_of_peak_sustained_active"

_LIMITS = {
    "blocks_limit_registers": ("registers", "the registers each thread uses"),
    "blocks_limit_shared_mem": ("shared memory", "the shared memory each block uses"),
    "blocks_limit_warps": ("block size", "the warps in each block"),
    "blocks_limit_sm": ("blocks per SM", "the maximum blocks per SM (blocks too small)"),
}


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    theo = launch["theoretical_occupancy_pct"]
    if theo < THEORETICAL_PCT:
        return [_theoretical(launch, ctx, theo)]
    achieved = launch.get("achieved_occupancy_pct")
    if achieved is None:  # the limit is not the story; whether the warps fill it is not in the report
        return [cannot_decide(SPEC, launch, f"theoretical occupancy is {theo:.0f}% (at or above "
                              f"{THEORETICAL_PCT:.0f}%: no limit), but the report has no achieved occupancy to compare "
                              "with it", [ACHIEVED_METRIC])]
    if achieved < ACHIEVED_RATIO * theo:
        return [_achieved(launch, ctx, theo, achieved)]
    return []


def _limiters(launch: dict[str, Any]) -> list[str]:
    low = min(launch[c] for c in _LIMITS)
    return [c for c in _LIMITS if launch[c] == low]


def _theoretical(launch: dict[str, Any], ctx: KernelContext, theo: float) -> Finding:
    limiters = _limiters(launch)
    blocks = launch[limiters[0]]
    names = " and ".join(_LIMITS[c][0] for c in limiters)
    message = (f"Theoretical occupancy is {theo:.0f}%: {blocks:.0f} blocks fit per SM, limited by "
               + " and ".join(_LIMITS[c][1] for c in limiters) + ".")
    achieved = launch.get("achieved_occupancy_pct")
    if achieved is not None:
        message += f" Achieved occupancy is {achieved:.0f}%."
    hint = _next_block_hint(launch, limiters[0], blocks)
    if hint:
        message += " " + hint
    evidence = [ev("theoretical_occupancy_pct", theo, "%", f">= {THEORETICAL_PCT:.0f}%", THEORETICAL_PCT)]
    evidence += [ev(c, launch[c], "block/SM", "not the lowest limit") for c in limiters]
    if launch.get("registers_per_thread") is not None:
        evidence.append(ev("registers_per_thread", launch["registers_per_thread"], "register/thread"))
    if achieved is not None:
        evidence.append(ev("achieved_occupancy_pct", achieved, "%", "close to theoretical"))
    saving = ctx.cap(launch["duration_ns"] * (1 - theo / 100), launch)
    steps = {
        "blocks_limit_registers": "Cut registers per thread: __launch_bounds__(threads, minBlocks) or -maxrregcount, "
                                  "fewer live values (recompute instead of keeping), smaller unroll factors; "
                                  "check -Xptxas -v that no spills appear.",
        "blocks_limit_shared_mem": "Use less shared memory per block (smaller tiles, fewer pipeline stages, reuse "
                                   "buffers) or raise the carve-out with cudaFuncAttributePreferredSharedMemoryCarveout.",
        "blocks_limit_warps": "Pick a block size whose warps divide the SM's warp slots (e.g. 128, 256 or 512 "
                              "threads rather than 768).",
        "blocks_limit_sm": "Use bigger blocks (at least 128 threads): the SM's block slots run out before its warp slots.",
    }
    return finding(
        SPEC, launch, title=f"Occupancy limited by {names}: {theo:.0f}% theoretical",
        message=message, next_step=steps[limiters[0]], evidence=evidence, saving_ns=saving,
        gain_model=(f"time x (1 - {theo:.0f}%), capped at the gap to the roof: a latency-bound kernel speeds up at "
                    f"most in proportion to the warps added (Nsight Compute's model); saves {fmt_time(saving)}"),
        ncu=ctx.ncu("TheoreticalOccupancy", "AchievedOccupancy"),
        details={"limiters": [_LIMITS[c][0] for c in limiters], "blocks_per_sm": blocks, LAUNCH_LIMIT: OCCUPANCY_LIMIT},
    )


def _next_block_hint(launch: dict[str, Any], limiter: str, blocks: float) -> str:
    """What it takes to fit one more block per SM, where the report has the numbers."""
    block = launch.get("block_size")
    if not block:
        return ""
    if limiter == "blocks_limit_registers" and launch.get("device_registers_per_sm"):
        allowed = launch["device_registers_per_sm"] / ((blocks + 1) * block)
        allowed = int(allowed // REGISTER_GRANULE * REGISTER_GRANULE)
        regs = launch.get("registers_per_thread")
        now = f" (now {regs:.0f})" if regs is not None else ""
        return f"A {blocks + 1:.0f}th block of {block:.0f} threads fits at {allowed} registers per thread or fewer{now}."
    if limiter == "blocks_limit_shared_mem" and launch.get("device_shared_mem_per_sm_bytes"):
        allowed = launch["device_shared_mem_per_sm_bytes"] / (blocks + 1)
        return f"{blocks + 1:.0f} blocks fit if each uses at most about {allowed / 1024:.0f} KB of shared memory."
    if limiter == "blocks_limit_sm" and launch.get("device_max_warps_per_sm"):
        return (f"Blocks of {block:.0f} threads fill {blocks * block / WARP_SIZE:.0f} of the SM's "
                f"{launch['device_max_warps_per_sm']:.0f} warp slots.")
    return ""


def _achieved(launch: dict[str, Any], ctx: KernelContext, theo: float, achieved: float) -> Finding:
    saving = ctx.cap(launch["duration_ns"] * (1 - achieved / theo), launch)
    waves = launch.get("waves_per_sm")
    message = f"The SMs hold {achieved:.0f}% of their warp slots on average against {theo:.0f}% possible: "
    evidence = [ev("achieved_occupancy_pct", achieved, "%", f"close to {theo:.0f}%", ACHIEVED_RATIO * theo),
                ev("theoretical_occupancy_pct", theo, "%")]
    if waves is not None and waves < 1:
        # a grid of less than one wave gives each SM fewer blocks than it can hold: the slots cannot fill
        # however evenly the blocks run (the strided row sums of tests/data/wild_public: 64 blocks, 0.27
        # waves, 27.9% achieved of 100%)
        message += (f"the grid is {waves:.2f} of a wave, so each SM gets fewer blocks than it can hold and its warp "
                    "slots cannot fill, however evenly the blocks run.")
        next_step = ("Launch more threads than one wave holds: split each thread's work over several threads (a warp "
                     "per item rather than a thread, say), so every SM's warp slots fill.")
        evidence.append(ev("waves_per_sm", waves, "wave", ">= 1 (a full wave at least)", 1.0))
    else:
        message += ("warps or blocks finish unevenly, or blocks are so short that slots sit empty between one block "
                    "retiring and the next starting.")
        if waves is None:
            message += " (Whether the grid fills a wave is not in the report: launch__waves_per_multiprocessor.)"
        next_step = ("Give each thread more work (a grid-stride loop over several elements) so blocks live longer "
                     "than their launch cost; balance the work across warps and blocks.")
    return finding(
        SPEC, launch, title=f"Achieved occupancy {achieved:.0f}% of a theoretical {theo:.0f}%",
        message=message,
        next_step=next_step,
        evidence=evidence,
        saving_ns=saving,
        gain_model=(f"time x (1 - achieved/theoretical), capped at the gap to the roof; saves {fmt_time(saving)}"),
        ncu=ctx.ncu("AchievedOccupancy"),
        details={"achieved_pct": achieved, "theoretical_pct": theo},
    )
