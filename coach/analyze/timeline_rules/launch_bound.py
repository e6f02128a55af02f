"""Launch-bound stretches: many small kernels, each shorter than the host call that launched it (LAUNCH).

A kernel that runs shorter than its own launch call, and that started on an idle GPU (it ran when
its launch arrived rather than from a queue built by earlier work), finishes before the host can
issue the next one: the GPU waits on launch overhead. A run of such kernels is a launch-bound
stretch; its GPU busy share shows how much of the stretch was overhead.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis, launch_bound_launches, launch_bound_stretches
from coach.analyze.timeline_rules._shared import ns, reportable, share_pct

SPEC = RuleSpec(
    id="launch-bound",
    name="Launch-bound stretches of small kernels",
    category=Bottleneck.LAUNCH,
    table="kernels",
    requires=("device_id", "start_ns", "end_ns", "correlation_id"),
    optional=("api.name", "api.dur_ns"),
    doc="Runs of kernels shorter than their launch call that started on an idle GPU.",
)

# Eight consecutive kernels: a PyTorch operator launches one to three kernels, so a run this long
# spans several operators, which is what graph capture or fusion merges; a shorter run is usually
# inside one operator, where only that operator's implementation can change.
MIN_STRETCH_KERNELS = 8


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    launched = a.launches
    if launched.is_empty():
        return []
    bound = launch_bound_launches(launched, MIN_STRETCH_KERNELS)
    findings = []
    for (device,), b in bound.group_by("device_id", maintain_order=True):
        finding = _device_finding(a, device, b)
        if finding:
            findings.append(finding)
    return findings


def _device_finding(a: TimelineAnalysis, device: int, bound: pl.DataFrame) -> Finding | None:
    stretches = launch_bound_stretches(bound)
    stats = a.launch_stats.filter(pl.col("device_id") == device).row(0, named=True)
    launch_median = float(stats["launch_ns_median"])
    span_ns = int(stretches["span_ns"].sum())
    kernel_ns = int(stretches["kernel_ns"].sum())
    kernels = int(stretches["kernels"].sum())
    saving_ns = float(stretches.select((pl.col("span_ns") - pl.col("kernel_ns") - launch_median).clip(lower_bound=0).sum()).item())
    if not reportable(saving_ns, a.window_ns):
        return None
    busy_pct = share_pct(kernel_ns, span_ns)
    top = stretches.sort("kernels", descending=True).row(0, named=True)
    rate = stats["launches_per_s"]
    message = (
        f"On GPU {device}, {kernels} kernels in {stretches.height} stretch(es) ran shorter than their own launch call and "
        f"started only when it arrived: median kernel {ns(bound['dur_ns'].median())} against a median launch call "
        f"of {ns(bound['launch_ns'].median())}. The stretches cover {ns(span_ns)} "
        f"({share_pct(span_ns, a.window_ns):.1f}% of the window) and the GPU was busy only {busy_pct:.1f}% of them. "
        f"The longest has {top['kernels']} kernels, mostly {top['top_kernel']}"
        + (f"; over the whole window the host issued {rate:,.0f} launches per second." if rate else ".")
    )
    return Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"GPU {device} launch-bound: {kernels} kernels shorter than their launch",
        message=message,
        next_step=("Issue fewer launches: capture the stretch in a CUDA graph (torch.cuda.graph, or torch.compile with "
                   "mode='reduce-overhead'), fuse the small element-wise kernels (torch.compile, one Triton kernel), or "
                   "batch the work so each launch does more."),
        evidence=(
            Evidence("kernels_shorter_than_launch", kernels, "kernels",
                     healthy="kernels that each run longer than their launch call, so the queue never drains",
                     threshold=MIN_STRETCH_KERNELS, source=a.timeline.source.tool),
            Evidence("kernel_ns_median", float(bound["dur_ns"].median()), "ns",
                     healthy="above the launch call's duration", source=a.timeline.source.tool),
            Evidence("launch_ns_median", float(bound["launch_ns"].median()), "ns", source=a.timeline.source.tool),
            Evidence("stretch_gpu_busy_pct", busy_pct, "%", healthy="close to 100%: back-to-back kernels",
                     source=a.timeline.source.tool),
        ),
        scope=f"GPU {device}",
        estimated_gain_pct=share_pct(saving_ns, a.window_ns),
        estimated_saving_ns=saving_ns,
        gain_model=(f"sum over the stretches of (span - kernel time - one launch call of {ns(launch_median)}): replayed as "
                    "one CUDA graph, a stretch costs one launch and its kernels back to back"),
        details={"stretches": stretches.sort("span_ns", descending=True).head(10).to_dicts()},
    )

