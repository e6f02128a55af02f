"""Labelled synthetic variants of real Nsight Compute reports: a report as it would read had its
collection not included some metrics (a smaller section set, a --metrics list, an older version),
built by removing those metrics from the long table and deriving the canonical launches again through
the readers' own mapping (``coach.ingest.ncu_common``)."""

from __future__ import annotations

import dataclasses
from typing import Iterable

import polars as pl

from coach.ingest.ncu_common import canonical_metrics, devices, launch_config
from coach.model import KernelProfile, make_kernel_profile


def without_metrics(profile: KernelProfile, names: Iterable[str] = (), patterns: Iterable[str] = (),
                    label: str = "synthetic-variant") -> KernelProfile:
    """``profile`` as if its report had not collected the metrics ``names`` nor those matching a regex of
    ``patterns``; its source path says it is a synthetic variant."""
    names, patterns = list(names), list(patterns)
    gone = pl.col("metric").is_in(names)
    if patterns:
        gone = gone | pl.col("metric").str.contains("|".join(patterns))
    metrics = profile.metrics.filter(~gone)
    aggregates = metrics.filter(pl.col("instance").is_null())
    identity = profile.launches.select("launch_id", "kernel_name", "demangled_name", "mangled_name", "nvtx_range")
    launches = (identity.join(launch_config(aggregates), on="launch_id", how="left", maintain_order="left")
                .join(canonical_metrics(aggregates), on="launch_id", how="left", maintain_order="left"))
    return make_kernel_profile(dataclasses.replace(profile.source, path=f"{label}.ncu-rep"),
                               launches=launches, metrics=metrics, rules=profile.rules, devices=devices(aggregates))
