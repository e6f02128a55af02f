"""Pinned host-device copies far below the link's rate (TRANSFER).

Large copies from pinned memory should run near the host link's rate: PCIe Gen5 x16 carries 64 GB/s
per direction. A large pinned copy at a fraction of that points at the link (a Gen4 or x8 slot, a
PCIe switch shared with other GPUs), at NUMA placement (host buffer on the far socket), or at copies
contending in one direction. Only copies known to be pinned count (pageable ones are the pageable-memcpy rule's), and only
large ones (small copies are dominated by their fixed cost).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import HOST_LINK_KINDS, TimelineAnalysis
from coach.analyze.timeline_rules._shared import link_bytes_per_s, nbytes, ns, rate, reportable, share_pct
from coach.analyze.timeline_rules.pageable_memcpy import is_pageable

SPEC = RuleSpec(
    id="transfer-bandwidth",
    name="Host-device copies below the link's rate",
    category=Bottleneck.TRANSFER,
    table="memcpy",
    requires=("kind", "bytes", "start_ns", "end_ns"),
    optional=("pageable", "src_memory", "dst_memory"),
    doc="Achieved rate of large pinned HtoD / DtoH copies against the host link's per-direction ceiling.",
)

# Each copy has a fixed cost of a few microseconds (DMA setup, the call), the time 64 GB/s needs for
# 0.1-0.3 MB; from 1 MiB (16 us at 64 GB/s) the transfer itself dominates, so the rate says
# something about the link.
MIN_TRANSFER_BYTES = 1 << 20

# PCIe Gen5 loses ~1.5% to 128b/130b encoding and ~7-10% to packet headers at 256-byte payloads, so
# large pinned copies reach roughly 85-90% of the raw rate; under half of it, something other than
# the link is the limit.
MIN_LINK_EFFICIENCY_PCT = 50.0


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    large = a.timeline.memcpy.filter(
        pl.col("kind").is_in(HOST_LINK_KINDS) & (pl.col("bytes") >= MIN_TRANSFER_BYTES) & (pl.col("dur_ns") > 0)
        & is_pageable().not_()  # known to be pinned: a copy of unknown memory gives null and is dropped
    )
    if large.is_empty():
        return []
    link, link_source = link_bytes_per_s(hardware)
    findings = []
    for (kind,), copies in large.group_by("kind", maintain_order=True):
        moved, time_ns = int(copies["bytes"].sum()), int(copies["dur_ns"].sum())
        achieved = moved / time_ns * 1e9
        efficiency = achieved / link * 100.0
        saving_ns = time_ns - moved / link * 1e9
        if efficiency >= MIN_LINK_EFFICIENCY_PCT or not reportable(saving_ns, a.window_ns):
            continue
        findings.append(Finding(
            rule_id=SPEC.id,
            category=SPEC.category,
            title=f"{kind} copies at {efficiency:.0f}% of the link's rate",
            message=(f"{copies.height} pinned {kind} copies of at least {nbytes(MIN_TRANSFER_BYTES)} moved {nbytes(moved)} "
                     f"in {ns(time_ns)}: {rate(achieved)}, {efficiency:.0f}% of the {rate(link)} per direction of "
                     f"{link_source}. Copies this large should run near the link's rate."),
            next_step=("Check the link the GPU sits on (nvidia-smi -q: PCIe generation and width), keep the process and "
                       "its pinned buffers on the GPU's NUMA node (numactl), and avoid several copies contending in one "
                       "direction at once."),
            evidence=(
                Evidence(f"{kind.lower()}_bytes_per_s", achieved, "byte/s",
                         healthy=f"above {MIN_LINK_EFFICIENCY_PCT:.0f}% of {rate(link)} (large pinned copies reach 85-90%)",
                         threshold=link * MIN_LINK_EFFICIENCY_PCT / 100.0, source=a.timeline.source.tool),
                Evidence("link_bytes_per_s", link, "byte/s", source=link_source),
                Evidence("copy_bytes", moved, "bytes", source=a.timeline.source.tool),
            ),
            scope=kind,
            estimated_gain_pct=share_pct(saving_ns, a.window_ns),
            estimated_saving_ns=saving_ns,
            gain_model=f"copy time - bytes / {rate(link)}: the same copies at the link's per-direction rate",
        ))
    return findings
