"""Tail effect / wave quantisation: a last, partial wave of blocks that leaves most SMs idle.

The GPU runs a grid in waves of (SMs x blocks per SM) blocks (Kernel Profiling Guide, "Launch
Statistics": waves per SM). With blocks of equal length the last, partial wave takes as long as a
full one, so a grid of 1.05 waves takes nearly as long as 2. Reshaping the grid keeps the bytes and
instructions, so the saving is capped at the root's gap to the roof: a bandwidth-bound kernel's last
wave gets the bandwidth the idle SMs leave, and the kernel cannot beat its DRAM floor by any grid.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import LAUNCH_LIMIT, PARTIAL_WAVE, KernelContext, ev, finding, fmt_time
from coach.analyze.quantities import Waves, fmt_share, fmt_waves

SPEC = RuleSpec(
    id="tail-effect",
    name="Tail effect / wave quantisation",
    category=Bottleneck.TAIL,
    table="launches",
    requires=("duration_ns", "waves_per_sm"),
    optional=("grid_size", "sm_count"),
    doc="Waves per SM just above an integer, with few full waves.",
)

# Nsight Compute's LaunchConfiguration rule reports a tail effect from an estimated 20% speed-up up.
TAIL_SAVING_FRACTION = 0.20


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    waves, idle = launch["waves_per_sm"], launch.get("tail_idle_fraction")
    if waves < 1 or idle is None or idle < TAIL_SAVING_FRACTION:
        return []
    w = Waves(waves, launch.get("grid_size"))
    full, partial = w.full, w.last_fill
    saving = ctx.cap(launch["duration_ns"] * idle, launch)
    message = f"The grid runs as {w.text()}."
    if w.per_wave:
        message += f" One wave is {w.per_wave:.0f} blocks; the grid has {w.grid:.0f}."
    return [finding(
        SPEC, launch, title=f"Tail effect: {fmt_waves(waves)} waves, the last {fmt_share(partial)} full",
        message=message,
        next_step=("Size the grid to a whole number of waves (a multiple of SMs x blocks per SM), split the work "
                   "into more, smaller blocks so the tail is short, or use a persistent grid-stride kernel with "
                   "exactly one wave."),
        evidence=[ev("waves_per_sm", waves, "wave", "a whole number, or many waves"),
                  ev("tail_idle_fraction", idle, "", "near 0", TAIL_SAVING_FRACTION)],
        saving_ns=saving,
        gain_model=(f"time x (ceil(waves) - waves)/ceil(waves) = {fmt_share(idle)}: the partial wave's idle share with "
                    f"equal-length blocks, capped at the gap to the roof; saves {fmt_time(saving)}"),
        ncu=ctx.ncu("LaunchConfiguration"),
        details={"waves": waves, "full_waves": full, "tail_fraction": partial, LAUNCH_LIMIT: PARTIAL_WAVE},
    )]
