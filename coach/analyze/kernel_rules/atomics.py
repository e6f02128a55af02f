"""Global atomics contention: many threads updating the same few addresses.

Global atomics are executed at the L2 slices; updates to one address are serialised there, so a
histogram with few bins or a single counter turns thousands of threads into a queue. The report
does not count conflicts directly: a large share of atomic requests with DRAM quiet is the
signature, together with either the L2 busy (the hot lines' traffic) or no unit busy at all. The
second form is the common one: a few hot lines live in a few of the L2's slices, so the averages
over all slices stay low while the kernel waits on the queue.

Contended, the fix (privatise per block in shared memory, one global atomic per bin and block)
removes the global updates: what is left is a kernel that streams its input, so the saving is the
time beyond the launch's DRAM bytes at peak bandwidth, which may exceed the root's gap.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_count, fmt_time
from coach.analyze.kernel_rules.speed_of_light import LATENCY_PCT

SPEC = RuleSpec(
    id="atomics-contention",
    name="Global atomics contention",
    category=Bottleneck.ATOMICS,
    table="launches",
    requires=("duration_ns", "global_atomic_requests", "global_load_requests", "global_store_requests"),
    optional=("l2_atomic_requests", "l1_to_l2_read_sectors", "l1_to_l2_write_sectors", "l2_throughput_pct", "dram_throughput_pct", "stall_lg_throttle",
              "memory_throughput_pct", "sm_throughput_pct", "dram_bytes", "dram_peak_bytes_per_s"),
    doc="Atomic requests as a share of global requests; L2 busy while DRAM idles.",
)

# One global request in ten being an atomic makes atomics a structural part of the kernel's memory
# traffic rather than a final reduction step.
ATOMIC_SHARE = 0.10
# Hot-line contention keeps the L2 busy (above the root's 60% latency mark) while DRAM stays below
# half of that: the updates do not leave the cache.
L2_BUSY_PCT = 60.0
DRAM_QUIET_PCT = 30.0
# Nothing busy: both halves of the speed of light below Nsight Compute's latency mark (the root's
# LATENCY_PCT). A kernel that issues atomics for this share of its requests, moves few DRAM bytes
# and keeps no unit busy is waiting, and the only queue it feeds is the atomics'.
IDLE_PCT = LATENCY_PCT


# A request moves at most one 32-byte sector per thread of the warp: 32 sectors. Where L2's sector
# counts of L1TEX traffic are in the report, atomics under ATOMIC_SHARE of them even at that maximum
# are not a structural part of the kernel's memory traffic, whatever their share of the LSU's
# requests: a kernel that moves its data with the tensor memory accelerator (TMA) issues few LSU
# requests or none (the H200's nvjet GEMMs: 766 atomics, 0 loads or stores, 223 million L2 sectors;
# tests/data/wild_ncu), and a handful of atomics for its tile scheduler are then "100%" of them.
MAX_SECTORS_PER_REQUEST = 32.0


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    share = launch.get("atomic_request_fraction")
    if share is None or share < ATOMIC_SHARE:
        return []
    l2_sectors = (launch.get("l1_to_l2_read_sectors") or 0.0) + (launch.get("l1_to_l2_write_sectors") or 0.0)
    if l2_sectors and launch["global_atomic_requests"] * MAX_SECTORS_PER_REQUEST < ATOMIC_SHARE * l2_sectors:
        return []
    l2, dram = launch.get("l2_throughput_pct"), launch.get("dram_throughput_pct")
    busiest = launch.get("sol_busiest_pct")
    l2_busy = l2 is not None and l2 >= L2_BUSY_PCT
    idle = busiest is not None and busiest < IDLE_PCT
    hot = dram is not None and dram < DRAM_QUIET_PCT and (l2_busy or idle)
    weight = ctx.memory_weight(launch)
    if hot:
        floor = launch.get("dram_floor_ns")
        left = floor if floor is not None else launch["duration_ns"] * dram / 100
        saving = max(0.0, launch["duration_ns"] - left)
        gain_model = (f"time - DRAM bytes at peak ({fmt_time(left)}): privatised, the updates stay on chip and the "
                      f"kernel streams its input; saves {fmt_time(saving)}")
    else:
        saving = launch["duration_ns"] * weight * share
        gain_model = (f"time x {weight:.2f} (memory share) x atomic share of requests ({100 * share:.0f}%): the "
                      f"atomics moved on-chip; saves {fmt_time(saving)}")
    message = (f"{fmt_count(launch['global_atomic_requests'])} atomic requests make up {100 * share:.0f}% of the "
               "kernel's global memory requests.")
    levels = [f"{name} throughput is {pct:.0f}% of peak" for name, pct in (("L2", l2), ("DRAM", dram)) if pct is not None]
    if levels:
        message += " " + " and ".join(levels)
    if hot and l2_busy:
        message += ": the updates queue on a few hot cache lines."
    elif hot:
        message += (f", and no unit is above {IDLE_PCT:.0f}% of its peak: the kernel waits on updates that queue on a "
                    "few hot cache lines, held by a few L2 slices and so invisible in the averages over all of them.")
    elif levels:
        message += "."
    evidence = [ev("atomic_request_fraction", share, "", "a final reduction step only", ATOMIC_SHARE)]
    if l2 is not None:
        evidence.append(ev("l2_throughput_pct", l2, "%", "", L2_BUSY_PCT))
    if dram is not None:
        evidence.append(ev("dram_throughput_pct", dram, "%", "", DRAM_QUIET_PCT))
    if busiest is not None:
        evidence.append(ev("sol_busiest_pct", busiest, "%", "", IDLE_PCT))
    return [finding(
        SPEC, launch, title=f"Global atomics: {100 * share:.0f}% of memory requests" + (", contended" if hot else ""),
        message=message,
        next_step=("Privatise: accumulate per block in shared memory (shared atomics are fast and spread over "
                   "banks), or per warp with __reduce_add_sync / warp shuffles, then issue one global atomic per "
                   "block and bin."),
        evidence=evidence, saving_ns=saving, gain_model=gain_model,
        details={"atomic_share": share, "hot_lines": hot},
    )]
