"""The root of the rule tree: which half of the GPU bounds the launch, and how close it runs to its roof.

Like Nsight Compute's SOLBottleneck rule it reads the compute (SM) and memory throughputs as % of
peak, and its verdict decides which subtrees of causes are looked into: memory causes for a
memory-side launch, compute causes for a compute-side one, and latency causes (occupancy, stalls,
bytes in flight) whenever the busiest unit is below its roof. Unlike SOLBottleneck it names the
bound even when throughput is low: a copy at 54% of DRAM peak is still a DRAM-bound kernel, one that
is latency-limited, and its floor is the DRAM time.

The regime is all the speed-of-light throughputs say. Below the roof, what holds the kernel back (a
strided access, atomics on one address, too few bytes in flight, stalls on a pipe) is for the cause
rules to name; where none of them could check (a report of the speed-of-light section alone, as many
pasted reports are: tests/data/wild_public/cts_hw5_atomic_red_rtx3070_head.output, an atomicAdd per
element at 0.9% of the SM), the root's finding states the regime and the busiest unit, calls no cause,
and a note names the sections that would (``cause_not_checked``, called by the registry once the
rules have run).

The gap to the roof (time x (1 - the busiest unit's share of peak)) is the most a fix that keeps the
bytes and instructions can save. It is an upper bound, and where nothing narrows it, it is printed as
one (``findings.UPPER_BOUND``): on a kernel shorter than the launch rule's ``SHORT_KERNEL_NS``, whose
throughputs are low in part because the grid's start and drain are much of its time (ncu reports of
PyTorch's 3-7 us kernels at 6-39% of peak read "saves 88%" as if a change inside them would win it), and
where the cause is not checked.
"""

from __future__ import annotations

from typing import Any

from dataclasses import replace

from coach.analyze.findings import UPPER_BOUND, Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import KernelContext, Verdict, ev, finding, fmt_bytes, fmt_count, fmt_pct, fmt_rate, fmt_time
from coach.analyze.kernel_rules.launch_bound import SHORT_KERNEL_NS

SPEC = RuleSpec(
    id="speed-of-light",
    name="Speed of light (bound and distance to the roof)",
    category=Bottleneck.LATENCY,  # replaced by the verdict's class
    table="launches",
    requires=("duration_ns", "sm_throughput_pct", "memory_throughput_pct"),
    optional=("dram_throughput_pct", "l1_throughput_pct", "l2_throughput_pct", "fma_pipe_active_pct",
              "tensor_pipe_active_pct", "fp64_pipe_active_pct", "xu_pipe_active_pct", "lsu_pipe_active_pct",
              "issue_active_pct", "dram_bytes", "flop", "dram_peak_bytes_per_s"),
    doc="Compute vs memory throughput against peak; names the limiting unit and the gap to its roof.",
)

# Nsight Compute's SOLBottleneck thresholds (sections/SpeedOfLight rule): above 80% of peak a unit is
# "high throughput" (at its roof); below 60% on both halves the launch "typically indicates latency
# issues"; a 10-point lead makes one half the heavier one.
AT_ROOF_PCT = 80.0
LATENCY_PCT = 60.0
BALANCE_PCT = 10.0
# gpu__compute_memory_throughput is the maximum of its breakdown, gpu__dram_throughput among them: the
# memory throughput equals the DRAM throughput when DRAM is the busiest memory unit. One point
# allows for the rounding of the two values in older reports.
UNIT_TOLERANCE_PCT = 1.0

_PIPES: dict[str, tuple[str, Bottleneck]] = {
    "fma_pipe_active_pct": ("FMA pipe", Bottleneck.FMA),
    "tensor_pipe_active_pct": ("tensor pipe", Bottleneck.TENSOR),
    "fp64_pipe_active_pct": ("FP64 pipe", Bottleneck.FP64),
    "xu_pipe_active_pct": ("special-function (XU) pipe", Bottleneck.SFU),
    "lsu_pipe_active_pct": ("load/store (LSU) pipe", Bottleneck.MEMORY_ACCESS),
}

