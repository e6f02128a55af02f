"""Uncoalesced global access: warps touching more 32-byte sectors than their threads' bytes need.

A warp's global load or store is one request; the L1 splits it into the 32-byte sectors its threads'
addresses fall in. Contiguous 4-byte accesses by 32 threads need 4 sectors (128 bytes); 8-byte ones
8; 16-byte ones 16 (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"). The report's
useful bytes per sector give the ideal for whatever width the kernel uses: ideal sectors = sectors x
useful bytes per sector / 32. Every excess sector is bandwidth spent on bytes no thread asked for.

Where the report lacks the L1 sector counts (the basic set, or a --metrics list), the L2 counts stand
in: the sectors L2 served to L1TEX for reads (``lts__t_sectors_srcunit_tex_op_read``) per global load
request, and the sectors L1TEX wrote (``..._op_write``, L1 being write-through) per store request. For
loads they count only the L1 misses (and local-memory traffic too), so they can only understate the
excess: on the H200 strided copy of tests/data they give 32.0 sectors per load request against 32.0 at
L1, and 4.0 for its coalesced twin. Without the bytes-per-sector metric the access width is unknown:
more sectors than the widest access needs is uncoalesced whatever the width; fewer but more than a
4-byte access needs cannot be decided, and the rule says so instead of staying silent. Where it does
decide, the ideal is not known either: the finding names the range (4 sectors for 4-byte accesses to
16 for 16-byte ones), counts the excess against the widest (a lower bound on it and on the saving),
and prints no single ideal as if measured (a row sum of floats at 32 sectors per request read "ideal
16" where its 4-byte loads need 4: tests/data/wild_public/cts_hw4_matrix_sums_metrics_rtx3070.output).

Where the report has neither (a SourceCounters-only collection), the source counters' own totals
decide: the L2 sectors the kernel's global instructions touched (``memory_l2_theoretical_sectors_global``)
against the sectors they would touch coalesced (``..._ideal``, which Nsight Compute computes from each
instruction's access width): on the H200 strided copy 75.5 M against 16.8 M, on its float4 twin 16.8 M
against 16.8 M. They count loads and stores together.

Where the report has none of these counts but Nsight Compute's own rule results (the ``--set full``
details page, as text or CSV), its UncoalescedGlobalAccess warning counts the same excess from the
same source counters ("58720256 excessive sectors (78% of the total 75497472 sectors)" on the H200
strided copy of tests/data/ncu_pages_2025): the finding rests on those numbers, held to this rule's
threshold (``_ncu_fallback``). Where the report has any of the counts above, they decide.
"""

from __future__ import annotations

import re
from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_metrics import SECTOR_BYTES
from coach.analyze.kernel_rules import _ncu_fallback as fallback
from coach.analyze.kernel_rules._common import (NCU, KernelContext, cannot_decide, ev, finding, fmt_bytes, fmt_count,
                                               fmt_time)

SPEC = RuleSpec(
    id="uncoalesced-global-access",
    name="Uncoalesced global access",
    category=Bottleneck.MEMORY_ACCESS,
    table="launches",
    requires=(),
    requires_one_of=(("global_load_sectors", "l1_to_l2_read_sectors", "l2_global_sectors"),),
    optional=("duration_ns", "global_load_requests", "global_load_bytes_per_sector", "global_store_requests", "global_store_sectors",
              "global_store_bytes_per_sector", "dram_read_bytes", "memory_throughput_pct", "l2_global_sectors",
              "l2_global_sectors_ideal", "l1_to_l2_write_sectors"),
    doc="Sectors per request against the ideal for the access width; DRAM bytes against useful bytes.",
)

# Contiguous 4-byte accesses that start off a 32-byte boundary touch 5 sectors instead of 4: a
# ratio of 1.25 is misalignment, a modest cost. Beyond it the threads of a warp skip bytes (a
# stride or a scatter), which is what this rule is about.
EXCESS_RATIO = 1.25
# Without the useful-bytes-per-sector metric the access width is unknown; the widest per-thread
# access (16 bytes) needs 16 sectors per request when coalesced, so more than that is uncoalesced
# whatever the width.
WIDEST_IDEAL_SECTORS_PER_REQUEST = 16.0
# ... and 4-byte accesses (float, int: the narrowest common width) need 4: at most EXCESS_RATIO x 4
# sectors per request is coalesced for any width of 4 bytes or more.
NARROW_IDEAL_SECTORS_PER_REQUEST = 4.0

# A warp's request touches at most one 32-byte sector per thread (an aligned access of up to 16 bytes,
# or 32 on Blackwell, lies in one sector): 32. L2's counts of L1TEX traffic above that per request
# cannot be the global accesses alone: local-memory traffic goes the same way (the H200's
# data-indexed per-thread array gives 260 write sectors per global store request; tests/data/wild_ncu).
MAX_SECTORS_PER_REQUEST = 32.0

