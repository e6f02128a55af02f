"""Launch-bound stretches: many small kernels, each shorter than the host call that launched it (LAUNCH).

A kernel that runs shorter than its own launch call, and that the GPU waited for (the device had
finished its earlier work before the call returned, so the kernel ran when its launch arrived rather
than from a queue built by earlier work), finishes before the host can issue the next one: the GPU
waits on launch overhead. A run of such kernels is a launch-bound stretch; its GPU busy share shows
how much of the stretch was overhead.

Not every wait for a launch is launch overhead. After a host synchronisation (``.item()``,
``synchronize()``) the queue is empty and the host was blocked until then: the GPU waits for the
next launch because of the synchronisation, which the host-sync rule reports (the gap the
synchronisation returned into is its bubble). So the kernel that ends such a gap breaks a stretch and
belongs to none, and a loop whose small kernels are each separated by a read-back is not reported
here: a CUDA graph would not remove those waits, removing the synchronisation does.

Each stretch claims the GPU's idle time right before its kernels after the first (the waits for the
run's own launches); the GPU-idle rule leaves those gaps to this one, as it leaves the gaps after a
synchronisation to the host-sync rule, so no idle time is claimed twice.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.kernel_rules._common import fmt_count
from coach.analyze.timeline import TimelineAnalysis, derived, launch_bound_launches, launch_bound_stretches
from coach.analyze.timeline_rules._shared import ns, reportable, share_pct
from coach.analyze.timeline_rules.host_sync import returned_into, sync_points

SPEC = RuleSpec(
    id="launch-bound",
    name="Launch-bound stretches of small kernels",
    category=Bottleneck.LAUNCH,
    table="kernels",
    requires=("device_id", "start_ns", "end_ns", "correlation_id"),
    optional=("api.name", "api.dur_ns"),
    doc="Runs of kernels shorter than their launch call that the GPU waited for, outside the gaps after a host sync.",
)

# Eight consecutive kernels: a PyTorch operator launches one to three kernels, so a run this long
# spans several operators, which is what graph capture or fusion merges; a shorter run is usually
# inside one operator, where only that operator's implementation can change.
MIN_STRETCH_KERNELS = 8


@derived
def bound_launches(a: TimelineAnalysis) -> pl.DataFrame:
    """The launches in launch-bound stretches (``launch_bound_launches``), a kernel that ends a GPU
    gap a host synchronisation returned into counting in none."""
    released = returned_into(a.idle, sync_points(a)) if a.launches.height and a.idle.height else None
    return launch_bound_launches(a.launches, MIN_STRETCH_KERNELS, released)


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    bound = bound_launches(a)
    findings = []
    for (device,), b in bound.group_by("device_id", maintain_order=True):
        finding = _device_finding(a, device, b)
        if finding:
            findings.append(finding)
    return findings


def _device_finding(a: TimelineAnalysis, device: int, bound: pl.DataFrame) -> Finding | None:
    stretches = launch_bound_stretches(bound)
    stats = a.launch_stats.filter(pl.col("device_id") == device).row(0, named=True)
    span_ns = int(stretches["span_ns"].sum())
    kernel_ns = int(stretches["kernel_ns"].sum())
    kernels = int(stretches["kernels"].sum())
    saving_ns = float(stretches["waited_ns"].sum())
    if not reportable(saving_ns, a.window_ns):
        return None
    busy_pct = share_pct(kernel_ns, span_ns)
    top = stretches.sort("kernels", descending=True).row(0, named=True)
    rate = stats["launches_per_s"]
    message = (
        f"On GPU {device}, {fmt_count(kernels)} kernels in {stretches.height} stretch(es) ran shorter than their own launch call and "
        "started only when it arrived, none of them right after a host synchronisation: median kernel "
        f"{ns(bound['dur_ns'].median())} against a median launch call of {ns(bound['launch_ns'].median())}. "
        f"The stretches cover {ns(span_ns)} "
        f"({share_pct(span_ns, a.window_ns):.1f}% of the window) and the GPU was busy only {busy_pct:.1f}% of them. "
        f"The longest has {fmt_count(top['kernels'])} kernels, mostly {top['top_kernel']}"
        + (f"; over the whole window the host issued {rate:,.0f} launches per second." if rate else ".")
    )
    return Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"GPU {device} launch-bound: {fmt_count(kernels)} kernels shorter than their launch",
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
        gain_model=("sum over the stretches of the GPU's idle time before each kernel after the first: replayed as one "
                    "CUDA graph, a stretch costs one launch and its kernels back to back; an upper bound, since kernels "
                    "from a queue still start about 1 us apart"),
        details={"stretches": stretches.sort("span_ns", descending=True).head(10).to_dicts()},
    )