SUBTREES_ALWAYS = "launch"

# A load/store pipe this idle issues next to none of the L1's traffic: a kernel with the tensor pipe
# busy and the LSU pipe under this moves its tiles with TMA and feeds the tensor cores from shared
# memory (Hopper's wgmma reads both operands there), so its L1 throughput is the tensor pipe's own
# operand traffic. Measured on cuBLAS's nvjet bf16 GEMM on the H200 (tests/data/wild_ncu/
# healthy_gemm.full.ncu-rep): tensor pipe 96.9%, L1 98.1%, LSU pipe 0.8%; Nsight Compute's
# HighPipeUtilization rule names the tensor sub-pipeline as the bottleneck there.
LSU_IDLE_PCT = 10.0


def verdict(launch: dict[str, Any]) -> Verdict | None:
    """The root's reading of one launch; without the speed-of-light metrics, the reading of a unit the
    report measures at its roof (``unit_verdict``), or None."""
    sm, mem = launch.get("sm_throughput_pct"), launch.get("memory_throughput_pct")
    if sm is None or mem is None:
        return unit_verdict(launch)
    busiest = max(sm, mem)
    regime = "at-roof" if busiest >= AT_ROOF_PCT else "latency" if busiest < LATENCY_PCT else "below-roof"
    side = "balanced" if abs(sm - mem) < BALANCE_PCT else "memory" if mem > sm else "compute"
    lean = _lean(launch, side)
    unit, category = _memory_unit(launch) if lean == "memory" else _compute_pipe(launch)
    if side == "balanced" and regime == "latency":
        category, unit = Bottleneck.LATENCY, "latency"
    subtrees = {SUBTREES_ALWAYS}
    subtrees |= {"memory", "compute"} if side == "balanced" else {side}
    if regime != "at-roof":
        subtrees.add("latency")
    return Verdict(side=side, regime=regime, category=category, unit=unit, busiest_pct=busiest,
                   gap_ns=launch.get("sol_gap_ns"), subtrees=frozenset(subtrees))


#: The units whose throughput stands in for a missing half of the speed of light, with their class.
#: DRAM's is one of the terms the memory throughput is the maximum of; L1's and the pipes' are shares
#: of the SM's active cycles, so at the roof they say the unit is saturated while the SMs run (what
#: the SMs' idle time costs, the tail and launch rules look into).
_MEMORY_UNITS: dict[str, tuple[str, Bottleneck]] = {
    "dram_throughput_pct": ("DRAM", Bottleneck.DRAM),
    "l1_throughput_pct": ("L1", Bottleneck.CACHE),
    "l2_throughput_pct": ("L2", Bottleneck.CACHE),
}
#: L2's throughput counts as at the roof only this many points above AT_ROOF_PCT: lts__throughput
#: takes the maximum over more of L2's sub-units than the speed-of-light memory throughput does, and
#: reads up to 11.4 points above it on the H200 reports of tests/data and traces/h200 (88.1% against
#: 76.8% on traces/h200/scenario-08/fixed, 65% against 54% on the coalesced copy of
#: tests/data/ncu_strided_copy); at 92% or more it never stood beside a memory throughput below 80%.
L2_MARGIN_PCT = 12.0
#: ... and the compute half's: the pipes, and the issue slots (a scheduler issuing nearly every cycle
#: is not waiting on latency; Nsight Compute's sm__throughput takes it among its terms).
_COMPUTE_UNITS: dict[str, tuple[str, Bottleneck]] = {**_PIPES, "issue_active_pct": ("issue slots", Bottleneck.FMA)}


