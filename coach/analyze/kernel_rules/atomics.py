"""Global atomics contention: many threads updating the same few addresses.

Global atomics are executed at the L2 slices; updates to one address are serialised there, so a
histogram with few bins or a single counter turns thousands of threads into a queue. The report
does not count conflicts directly: a large share of atomic requests with the L2 busy while DRAM is
quiet (the traffic stays on a few hot lines) is the signature.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_count, fmt_time

SPEC = RuleSpec(
    id="atomics-contention",
    name="Global atomics contention",
    category=Bottleneck.ATOMICS,
    table="launches",
    requires=("duration_ns", "global_atomic_requests", "global_load_requests", "global_store_requests"),
    optional=("l2_atomic_requests", "l2_throughput_pct", "dram_throughput_pct", "stall_lg_throttle",
              "memory_throughput_pct"),
    doc="Atomic requests as a share of global requests; L2 busy while DRAM idles.",
)

# One global request in ten being an atomic makes atomics a structural part of the kernel's memory
# traffic rather than a final reduction step.
ATOMIC_SHARE = 0.10
# Hot-line contention keeps the L2 busy (above the root's 60% latency mark) while DRAM stays below
# half of that: the updates do not leave the cache.
L2_BUSY_PCT = 60.0
DRAM_QUIET_PCT = 30.0


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    share = launch.get("atomic_request_fraction")
    if share is None or share < ATOMIC_SHARE:
        return []
    l2, dram = launch.get("l2_throughput_pct"), launch.get("dram_throughput_pct")
    hot = l2 is not None and dram is not None and l2 >= L2_BUSY_PCT and dram < DRAM_QUIET_PCT
    weight = ctx.memory_weight(launch)
    saving = launch["duration_ns"] * weight * share
    message = (f"{fmt_count(launch['global_atomic_requests'])} atomic requests make up {100 * share:.0f}% of the "
               "kernel's global memory requests.")
    if l2 is not None and dram is not None:
        message += f" L2 throughput is {l2:.0f}% of peak against DRAM {dram:.0f}%"
        message += ": the updates queue on a few hot cache lines." if hot else "."
    evidence = [ev("atomic_request_fraction", share, "", "a final reduction step only", ATOMIC_SHARE)]
    if l2 is not None:
        evidence.append(ev("l2_throughput_pct", l2, "%", "", L2_BUSY_PCT))
    if dram is not None:
        evidence.append(ev("dram_throughput_pct", dram, "%", "", DRAM_QUIET_PCT))
    return [finding(
        SPEC, launch, title=f"Global atomics: {100 * share:.0f}% of memory requests" + (", contended" if hot else ""),
        message=message,
        next_step=("Privatise: accumulate per block in shared memory (shared atomics are fast and spread over "
                   "banks), or per warp with __reduce_add_sync / warp shuffles, then issue one global atomic per "
                   "block and bin."),
        evidence=evidence, saving_ns=saving,
        gain_model=(f"time x {weight:.2f} (memory share) x atomic share of requests ({100 * share:.0f}%): the atomics "
                    f"moved on-chip; saves {fmt_time(saving)}"),
        details={"atomic_share": share, "hot_lines": hot},
    )]
