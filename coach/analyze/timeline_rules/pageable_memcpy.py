"""Copies through pageable host memory (PAGEABLE).

The DMA engines can only read and write page-locked (pinned) host memory. A copy from or to pageable
memory is staged by the driver through a pinned bounce buffer, chunk by chunk, so it runs well below
the link's rate and blocks the calling thread even when issued with ``cudaMemcpyAsync`` (the case
Nsight Systems' ``cuda_memcpy_async`` recipe flags). Pinning the host buffer fixes both.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules._shared import (largest_group, link_bytes_per_s, nbytes, ns, rate, reportable,
                                                  share_pct, within_window)

SPEC = RuleSpec(
    id="pageable-memcpy",
    name="Copies through pageable host memory",
    category=Bottleneck.PAGEABLE,
    table="memcpy",
    requires=("start_ns", "end_ns"),
    optional=("pageable", "src_memory", "dst_memory", "bytes", "kind"),
    doc="Copies that touch pageable host memory, their time and achieved rate against the link.",
)


def is_pageable() -> pl.Expr:
    """True when a copy touches pageable memory, False when both sides are known and neither is,
    null when the trace does not say (neither the ``pageable`` flag nor the memory kinds)."""
    kinds_known = pl.col("src_memory").is_not_null() & pl.col("dst_memory").is_not_null()
    either = (pl.col("src_memory") == "pageable") | (pl.col("dst_memory") == "pageable")
    return pl.coalesce("pageable", pl.when(either.fill_null(False)).then(True).when(kinds_known).then(False))


def pageable_copies(memcpy: pl.DataFrame) -> pl.DataFrame:
    """Copies known to touch pageable memory."""
    return memcpy.filter(is_pageable().fill_null(False))


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    copies = pageable_copies(a.timeline.memcpy)
    if copies.is_empty():
        return []
    time_ns = int(copies["dur_ns"].sum())
    known = copies.filter(pl.col("bytes").is_not_null())
    link, link_source = link_bytes_per_s(hardware)
    moved = int(known["bytes"].sum()) if known.height else None
    # per GPU, the largest: copies to several GPUs run side by side (see largest_group)
    saving_ns = (within_window(largest_group(known, "device_id", pl.col("dur_ns") - pl.col("bytes") / link * 1e9)[0],
                               a.window_ns) if known.height else None)
    if not reportable(saving_ns if saving_ns is not None else time_ns, a.window_ns):
        return []
    achieved = moved / known["dur_ns"].sum() * 1e9 if known.height and known["dur_ns"].sum() else None
    kinds = ", ".join(f"{n} x {k}" for k, n in copies.group_by(pl.col("kind").fill_null("unknown")).len().sort("kind").iter_rows())
    message = (
        f"{copies.height} copies ({kinds}) went through pageable host memory: {ns(time_ns)} of copy time "
        f"({share_pct(time_ns, a.window_ns):.1f}% of the {ns(a.window_ns)} window)"
        + (f", moving {nbytes(moved)} at {rate(achieved)} against the link's {rate(link)} per direction."
           if achieved else ".")
        + " The driver stages pageable memory through a pinned bounce buffer, so these copies run far below the link "
          "rate and block the host even when issued asynchronously."
    )
    return [Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"{copies.height} copies through pageable memory" + (f" at {rate(achieved)}" if achieved else ""),
        message=message,
        next_step=("Pin the host buffers (PyTorch: pin_memory=True in the DataLoader or tensor.pin_memory(); CUDA: "
                   "cudaMallocHost or cudaHostRegister) and copy with non_blocking=True / cudaMemcpyAsync, so the copy "
                   "runs at link speed and can overlap compute."),
        evidence=(
            Evidence("pageable_copies", copies.height, "copies", healthy="0: every host buffer in a transfer is pinned",
                     threshold=0, source=a.timeline.source.tool),
            Evidence("pageable_copy_ns", time_ns, "ns", source=a.timeline.source.tool),
            Evidence("pageable_copy_bytes_per_s", achieved, "byte/s",
                     healthy=f"pinned copies approach the link's {rate(link)} per direction", source=a.timeline.source.tool),
            Evidence("link_bytes_per_s", link, "byte/s", source=link_source),
        ),
        scope="memcpy",
        estimated_gain_pct=share_pct(saving_ns, a.window_ns) if saving_ns is not None else None,
        estimated_saving_ns=saving_ns,
        gain_model=(f"copy time - bytes / {rate(link)} ({link_source}): the same bytes over the link from pinned memory; "
                    "copies without a byte count are left out; the host also stops blocking, which this does not count"),
        details={"by_kind": copies.group_by(pl.col("kind").fill_null("unknown")).agg(
            copies=pl.len(), bytes=pl.col("bytes").sum(), dur_ns=pl.col("dur_ns").sum()).sort("kind").to_dicts()},
    )]