def unit_verdict(launch: dict[str, Any]) -> Verdict | None:
    """Without the speed-of-light throughputs (a ``--section`` or ``--metrics`` collection without
    SpeedOfLight; the tables set), a unit the report does measure at its roof still names a bound.

    Each half is its speed-of-light throughput where the report has it, else its busiest measured
    unit: DRAM, L1 or L2 for memory, a pipe or the issue slots for compute. A unit at or above ``AT_ROOF_PCT`` bounds
    the launch whatever the unmeasured units do, so latency causes are not looked into, and the
    gap to that unit's roof bounds what a fix can save that keeps the bytes and instructions (a
    busier unmeasured one would make the gap smaller, never larger). A half with nothing measured
    keeps its causes looked into. Below the roof nothing is decided: the busiest unit may be one the
    report does not measure, and latency cannot be told from it; the root then says what it needs.
    """
    # half -> (unit, class, % of peak, % on the roof's scale, the column read)
    halves: dict[str, tuple[str, Bottleneck, float, float, str]] = {}
    sm, mem = launch.get("sm_throughput_pct"), launch.get("memory_throughput_pct")
    memory_units = dict(_MEMORY_UNITS)
    lsu, tensor = launch.get("lsu_pipe_active_pct"), launch.get("tensor_pipe_active_pct")
    if tensor is not None and tensor >= AT_ROOF_PCT and lsu is not None and lsu < LSU_IDLE_PCT:
        memory_units.pop("l1_throughput_pct")  # the tensor pipe's own operand traffic (see LSU_IDLE_PCT)
    if mem is not None:
        halves["memory"] = (*_memory_unit(launch), mem, mem, "memory_throughput_pct")
    elif unit := _busiest(launch, memory_units):
        halves["memory"] = unit
    if sm is not None:
        halves["compute"] = (*_compute_pipe(launch), sm, sm, "sm_throughput_pct")
    elif unit := _busiest(launch, _COMPUTE_UNITS):
        halves["compute"] = unit
    if not halves:
        return None
    side = max(halves, key=lambda h: halves[h][3])
    unit, category, busiest, scaled, column = halves[side]
    if scaled < AT_ROOF_PCT:
        return None
    other = halves.get("compute" if side == "memory" else "memory")
    if other is not None and scaled - other[3] < BALANCE_PCT:
        side = "balanced"
    subtrees = {SUBTREES_ALWAYS, "memory", "compute"} if side == "balanced" or other is None else {SUBTREES_ALWAYS, side}
    duration = launch.get("duration_ns")
    return Verdict(side=side, regime="at-roof", category=category, unit=unit, busiest_pct=busiest,
                   gap_ns=None if duration is None else duration * (1 - min(busiest, 100.0) / 100),
                   subtrees=frozenset(subtrees), measured_by=column)


def _busiest(launch: dict[str, Any], units: dict[str, tuple[str, Bottleneck]]
             ) -> tuple[str, Bottleneck, float, float, str] | None:
    """The unit among ``units`` closest to its roof, on the roof's scale (``L2_MARGIN_PCT``)."""
    known = {c: launch[c] for c in units if launch.get(c) is not None}
    if not known:
        return None
    scaled = {c: v - L2_MARGIN_PCT if c == "l2_throughput_pct" else v for c, v in known.items()}
    col = max(scaled, key=scaled.__getitem__)
    return (*units[col], known[col], scaled[col], col)


