"""One owner for each derived quantity of a kernel that a presenter prints: the DRAM rate, the
ceilings it is held against (each labelled by its source), the waves and the tail, the floor.

Presenters (``coach load``, ``diagnose``, ``explain``, ``diff --talk``, the dashboard) ask these
functions and never recompute, so two commands that print the same quantity print the same number.
A quantity whose inputs the report lacks is None, and reads "not in report" (``NOT_IN_REPORT``),
never 0.

**Ceilings.** A DRAM bandwidth has three sources, and each is labelled wherever it is shown:

- *measured*: the calibration (``hardware/measured/<gpu>.json``) raised to the best rate recorded on
  the GPU (``coach.best_rates``): of a copy, of reads, and of any read/write mix, so that no kernel
  recorded on the GPU moves DRAM bytes faster than this roof; the floors here use it (a scenario's or
  a ladder's floor uses the copy or read ceiling it names);
- *datasheet*: the GPU table's published peak (``hardware/gpus/<gpu>.toml``);
- *Nsight Compute's peak*: the device attribute the report carries (``dram__bytes.sum.peak_sustained``
  x its clock), the 100% of Nsight Compute's own "% of peak" figures.

**Floor.** The least time a launch's work can take: its bytes through DRAM at the measured ceiling,
its FLOPs through the arithmetic ceilings, and its special-function (XU) instructions through that
pipe's peak issue rate (Nsight Compute's "% of peak sustained elapsed" for the pipe, times the
duration: the time those instructions need at the peak), whichever is longest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import polars as pl

from coach.analyze import predict
from coach.analyze.hardware import GPU, Ceilings, ceilings, for_device

#: How a quantity the report lacks reads, in every command and page.
NOT_IN_REPORT = "not in report"

#: Nsight Compute's metric for the special-function pipe's issue rate over the whole launch: the
#: instructions the XU pipe executed against its peak sustained rate over the elapsed cycles.
XU_PIPE_ELAPSED = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed"


def sum_or_null(column: str) -> pl.Expr:
    """The sum of a column, null where every value is null (Polars sums nothing to 0: a metric a
    report lacks must not read as 0)."""
    return pl.when(pl.col(column).is_not_null().any()).then(pl.col(column).sum())


def dram_rate() -> pl.Expr:
    """DRAM bytes read and written per second over the launch (``with_derived`` columns): the bytes
    over the duration; where the report has no DRAM byte count, Nsight Compute's DRAM throughput
    (% of its peak) times that peak. Null when neither is in the report."""
    c = pl.col
    from_bytes = pl.when(c("duration_ns") > 0).then(c("dram_bytes") / (c("duration_ns") * 1e-9))
    from_pct = c("dram_throughput_pct") / 100.0 * c("device_memory_bandwidth_bytes_per_s")
    return pl.coalesce(from_bytes, from_pct)


def dram_rate_source() -> pl.Expr:
    """Where ``dram_rate`` comes from: "bytes" (DRAM bytes over the duration), "throughput %"
    (Nsight Compute's % of its peak), or null."""
    c = pl.col
    return (pl.when(c("dram_bytes").is_not_null() & (c("duration_ns") > 0)).then(pl.lit("bytes"))
            .when(c("dram_throughput_pct").is_not_null() & c("device_memory_bandwidth_bytes_per_s").is_not_null())
            .then(pl.lit("throughput %")))


# --------------------------------------------------------------------------------------------
# Ceilings
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Roof:
    """One ceiling as shown: value, which source ("measured", "datasheet", "Nsight Compute's peak"),
    and the detail (document, calibration, recording)."""

    value: float | None
    source: str
    detail: str = ""

    @property
    def label(self) -> str:
        return f"{self.source}: {self.detail}" if self.detail else self.source


def gpu_of(devices: pl.DataFrame) -> GPU | None:
    """The GPU table's entry for a profile's device (its first), or an approximate one built from
    the report's own attributes."""
    return for_device(devices.row(0, named=True)) if devices.height else None


def roofs(gpu: GPU | None) -> Ceilings | None:
    return ceilings(gpu, True) if gpu is not None else None


def dram_roofs(gpu: GPU | None, device: Mapping[str, Any] | None = None) -> dict[str, Roof]:
    """The DRAM bandwidth of each source (see module doc): "measured", "datasheet" and
    "ncu" (Nsight Compute's peak, from the report's device row)."""
    out: dict[str, Roof] = {}
    if gpu is not None:
        c = ceilings(gpu, True).bandwidth["dram"]
        if c.origin == "measured":
            out["measured"] = Roof(c.value, "measured", c.source)
        if c.datasheet is not None:
            out["datasheet"] = Roof(c.datasheet, "datasheet", gpu.source("dram_bandwidth_bytes_per_s").describe())
    peak = (device or {}).get("memory_bandwidth_bytes_per_s")
    if peak:
        out["ncu"] = Roof(float(peak), "Nsight Compute's peak", "the report's dram__bytes peak sustained rate x its clock")
    return out


# --------------------------------------------------------------------------------------------
# Waves and the tail
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waves:
    """A grid's waves: ``waves`` (blocks over SMs x blocks per SM), the ``full`` ones, how full the
    last one is (``last_fill``, 0-1; 0 when the grid is a whole number of waves), the blocks per
    wave and in the last wave where the grid size is known, and the share of the SMs' block slots
    idle while the last wave runs (``idle_in_last``)."""

    waves: float
    grid: float | None = None

    @property
    def full(self) -> int:
        return int(math.floor(self.waves + 1e-12))

    @property
    def last_fill(self) -> float:
        return self.waves - self.full

    @property
    def partial(self) -> bool:
        return self.last_fill > 1e-9

    @property
    def idle_in_last(self) -> float:
        return 1.0 - self.last_fill if self.partial else 0.0

    @property
    def per_wave(self) -> float | None:
        return self.grid / self.waves if self.grid and self.waves else None

    @property
    def blocks_in_last(self) -> int | None:
        if self.per_wave is None or not self.partial:
            return None
        return int(round(self.grid - self.full * self.per_wave))

    @property
    def idle_fraction(self) -> float:
        """With equal-length blocks the last wave takes as long as a full one: the share of the
        kernel's SM-time left idle, (ceil(waves) - waves) / ceil(waves)."""
        whole = math.ceil(self.waves - 1e-12)
        return (whole - self.waves) / whole if whole else 0.0

    def text(self) -> str:
        """'1.004 waves: 1 full and a last wave 0.4% full (1 block of 264), which takes as long as a
        full one while 99.6% of the SMs' block slots idle'."""
        head = f"{fmt_waves(self.waves)} waves"
        if not self.partial:
            return f"{head}: a whole number, no partial wave"
        blocks = self.blocks_in_last
        of = f" ({blocks} block{'s' if blocks != 1 else ''} of {self.per_wave:.0f})" if blocks is not None else ""
        return (f"{head}: {self.full} full and a last wave {fmt_share(self.last_fill)} full{of}, which takes as long as "
                f"a full one while {fmt_share(self.idle_in_last)} of the SMs' block slots idle")


def fmt_waves(waves: float) -> str:
    """Enough decimals that a partial wave shows: 1.004, not 1.00; 32.12; 124.12; 2."""
    if abs(waves - round(waves)) < 1e-9:
        return f"{waves:.0f}"
    for decimals in (2, 3, 4):
        text = f"{waves:.{decimals}f}"
        if float(text) not in (math.floor(waves), math.ceil(waves)):
            return text
    return f"{waves:.4f}"


def fmt_share(share: float) -> str:
    """A share 0-1 as a percentage with enough decimals that it is neither 0% nor 100% unless it is:
    0.4%, 99.6%, 50%."""
    pct = 100.0 * share
    if share <= 0.0 or share >= 1.0:
        return f"{pct:.0f}%"
    for decimals in (0, 1, 2, 3):
        text = f"{pct:.{decimals}f}"
        if 0.0 < float(text) < 100.0 and (decimals > 0 or 1.0 <= pct <= 99.0):
            return f"{text}%"
    return f"{pct:.4f}%"


# --------------------------------------------------------------------------------------------
# The floor
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FloorTerm:
    name: str  # "dram", a precision ("fp32", ...), or "xu" (the special-function pipe)
    seconds: float
    amount: float | None  # bytes, FLOPs; None for a pipe term
    rate: float | None
    origin: str  # "measured", "published", ..., or "Nsight Compute's pipe peak"
    text: str  # "34.98 KB at 4.49 TB/s (measured)"


@dataclass(frozen=True)
class Floor:
    terms: tuple[FloorTerm, ...]
    counted: str  # how the bytes were counted, in words
    measured_s: float | None = None

    @property
    def dominant(self) -> FloorTerm:
        return max(self.terms, key=lambda t: t.seconds)

    @property
    def seconds(self) -> float:
        return self.dominant.seconds

    @property
    def pct_of_floor(self) -> float | None:
        """Floor time as a percentage of the measured time: 100 means running at the floor."""
        return None if not self.measured_s else 100.0 * self.seconds / self.measured_s

    @property
    def bound(self) -> str:
        return "memory" if self.dominant.name == "dram" else "compute"


def kernel_floor(launch: Mapping[str, Any], gpu: GPU | Ceilings | None, metrics: pl.DataFrame | None = None,
                 *, bytes_from: str = "useful") -> Floor | None:
    """The floor of one launch (a ``with_derived`` row): see the module doc. ``bytes_from``
    "useful" counts the bytes its threads read and write (the work's), falling back to the DRAM
    bytes; "dram" counts the DRAM bytes it moved (the implementation's). ``metrics`` (the profile's
    long metrics table) gives the special-function pipe term. None when nothing can be counted."""
    if gpu is None:
        return None
    useful = _sum(launch, "useful_load_bytes", "useful_store_bytes")
    counted = "the bytes its threads read and write"
    if bytes_from == "dram" or not useful:
        useful, counted = launch.get("dram_bytes"), "the bytes DRAM moved"
    flops = {p: float(launch[c]) for p, c in (("fp32", "fp32_flop"), ("fp64", "fp64_flop"), ("fp16_simt", "fp16_flop"))
             if launch.get(c)}
    duration = launch.get("duration_ns")
    measured_s = duration * 1e-9 if duration else None
    terms: list[FloorTerm] = []
    if useful or flops:
        try:
            p = predict.predict(predict.Work(bytes=float(useful or 0), flops=flops), gpu, measured_s=measured_s)
        except predict.PredictionError:
            p = None
        for t in p.terms if p is not None else ():
            amount = _bytes(t.amount) if t.unit == "byte" else f"{t.amount / 1e9:.3g} GFLOP ({t.name})"
            rate = _rate(t.rate) if t.unit == "byte" else f"{t.rate / 1e12:.3g} TFLOP/s"
            terms.append(FloorTerm(t.name, t.floor_s, t.amount, t.rate, t.origin, f"{amount} at {rate}, {_origin(t.origin)}"))
    xu = pipe_elapsed_pct(metrics, launch.get("launch_id"), XU_PIPE_ELAPSED) if metrics is not None else None
    if xu and measured_s:
        terms.append(FloorTerm("xu", xu / 100.0 * measured_s, None, None, "Nsight Compute's pipe peak",
                               f"the special-function (XU) pipe's instructions at its peak issue rate "
                               f"({xu:.1f}% of peak over the launch)"))
    if not terms:
        return None
    return Floor(tuple(terms), counted, measured_s)


def pipe_elapsed_pct(metrics: pl.DataFrame, launch_id: Any, metric: str) -> float | None:
    """One launch's value of a pipe metric from the long ``metrics`` table, or None."""
    if metrics is None or metrics.is_empty() or launch_id is None:
        return None
    rows = metrics.filter((pl.col("launch_id") == launch_id) & (pl.col("metric") == metric) & pl.col("instance").is_null())
    v = rows["value"].first() if rows.height else None
    return None if v is None else float(v)


def _origin(origin: str) -> str:
    """A ceiling's source as a label: measured, datasheet, derived from the datasheet, the report's device."""
    return {"published": "datasheet", "recorded": "datasheet", "derived": "derived from the datasheet",
            "device": "the report's device attribute"}.get(origin, origin)


def _sum(row: Mapping[str, Any], *cols: str) -> float | None:
    values = [row.get(c) for c in cols]
    return float(sum(v for v in values if v is not None)) if any(v is not None for v in values) else None


def _bytes(n: float) -> str:
    from coach.analyze.kernel_rules._common import fmt_bytes  # noqa: PLC0415 - one formatter for bytes

    return fmt_bytes(n)


def _rate(n: float) -> str:
    from coach.analyze.kernel_rules._common import fmt_rate  # noqa: PLC0415

    return fmt_rate(n)
