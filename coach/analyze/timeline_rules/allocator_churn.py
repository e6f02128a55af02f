"""Allocation and release in the loop (ALLOCATOR).

``cudaMalloc``/``cudaFree`` (and their driver and host-pinned twins) are expensive host calls, and
the CUDA Programming Guide ("Implicit Synchronization") lists device and page-locked allocations
among the operations that serialise streams. A program that allocates and frees every iteration
pays that each time; a pool allocates once and reuses. The stream-ordered allocator
(``cudaMallocAsync``/``cudaFreeAsync``) is cheap per call, but with its default release threshold of
0 the pool hands memory back at every synchronisation, so the next iteration allocates afresh.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis, derived
from coach.analyze.timeline_rules._shared import base_api_name, largest_group, ns, reportable, share_pct, within_window

SPEC = RuleSpec(
    id="allocator-churn",
    name="Memory allocated and freed in a loop",
    category=Bottleneck.ALLOCATOR,
    table="api",
    requires=("name", "dur_ns"),
    doc="Repeated allocation and release calls and the host time they take.",
)

ALLOC_CALLS = (r"^(cudaMalloc|cudaMallocAsync|cudaMallocFromPoolAsync|cudaMallocHost|cudaHostAlloc|cudaMallocManaged"
               r"|cudaMallocPitch|cudaMalloc3D|cudaMallocArray|cuMemAlloc|cuMemAllocAsync|cuMemAllocFromPoolAsync"
               r"|cuMemAllocHost|cuMemHostAlloc|cuMemAllocManaged|cuMemAllocPitch"
               r"|hipMalloc|hipMallocAsync|hipHostMalloc|hipMallocManaged|hipExtMallocWithFlags)$")  # ROCm's HIP twins
FREE_CALLS = (r"^(cudaFree|cudaFreeAsync|cudaFreeHost|cudaFreeArray|cuMemFree|cuMemFreeAsync|cuMemFreeHost"
              r"|hipFree|hipFreeAsync|hipHostFree)$")

# Three matched allocate/free pairs: one pair can be set-up, a second the tear-down of a first
# buffer; three or more mean allocation repeats with the work.
MIN_ALLOC_FREE_PAIRS = 3
# ... and they must repeat with the work: allocations made between launches in at least three separate
# places (between the first and the last launch). A program that allocates five buffers, launches two
# kernels and frees the five has five pairs and no loop.
MIN_REPEATS = 3


def repeats_with_the_work(a: TimelineAnalysis, allocs: pl.DataFrame) -> int:
    """In how many of the stretches between consecutive launches (after the first launch, before the
    last) the host allocated: on the host's clock, the launch calls where the trace links kernels to
    them, else the kernels' starts."""
    launched = a.launches["api_start_ns"] if a.launches.height else a.timeline.kernels["start_ns"]
    launched = launched.drop_nulls().sort()
    if launched.len() < 2:
        return 0
    after = launched.search_sorted(allocs["start_ns"], side="right")  # launches made before each allocation
    return int(after.filter((after >= 1) & (after < launched.len())).n_unique())


def is_allocator_call(name: pl.Expr) -> pl.Expr:
    """Whether an API call (by name) allocates or frees memory."""
    base = base_api_name(name)
    return base.str.contains(ALLOC_CALLS) | base.str.contains(FREE_CALLS)


@derived
def allocator_calls(a: TimelineAnalysis) -> pl.DataFrame:
    """The API calls that allocate or free memory, with ``base`` (their base name), ``alloc`` and ``free``."""
    alloc, free = a.api_matching(ALLOC_CALLS), a.api_matching(FREE_CALLS)
    keep = alloc | free  # the few calls picked out first, their columns added after
    return a.timeline.api.filter(keep).with_columns(base=a.api_base.filter(keep), alloc=alloc.filter(keep),
                                                    free=free.filter(keep))


def churns(a: TimelineAnalysis) -> bool:
    """Whether this rule reports (the GPU-idle and host-sync rules leave the gaps spent in these calls
    to it only then): one decision, so that no gap is left to a finding that is not printed."""
    return bool(_findings(a))


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    return list(_findings(a))


@derived
def _findings(a: TimelineAnalysis) -> tuple[Finding, ...]:
    """The rule's finding (or none), worked out once per analysis for the rule and the two that ask."""
    calls = allocator_calls(a)
    allocs, frees = int(calls["alloc"].sum()), int(calls["free"].sum())
    pairs = min(allocs, frees)
    if pairs < MIN_ALLOC_FREE_PAIRS:
        return ()
    repeats = repeats_with_the_work(a, calls.filter("alloc"))
    if repeats < MIN_REPEATS:
        return ()
    # per process, the largest: the processes of a multi-rank trace allocate side by side
    saving_ns = within_window(largest_group(calls, "pid", "dur_ns")[0], a.window_ns)
    if not reportable(saving_ns, a.window_ns):
        return ()
    by_name = calls.group_by("name").agg(n=pl.len(), ns=pl.col("dur_ns").sum()).sort("ns", descending=True)
    names = ", ".join(f"{n} x {name}" for name, n, _ in by_name.iter_rows())
    stream_ordered = bool(calls["base"].str.contains("Async").any())
    message = (
        f"The host allocated {allocs} times and freed {frees} times ({names}), {ns(saving_ns)} in those calls "
        f"({share_pct(saving_ns, a.window_ns):.1f}% of the {ns(a.window_ns)} window), allocating between launches in "
        f"{repeats} separate places: memory is allocated and released with the work instead of once."
        + (" The stream-ordered calls come from a pool, but with its default release threshold of 0 the pool returns "
           "memory at every synchronisation." if stream_ordered else
           " Device and pinned allocations also serialise the streams around them.")
    )
    return (Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"{pairs} allocate/free pairs in the loop",
        message=message,
        next_step=("Allocate once and reuse: preallocate buffers outside the loop or use a pool (PyTorch's caching "
                   "allocator does this; do not call torch.cuda.empty_cache() in the loop); with cudaMallocAsync, raise "
                   "cudaMemPoolAttrReleaseThreshold so the pool keeps its memory between iterations."),
        evidence=(
            Evidence("alloc_calls", allocs, "calls", healthy="a fixed number at start-up, none per iteration",
                     threshold=MIN_ALLOC_FREE_PAIRS, source=a.timeline.source.tool),
            Evidence("free_calls", frees, "calls", threshold=MIN_ALLOC_FREE_PAIRS, source=a.timeline.source.tool),
            Evidence("allocator_ns", saving_ns, "ns", source=a.timeline.source.tool),
            Evidence("allocations_between_launches", repeats, "places", healthy="none after the first launch",
                     threshold=MIN_REPEATS, source=a.timeline.source.tool),
        ),
        scope="timeline",
        estimated_gain_pct=share_pct(saving_ns, a.window_ns),
        estimated_saving_ns=saving_ns,
        gain_model=("host time in allocation and free calls, which reuse from a pool removes; the stream serialisation "
                    "they cause is not counted"),
        details={"calls": by_name.to_dicts()},
    ),)