def apply_partial(launch: dict[str, Any], ctx: KernelContext, missing: list[str]) -> list[Finding]:
    """What the root says where its requirements are missing (beside the note that says so): the bound
    a unit at its roof names (``unit_verdict``), or nothing."""
    v = ctx.verdict
    if v is None or v.measured_by is None or launch.get("duration_ns") is None:
        return []
    pct = f"{v.busiest_pct:.0f}%"
    halves = {"sm_throughput_pct": "compute (SM)", "memory_throughput_pct": "memory"}
    lacking = " and ".join(halves[c] for c in missing if c in halves)
    message = (f"The report has no speed-of-light {lacking} throughput; of what it measures, the {v.unit} runs at "
               f"{v.busiest_pct:.1f}% of its peak ({v.measured_by}), at its roof (>= {AT_ROOF_PCT:.0f}%): it bounds "
               "this kernel, unless a unit the report does not measure is busier still. Latency causes are not "
               "looked into: a unit at its roof is not waiting on latency.")
    what = f"{v.unit}-bound" if v.side != "compute" else f"Compute-bound on the {v.unit}"
    return [finding(
        SPEC, launch, category=v.category, title=f"{what} at {pct} of peak (without the speed-of-light section)",
        message=message,
        next_step=("Move fewer bytes through it: access efficiency (sectors per request), reuse in shared memory or L2, "
                   "fusion, narrower types." if v.side != "compute" else
                   f"Issue fewer instructions on the {v.unit}: a faster pipe, cheaper math or less redundant work.")
        + " Collect the SpeedOfLight section (ncu --section SpeedOfLight, in every set) for the full reading.",
        evidence=[ev(v.measured_by, v.busiest_pct, "%", f">= {AT_ROOF_PCT:.0f}% at the roof", AT_ROOF_PCT)],
        saving_ns=v.gap_ns,
        gain_model=(f"time x (1 - {v.busiest_pct:.1f}%): the same bytes and instructions with the {v.unit} at its "
                    "peak; a busier unit the report does not measure would make it less"),
        details={"side": v.side, "regime": v.regime, "unit": v.unit, "subtrees": sorted(v.subtrees),
                 "measured_by": v.measured_by},
    )]


def _lean(launch: dict[str, Any], side: str) -> str:
    """The half that names the unit: the busier one, except that with the halves balanced a compute
    pipe at its roof and at or above the busiest memory unit is named (the unit that feeds the pipe
    its operands does not count against it, see ``LSU_IDLE_PCT``)."""
    sm, mem = launch["sm_throughput_pct"], launch["memory_throughput_pct"]
    lean = "memory" if mem >= sm else "compute"
    if lean == "compute" or side != "balanced":
        return lean
    pipes = {col: launch.get(col) for col in _PIPES if launch.get(col) is not None}
    if not pipes:
        return lean
    best = max(pipes, key=pipes.__getitem__)
    pipe = pipes[best]
    units = {"DRAM": launch.get("dram_throughput_pct"), "L2": launch.get("l2_throughput_pct"),
             "L1": launch.get("l1_throughput_pct")}
    lsu = launch.get("lsu_pipe_active_pct")
    if best == "tensor_pipe_active_pct" and lsu is not None and lsu < LSU_IDLE_PCT:
        units.pop("L1")  # the tensor pipe's own operand traffic
    known = [v for v in units.values() if v is not None]
    busiest_unit = max(known) if known else mem
    return "compute" if pipe >= AT_ROOF_PCT and pipe >= busiest_unit - UNIT_TOLERANCE_PCT else lean


def _memory_unit(launch: dict[str, Any]) -> tuple[str, Bottleneck]:
    mem, dram = launch.get("memory_throughput_pct"), launch.get("dram_throughput_pct")
    if dram is not None and dram >= mem - UNIT_TOLERANCE_PCT:
        return "DRAM", Bottleneck.DRAM
    caches = {"L1": launch.get("l1_throughput_pct"), "L2": launch.get("l2_throughput_pct")}
    caches = {k: v for k, v in caches.items() if v is not None}
    if caches:
        return max(caches, key=caches.__getitem__), Bottleneck.CACHE
    return "memory system", Bottleneck.CACHE if dram is not None else Bottleneck.DRAM