#: Where a launch's sectors are read from: the L1 counts, else the L2 counts of L1TEX traffic.
SECTOR_SOURCES = {"load": ("global_load_sectors", "l1_to_l2_read_sectors"),
                  "store": ("global_store_sectors", "l1_to_l2_write_sectors")}
_METRIC = {"global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "global_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
           "l1_to_l2_read_sectors": "lts__t_sectors_srcunit_tex_op_read.sum",
           "l1_to_l2_write_sectors": "lts__t_sectors_srcunit_tex_op_write.sum",
           "global_load_bytes_per_sector": "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
           "global_store_bytes_per_sector": "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"}


#: Nsight Compute's rule that states uncoalesced global access with this rule's measure: the source
#: counters' excess sectors against the coalesced ideal. Not MemoryCacheAccessPattern: it counts the
#: bytes of each sector a thread uses, which is low for any small access (scenario-05's one 4-byte sum
#: stored per warp: "only 4.0 of the 32 bytes", one sector per request, nothing in excess).
NCU_CLAIMS = (
    fallback.Claim("UncoalescedGlobalAccess", re.compile(
        r"uncoalesced global accesses resulting in a total of ([\d,]+) excessive sectors \([\d.]+% of the total ([\d,]+) "
        r"sectors\)"), lambda m: (fallback.count(m[1]), fallback.count(m[2])), "of the global sectors are excess"),
)
NCU_NEIGHBOURS = (fallback.Neighbour(
    "MemoryCacheAccessPattern", re.compile(r"access pattern for global"),
    "it counts the bytes of each sector a thread uses, which are few for any small access, coalesced or not"),)
#: Nsight Compute's results back a finding only where the report has none of this rule's own counts.
NCU_ONLY_WITHOUT = ("global_load_sectors", "global_store_sectors", "l1_to_l2_read_sectors", "l1_to_l2_write_sectors",
                    "l2_global_sectors")
#: sectors / ideal > EXCESS_RATIO is an excess share of more than 1 - 1 / EXCESS_RATIO (20%)
NCU_LEAST_SHARE = 1 - 1 / EXCESS_RATIO


