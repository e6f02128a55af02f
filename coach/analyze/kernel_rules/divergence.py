"""Branch divergence: warps executing with some of their 32 threads masked off.

A warp issues one instruction for all its threads; when a branch splits them, each path is run
with the other path's threads idle (CUDA C++ Programming Guide, "SIMT Architecture"). The report's
average active (and predicated-on) threads per executed instruction measures the waste directly.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_metrics import WARP_SIZE
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_count, fmt_time

SPEC = RuleSpec(
    id="warp-divergence",
    name="Branch divergence",
    category=Bottleneck.DIVERGENCE,
    table="launches",
    requires=("duration_ns", "thread_inst_per_warp_inst"),
    optional=("thread_inst_pred_on_per_warp_inst", "branch_divergent_targets", "block_size", "sm_throughput_pct"),
    doc="Active threads per warp instruction against 32; divergent branch targets.",
)

# Nsight Compute's ThreadDivergence rule fires below 24 active threads per instruction (of 32).
ACTIVE_THREADS = 24.0


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    active = launch["thread_inst_per_warp_inst"]
    pred_on = launch.get("thread_inst_pred_on_per_warp_inst")
    used = min(active, pred_on) if pred_on is not None else active
    if used >= ACTIVE_THREADS:
        return []
    weight = ctx.compute_weight(launch)
    saving = launch["duration_ns"] * weight * (1 - used / WARP_SIZE)
    message = f"Warps execute with {active:.1f} of {WARP_SIZE} threads active on average"
    message += f" ({pred_on:.1f} with their predicate on)." if pred_on is not None else "."
    targets = launch.get("branch_divergent_targets")
    if targets:
        message += f" {fmt_count(targets)} branch targets were divergent."
    block = launch.get("block_size")
    if block and block % WARP_SIZE:
        message += f" The block size ({block:.0f}) is not a multiple of {WARP_SIZE}: its last warp is always partial."
    evidence = [ev("thread_inst_per_warp_inst", active, "thread/inst", f"{WARP_SIZE}", ACTIVE_THREADS)]
    if pred_on is not None:
        evidence.append(ev("thread_inst_pred_on_per_warp_inst", pred_on, "thread/inst", f"{WARP_SIZE}", ACTIVE_THREADS))
    if targets is not None:
        evidence.append(ev("branch_divergent_targets", targets, "branch", "0"))
    return [finding(
        SPEC, launch, title=f"Branch divergence: {used:.1f} of {WARP_SIZE} threads active per instruction",
        message=message,
        next_step=("Find the data-dependent branch (Source page: divergent branches per line); make the decision "
                   "uniform per warp by sorting or binning the work by branch outcome, replace short branches with "
                   "arithmetic selects, or give each warp, not each thread, one case."),
        evidence=evidence, saving_ns=saving,
        gain_model=(f"time x {weight:.2f} (compute share) x (1 - {used:.1f}/{WARP_SIZE}): every issued instruction doing "
                    f"full-warp work (Nsight Compute's model); saves {fmt_time(saving)}"),
        ncu=ctx.ncu("ThreadDivergence"),
        details={"active_threads": active, "pred_on_threads": pred_on},
    )]
