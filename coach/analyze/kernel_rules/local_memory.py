"""Register spills and local-memory traffic.

Local memory is per-thread memory that lives in device memory, cached in L1 and L2 (CUDA C++ Best
Practices Guide, "Local Memory"). The compiler puts a variable there when it runs out of registers
(a spill) or when an array is indexed with a value it cannot resolve at compile time. Either way
every access is memory traffic the algorithm did not ask for.

The sector counts decide without the kernel's duration (a ``--metrics`` run of a few counters has
none); the gain is then not estimated.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_count, fmt_time

SPEC = RuleSpec(
    id="local-memory-spills",
    name="Register spills / local-memory traffic",
    category=Bottleneck.LOCAL_MEMORY,
    table="launches",
    requires=("local_load_sectors", "local_store_sectors"),
    optional=("duration_ns", "global_load_sectors", "global_store_sectors", "registers_per_thread", "local_mem_per_thread_bytes",
              "stall_lg_throttle", "memory_throughput_pct"),
    doc="Local-memory sectors as a share of all L1 global and local traffic.",
)

# Below 1% of the kernel's L1 traffic the saving from removing it is under 1% of the time even on a
# memory-bound kernel, which is within the run-to-run spread of a replayed profile.
LOCAL_FRACTION = 0.01  # without global counts to weigh against, any local traffic is reported


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    local = launch.get("local_sectors") or 0.0
    if local <= 0:
        return []
    frac = launch.get("local_traffic_fraction")
    if frac is not None and frac < LOCAL_FRACTION:
        return []
    weight = ctx.memory_weight(launch)
    duration = launch.get("duration_ns")
    saving = None if frac is None or duration is None else duration * weight * frac
    regs = launch.get("registers_per_thread")
    message = (f"The kernel moves {fmt_count(local)} local-memory sectors ({fmt_count(launch['local_load_sectors'])} "
               f"loaded, {fmt_count(launch['local_store_sectors'])} stored)")
    message += f", {100 * frac:.1f}% of its L1 global and local traffic." if frac is not None else "."
    if regs is not None:
        message += f" It uses {regs:.0f} registers per thread."
    evidence = [ev("local_sectors", local, "sector", "0 (everything in registers)", 0.0)]
    if frac is not None:
        evidence.append(ev("local_traffic_fraction", frac, "", "0", LOCAL_FRACTION))
    if launch.get("stall_lg_throttle") is not None:
        evidence.append(ev("stall_lg_throttle", launch["stall_lg_throttle"], "cycle/inst", "near 0"))
    return [finding(
        SPEC, launch, title=f"Local-memory traffic (register spills or a dynamically indexed array): {fmt_count(local)} sectors",
        message=message,
        next_step=("Compile with -Xptxas -v to see the spill bytes per function; index per-thread arrays only with "
                   "compile-time constants (unrolled loops) so they stay in registers; relax __launch_bounds__ or "
                   "maxrregcount if they force spills; move large per-thread arrays to shared memory."),
        evidence=evidence, saving_ns=saving,
        gain_model=("time x memory share x local/(local + global) sectors: the traffic gone if the values stay in "
                    f"registers; saves {fmt_time(saving)}" if saving is not None else
                    "not estimated: no global sector counts to weigh the local traffic against" if frac is None else
                    "not estimated: the report has no duration (gpu__time_duration.sum)"),
        details={"local_sectors": local, "local_fraction": frac},
    )]