def from_ncu(launch: dict[str, Any], ctx: KernelContext, notes: list[Finding]) -> Finding | None:
    """The finding from Nsight Compute's own rule results where this rule's counts cannot decide
    (``notes``: what it said it lacked); None where no warning of the report states the problem."""
    found = fallback.backing(ctx, NCU_CLAIMS, lambda share: share > NCU_LEAST_SHARE)
    if not found:
        return None
    share = found[0].share
    return fallback.backed_finding(
        SPEC, launch, found, notes, own="sector counts",
        title=f"Uncoalesced global access: {100 * share:.0f}% of the sectors excess",
        next_step=("Make consecutive threads touch consecutive addresses: index with threadIdx.x in the fastest-moving "
                   "dimension, turn arrays of structs into structs of arrays, or stage the access through shared "
                   "memory. Profile with `ncu --set full` into a report (-o) for coach's own sector counts per "
                   "request, loads and stores apart."),
        weight=ctx.memory_weight(launch), weight_name="memory share", threshold_share=NCU_LEAST_SHARE,
        healthy="0 (every sector's bytes used)")


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    if all(launch.get(c) is None for op in SECTOR_SOURCES.values() for c in op):
        return _from_source_counters(launch, ctx)  # the requirement leaves only the source counters' totals
    if launch.get("global_load_requests") is None:
        return [cannot_decide(SPEC, launch, "the report has sector counts but no count of global load requests",
                              ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"])]
    out = []
    for op in ("load", "store"):
        f = _one(op, launch, ctx)
        if f is not None:
            out.append(f)
    return out


def _one(op: str, launch: dict[str, Any], ctx: KernelContext) -> Finding | None:
    requests = launch.get(f"global_{op}_requests")
    if not requests:
        return None  # no such accesses (or no count of them: the rule's requirement says so for loads)
    l1, l2 = SECTOR_SOURCES[op]
    column = l1 if launch.get(l1) is not None else l2 if launch.get(l2) is not None else None
    if column is None:
        return cannot_decide(SPEC, launch, f"the report has no sector counts for global {op}s",
                             [_METRIC[l1], _METRIC[l2]])
    sectors, at_l2 = launch[column], column == l2
    per_request = sectors / requests
    if at_l2 and per_request > MAX_SECTORS_PER_REQUEST:
        return cannot_decide(
            SPEC, launch, f"L2's counts give {per_request:.0f} sectors per global {op} request, more than any global "
            f"access can touch ({MAX_SECTORS_PER_REQUEST:.0f}, one per thread): they hold other traffic too "
            "(local memory: spills or a dynamically indexed array)", [_METRIC[l1]])
    ideal_per_request = launch.get(f"ideal_{op}_sectors_per_request") if not at_l2 else None
    width_known = ideal_per_request is not None and ideal_per_request > 0
    if width_known:
        if per_request <= EXCESS_RATIO * ideal_per_request:
            return None
        excess = launch[f"excess_{op}_sectors"]
    else:
        if per_request <= EXCESS_RATIO * NARROW_IDEAL_SECTORS_PER_REQUEST:
            return None
        if per_request <= WIDEST_IDEAL_SECTORS_PER_REQUEST:
            return cannot_decide(
                SPEC, launch, f"global {op}s touch {per_request:.1f} sectors per request"
                + (" (from L2's counts)" if at_l2 else "") + f", which is coalesced for 16-byte accesses but "
                f"{per_request / NARROW_IDEAL_SECTORS_PER_REQUEST:.1f}x the ideal for 4-byte ones, and the access "
                "width is not in the report", [_METRIC[f"global_{op}_bytes_per_sector"]])
        ideal_per_request = WIDEST_IDEAL_SECTORS_PER_REQUEST  # a lower bound on the excess
        excess = sectors - requests * ideal_per_request
    total = (launch.get("global_sectors") or sectors) if not at_l2 else (
        (launch.get(l2) or 0.0) + (launch.get(SECTOR_SOURCES["store" if op == "load" else "load"][1]) or 0.0) or sectors)
    saving, gain_model = _saving(launch, ctx, excess, total)
    verb = "loads" if op == "load" else "stores"
    useful = launch.get(f"useful_{op}_bytes")
    if width_known:
        message = (f"Global {verb} touch {per_request:.1f} sectors per request where {ideal_per_request:.0f} would do "
                   f"({fmt_count(excess)} of {fmt_count(sectors)} sectors are excess).")
        ideal_words = f"ideal {ideal_per_request:.0f}"
        healthy = f"{ideal_per_request:.0f} (all the bytes of a warp's access in contiguous sectors)"
    else:
        narrow_excess = sectors - requests * NARROW_IDEAL_SECTORS_PER_REQUEST
        message = (f"Global {verb} touch {per_request:.1f} sectors per request. The access width is not in the report "
                   f"({_METRIC[f'global_{op}_bytes_per_sector']}), so neither is the ideal: "
                   f"{NARROW_IDEAL_SECTORS_PER_REQUEST:.0f} sectors per request for 4-byte accesses, 8 for 8-byte, "
                   f"{WIDEST_IDEAL_SECTORS_PER_REQUEST:.0f} for 16-byte. Even against the widest, at least "
                   f"{fmt_count(excess)} of {fmt_count(sectors)} sectors are excess ({fmt_count(narrow_excess)} if the "
                   "accesses are 4 bytes wide): the excess, and the saving priced from it, are lower bounds.")
        ideal_words = (f"ideal {NARROW_IDEAL_SECTORS_PER_REQUEST:.0f} to {WIDEST_IDEAL_SECTORS_PER_REQUEST:.0f} "
                       "by access width (not in report)")
        healthy = (f"{NARROW_IDEAL_SECTORS_PER_REQUEST:.0f} (4-byte accesses) to {WIDEST_IDEAL_SECTORS_PER_REQUEST:.0f} "
                   "(16-byte), by the access width the report does not have")
        gain_model = (f"{gain_model}; the excess is counted against the widest access's ideal, so this is a lower bound"
                      if saving is not None else f"{gain_model}, counted against the widest access's ideal (a lower bound)")
    if at_l2:
        message += (f" Counted at L2 ({_METRIC[l2]}: the report has no L1 sector counts), which sees only what "
                    "missed L1: the excess at L1 is at least this.")
    # counted at L2, the ratio is not the report's L1 one (null here): the source says what it came from
    evidence = [ev(f"{op}_sectors_per_request", per_request, "sector/request", healthy,
                   EXCESS_RATIO * ideal_per_request, source=f"ncu, at L2: {_METRIC[l2]}" if at_l2 else NCU)]
    if at_l2:
        evidence.append(ev(column, sectors, "sector", "as many as the requests' useful bytes need"))
    bps = launch.get(f"global_{op}_bytes_per_sector")
    if bps is not None:
        evidence.append(ev(f"global_{op}_bytes_per_sector", bps, "byte/sector", f"{SECTOR_BYTES}", None))
    # without the access width there is no ideal to record, only the range it lies in and the excess
    # counted against its top (a lower bound)
    details: dict[str, Any] = {"op": op, "sectors_per_request": per_request,
                               "ideal_sectors_per_request": ideal_per_request if width_known else None,
                               "excess_sectors": excess, "sectors_from": "L2" if at_l2 else "L1"}
    if not width_known:
        details.update(ideal_sectors_per_request_range=[NARROW_IDEAL_SECTORS_PER_REQUEST, WIDEST_IDEAL_SECTORS_PER_REQUEST],
                       excess_is_lower_bound=True)
    if op == "load" and useful:
        dram_read = launch.get("dram_read_bytes")
        over = launch.get("dram_read_over_useful")
        if dram_read is not None and over is not None:
            message += (f" The kernel read {fmt_bytes(dram_read)} from DRAM for {fmt_bytes(useful)} of data its "
                        f"threads use: {over:.1f}x the useful bytes.")
            evidence.append(ev("dram_read_bytes", dram_read, "byte", f"about {fmt_bytes(useful)} (the useful bytes)", useful))
            details.update(useful_bytes=useful, dram_read_over_useful=over)
    l2, l2_ideal = launch.get("l2_global_sectors"), launch.get("l2_global_sectors_ideal")
    if l2 is not None and l2_ideal is not None:  # the tool's own count from its source-level counters
        evidence.append(ev("l2_global_sectors", l2, "sector", f"{fmt_count(l2_ideal)} (fully coalesced)", l2_ideal))
    ncu = ctx.ncu("UncoalescedGlobalAccess", "MemoryCacheAccessPattern")
    return finding(
        SPEC, launch, title=f"Uncoalesced global {verb}: {per_request:.0f} sectors per request, {ideal_words}",
        message=message,
        next_step=(f"Make consecutive threads touch consecutive addresses in the {op}: index with threadIdx.x in "
                   "the fastest-moving dimension, turn arrays of structs into structs of arrays, or stage the "
                   "access through shared memory (load coalesced, then read with the stride from shared memory)."),
        evidence=evidence,
        saving_ns=saving,
        gain_model=gain_model,
        ncu=ncu,
        details=details,
    )


def _saving(launch: dict[str, Any], ctx: KernelContext, excess: float, total: float) -> tuple[float | None, str]:
    """(saving, gain model): the memory share of the time the excess sectors take. A report of sector
    and request counts alone (``ncu --metrics``, no duration) shows the access pattern but not what it
    costs: the finding stands, unranked by time, and says the gain is not estimated."""
    model = f"excess/total global sectors ({fmt_count(excess)}/{fmt_count(total)}): the same work with every access coalesced"
    if launch.get("duration_ns") is None:
        return None, f"not estimated: the report has no duration (gpu__time_duration.sum); {model}"
    weight = ctx.memory_weight(launch)
    saving = launch["duration_ns"] * weight * excess / total
    return saving, f"time x {weight:.2f} (memory share) x {model}; saves {fmt_time(saving)}"


def _from_source_counters(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    """The source counters' L2 sectors of global accesses against their coalesced ideal (loads and
    stores together)."""
    sectors, ideal = launch.get("l2_global_sectors"), launch.get("l2_global_sectors_ideal")
    if sectors is None or not ideal:
        return [cannot_decide(SPEC, launch, "the report has the source counters' sectors but not their coalesced "
                              "ideal", ["memory_l2_theoretical_sectors_global_ideal"])]
    ratio = sectors / ideal
    if ratio <= EXCESS_RATIO:
        return []
    excess = sectors - ideal
    saving, gain_model = _saving(launch, ctx, excess, sectors)
    return [finding(
        SPEC, launch, title=f"Uncoalesced global access: {ratio:.1f}x the sectors a coalesced access needs",
        message=(f"The kernel's global loads and stores touch {fmt_count(sectors)} L2 sectors where {fmt_count(ideal)} "
                 f"would do coalesced ({fmt_count(excess)} excess), by Nsight Compute's source counters (the report "
                 "has no per-request sector counts, so loads and stores are counted together)."),
        next_step=("Make consecutive threads touch consecutive addresses: index with threadIdx.x in the fastest-moving "
                   "dimension, turn arrays of structs into structs of arrays, or stage the access through shared "
                   "memory. The source view (coach source) names the lines with the excess sectors."),
        evidence=[ev("l2_global_sectors", sectors, "sector", f"{fmt_count(ideal)} (fully coalesced)", EXCESS_RATIO * ideal)],
        saving_ns=saving,
        gain_model=gain_model,
        ncu=ctx.ncu("UncoalescedGlobalAccess", "MemoryCacheAccessPattern"),
        details={"op": "load+store", "sectors_per_ideal": ratio, "excess_sectors": excess, "sectors_from": "source counters"},
    )]
