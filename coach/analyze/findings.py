"""What the analysis says: typed findings with evidence, and the one declaration shape every rule has.

A rule is a small module (``coach/analyze/kernel_rules/*.py``, ``coach/analyze/timeline_rules/*.py``)
that defines

    SPEC = RuleSpec(id="uncoalesced-global-access", name="Uncoalesced global access",
                    category=Bottleneck.MEMORY_ACCESS, table="launches",
                    requires=("global_load_requests", "global_load_sectors"),
                    optional=("dram_read_bytes",))

    def apply(frame, ctx) -> list[Finding]: ...

``apply`` returns early (an empty list) when there is nothing to say. Thresholds are named
constants at the top of the module, each with a comment that justifies it from hardware facts or
NVIDIA's documentation. Each ``Finding`` carries a message with the measured numbers, the evidence
with what healthy would look like, the next step, and an estimated gain whose model is stated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Bottleneck(StrEnum):
    """The bottleneck classes a finding names."""

    # kernel level
    DRAM = "dram-bandwidth"  # moving bytes to/from device memory is the limit
    MEMORY_ACCESS = "memory-access-pattern"  # more bytes/sectors moved than the work needs
    CACHE = "l1-l2-bandwidth"
    SHARED_MEMORY = "shared-memory"  # bank conflicts, shared-memory pipe
    LOCAL_MEMORY = "local-memory"  # register spills, dynamically indexed arrays
    FMA = "compute-fma"
    TENSOR = "compute-tensor"
    SFU = "compute-special-function"
    FP64 = "compute-fp64"
    DIVERGENCE = "warp-divergence"
    ATOMICS = "atomics-contention"
    LATENCY = "latency"  # too little parallelism, occupancy, or bytes in flight
    OCCUPANCY = "occupancy"
    TAIL = "tail-effect"
    LAUNCH = "launch-bound"
    # timeline level
    IDLE = "gpu-idle"
    HOST_SYNC = "host-synchronisation"
    PAGEABLE = "pageable-memcpy"
    NO_OVERLAP = "no-copy-compute-overlap"
    TRANSFER = "transfer-bandwidth"
    ALLOCATOR = "allocator-churn"
    HOST_BOUND = "host-bound"
    MEASUREMENT = "measurement"
    OTHER = "other"


class BugClass(StrEnum):
    """The correctness classes a finding on a compute-sanitizer report names (the counterpart of
    ``Bottleneck`` for wrong results and crashes)."""

    SHARED_RACE = "shared-memory-race"  # racecheck: threads race on a shared-memory slot
    OUT_OF_BOUNDS = "out-of-bounds-access"  # memcheck: an access outside every allocation
    MISALIGNED = "misaligned-access"
    UNINITIALIZED = "uninitialized-read"  # initcheck: memory read before anything wrote it
    DIVERGENT_BARRIER = "divergent-barrier"  # synccheck: a barrier only part of the block reaches
    DEVICE_FAULT = "device-fault"  # a hardware exception, a device-side malloc/free error
    ASYNC_ERROR = "asynchronous-error"  # a kernel's error, returned by a later, unrelated call
    API_ERROR = "cuda-api-error"
    LEAK = "memory-leak"
    NUMERICS = "numerical-accuracy"  # right code, wrong precision: what no sanitizer reports
    CLEAN = "no-error-found"
    TOOL = "sanitizer-run"  # about the run itself: cut short, the tool's own errors


@dataclass(frozen=True)
class Evidence:
    """One measured number and what it would be if healthy."""

    metric: str  # canonical column or tool metric name
    value: float | None
    unit: str = ""
    healthy: str = ""  # e.g. "4 sectors per request (32-bit loads, fully coalesced)"
    threshold: float | None = None  # the value past which the rule fires
    source: str = ""  # e.g. "ncu", "nsys", "Nsight Compute rule UncoalescedGlobalAccess"


@dataclass(frozen=True)
class Location:
    """A source line a finding points at, with the counter that selected it (``coach.analyze.source_evidence``)."""

    where: str  # "particles.cu:24", or "SASS +0x2d0" for an instruction without line information
    file: str | None  # the path as the report's line information names it
    line: int | None
    text: str | None  # the line's text, where the profile has the file
    counter: str  # the per-line counter: "l2_global_excess_sectors", "shared_excess_wavefronts", ...
    value: float  # its value on this line
    share_pct: float  # the line's share of the launch's total of that counter
    opcodes: tuple[str, ...] = ()  # the SASS opcodes on the line that the counter counts
    note: str = ""  # what the value means here, in words


@dataclass(frozen=True)
class Finding:
    rule_id: str
    category: Bottleneck | BugClass
    title: str
    message: str  # what was measured and what it means, with numbers
    next_step: str  # what I would do next
    evidence: tuple[Evidence, ...] = ()
    scope: str = ""  # kernel name, NVTX range, stream, or "timeline"
    launch_id: int | None = None
    estimated_gain_pct: float | None = None  # share of the scope's time that the fix could save
    estimated_saving_ns: float | None = None  # the same in absolute time: how findings are ranked
    gain_model: str = ""  # how the gain was estimated
    ncu_rule: str | None = None  # the Nsight Compute rule that agrees, if any
    ncu_speedup_pct: float | None = None  # Nsight Compute's own estimate, for comparison
    differs_from_ncu: str | None = None  # where our reading differs from NVIDIA's, in words
    details: dict[str, Any] = field(default_factory=dict)
    locations: tuple[Location, ...] = ()  # the source lines that cause it, where the profile has source counters

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["category"] = str(self.category)
        return d

    def _repr_html_(self) -> str:  # Jupyter (coach.api)
        from coach.api import finding_html

        return finding_html(self)


@dataclass(frozen=True)
class RuleSpec:
    """The declaration every rule module exports as ``SPEC``."""

    id: str
    name: str
    category: Bottleneck | BugClass
    table: str  # the canonical table it reads: "launches", "kernels", "memcpy", "records", ...
    requires: tuple[str, ...] = ()  # columns that must be non-null for the rule to say anything
    optional: tuple[str, ...] = ()  # columns it uses when present
    # groups of alternatives, first preferred: at least one column of each group must be non-null
    # (L1's sector counts, else L2's); where none is, the rule is not checked and the note names them all
    requires_one_of: tuple[tuple[str, ...], ...] = ()
    doc: str = ""


#: details key of a finding whose saving is an upper bound its model cannot narrow (the gap to a roof
#: no unit is near, on a kernel too short or a report too thin to say what holds it back), with why in
#: words: printed "at most", never as a share of the time a fix will save.
UPPER_BOUND = "saving_upper_bound"


def saving_is_upper_bound(f: Finding | dict[str, Any]) -> bool:
    """Whether the finding (or its ``to_dict``) marks its saving as an upper bound only."""
    details = f.get("details") if isinstance(f, dict) else f.details
    return bool((details or {}).get(UPPER_BOUND))


def rank(findings: list[Finding]) -> list[Finding]:
    """Largest estimated saving first; findings without an estimate after those with one."""
    return sorted(findings, key=lambda f: (f.estimated_saving_ns is None, -(f.estimated_saving_ns or 0.0)))