def _compute_pipe(launch: dict[str, Any]) -> tuple[str, Bottleneck]:
    pipes = {col: launch.get(col) for col in _PIPES if launch.get(col) is not None}
    if not pipes:
        return "SM", Bottleneck.FMA
    best = max(pipes, key=pipes.__getitem__)
    return _PIPES[best]


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    v = ctx.verdict or verdict(launch)
    if v is None:
        return []
    sm, mem, dram = launch["sm_throughput_pct"], launch["memory_throughput_pct"], launch.get("dram_throughput_pct")
    bw, peak = launch.get("dram_bandwidth_bytes_per_s"), launch.get("dram_peak_bytes_per_s")
    ai = launch.get("arithmetic_intensity_flop_per_byte")
    lean = _lean(launch, v.side)
    title, next_step = _wording(v, lean, launch)
    numbers = _numbers(launch, v, lean)
    sol = next((r for r in ctx.ncu_rules if r.get("rule_id") == "SOLBottleneck"), None)
    gain_model = (f"time x (1 - {v.busiest_pct:.1f}%): the same bytes and instructions with the busiest unit at "
                  "its peak; the most any fix can save that does not remove work")
    details: dict[str, Any] = {"side": v.side, "regime": v.regime, "unit": v.unit, "subtrees": sorted(v.subtrees)}
    if _short(launch, v):
        why = (f"a kernel of {fmt_time(launch['duration_ns'])} is as short as a few launches' cost, and its throughputs "
               "count the time its grid takes to start and drain, which no change inside it removes")
        gain_model = f"an upper bound, not an estimate: {gain_model}; {why}"
        details[UPPER_BOUND] = why
    evidence = [
        ev("sm_throughput_pct", sm, "%", f">= {AT_ROOF_PCT:.0f}% on the limiting half", AT_ROOF_PCT),
        ev("memory_throughput_pct", mem, "%", f">= {AT_ROOF_PCT:.0f}% on the limiting half", AT_ROOF_PCT),
    ]
    if dram is not None:
        evidence.append(ev("dram_throughput_pct", dram, "%", "near peak for a DRAM-bound kernel", AT_ROOF_PCT))
    if bw is not None:
        evidence.append(ev("dram_bandwidth_bytes_per_s", bw, "byte/s", f"Nsight Compute's peak {fmt_rate(peak)}" if peak else "", peak))
    if ai is not None:
        evidence.append(ev("arithmetic_intensity_flop_per_byte", ai, "FLOP/byte", "compare with the GPU's ridge point"))
    return [finding(
        SPEC, launch, category=v.category, title=title,
        message=f"{numbers} {_regime_sentence(v)}",
        next_step=next_step, evidence=evidence, saving_ns=v.gap_ns, gain_model=gain_model,
        ncu=sol, differs_from_ncu=_differs(v, sol), details=details,
    )]


#: The Nsight Compute sections whose counters name a cause below the roof, by the root's subtrees: what
#: the warps stall on (WarpStateStats; Nsight Compute's own SOLBottleneck rule points there for a latency
#: issue), how the memory accesses touch sectors, banks and atomics (the tables of the memory workload
#: analysis, and the source counters per line), how busy each compute pipe is.
CAUSE_SECTIONS: dict[str, tuple[str, ...]] = {
    "latency": ("WarpStateStats (what the warps stall on)",),
    "memory": ("MemoryWorkloadAnalysis_Tables (sectors per request, bank conflicts, atomics, spills)",
               "SourceCounters (the excess sectors and stalls of each source line)"),
    "compute": ("ComputeWorkloadAnalysis (how busy each pipe is)",),
}


