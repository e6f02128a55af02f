"""GPU idle gaps and what the host was doing in them (HOST_BOUND or IDLE).

Looks at the gaps between operations on each GPU (the stretches before the first and after the last
operation are the capture's edges and are left out, as Nsight Systems' GPU-starvation rule does)
that are longer than one launch latency. If the host spent most of those gaps outside CUDA calls, it
was busy with its own work (Python, data loading, logging): HOST_BOUND. If it spent most of them
inside CUDA calls, those calls kept the GPU waiting (synchronisation, allocation, blocking copies):
IDLE, naming the call. One-time module loading inside a gap is set aside (the warm-up rule reports
it): it says nothing about the program's steady state. So are the gaps that a host synchronisation
returned into (the host-sync rule reports them): there the GPU waited because the host had stopped
queueing work to wait for it, and what the host did next is exposed only because of that wait; the
fix is to remove the synchronisation, not to speed up the host. And so are the gaps inside a
launch-bound stretch, before each of its kernels after the first (the launch-bound rule reports
them): there the GPU waited for the launches of kernels shorter than their launch calls, which a CUDA
graph or fusion removes. So, last, are the gaps the training loop spent mostly inside a DataLoader
(the input-pipeline rule reports them): there it waited for the next batch. And, where the allocator
rule fires, the gaps the host spent mostly inside cudaMalloc/cudaFree and their kin (the allocator
rule reports them: the cause, of which the idle gap is the symptom). Each idle gap is thus claimed by
one finding at most.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis, interval_join, matching_rows, merge_intervals
from coach.analyze.timeline_rules._shared import LAUNCH_LATENCY_NS, after_set_up, ns, reportable, share_pct
from coach.analyze.timeline_rules.allocator_churn import churns, is_allocator_call
from coach.analyze.timeline_rules.host_sync import returned_into, sync_points
from coach.analyze.timeline_rules.input_pipeline import gaps_in_loader
from coach.analyze.timeline_rules.launch_bound import bound_launches
from coach.analyze.timeline_rules.warmup import one_time_calls

SPEC = RuleSpec(
    id="gpu-idle-gaps",
    name="GPU idle between operations",
    category=Bottleneck.IDLE,
    table="kernels",
    requires=("device_id", "start_ns", "end_ns"),
    optional=("api.name", "nvtx.text"),
    doc="Gaps between GPU operations longer than one launch latency, with the host's activity in them.",
)

# A gap no longer than one launch latency cannot be filled by the host: work launched the moment the
# previous operation ended would still arrive that late.
MIN_GAP_NS = LAUNCH_LATENCY_NS

# Whose time is it: when the host spent less than half of the gaps inside CUDA calls, most of the gap
# is the host's own work; otherwise a CUDA call held the GPU up.
HOST_IN_API_PCT = 50.0


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    gaps = steady_state_gaps(a)
    findings = []
    for (device,), g in gaps.group_by("device_id", maintain_order=True):
        g, loading = g.filter(~pl.col("in_loader")), g.filter("in_loader")
        g, allocating = g.filter(~pl.col("in_allocator")), g.filter("in_allocator")
        finding = _device_finding(a, device, g.filter(~pl.col("after_sync") & ~pl.col("launch_bound")),
                                  g.filter("after_sync"), g.filter("launch_bound"), loading, allocating)
        if finding:
            findings.append(finding)
    return findings


def steady_state_gaps(a: TimelineAnalysis) -> pl.DataFrame:
    """Gaps between operations with the host's activity in them (``host_activity_in_gaps``) leaving
    out one-time calls, ``one_time_ns`` (module loading inside the gap, see the warm-up rule),
    ``idle_ns`` (the rest), ``after_sync`` (a host synchronisation returned into the gap, see the
    host-sync rule), ``launch_bound`` (the gap ends at a kernel of a launch-bound stretch other
    than its first, see the launch-bound rule) and ``in_loader`` (the host spent most of the gap
    inside the DataLoader, see the input-pipeline rule) and ``in_allocator`` (the allocator rule's
    conditions hold and the host spent at least half of the gap in one allocation or free call name,
    see that rule); only gaps whose rest is longer than one launch latency."""
    one_time = one_time_calls(a)
    keys = ["pid", "tid", "start_ns", "name"]
    rows = matching_rows(a.timeline.api, one_time, keys) if one_time.height else None
    removed = a.timeline.api.filter(rows) if rows is not None else None
    gaps = a.gaps_without(removed, rows) if removed is not None and removed.height else a.gaps
    gaps = after_set_up(gaps.filter(pl.col("position") == "between"), a.timeline.kernels).with_row_index("_gap")
    loading = interval_join(gaps.select("_gap", "start_ns", "end_ns"),
                            merge_intervals(one_time, ["pid", "tid"]).select("start_ns", "end_ns"),
                            "overlap").group_by("_gap").agg(one_time_ns=pl.col("overlap_ns").sum())
    synced = returned_into(gaps, sync_points(a)).select("device_id", "start_ns", after_sync=pl.lit(True))
    stretched = (
        bound_launches(a).sort("start_ns")
        .filter(pl.int_range(pl.len()).over("device_id", "stretch") > 0)  # the gap before a run's first kernel is not its own
        .select("device_id", end_ns="start_ns", launch_bound=pl.lit(True))
    )
    allocator_claims = churns(a)
    return gaps_in_loader(a, (
        gaps.join(loading, on="_gap", how="left", maintain_order="left")
        .join(synced, on=["device_id", "start_ns"], how="left", maintain_order="left")
        .join(stretched, on=["device_id", "end_ns"], how="left", maintain_order="left")
        .with_columns(one_time_ns=pl.min_horizontal(pl.col("one_time_ns").fill_null(0), "dur_ns"),
                      after_sync=pl.col("after_sync").fill_null(False),
                      launch_bound=pl.col("launch_bound").fill_null(False))
        .with_columns(idle_ns=pl.col("dur_ns") - pl.col("one_time_ns"))
        .filter(pl.col("idle_ns") > MIN_GAP_NS)
        .with_columns(in_allocator=pl.lit(allocator_claims) & is_allocator_call(pl.col("top_api").fill_null(""))
                      & (2 * pl.col("top_api_ns") >= pl.col("idle_ns")))
        .drop("_gap")
    )).drop("loader_ns")


def _device_finding(a: TimelineAnalysis, device: int, gaps: pl.DataFrame, after_sync: pl.DataFrame,
                    launch_bound: pl.DataFrame, loading: pl.DataFrame, allocating: pl.DataFrame) -> Finding | None:
    if gaps.is_empty():
        return None
    idle_ns = int(gaps["idle_ns"].sum())
    saving_ns = float((gaps["idle_ns"] - MIN_GAP_NS).sum())
    if not reportable(saving_ns, a.window_ns):
        return None
    busy_pct = a.utilisation.filter(pl.col("device_id") == device)["busy_pct"].item()
    in_api_ns = gaps.select(pl.min_horizontal("api_ns", "idle_ns").sum()).item()
    in_api_pct = share_pct(in_api_ns, idle_ns)
    host_bound = in_api_pct < HOST_IN_API_PCT
    largest = gaps.sort("idle_ns", descending=True).row(0, named=True)
    one_time_ns = int(gaps["one_time_ns"].sum())

    where = f" inside {largest['range']}" if largest["range"] else ""
    after = largest["after"] or "the previous operation"
    # Percentages are of the device's active span (first to last operation): the capture's edges
    # before and after are start-up and shut-down, which a steady loop does not have.
    edges = a.idle.filter((pl.col("device_id") == device) & (pl.col("position") != "between"))
    edges_ns = int(edges["dur_ns"].sum()) if edges.height else 0
    span_ns = max(a.window_ns - edges_ns, 1)
    idle_pct = share_pct(idle_ns, span_ns)
    lead = (f"GPU {device} sat idle for {ns(idle_ns)} in {gaps.height} gap(s) longer than {ns(MIN_GAP_NS)}: "
            f"{idle_pct:.1f}% of the {ns(span_ns)} from its first to its last operation. "
            f"The largest, {ns(largest['idle_ns'])}, followed {after}{where}."
            + (f" One-time module loading ({ns(one_time_ns)}, see the warm-up finding) is left out of these figures."
               if one_time_ns else "")
            + (f" So are {after_sync.height} gap(s) that followed a host synchronisation ({ns(after_sync['idle_ns'].sum())}, "
               "see the host-synchronisation finding)." if after_sync.height else "")
            + (f" So are {launch_bound.height} gap(s) inside launch-bound stretches ({ns(launch_bound['idle_ns'].sum())}, "
               "see the launch-bound finding)." if launch_bound.height else "")
            + (f" So are {loading.height} gap(s) the loop spent waiting in the DataLoader ({ns(loading['idle_ns'].sum())}, "
               "see the input-pipeline finding)." if loading.height else "")
            + (f" So are {allocating.height} gap(s) the host spent mostly in allocation and free calls "
               f"({ns(allocating['idle_ns'].sum())}, see the allocator finding)." if allocating.height else "")
            + (f" Outside that span the capture holds {ns(edges_ns)} more with no GPU work (start-up and shut-down); "
               f"over the whole {ns(a.window_ns)} window the GPU was busy {busy_pct:.1f}%." if edges_ns > span_ns else ""))
    if host_bound:
        message = (f"{lead} The host spent only {in_api_pct:.0f}% of the gaps in CUDA calls: it was busy with its own work "
                   "while the GPU waited for the next launch.")
        next_step = ("Find the host work in these gaps (nsys with --sample=cpu or py-spy, NVTX ranges around data loading "
                     "and Python logic) and take it off the GPU's path: DataLoader workers with pinned prefetching, fewer "
                     "Python-level ops per step, or a CUDA graph so one launch replays the step.")
    else:
        message = (f"{lead} The host spent {in_api_pct:.0f}% of the gaps inside CUDA calls, in the largest gap mostly "
                   f"{largest['top_api']} ({ns(largest['top_api_ns'])}): the call, not the host's own work, kept the GPU waiting.")
        next_step = (f"Take {largest['top_api']} out of the loop or make it asynchronous (see the host-synchronisation, "
                     "allocator and pageable-memcpy findings for which calls and how).")

    return Finding(
        rule_id=SPEC.id,
        category=Bottleneck.HOST_BOUND if host_bound else Bottleneck.IDLE,
        title=f"GPU {device} idle {idle_pct:.0f}% of the time between operations: "
              + ("host-bound" if host_bound else f"waiting in {largest['top_api']}"),
        message=message,
        next_step=next_step,
        evidence=(
            Evidence("gpu_busy_pct", busy_pct, "%", healthy="work queued back to back: busy close to 100% in a steady loop",
                     source=a.timeline.source.tool),
            Evidence("idle_in_gaps_ns", idle_ns, "ns", healthy=f"no gap between operations longer than {ns(MIN_GAP_NS)}",
                     threshold=MIN_GAP_NS, source=a.timeline.source.tool),
            Evidence("largest_gap_ns", largest["idle_ns"], "ns", source=a.timeline.source.tool),
            Evidence("host_in_cuda_api_pct", in_api_pct, "%",
                     healthy=f"below {HOST_IN_API_PCT:.0f}% means host-bound, above means a CUDA call held the GPU",
                     threshold=HOST_IN_API_PCT, source=a.timeline.source.tool),
        ),
        scope=f"GPU {device}",
        estimated_gain_pct=share_pct(saving_ns, a.window_ns),
        estimated_saving_ns=saving_ns,
        gain_model=(f"sum over the gaps of (gap - one-time loading in it - {ns(MIN_GAP_NS)}): the time the GPU gains if the "
                    "host keeps work queued, leaving each gap at one launch latency; an upper bound, since the host work "
                    "must still fit somewhere"),
        details={"gaps": gaps.sort("idle_ns", descending=True).head(10).to_dicts()},
    )
