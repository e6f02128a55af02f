"""The input pipeline starves the GPU: the training loop waits for the next batch (HOST_BOUND).

PyTorch's DataLoader marks every batch it hands out with a range named after the iterator:
``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` when ``num_workers=0`` (the batch is
read, transformed and collated in the training process itself, one sample after the other), and
``..._MultiProcessingDataLoaderIter.__next__`` with worker processes (the loop only takes a ready
batch from a queue, and waits when the workers fall behind). The profiler records those ranges
(Kineto as user annotations; under Nsight Systems they are NVTX ranges where the program emits them).
While the loop is inside one, it launches nothing: if the GPU has finished the previous step, it sits
idle until the batch is ready. That idle time, the GPU's gaps covered by DataLoader ranges, is what
this rule measures; the operators run inside the ranges (``aten::stack`` of the collate function,
``aten::to``, a transform's ops) say where the time goes.

A gap spent mostly inside the DataLoader is this rule's: the GPU-idle and host-synchronisation rules
leave it out (each idle gap is claimed by one finding at most). Removing a synchronisation before it
would not help: the loop would wait for the batch instead.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis, interval_join, merge_intervals
from coach.analyze.timeline_rules._shared import (LAUNCH_LATENCY_NS, largest_group, ns, reportable, share_pct,
                                                  within_window)

SPEC = RuleSpec(
    id="input-pipeline",
    name="Input pipeline starves the GPU",
    category=Bottleneck.HOST_BOUND,
    table="nvtx",
    requires=("text", "start_ns", "end_ns"),
    optional=("kernels.device_id", "nvtx.domain", "nvtx.depth"),
    doc="GPU idle time while the training loop waits inside the DataLoader, and what the loader runs.",
)

#: The ranges PyTorch's DataLoader iterators record (torch.utils.data.dataloader: the profiler name
#: "enumerate(DataLoader)#{iterator class}.__next__"), and ranges a program names after its loader.
LOADER_RANGES = r"(?i)enumerate\(DataLoader\)|DataLoaderIter|\bDataLoader\b|dataloader"
SINGLE_PROCESS = "_SingleProcessDataLoaderIter"
MULTI_PROCESS = "_MultiProcessingDataLoaderIter"

# A gap no longer than one launch latency cannot be filled by the host (as in the GPU-idle rule).
MIN_GAP_NS = LAUNCH_LATENCY_NS
# A gap belongs to the input pipeline when the loop spent at least half of it inside the DataLoader.
CLAIM_SHARE = 0.5
# Operators inside the loader ranges named in the message.
TOP_OPS = 3


def loader_ranges(a: TimelineAnalysis) -> pl.DataFrame:
    """The DataLoader ranges (``pid, tid, start_ns, end_ns, dur_ns, text, depth``)."""
    nvtx = a.timeline.nvtx
    return nvtx.filter(pl.col("end_ns").is_not_null() & pl.col("text").fill_null("").str.contains(LOADER_RANGES)).select(
        "pid", "tid", "start_ns", "end_ns", "dur_ns", "text", "depth")


def gaps_in_loader(a: TimelineAnalysis, gaps: pl.DataFrame) -> pl.DataFrame:
    """``gaps`` (``device_id, start_ns, end_ns`` and more) with ``loader_ns``: the part of each gap the
    host spent inside DataLoader ranges (their union over threads), and ``in_loader``: at least
    ``CLAIM_SHARE`` of the gap."""
    ranges = loader_ranges(a)
    if ranges.is_empty() or gaps.is_empty():
        return gaps.with_columns(loader_ns=pl.lit(0, pl.Int64), in_loader=pl.lit(False))
    union = merge_intervals(ranges.select("start_ns", "end_ns").with_columns(_all=pl.lit(0)), ["_all"])
    g = gaps.with_row_index("_gap")
    covered = (interval_join(g.select("_gap", "start_ns", "end_ns"), union.select("start_ns", "end_ns"), "overlap")
               .group_by("_gap").agg(loader_ns=pl.col("overlap_ns").sum()))
    return (g.join(covered, on="_gap", how="left", maintain_order="left")
            .with_columns(loader_ns=pl.col("loader_ns").fill_null(0).cast(pl.Int64))
            .with_columns(in_loader=pl.col("loader_ns") >= CLAIM_SHARE * (pl.col("end_ns") - pl.col("start_ns")))
            .drop("_gap"))


def operators_inside(a: TimelineAnalysis, ranges: pl.DataFrame) -> pl.DataFrame:
    """The outermost operators (``cpu_op`` ranges) inside the loader ranges: ``text, calls, dur_ns``,
    largest first."""
    ops = a.timeline.nvtx.filter((pl.col("domain") == "cpu_op") & pl.col("end_ns").is_not_null())
    if ops.is_empty():
        return pl.DataFrame(schema={"text": pl.Utf8, "calls": pl.UInt32, "dur_ns": pl.Int64})
    inside = interval_join(ranges.with_row_index("_range").select("_range", "pid", "tid", "start_ns", "end_ns"),
                           ops.select("pid", "tid", "start_ns", "end_ns", op="text", op_depth="depth"),
                           "contains", by=["pid", "tid"])
    outermost = inside.filter(pl.col("op_depth") == pl.col("op_depth").min().over("_range"))
    return (outermost.group_by("op").agg(calls=pl.len(), dur_ns=pl.col("overlap_ns").sum())
            .sort(["dur_ns", "op"], descending=[True, False]).rename({"op": "text"}))


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    ranges = loader_ranges(a)
    if ranges.is_empty() or a.gaps.is_empty():
        return []
    between = a.gaps.filter((pl.col("position") == "between") & (pl.col("dur_ns") > MIN_GAP_NS))
    claimed = gaps_in_loader(a, between).filter("in_loader")
    if claimed.is_empty():
        return []
    saving_ns, per_device = largest_group(claimed, "device_id", pl.col("loader_ns") - MIN_GAP_NS)
    saving_ns = within_window(max(saving_ns, 0.0), a.window_ns)
    if not reportable(saving_ns, a.window_ns):
        return []
    device = per_device["device_id"][0]
    mine = claimed.filter(pl.col("device_id").eq_missing(device))
    idle_ns = int(mine["loader_ns"].sum())
    busy = a.utilisation.filter(pl.col("device_id").eq_missing(device))
    busy_pct = busy["busy_pct"][0] if busy.height else None
    batches, loader_ns = ranges.height, int(ranges["dur_ns"].sum())
    single = ranges["text"].str.contains(SINGLE_PROCESS).any()
    workers = ranges["text"].str.contains(MULTI_PROCESS).any()
    ops = operators_inside(a, ranges)
    top = ", ".join(f"{name} ({ns(t)})" for name, _, t in ops.head(TOP_OPS).iter_rows())
    how = (" with num_workers=0: each batch is read, transformed and collated in the training process, one sample "
           "after the other, while the GPU waits" if single and not workers else
           ": the worker processes do not keep up, and the loop waits for their next batch" if workers else "")
    message = (
        f"GPU {device} sat idle {ns(idle_ns)} ({share_pct(idle_ns, a.window_ns):.1f}% of the {ns(a.window_ns)} window, "
        f"in {mine.height} gap(s)) while the training loop waited inside the DataLoader{how}. The loop asked it for "
        f"{batches} batch(es), {ns(loader_ns)} in all ({ns(loader_ns / batches)} per batch)"
        + (f"; inside, the host ran {top}" if top else "") + "."
        + (f" GPU {device} was busy {busy_pct:.0f}% of the window." if busy_pct is not None else "")
    )
    if single and not workers:
        next_step = ("Load batches in worker processes: DataLoader(..., num_workers=N (start at 4, up to the free CPU "
                     "cores), pin_memory=True, prefetch_factor=2-4, persistent_workers=True), and copy each batch with "
                     ".to(device, non_blocking=True); the loop then only launches GPU work while the workers prepare the "
                     "next batches. If the workers still cannot keep up, make the per-sample transform cheaper or move "
                     "it to the GPU.")
    else:
        next_step = ("Give the DataLoader more worker processes (num_workers up to the free CPU cores) and a deeper "
                     "prefetch (prefetch_factor), with pin_memory=True and non_blocking copies; profile a worker to see "
                     "which per-sample step is slow (decoding, augmentation, collate) and make it cheaper or move it to "
                     "the GPU (GPU decoding, DALI, augmentation on uint8 tensors on the device).")
    return [Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"Input-bound: GPU {device} idle {share_pct(idle_ns, a.window_ns):.0f}% of the time waiting for the "
              "DataLoader" + (" (num_workers=0)" if single and not workers else ""),
        message=message,
        next_step=next_step,
        evidence=(
            Evidence("gpu_idle_in_dataloader_ns", idle_ns, "ns", healthy="0: the next batch is ready when the GPU "
                     "finishes a step", threshold=MIN_GAP_NS, source=a.timeline.source.tool),
            Evidence("dataloader_ns", loader_ns, "ns", healthy="well below the GPU's time per step",
                     source=a.timeline.source.tool),
            Evidence("dataloader_calls", batches, "batches", source=a.timeline.source.tool),
            Evidence("gpu_busy_pct", busy_pct, "%", healthy="close to 100% in a steady training loop",
                     source=a.timeline.source.tool),
        ),
        scope=f"GPU {device}",
        estimated_gain_pct=share_pct(saving_ns, a.window_ns),
        estimated_saving_ns=saving_ns,
        gain_model=(f"sum over the GPU's gaps spent mostly inside the DataLoader of (time in it - {ns(MIN_GAP_NS)}): with "
                    "batches prepared ahead (workers, prefetching) the GPU starts the next step when it finishes one; "
                    "per GPU, the largest; an upper bound, since the workers must keep up"),
        details={"iterator": "single-process" if single and not workers else "multi-process" if workers else "unknown",
                 "operators": ops.head(10).to_dicts(), "gaps": mine.sort("loader_ns", descending=True).head(10).to_dicts()},
    )]