def cause_not_checked(root: Finding, launch: dict[str, Any], v: Verdict, lacking: list[str]) -> tuple[Finding, Finding]:
    """The root's finding where no cause rule of its subtrees could check (``lacking``: their names):
    the regime and the busiest unit, no cause called, and the gap marked an upper bound; with the note
    naming the sections that would name the cause."""
    from coach.analyze.diagnose import in_sentence, not_checked  # noqa: PLC0415 - diagnose imports the rules lazily

    sm, mem = launch["sm_throughput_pct"], launch["memory_throughput_pct"]
    sections = [s for sub in ("latency", "memory", "compute") if sub in v.subtrees for s in CAUSE_SECTIONS[sub]]
    names = [s.split(" ", 1)[0] for s in sections]
    collect = ("ncu --section SpeedOfLight " + " ".join(f"--section {n}" for n in names) + ", or --set full")
    pct = f"{v.busiest_pct:.0f}%"
    if v.regime == "latency":
        title = (f"Neither compute ({fmt_pct(sm)}) nor memory ({fmt_pct(mem)}) above {LATENCY_PCT:.0f}% of peak: "
                 "cause not checked")
        regime = (f"Below {LATENCY_PCT:.0f}% of peak on both halves the units wait on something: latency, contention "
                  "on an address, serialisation, too little work in flight. Which, this report cannot say.")
        category = Bottleneck.LATENCY
    else:
        half = "Memory-side" if v.side == "memory" or (v.side == "balanced" and mem >= sm) else "Compute-side"
        title = f"{half} kernel at {pct} of peak ({v.unit} the busiest unit), below its roof: cause not checked"
        own = {"DRAM": "dram_throughput_pct", "L1": "l1_throughput_pct", "L2": "l2_throughput_pct"}.get(v.unit)
        unit_pct = launch.get(own) if own else None
        busiest = (f" ({v.unit} {fmt_pct(unit_pct)} of its own peak"
                   + (", over its active cycles)" if v.unit == "L1" else ")")) if unit_pct is not None else ""
        regime = (f"The kernel runs between {LATENCY_PCT:.0f}% and {AT_ROOF_PCT:.0f}% of peak, the {v.unit} the busiest "
                  f"unit{busiest}: room is left, and what keeps the kernel from its roof (strided or scattered "
                  "accesses multiplying a cache's traffic, atomics, too few bytes in flight, stalls) this report "
                  "cannot say.")
        category = v.category
    numbers = _numbers(launch, v, _lean(launch, v.side))
    message = (f"{numbers} {regime} It has the speed-of-light throughputs but none of the counters the rules that name a "
               f"cause read ({', '.join(in_sentence(n) for n in lacking)}).")
    why = "no unit is near its roof and the report cannot say what holds them back"
    bound = root.details.get(UPPER_BOUND)
    gain = root.gain_model if bound else f"an upper bound, not an estimate: {root.gain_model}; {why}"
    next_step = (f"Profile again with the sections that name the cause ({collect}) and run coach on that report. "
                 + ("The L1 or L2 carrying more than DRAM points at the access pattern first (sectors per request)."
                    if v.unit in ("L1", "L2") else ""))
    rewritten = replace(root, title=title, message=message, next_step=next_step.strip(), category=category,
                        gain_model=gain, details={**root.details, UPPER_BOUND: bound or why, "cause": "not checked"})
    note = not_checked(SPEC.id, "what holds the kernel below its roof", [], scope=root.scope, launch_id=root.launch_id,
                       reason=("the report has the speed-of-light throughputs, which give the regime, and none of the "
                               "counters that name a cause"),
                       needs=sections)
    note = replace(note, message=f"{note.message.removesuffix('.')} (collect with {collect}).",
                   next_step=f"Profile again with {collect}.")
    return rewritten, note


def _short(launch: dict[str, Any], v: Verdict) -> bool:
    """A kernel below its roof that is as short as a few launches: its gap is an upper bound only."""
    return launch["duration_ns"] < SHORT_KERNEL_NS and v.regime != "at-roof"


def _numbers(launch: dict[str, Any], v: Verdict, lean: str) -> str:
    """The measured half of the root's message: the throughputs, the DRAM rate and floor, and for a short
    kernel why its gap is an upper bound."""
    sm, mem, dram = launch["sm_throughput_pct"], launch["memory_throughput_pct"], launch.get("dram_throughput_pct")
    bw, peak = launch.get("dram_bandwidth_bytes_per_s"), launch.get("dram_peak_bytes_per_s")
    ai = launch.get("arithmetic_intensity_flop_per_byte")
    numbers = f"Compute (SM) throughput is {fmt_pct(sm)} of peak and memory throughput {fmt_pct(mem)}"
    if dram is not None:
        numbers += f" (DRAM {fmt_pct(dram)}"
        numbers += f": {fmt_rate(bw)} of Nsight Compute's peak {fmt_rate(peak)})" if bw is not None and peak else ")"
    numbers += "."
    if ai is not None:
        numbers += f" Arithmetic intensity is {fmt_count(ai) if ai >= 1e4 else f'{ai:.3g}'} FLOP per DRAM byte."
    floor = launch.get("dram_floor_ns")
    if lean == "memory" and floor is not None:
        numbers += (f" Moving its {fmt_bytes(launch['dram_bytes'])} at Nsight Compute's peak DRAM bandwidth takes "
                    f"{fmt_time(floor)}; it took {fmt_time(launch['duration_ns'])}.")
    if _short(launch, v):
        numbers += (f" At {fmt_time(launch['duration_ns'])} the kernel is as short as a few launches' cost: its "
                    "throughputs are low in part because it is short, so the gap to the roof is an upper bound, "
                    "not an estimate.")
    return numbers


