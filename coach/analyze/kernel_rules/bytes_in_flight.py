"""Too few bytes in flight: a memory-bound kernel that cannot fill the DRAM pipe.

Little's law: sustained bandwidth = bytes in flight / latency. To stream at the DRAM peak with a
latency L, the SMs together must keep peak x L bytes requested and not yet returned. A thread that
issues one 4-byte load and waits for it keeps 4 bytes in flight, however many threads are
resident; wide (16-byte) loads and several independent loads per thread multiply that. The latency
used here is measured in the launch itself: the warp-cycles spent waiting on L1TEX data per global
load.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_bytes, fmt_rate, fmt_time
from coach.analyze.kernel_rules.speed_of_light import AT_ROOF_PCT

SPEC = RuleSpec(
    id="too-few-bytes-in-flight",
    name="Too few bytes in flight on a memory-bound kernel",
    category=Bottleneck.LATENCY,
    table="launches",
    requires=("duration_ns", "dram_throughput_pct", "memory_throughput_pct", "sm_throughput_pct", "dram_read_bytes"),
    optional=("stall_long_scoreboard", "warp_cycles_per_issued_inst", "warp_inst_executed", "global_load_requests",
              "sm_frequency_hz", "achieved_occupancy_pct", "dram_peak_bytes_per_s", "sm_count",
              "device_max_warps_per_sm", "dram_bytes"),
    doc="Low DRAM throughput with warps waiting on memory: Little's law with the measured latency.",
)

# The same mark the root uses for a unit at its roof (Nsight Compute's 80%): below it the DRAM has
# bandwidth to spare.
DRAM_PCT = AT_ROOF_PCT
# Warps must mostly be waiting on memory for more bytes in flight to help: the long-scoreboard
# stall above Nsight Compute's 30% share mark (CPIStall rule).
LONG_SCOREBOARD_SHARE = 0.30


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    dram, mem, sm = launch["dram_throughput_pct"], launch["memory_throughput_pct"], launch["sm_throughput_pct"]
    if dram >= DRAM_PCT or mem < sm or dram < mem - 1.0:  # DRAM must be the busiest unit, of a memory-leaning kernel
        return []
    lsb, cycles = launch.get("stall_long_scoreboard"), launch.get("warp_cycles_per_issued_inst")
    share = lsb / cycles if lsb is not None and cycles else None
    if share is not None and share < LONG_SCOREBOARD_SHARE:
        return []
    read_bw, peak = launch.get("dram_read_bandwidth_bytes_per_s"), launch.get("dram_peak_bytes_per_s")
    factor = 100.0 / dram if dram > 0 else None
    message = f"DRAM runs at {dram:.0f}% of peak"
    if read_bw is not None:
        message += f", reading at {fmt_rate(read_bw)}"
    message += "."
    if share is not None:
        message += f" Warps spend {100 * share:.0f}% of their cycles waiting on memory data."
    wait, in_flight = launch.get("memory_wait_ns_per_load"), launch.get("dram_read_bytes_in_flight_per_sm")
    per_thread = launch.get("bytes_in_flight_per_thread")
    evidence = [ev("dram_throughput_pct", dram, "%", f">= {DRAM_PCT:.0f}%", DRAM_PCT)]
    details: dict[str, Any] = {"factor_needed": factor}
    if wait is not None and in_flight is not None:
        message += (f" Each global load waits {wait:.0f} ns on average; by Little's law the SMs kept "
                    f"{fmt_bytes(in_flight)} each in flight")
        message += f" ({per_thread:.1f} bytes per resident thread)." if per_thread is not None else "."
        evidence += [ev("memory_wait_ns_per_load", wait, "ns", "a few hundred ns unloaded"),
                     ev("dram_read_bytes_in_flight_per_sm", in_flight, "byte")]
        if peak and launch.get("dram_read_fraction") is not None and launch.get("sm_count"):
            needed = peak * launch["dram_read_fraction"] * wait * 1e-9 / launch["sm_count"]
            message += f" Reading at peak with that latency needs about {fmt_bytes(needed)} per SM."
            details["needed_bytes_in_flight_per_sm"] = needed
        if per_thread is not None:
            evidence.append(ev("bytes_in_flight_per_thread", per_thread, "byte", "16 or more (a float4 load, or several loads)"))
            details["bytes_in_flight_per_thread"] = per_thread
    if share is not None:
        evidence.append(ev("stall_long_scoreboard", lsb, "cycle/inst", "a small share of warp_cycles_per_issued_inst",
                           LONG_SCOREBOARD_SHARE * cycles))
    saving = ctx.cap(launch["duration_ns"] * (1 - dram / 100), launch)
    more = f"{factor:.1f}x" if factor else "several times"
    return [finding(
        SPEC, launch, title=f"Too few bytes in flight: DRAM at {dram:.0f}% with warps waiting on memory",
        message=message,
        next_step=(f"Keep {more} more bytes in flight per thread: 16-byte vector loads (float4 / int4), a grid-stride "
                   "loop unrolled so each thread has several independent loads outstanding before it uses any, or "
                   "asynchronous copies (cp.async, TMA) into shared memory; keep occupancy from dropping."),
        evidence=evidence, saving_ns=saving,
        gain_model=(f"time x (1 - {dram:.0f}%): DRAM at its peak with the same bytes, capped at the gap to the roof; "
                    f"saves {fmt_time(saving)}"),
        details=details,
    )]
