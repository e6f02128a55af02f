"""Host-device copies that do not overlap compute (NO_OVERLAP).

Hopper GPUs have copy engines that move data over PCIe while the SMs run kernels, one direction
each, concurrently (``asyncEngineCount``). A program that copies and computes in one stream, or
copies synchronously, leaves that concurrency unused: each copy waits for the kernels before it and
each kernel for the copy. The fix is a pipeline: split the data into chunks and copy chunk i+1 on
one stream while chunk i computes on another. The measure is how much of the shorter stage (copies
or kernels) ran alongside the other: that is what a pipeline can hide.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules._shared import ns, reportable, share_pct

SPEC = RuleSpec(
    id="no-copy-compute-overlap",
    name="Copies do not overlap compute",
    category=Bottleneck.NO_OVERLAP,
    table="memcpy",
    requires=("device_id", "start_ns", "end_ns", "kind"),
    optional=("stream_id", "kernels.start_ns"),
    doc="How much of the shorter of copy and kernel time runs alongside the other, per GPU.",
)

# A two-stage pipeline over N chunks hides all but one chunk of the shorter stage behind the longer,
# (N-1)/N of it; even N = 2 hides half. Below half, copies and kernels are effectively serial.
MIN_HIDDEN_PCT = 50.0


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    findings = []
    for row in a.overlap.iter_rows(named=True):
        copy_ns, kernel_ns, overlap_ns = row["memcpy_ns"], row["kernel_ns"], row["overlap_ns"]
        shorter_ns = min(copy_ns, kernel_ns)
        saving_ns = float(shorter_ns - overlap_ns)
        hidden_pct = share_pct(overlap_ns, shorter_ns)
        if not shorter_ns or hidden_pct >= MIN_HIDDEN_PCT or not reportable(saving_ns, a.window_ns):
            continue
        stage = "copy" if copy_ns <= kernel_ns else "kernel"
        one_stream = row["copy_streams"] == row["kernel_streams"] == row["shared_streams"] == 1
        device = row["device_id"]
        streams = ""
        if one_stream:
            streams = " Copies and kernels share one stream: each copy waits for the kernels before it, each kernel for its copy."
        elif row["copy_streams"] and row["kernel_streams"]:
            streams = f" Copies used {row['copy_streams']} stream(s) and kernels {row['kernel_streams']}."
        message = (f"On GPU {device}, host-device copies took {ns(copy_ns)} and kernels {ns(kernel_ns)}, but they ran "
                   f"together for only {ns(overlap_ns)}: {hidden_pct:.1f}% of the shorter ({stage}) time was hidden behind "
                   f"the other.{streams}")
        findings.append(Finding(
            rule_id=SPEC.id,
            category=SPEC.category,
            title=f"GPU {device}: copies and kernels overlap {hidden_pct:.0f}% of what they could",
            message=message,
            next_step=("Pipeline the transfer: split the data into chunks, copy chunk i+1 on a side stream while chunk i "
                       "computes (pinned host buffers, cudaMemcpyAsync / non_blocking=True, events to order the streams); "
                       "the copy engines work in parallel with the SMs."),
            evidence=(
                Evidence("hidden_pct", hidden_pct, "%",
                         healthy=f"at least {MIN_HIDDEN_PCT:.0f}% of the shorter stage: a pipeline over N chunks hides (N-1)/N",
                         threshold=MIN_HIDDEN_PCT, source=a.timeline.source.tool),
                Evidence("copy_compute_overlap_pct", row["overlap_pct"], "%", source=a.timeline.source.tool),
                Evidence("memcpy_ns", copy_ns, "ns", source=a.timeline.source.tool),
                Evidence("kernel_ns", kernel_ns, "ns", source=a.timeline.source.tool),
                Evidence("copy_streams", row["copy_streams"], "streams", healthy="copies on their own stream(s)",
                         source=a.timeline.source.tool),
            ),
            scope=f"GPU {device}",
            estimated_gain_pct=share_pct(saving_ns, a.window_ns),
            estimated_saving_ns=saving_ns,
            gain_model=("min(copy time, kernel time) - time already overlapped: a pipeline hides the shorter of the two "
                        "stages behind the longer"),
            details=row,
        ))
    return findings