def _wording(v: Verdict, lean: str, launch: dict[str, Any]) -> tuple[str, str]:
    pct = f"{v.busiest_pct:.0f}%"
    if v.category == Bottleneck.LATENCY:
        return (f"Latency-bound: neither compute nor memory above {LATENCY_PCT:.0f}% of peak",
                "Find what the warps wait on: the stall reasons, occupancy and its limiter, and the bytes each "
                "thread keeps in flight (findings below); give the SM more independent work per warp.")
    if lean == "memory":
        what = f"{v.unit}-bandwidth-bound" if v.unit == "DRAM" else f"{v.unit}-bound (memory side)"
        if v.regime == "at-roof":
            return (f"{what} at {pct} of peak",
                    "The unit is saturated: speed comes only from moving fewer bytes: check access efficiency "
                    "(sectors per request), reuse through shared memory or L2, fusion with neighbouring kernels, "
                    "and narrower data types.")
        if v.unit in ("L1", "L2"):
            # A cache busier than DRAM moves more bytes per useful byte than a streaming access needs: the
            # first suspect is how the warps touch memory (ncu's own SOL rule for an L1-bound kernel says
            # to check the replay (coalescing) metrics), before keeping more bytes in flight.
            return (f"{what} kernel at {pct} of peak: not saturated ({v.regime.replace('-', ' ')})",
                    f"The {v.unit} carries more traffic than DRAM: check access efficiency first (sectors per "
                    "request: strided or scattered accesses multiply the cache traffic per useful byte; the "
                    "L1 sector metrics or the Memory Workload Analysis section show it), then raise the bytes "
                    "in flight (wide vector loads, several independent loads per thread, more resident warps).")
        return (f"{what} kernel at {pct} of peak: not saturated ({v.regime.replace('-', ' ')})",
                "The memory system has headroom the kernel does not use: raise the bytes in flight (wide "
                "vector loads, several independent loads per thread, more resident warps) before changing "
                "the algorithm; then move fewer bytes.")
    pipe = v.unit
    if v.regime == "at-roof":
        return (f"Compute-bound on the {pipe} at {pct} of peak",
                f"Issue fewer instructions on the {pipe}: a faster pipe (tensor cores for matrix work), "
                "cheaper math (fast intrinsics, no FP64), or less redundant work.")
    return (f"Compute-leaning kernel at {pct} of peak on the {pipe}: not saturated ({v.regime.replace('-', ' ')})",
            "The pipes have headroom: look at the stalls and occupancy below to keep them fed.")


def _regime_sentence(v: Verdict) -> str:
    if v.regime == "at-roof":
        return f"The {v.unit} runs at its roof (>= {AT_ROOF_PCT:.0f}% of peak)."
    if v.regime == "below-roof":
        return f"The busiest unit ({v.unit}) is between {LATENCY_PCT:.0f}% and {AT_ROOF_PCT:.0f}% of its peak: room is left."
    return f"Below {LATENCY_PCT:.0f}% of peak on both halves the limit is latency: too little work in flight to fill the units."


def _differs(v: Verdict, sol: dict[str, Any] | None) -> str | None:
    if sol is None:
        return None
    title = (sol.get("title") or "").strip()
    if title == "Latency Issue" and v.category != Bottleneck.LATENCY:
        return (f"Nsight Compute calls this a latency issue (both halves below {LATENCY_PCT:.0f}%). We name the "
                f"bound by the busier half: the {v.unit} sets this kernel's floor, and latency is why it runs "
                "below it (see the causes ranked below).")
    return None
