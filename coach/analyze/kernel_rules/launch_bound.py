"""Launch-bound: a grid too small to fill the GPU, or a kernel shorter than its own launch cost.

A grid with fewer blocks than SMs leaves SMs idle for the whole kernel (Nsight Compute's
LaunchConfiguration "Small Grid" rule). A kernel of a few microseconds is comparable to the cost of
launching it, so a stream of such kernels is bound by launches, not by the GPU; that cost lies
outside the kernel and shows on a timeline (Nsight Systems), not in this profile.

A grid smaller than the GPU is a limit of the launch configuration alone, as a partial last wave is:
where the SMs it leaves idle keep the kernel from its roof, it is ranked with the root's gap, ahead of
the root (kernel_rules/__init__.py). On a fused RMSNorm of 3 blocks on a 40-SM T4
(tests/data/wild_public/rmsnorm_fused_t4_ncu.log) Nsight Compute's own rules say the same: "This kernel
grid is too small to fill the available resources".

So is a kernel shorter than ``SHORT_KERNEL_NS`` with no unit near its roof (the latency regime): its
throughputs are low because it is short, and the root's gap to the roof is then an upper bound, not
something a change inside the kernel is known to win (speed_of_light); what the reader can change is
how many such launches there are. PyTorch's 3-7 us element-wise kernels under ncu without an SM count
(tests/data/wild_public/ai4mat_gcn_torch_ncu_metrics_head.txt) lead with this finding.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import (LAUNCH_LIMIT, SHORT_KERNEL, SMALL_GRID, KernelContext, cannot_decide, ev,
                                               finding, fmt_time)

SPEC = RuleSpec(
    id="launch-bound",
    name="Launch-bound: tiny grid or very short kernel",
    category=Bottleneck.LAUNCH,
    table="launches",
    requires=("duration_ns", "grid_size"),
    optional=("sm_count", "block_size"),
    doc="Fewer blocks than SMs; a kernel shorter than 10 us.",
)

# A kernel launch costs a few microseconds of CPU and driver time (NVIDIA's CUDA Graphs blog post
# measures about 2-4 us per launch of a short kernel); a kernel under 10 us is within a small factor
# of that, so back-to-back launches of it keep the GPU partly idle.
SHORT_KERNEL_NS = 10_000.0


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    duration, grid, sms = launch["duration_ns"], launch["grid_size"], launch.get("sm_count")
    small_grid = sms is not None and grid < sms
    short = duration < SHORT_KERNEL_NS
    unknown = [] if sms is not None else [cannot_decide(
        SPEC, launch, f"the grid has {grid:.0f} blocks, but the report has no SM count to compare it with",
        ["launch__sm_count", "device__attribute_multiprocessor_count"])]
    if not (small_grid or short):
        return unknown
    parts, evidence = [], []
    saving = None
    if small_grid:
        # Spreading the same work over more blocks keeps its bytes and instructions: capped at the gap.
        saving = ctx.cap(duration * (1 - grid / sms), launch)
        parts.append(f"The grid has {grid:.0f} blocks for {sms:.0f} SMs: {sms - grid:.0f} SMs sit idle for the whole kernel.")
        evidence.append(ev("grid_size", grid, "block", f">= {sms:.0f} (one block per SM at least)", sms))
    if short:
        parts.append(f"The kernel takes {fmt_time(duration)}, comparable to the few microseconds a launch costs.")
        evidence.append(ev("duration_ns", duration, "ns", f">= {SHORT_KERNEL_NS / 1e3:.0f} us per launch", SHORT_KERNEL_NS))
    steps = []
    if small_grid:
        steps.append("Split the work into at least as many blocks as SMs (smaller blocks, or split-K style partitioning).")
    if short:
        steps.append("Fuse it with its neighbours or capture the sequence in a CUDA graph (torch.compile "
                     "mode='reduce-overhead'); check the timeline for the gaps between launches.")
    return unknown + [finding(
        SPEC, launch, title="Launch-bound: " + " and ".join(
            t for t, on in (("tiny grid", small_grid), (f"{fmt_time(duration)} kernel", short)) if on),
        message=" ".join(parts), next_step=" ".join(steps), evidence=evidence, saving_ns=saving,
        gain_model=(f"time x (1 - blocks/SMs): the work spread over every SM (Nsight Compute's model), capped at "
                    f"the gap to the roof; saves {fmt_time(saving)}" if saving is not None else
                    "not estimated here: the launch cost lies outside the kernel; measure it on a timeline"),
        ncu=ctx.ncu("LaunchConfiguration", "SOLBottleneck"),
        details={"small_grid": small_grid, "short_kernel": short, LAUNCH_LIMIT: SMALL_GRID if small_grid else SHORT_KERNEL},
    )]
