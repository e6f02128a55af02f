"""Host synchronisation points: the host waits for the GPU, then the GPU waits for the host (HOST_SYNC).

A synchronisation point is a call that blocks the host until GPU work finishes: device, stream,
context and event synchronisation (the calls Nsight Systems' ``cuda_api_sync`` recipe lists), a
synchronous ``cudaMemcpy``, or an asynchronous copy into pageable memory (which the driver completes
before returning). ``.item()``, ``print(loss)`` and ``tensor.cpu()`` in PyTorch are a small
device-to-host copy plus a stream synchronisation. The cost is not the wait itself (the GPU is
working meanwhile) but what follows: the queue has drained, so the GPU sits idle until the host
launches again. That bubble, the GPU gap the synchronisation returns into, is what the rule measures;
a bubble the loop spent mostly waiting inside a DataLoader is the input-pipeline rule's (without the
synchronisation the loop would wait for the batch instead).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis, derived, interval_join, merge_intervals, with_launch_call
from coach.analyze.timeline_rules.input_pipeline import gaps_in_loader
from coach.analyze.timeline_rules._shared import (LAUNCH_LATENCY_NS, after_set_up, base_api_name, largest_group, ns, reportable,
                                                  share_pct, within_window)

SPEC = RuleSpec(
    id="host-sync",
    name="Host synchronisation in the loop",
    category=Bottleneck.HOST_SYNC,
    table="api",
    requires=("name", "start_ns", "end_ns"),
    optional=("memcpy.kind", "memcpy.bytes", "memcpy.pageable"),
    doc="Synchronising calls and blocking copies, and the GPU bubbles that follow them.",
)

SYNC_CALLS = (r"^(cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaThreadSynchronize"
              r"|cuCtxSynchronize|cuStreamSynchronize|cuEventSynchronize"
              r"|hipDeviceSynchronize|hipStreamSynchronize|hipEventSynchronize)$")  # ROCm's HIP twins
COPY_CALLS = r"^(cu(da)?|hip)Memcpy"

# A device-to-host copy of at most 8 bytes is one scalar (up to a 64-bit value): .item(), float(t),
# or a printed loss.
SCALAR_BYTES = 8


@derived
def sync_points(a: TimelineAnalysis) -> pl.DataFrame:
    """The calls that block the host: ``name, start_ns, end_ns, dur_ns, pid, tid, reason`` ("sync",
    "sync copy", "pageable copy") and ``scalar_read``: the call waits for a one-scalar
    device-to-host copy (it is that copy, or the first synchronisation after it on its thread)."""
    copies = with_launch_call(a.work.filter(pl.col("activity") == "memcpy"), a.timeline.api).with_columns(
        base=base_api_name(pl.col("api_name")),
        scalar=(pl.col("kind") == "DtoH") & (pl.col("bytes") <= SCALAR_BYTES).fill_null(False),
    )
    blocking = copies.filter(
        pl.col("base").str.contains(COPY_CALLS)
        & (~pl.col("base").str.contains("Async") | (pl.col("pageable").fill_null(False) & (pl.col("kind") == "DtoH")))
    ).select(
        name="api_name", start_ns="api_start_ns", end_ns="api_end_ns", dur_ns="launch_ns", pid="pid", tid="tid",
        reason=pl.when(pl.col("base").str.contains("Async")).then(pl.lit("pageable copy")).otherwise(pl.lit("sync copy")),
        scalar_read="scalar",
    )
    syncs = a.timeline.api.filter(a.api_matching(SYNC_CALLS)).select("name", "start_ns", "end_ns", "dur_ns", "pid", "tid")
    scalar_copies = copies.filter("scalar").select("tid", copy_end_ns="api_end_ns").sort("copy_end_ns")
    syncs = (
        syncs.sort("start_ns")
        .join_asof(scalar_copies, left_on="start_ns", right_on="copy_end_ns", by="tid", strategy="backward",
                   check_sortedness=False)  # both sorted by time; sortedness within groups is not checkable
        .with_columns(
            reason=pl.lit("sync"),
            scalar_read=pl.col("copy_end_ns").is_not_null() & pl.col("copy_end_ns").is_first_distinct(),
        )
        .drop("copy_end_ns")
    )
    return pl.concat([syncs, blocking]).sort("start_ns")


def returned_into(gaps: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """The GPU gaps (``device_id, start_ns, end_ns, gap_ns``) that a synchronisation point returned
    into, once each: the host waited, the queue drained, and the GPU stayed idle until the host
    launched again. Where several returned into one gap, the row names the last of them (after which
    the host launched again)."""
    return interval_join(
        gaps.select("device_id", "start_ns", "end_ns", gap_ns="dur_ns"),
        points.select(start_ns="end_ns", end_ns="end_ns", point_name="name"),
        "contains",
    ).unique(subset=["device_id", "start_ns"], keep="last", maintain_order=True)


def _less_allocation(a: TimelineAnalysis, bubbles: pl.DataFrame) -> pl.DataFrame:
    """``bubbles`` with ``alloc_ns``: the host's time in allocation and free calls inside each (merged
    per thread). The allocator-churn rule claims that time: a loop that frees and allocates after
    each read-back would still wait for the allocator without the read-back, so the bubble's saving
    leaves it out (each second of a gap is one finding's at most). Where the allocator rule reports
    nothing (a few allocations, once), the bubble keeps that time."""
    from coach.analyze.timeline_rules import allocator_churn  # noqa: PLC0415

    calls = allocator_churn.allocator_calls(a)
    if calls.is_empty() or bubbles.is_empty() or not allocator_churn.churns(a):
        return bubbles.with_columns(alloc_ns=pl.lit(0, pl.Int64))
    merged = merge_intervals(calls.select("pid", "tid", "start_ns", "end_ns"), ["pid", "tid"]).select("start_ns", "end_ns")
    inside = (interval_join(bubbles.with_row_index("_b").select("_b", "start_ns", "end_ns"), merged, "overlap")
              .group_by("_b").agg(alloc_ns=pl.col("overlap_ns").sum()))
    return (bubbles.with_row_index("_b").join(inside, on="_b", how="left", maintain_order="left")
            .with_columns(alloc_ns=pl.min_horizontal(pl.col("alloc_ns").fill_null(0), pl.col("gap_ns")).cast(pl.Int64))
            .drop("_b"))


def _per_gpu(bubbles: pl.DataFrame) -> str:
    per = bubbles.group_by("device_id").agg(pl.col("gap_ns").sum()).sort("device_id")
    return ", ".join(f"GPU {d}: {ns(v)}" for d, v in per.iter_rows())


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    points = sync_points(a)
    if points.is_empty() or a.idle.is_empty():
        return []
    # only gaps between GPU operations: before the first and after the last one the capture starts or
    # ends (a profiler's window opened or closed around synchronize() calls), no queue drained there;
    # and only after the device's first kernel: before it the program was setting up (uploads, then
    # seconds of building the model and the data pipeline), see after_set_up
    between = after_set_up(a.idle.filter(pl.col("position") == "between"), a.timeline.kernels)
    bubbles = gaps_in_loader(a, returned_into(between, points).filter(pl.col("gap_ns") > LAUNCH_LATENCY_NS))
    loading = bubbles.filter("in_loader")  # the loop waited for its next batch: the input pipeline's gaps
    bubbles = _less_allocation(a, bubbles.filter(~pl.col("in_loader")).drop("loader_ns", "in_loader"))
    saving_ns, per_device = largest_group(bubbles, "device_id",
                                          (pl.col("gap_ns") - pl.col("alloc_ns") - LAUNCH_LATENCY_NS).clip(lower_bound=0))
    saving_ns = within_window(saving_ns, a.window_ns)
    if not reportable(saving_ns, a.window_ns):
        return []
    # the GPU whose bubbles count (the largest); the same as all of them on a one-GPU trace
    worst = per_device["device_id"][0]
    bubble_ns = int(bubbles.filter(pl.col("device_id").eq_missing(worst))["gap_ns"].sum())
    on_gpus = (f"the queue had drained, and the GPU idled {ns(bubble_ns)}" if per_device.height == 1 else
               f"the queue had drained; the GPUs idled side by side ({_per_gpu(bubbles)}), the most GPU {worst}: "
               f"{ns(bubble_ns)}")
    # the host's blocked time per process, the largest: processes block side by side, so their sum is
    # no wall time (four processes each blocked for most of a window would sum past it)
    blocked_total_ns = int(points["dur_ns"].sum())
    blocked_by_pid = largest_group(points, "pid", "dur_ns")[1]
    blocked_ns = int(blocked_by_pid["saving_ns"][0]) if blocked_by_pid.height else 0
    blocked = (f"blocked {ns(blocked_ns)} in those calls" if blocked_by_pid.height <= 1 else
               f"blocked {ns(blocked_total_ns)} in those calls over {blocked_by_pid.height} processes, the most "
               f"{ns(blocked_ns)} in one")
    alloc_ns = int(bubbles["alloc_ns"].sum())
    by_name = points.group_by("name").agg(n=pl.len(), ns=pl.col("dur_ns").sum()).sort("ns", descending=True)
    calls = ", ".join(f"{n} x {name}" for name, n, _ in by_name.iter_rows())
    scalars = int(points["scalar_read"].sum())
    message = (
        f"The host synchronised with the GPU {points.height} time(s) ({calls}), {blocked}. "
        f"They returned into {bubbles.height} GPU gap(s) longer than one launch latency: {on_gpus} "
        f"({share_pct(bubble_ns, a.window_ns):.1f}% of the {ns(a.window_ns)} window) until the host launched again."
        + (f" Of these, {scalars} waited for a one-scalar device-to-host copy: .item(), float(t) or a printed loss."
           if scalars else "")
        + (f" {loading.height} more gap(s) after a synchronisation the loop spent waiting in the DataLoader (see the "
           "input-pipeline finding)." if loading.height else "")
    )
    return [Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"{points.height} host synchronisation point(s) drain the GPU queue",
        message=message,
        next_step=("Keep the loop free of synchronisation: accumulate metrics on the GPU and read them every N steps, copy "
                   "results with non_blocking=True into pinned buffers, and order work between streams with events "
                   "(cudaStreamWaitEvent / Stream.wait_event) instead of synchronising the host."),
        evidence=(
            Evidence("sync_points", points.height, "calls", healthy="none inside the steady-state loop",
                     source=a.timeline.source.tool),
            Evidence("host_blocked_ns", blocked_ns, "ns", source=a.timeline.source.tool),  # the most blocked process
            Evidence("gpu_idle_after_sync_ns", bubble_ns, "ns",
                     healthy=f"no gap after a synchronisation longer than one launch latency ({ns(LAUNCH_LATENCY_NS)})",
                     threshold=LAUNCH_LATENCY_NS, source=a.timeline.source.tool),
            Evidence("scalar_reads", scalars, "calls", healthy="0 per step", source=a.timeline.source.tool),
        ),
        scope="timeline",
        estimated_gain_pct=share_pct(saving_ns, a.window_ns),
        estimated_saving_ns=saving_ns,
        gain_model=(f"sum over the GPU gaps a synchronisation returned into of (gap - {ns(LAUNCH_LATENCY_NS)}"
                    + (" - the host's time in allocation and free calls in it, the allocator finding's" if alloc_ns else "")
                    + "): without the "
                    "synchronisation the host would have queued the next work before the GPU ran dry; the GPU-idle and "
                    "launch-bound findings leave these gaps out"
                    + ("; per GPU, the largest: the GPUs idle side by side, so their sums do not add up in wall time"
                       if per_device.height > 1 else "")),
        # ties broken by place, so that the ten listed are the same on every run
        details={"sync_calls": by_name.to_dicts(),
                 "bubbles": (bubbles if alloc_ns else bubbles.drop("alloc_ns")).sort("gap_ns", "device_id", "start_ns", descending=[True, False, False])
                 .head(10).to_dicts(),
                 "saving_by_device": per_device.to_dicts()},
    )]
