"""Unfused chain: consecutive memory-bound kernels that pass same-sized data to each other through DRAM.

A chain of element-wise operations run as separate kernels (``y = gelu(x * a + b) * c`` as four
PyTorch ops) writes each intermediate to DRAM and reads it back in the next kernel. Each kernel can
run at the DRAM roof and look healthy on its own: the waste is the round trips between them, which no
rule over one launch can see. This rule reads the launches in order. A run of two or more consecutive
launches on one stream, each streaming through DRAM (its busiest memory unit, at 60% of peak or more),
each with coalesced access (so its bytes are not wasted some other way), each writing as many bytes as
the one before and reading at least that many, is a candidate for fusion. The SM side is not asked
about: an activation such as GELU can keep the SM as busy as the DRAM and still pay for its round trip.

Nsight Compute does not record where a kernel's input came from, so the finding states its
condition: the saving holds if each kernel reads what the one before wrote, as a chain of
element-wise operations does. Fused, the chain reads its inputs and writes its last output once;
every link's intermediate (written, then read back) disappears. At the bandwidth the chain achieved,
the saving is its time times the share of its DRAM bytes that were intermediates.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_metrics import SECTOR_BYTES
from coach.analyze.kernel_rules._common import cannot_decide, ev, finding, fmt_bytes, fmt_time
from coach.analyze.kernel_rules.speed_of_light import LATENCY_PCT, UNIT_TOLERANCE_PCT
from coach.analyze.kernel_rules.uncoalesced import EXCESS_RATIO

SPEC = RuleSpec(
    id="unfused-elementwise-chain",
    name="Unfused chain of memory-bound kernels",
    category=Bottleneck.DRAM,
    table="launches",
    requires=("duration_ns", "dram_bytes", "dram_read_bytes", "dram_write_bytes", "memory_throughput_pct",
              "dram_throughput_pct", "global_load_sectors", "global_store_sectors"),
    optional=("stream_id", "ideal_load_sectors", "ideal_store_sectors", "kernel_name"),
    doc="Consecutive DRAM-bound launches writing same-sized outputs: the intermediates' round trips.",
)

#: Equal-sized outputs written contiguously cover the same number of 32-byte sectors exactly; 1%
#: allows for a ragged last request or a small side output, not for a tensor of another shape.
SAME_SIZE_TOLERANCE = 0.01
#: A chain is at least two kernels: one intermediate passed through DRAM.
MIN_KERNELS = 2
#: A member streams through DRAM at Nsight Compute's latency mark or above (the root's LATENCY_PCT):
#: below it the kernel waits more than it moves bytes, and its bytes are not what sets its time.
STREAMING_PCT = LATENCY_PCT


def apply_profile(wide: pl.DataFrame) -> list[Finding]:
    """One finding per chain among ``wide``'s launches (launches with derived columns, any order), and
    a note where some launches lack what membership is decided from: those cannot join a chain."""
    if wide.height < MIN_KERNELS:
        return []
    lacking = {c: wide.height if c not in wide.columns else wide[c].null_count() for c in SPEC.requires}
    lacking = {c: n for c, n in lacking.items() if n}
    notes = [_not_checked(lacking, wide.height)] if lacking else []
    if any(c not in wide.columns for c in SPEC.requires):
        return notes
    chains = _chains(wide)
    return [_finding(row) for row in chains.iter_rows(named=True)] + notes


def _not_checked(lacking: dict[str, int], launches: int) -> Finding:
    from coach.analyze.kernel_rules import ncu_metric_names  # noqa: PLC0415 - the package imports this module

    worst = max(lacking.values())
    some = "any" if worst == launches else f"{worst} of the {launches}"
    return cannot_decide(
        SPEC, {"kernel_name": f"{launches} launches", "launch_id": None},
        f"{', '.join(sorted(lacking))} {'is' if len(lacking) == 1 else 'are'} not in this report for {some} "
        "launches, which then cannot be judged as members of a chain",
        [" and ".join(ncu_metric_names(c) for c in sorted(lacking))])


def _chains(wide: pl.DataFrame) -> pl.DataFrame:
    c = pl.col
    store_bytes = c("global_store_sectors") * SECTOR_BYTES
    coalesced = [pl.coalesce(c(f"global_{op}_sectors") <= EXCESS_RATIO * c(f"ideal_{op}_sectors"), pl.lit(True))
                 for op in ("load", "store") if f"ideal_{op}_sectors" in wide.columns]
    member = (
        (c("dram_throughput_pct") >= STREAMING_PCT)
        & (c("dram_throughput_pct") >= c("memory_throughput_pct") - UNIT_TOLERANCE_PCT)
        & (c("global_store_sectors") > 0)
        & pl.all_horizontal(coalesced or [pl.lit(True)])
    ).fill_null(False)
    stream = c("stream_id") if "stream_id" in wide.columns else pl.lit(0)

    def prev(expr: pl.Expr) -> pl.Expr:
        return expr.shift(1)

    link = (
        c("member") & prev(c("member"))
        & (stream.fill_null(-1) == prev(stream.fill_null(-1)))
        & ((store_bytes - prev(store_bytes)).abs() <= SAME_SIZE_TOLERANCE * prev(store_bytes))
        & (c("global_load_sectors") >= (1 - SAME_SIZE_TOLERANCE) * prev(c("global_store_sectors")))
    ).fill_null(False)
    name = c("kernel_name").fill_null("?") if "kernel_name" in wide.columns else pl.lit("?")
    return (
        wide.lazy()
        .sort("launch_id")
        .with_columns(member=member, name=name)
        .with_columns(link=link)
        .with_columns(chain=(~c("link")).cum_sum(),
                      # an intermediate is written by the launch before and read back by this one
                      intermediate_bytes=pl.when(c("link")).then(2 * prev(store_bytes)).otherwise(0.0))
        .group_by("chain")
        .agg(kernels=pl.len(), first_launch=c("launch_id").first(), last_launch=c("launch_id").last(),
             names=c("name"), duration_ns=c("duration_ns").sum(), dram_bytes=c("dram_bytes").sum(),
             intermediate_bytes=c("intermediate_bytes").sum(), first_read=c("dram_read_bytes").first(),
             last_write=c("dram_write_bytes").last(), min_dram_pct=c("dram_throughput_pct").min())
        .filter(c("kernels") >= MIN_KERNELS)
        .with_columns(fused_bytes=pl.max_horizontal(c("dram_bytes") - c("intermediate_bytes"),
                                                   c("first_read") + c("last_write")))
        .with_columns(saving_ns=c("duration_ns") * (1 - c("fused_bytes") / c("dram_bytes")).clip(0.0, 1.0))
        .sort("first_launch")
        .collect()
    )


def _finding(chain: dict[str, Any]) -> Finding:
    n, total_ns, saving = chain["kernels"], chain["duration_ns"], chain["saving_ns"]
    scope = f"{n} kernels, launches {chain['first_launch']}-{chain['last_launch']}"
    path = " -> ".join(chain["names"])
    message = (f"{n} consecutive launches ({path}) each stream their data through DRAM at {chain['min_dram_pct']:.0f}% "
               f"of peak or more and write outputs of one size: {fmt_bytes(chain['dram_bytes'])} moved in "
               f"{fmt_time(total_ns)}. If each reads what the one before wrote, as a chain of element-wise operations "
               f"does, {fmt_bytes(chain['intermediate_bytes'])} of that are intermediates written and read back; "
               f"one fused kernel moves about {fmt_bytes(chain['fused_bytes'])}.")
    return finding(
        SPEC, {"kernel_name": scope, "launch_id": None, "duration_ns": total_ns},
        title=f"Unfused chain of {n} memory-bound kernels: {fmt_bytes(chain['intermediate_bytes'])} of round trips",
        message=message,
        next_step=("Fuse the chain into one kernel that loads each input once, keeps the intermediates in registers "
                   "and writes only the result: torch.compile (Inductor fuses element-wise chains), a Triton kernel, "
                   "or a CUDA kernel; in a library, an epilogue fused into the producing GEMM or normalisation."),
        evidence=[ev("chain_kernels", n, "kernel", "1 (one pass over the data)", MIN_KERNELS),
                  ev("chain_dram_bytes", chain["dram_bytes"], "byte"),
                  ev("intermediate_bytes", chain["intermediate_bytes"], "byte", "0: intermediates stay on chip"),
                  ev("fused_dram_bytes", chain["fused_bytes"], "byte", "the chain's inputs read and output written once"),
                  ev("min_dram_throughput_pct", chain["min_dram_pct"], "%", "each kernel near the DRAM roof")],
        saving_ns=saving,
        gain_model=(f"chain time x intermediate share of its DRAM bytes, at the bandwidth it achieved: "
                    f"{fmt_time(total_ns)} x (1 - {fmt_bytes(chain['fused_bytes'])} / {fmt_bytes(chain['dram_bytes'])}); "
                    f"saves {fmt_time(saving)}"),
        details={"kernels": n, "launch_ids": [chain["first_launch"], chain["last_launch"]],
                 "intermediate_bytes": chain["intermediate_bytes"], "fused_bytes": chain["fused_bytes"]},
    )
