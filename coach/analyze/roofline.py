"""Hierarchical roofline: where each kernel sits against the bandwidth of DRAM, L2 and L1 and the
compute rate of each precision, computed the way Nsight Compute computes its own roofline charts so
that the numbers agree with NVIDIA's.

Nsight Compute's roofline sections (``SpeedOfLight_RooflineChart`` and
``SpeedOfLight_Hierarchical{Double,Single,Half,Tensor}RooflineChart`` section files, as shipped with
Nsight Compute 2025) define:

work (FLOP/s)
    thread-level, predicated-on instruction rates per elapsed cycle times the SM clock. An add or a
    multiply is one operation, an FMA two. Half-precision instructions work on a packed pair, so
    HADD and HMUL count 2 and HFMA 4 (the section's ``*_x2`` and ``*_x4`` definitions). Tensor-core
    work comes from the ``sm__ops_path_tensor_*`` metrics, which already count operations (two per
    multiply-add: the H200's dense BF16 path peaks at 4096 per SM per cycle, the datasheet's 989
    TFLOP/s at 132 SMs and 1.83 GHz).
peak work
    the same instruction's ``peak_sustained`` (per cycle, whole GPU) with the same factor, times
    the SM clock (``sm__cycles_elapsed.avg.per_second``).
traffic (byte/s)
    DRAM: ``dram__bytes.sum.per_second`` (reads and writes). L2: cycles in which L2 slices send data
    to the SMs over the crossbar (``lts__lts2xbar_cycles_active``), 32 bytes each. L1: cycles in
    which L1TEX writes load results back to the SMs (``l1tex__lsu_writeback_active_mem_*``), 128
    bytes each. By this definition stores are not L1 traffic and writes into L2 are not L2 traffic.
peak traffic
    the same counter's ``peak_sustained`` per cycle times that unit's clock.
arithmetic intensity
    achieved work per second over achieved traffic per second at one level.

``roofline(profile)`` gives a ``Roofline``: ``table`` (one row per launch, memory level and
precision), ``ceilings`` (per device: bandwidth per level, compute per precision, each with its
source), and ``missing`` (the levels and precisions a report cannot give, with the metrics they
need). ``with_hardware`` adds the GPU's datasheet and measured ceilings (``coach.analyze.hardware``)
beside the report's own; ``explain_ridges`` says the ridge points in words; ``pair`` lines up a
"before" and an "after" profile for comparison.

A point's distance to the roof is ``pct_of_roof``: achieved work over the roof at the point's
intensity, ``min(peak work, intensity x peak bandwidth)``. It equals the larger of the compute and
bandwidth utilisations, so it is defined for a kernel without floating-point work too: such a kernel
sits at intensity 0, is memory-bound, and its distance to the roof is its bandwidth utilisation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import polars as pl

from coach.model import KernelProfile

LEVEL_ORDER = ("DRAM", "L2", "L1")

SOURCE_REPORT = "Nsight Compute"  # ceilings computed from the report's own peak metrics
SOURCE_DATASHEET = "datasheet"  # coach.analyze.hardware: published or derived from published numbers
SOURCE_MEASURED = "measured"  # coach.analyze.hardware: measured on the GPU (hardware/measured/)

#: coach.analyze.hardware's level names -> ours. Shared memory and L1 are one SRAM per SM, and
#: Nsight Compute's L1 roof (128 bytes per cycle per SM) is the shared-memory rate (32 banks x 4 bytes).
HARDWARE_LEVELS = {"dram": "DRAM", "l2": "L2", "shared": "L1"}
#: coach.analyze.hardware's precision names -> ours.
HARDWARE_PRECISIONS = {
    "fp64": "fp64", "fp32": "fp32", "fp16_simt": "fp16", "fp64_tensor": "tensor_fp64", "tf32": "tensor_tf32",
    "bf16": "tensor_bf16", "fp16": "tensor_fp16", "fp8": "tensor_fp8", "int8": "tensor_int8",
}


@dataclass(frozen=True)
class Level:
    """A memory level: the counter Nsight Compute counts its traffic in, and bytes per count.

    ``counters`` are alternatives by GPU generation, newest first; each is used with the suffixes
    ``.per_second`` (achieved) and ``.peak_sustained`` (per cycle of ``clock``).
    """

    name: str
    counters: tuple[str, ...]
    bytes_per_count: int
    clock: str


LEVELS: tuple[Level, ...] = (
    Level("DRAM", ("dram__bytes.sum",), 1, "dram__cycles_elapsed.avg.per_second"),
    # 32 bytes per L2-to-crossbar cycle: the section's derived__lts__lts2xbar_bytes
    Level("L2", ("lts__lts2xbar_cycles_active.sum",), 32, "lts__cycles_elapsed.avg.per_second"),
    # 128 bytes per L1 writeback cycle: derived__l1tex__lsu_writeback_bytes_mem_*; the counter is
    # mem_lgds from compute capability 9.0, mem_lg for 7.5-8.9, unqualified up to 7.2
    Level(
        "L1",
        (
            "l1tex__lsu_writeback_active_mem_lgds.sum",
            "l1tex__lsu_writeback_active_mem_lg.sum",
            "l1tex__lsu_writeback_active.sum",
        ),
        128,
        "l1tex__cycles_elapsed.avg.per_second",
    ),
)


@dataclass(frozen=True)
class Pipe:
    """A non-tensor precision: instruction rates and the operations each instruction counts for."""

    precision: str
    achieved: tuple[tuple[str, int], ...]  # (per-cycle rate metric, operations per instruction)
    peak: tuple[str, int]  # (peak per-cycle metric, operations per instruction)


def _sass(op: str) -> str:
    return f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"


def _sass_peak(op: str) -> str:
    return f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained"


PIPES: tuple[Pipe, ...] = (
    Pipe("fp64", ((_sass("dadd"), 1), (_sass("dmul"), 1), (_sass("dfma"), 2)), (_sass_peak("dfma"), 2)),
    Pipe("fp32", ((_sass("fadd"), 1), (_sass("fmul"), 1), (_sass("ffma"), 2)), (_sass_peak("ffma"), 2)),
    Pipe("fp16", ((_sass("hadd"), 2), (_sass("hmul"), 2), (_sass("hfma"), 4)), (_sass_peak("hfma"), 4)),
)

ACHIEVED_CLOCK = "smsp__cycles_elapsed.avg.per_second"  # the sections' clock for achieved SIMT work
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"  # for peaks, and for achieved tensor work
DURATION = "gpu__time_duration.sum"

#: sm__ops_path_tensor_[op_<op>_]src_<types>[_dst_<type>][_sparsity_<on|off>].sum.<stat>
#: e.g. sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained (Hopper),
#: sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum.per_cycle_elapsed (Turing).
TENSOR_METRIC = re.compile(
    r"^sm__ops_path_tensor_(?:op_(?P<op>[a-z0-9]+)_)?src_(?P<src>[a-z0-9_]+?)"
    r"(?:_dst_(?P<dst>[a-z0-9]+))?(?:_sparsity_(?P<sparsity>on|off))?\.sum\.(?P<stat>per_cycle_elapsed|peak_sustained)$"
)
TENSOR_PREFIX = "tensor_"

_NON_TENSOR_LABELS = {"fp64": "FP64", "fp32": "FP32", "fp16": "FP16/BF16 (non-tensor)"}


def precision_label(precision: str) -> str:
    """'fp32' -> 'FP32'; 'tensor_bf16' -> 'BF16 tensor'; 'tensor_fp16_bf16_tf32' -> 'FP16/BF16/TF32 tensor'."""
    if precision.startswith(TENSOR_PREFIX):
        return precision.removeprefix(TENSOR_PREFIX).upper().replace("_", "/") + " tensor"
    return _NON_TENSOR_LABELS.get(precision, precision.upper())


@dataclass(frozen=True)
class Roofline:
    """The roofline of one kernel profile.

    ``table``     one row per launch x memory level x precision (see ``TABLE_COLUMNS``).
    ``ceilings``  per device: ``kind`` "bandwidth" (``name`` a level, byte/s) or "compute"
                  (``name`` a precision, FLOP/s), with ``source`` and a ``note`` saying where it
                  came from. Report peaks are the highest over the device's launches (the clocks
                  vary slightly from launch to launch); each table row keeps its launch's own.
    ``missing``   per launch: a level or precision the report cannot give, and the metrics it needs.
    """

    table: pl.DataFrame
    ceilings: pl.DataFrame
    missing: pl.DataFrame
    #: per launch bound by a pipe that no FLOP roof stands for (``PIPE_ROOFS``): its own roof
    pipe_roofs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=PIPE_ROOF_SCHEMA))

    def ridges(self) -> pl.DataFrame:
        return ridges(self.ceilings)

    def with_ceilings(self, extra: pl.DataFrame) -> Roofline:
        """The same roofline with more ceilings (datasheet, measured) drawn and explained beside the report's."""
        return Roofline(self.table, pl.concat([self.ceilings, extra.select(CEILING_SCHEMA.keys()).cast(CEILING_SCHEMA)]),
                        self.missing, self.pipe_roofs)


TABLE_COLUMNS: dict[str, pl.DataType] = {
    "launch_id": pl.Int64,
    "kernel_name": pl.Utf8,
    "device_id": pl.Int64,
    "gpu": pl.Utf8,
    "duration_ns": pl.Float64,
    "level": pl.Utf8,  # DRAM, L2, L1
    "precision": pl.Utf8,  # fp64, fp32, fp16, tensor_<input type>
    "flop": pl.Float64,  # operations done in the launch (tensor int types: integer operations)
    "flop_per_s": pl.Float64,
    "peak_flop_per_s": pl.Float64,
    "bytes": pl.Float64,  # traffic at this level in the launch
    "bytes_per_s": pl.Float64,
    "peak_bytes_per_s": pl.Float64,
    "intensity_flop_per_byte": pl.Float64,  # null where the level moved no bytes
    "ridge_flop_per_byte": pl.Float64,  # intensity where this level's bandwidth roof meets this precision's
    "roof_flop_per_s": pl.Float64,  # min(peak work, intensity x peak bandwidth)
    "compute_pct": pl.Float64,  # achieved work, % of peak work
    "bandwidth_pct": pl.Float64,  # achieved traffic, % of peak bandwidth
    "pct_of_roof": pl.Float64,  # achieved work, % of the roof at this intensity
    "bound": pl.Utf8,  # "memory" or "compute": the roof segment the point is under; null if idle
}

CEILING_SCHEMA: dict[str, pl.DataType] = {
    "device_id": pl.Int64,
    "gpu": pl.Utf8,
    "kind": pl.Utf8,  # "bandwidth" or "compute"
    "name": pl.Utf8,  # a level (DRAM, L2, L1) or a precision (fp32, tensor_bf16, ...)
    "peak_per_s": pl.Float64,  # byte/s for bandwidth, FLOP/s for compute
    "source": pl.Utf8,  # "Nsight Compute", "datasheet", "measured"
    "note": pl.Utf8,  # where exactly the number comes from
}

#: Pipes that can bind a kernel without a FLOP roof of their own: the special-function unit (XU:
#: transcendentals, reciprocals, square roots, conversions) issues instructions that are not
#: floating-point operations in the roofline's sense, so a kernel it binds sits far below every
#: FLOP roof and the chart would say "room to grow" where there is none. Its roof is drawn for
#: the kernel's own instruction mix instead: the FLOP rate at which its busiest pipe would be
#: 100% busy, ``flop_per_s / (pipe_pct / 100)``, the most that mix can reach.
PIPE_ROOFS = {"compute-special-function": ("xu_pipe_active_pct", "XU (special-function) pipe")}

PIPE_ROOF_SCHEMA: dict[str, pl.DataType] = {
    "launch_id": pl.Int64,
    "kernel_name": pl.Utf8,
    "pipe": pl.Utf8,  # how the pipe is named on the chart
    "pipe_pct": pl.Float64,  # the pipe's activity, % of its peak (sm__inst_executed_pipe_xu...)
    "precision": pl.Utf8,  # the launch's main precision (``headline``): the FLOP rate scaled
    "flop_per_s": pl.Float64,
    "roof_flop_per_s": pl.Float64,  # flop_per_s / (pipe_pct / 100)
    "intensity_flop_per_byte": pl.Float64,  # at DRAM, where the roof is drawn
}

MISSING_SCHEMA: dict[str, pl.DataType] = {
    "launch_id": pl.Int64,
    "kernel_name": pl.Utf8,
    "part": pl.Utf8,  # "level" or "precision"
    "name": pl.Utf8,
    "needs": pl.Utf8,  # the metrics it needs, comma-separated
}


# --------------------------------------------------------------------------------------------
# Reading the report's metrics
# --------------------------------------------------------------------------------------------

def _scalar_metric_names() -> list[str]:
    names = [ACHIEVED_CLOCK, SM_CLOCK, DURATION]
    for lvl in LEVELS:
        names.append(lvl.clock)
        names += [f"{c}.{s}" for c in lvl.counters for s in ("per_second", "peak_sustained")]
    for pipe in PIPES:
        names += [m for m, _ in pipe.achieved] + [pipe.peak[0]]
    return names


def _wide(metrics: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """One row per launch, one column per metric in ``names`` (null where the report lacks it)."""
    long = (
        metrics.lazy()
        .filter(pl.col("metric").is_in(list(names)))
        .select("launch_id", "metric", pl.col("value").fill_nan(None))
        .group_by("launch_id", "metric")
        .agg(pl.col("value").drop_nulls().first())
        .collect()
    )
    ids = metrics.select(pl.col("launch_id").unique().sort())
    wide = ids.join(long.pivot(on="metric", index="launch_id", values="value"), on="launch_id", how="left", maintain_order="left") if long.height else ids
    return wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(n) for n in names if n not in wide.columns)


def _levels(wide: pl.DataFrame) -> pl.DataFrame:
    """launch_id, level, bytes_per_s, peak_bytes_per_s (null where the report lacks the metrics)."""
    frames = []
    for lvl in LEVELS:
        clock = pl.col(lvl.clock)
        usable = [pl.col(f"{c}.per_second").is_not_null() & pl.col(f"{c}.peak_sustained").is_not_null() & clock.is_not_null() for c in lvl.counters]
        achieved = pl.coalesce([pl.when(ok).then(pl.col(f"{c}.per_second")) for c, ok in zip(lvl.counters, usable)])
        peak = pl.coalesce([pl.when(ok).then(pl.col(f"{c}.peak_sustained")) for c, ok in zip(lvl.counters, usable)])
        frames.append(wide.select(
            "launch_id",
            pl.lit(lvl.name).alias("level"),
            (achieved * lvl.bytes_per_count).alias("bytes_per_s"),
            (peak * lvl.bytes_per_count * clock).alias("peak_bytes_per_s"),
        ))
    return pl.concat(frames)


def _pipes(wide: pl.DataFrame) -> pl.DataFrame:
    """launch_id, precision, flop_per_s, peak_flop_per_s for FP64, FP32 and FP16 (non-tensor)."""
    frames = []
    for pipe in PIPES:
        per_cycle = pl.sum_horizontal([pl.col(m) * k for m, k in pipe.achieved], ignore_nulls=False)
        peak_metric, k = pipe.peak
        frames.append(wide.select(
            "launch_id",
            pl.lit(pipe.precision).alias("precision"),
            (per_cycle * pl.col(ACHIEVED_CLOCK)).alias("flop_per_s"),
            (pl.col(peak_metric) * k * pl.col(SM_CLOCK)).alias("peak_flop_per_s"),
        ))
    return pl.concat(frames)


def _tensor(metrics: pl.DataFrame, wide: pl.DataFrame) -> pl.DataFrame:
    """launch_id, precision, flop_per_s, peak_flop_per_s per tensor input type.

    Newer GPUs report each path per instruction (``op_hgmma``, ``op_hmma``, ...) and also sums per
    input type; where an input type has per-instruction paths those are used, so nothing is counted
    twice. The roof of an input type is its fastest dense path: a sum-per-input-type peak includes
    sparsity, which doubles it, so sparse paths set the roof only when the launch ran sparse work.
    """
    paths = (
        metrics.lazy()
        .filter(pl.col("metric").str.starts_with("sm__ops_path_tensor_"))
        .with_columns(pl.col("metric").str.extract_groups(TENSOR_METRIC.pattern).alias("g"))
        .unnest("g")
        .filter(pl.col("stat").is_not_null())
        .with_columns(pl.col("metric").str.replace(r"\.sum\..*$", "").alias("path"), pl.col("value").fill_nan(None))
        .group_by("launch_id", "path", "op", "src", "sparsity")
        .agg(
            pl.col("value").filter(pl.col("stat") == "per_cycle_elapsed").first().alias("per_cycle"),
            pl.col("value").filter(pl.col("stat") == "peak_sustained").first().alias("peak_per_cycle"),
        )
        .filter(pl.col("op").is_not_null() == pl.col("op").is_not_null().any().over("launch_id", "src"))
        .group_by("launch_id", "src")
        .agg(
            pl.col("per_cycle").sum().alias("per_cycle"),
            pl.col("per_cycle").is_null().any().alias("incomplete"),
            pl.col("peak_per_cycle")
            .filter((pl.col("sparsity").fill_null("") != "on") | (pl.col("per_cycle") > 0))
            .max()
            .alias("peak_per_cycle"),
        )
        .collect()
    )
    clocks = wide.select("launch_id", SM_CLOCK)
    return paths.join(clocks, on="launch_id", how="left", maintain_order="left").select(
        "launch_id",
        (pl.lit(TENSOR_PREFIX) + pl.col("src")).alias("precision"),
        pl.when(~pl.col("incomplete")).then(pl.col("per_cycle") * pl.col(SM_CLOCK)).alias("flop_per_s"),
        (pl.col("peak_per_cycle") * pl.col(SM_CLOCK)).alias("peak_flop_per_s"),
    )


def _needs(part: str, name: str) -> str:
    if part == "level":
        lvl = next(l for l in LEVELS if l.name == name)
        c = lvl.counters[0]
        return ", ".join([f"{c}.per_second", f"{c}.peak_sustained", lvl.clock])
    pipe = next((p for p in PIPES if p.precision == name), None)
    if pipe is None:
        return f"sm__ops_path_tensor_*.sum.per_cycle_elapsed, sm__ops_path_tensor_*.sum.peak_sustained, {SM_CLOCK}"
    return ", ".join([m for m, _ in pipe.achieved] + [pipe.peak[0], ACHIEVED_CLOCK, SM_CLOCK])


# --------------------------------------------------------------------------------------------
# The roofline
# --------------------------------------------------------------------------------------------

def roofline(profile: KernelProfile, kernel: str | None = None) -> Roofline:
    """The hierarchical roofline of every launch in ``profile`` (or those whose kernel name, short
    or demangled, matches the regular expression ``kernel``)."""
    launches = profile.launches
    if kernel is not None:
        launches = launches.filter(pl.col("kernel_name").str.contains(kernel) | pl.col("demangled_name").str.contains(kernel))
    metrics = profile.metrics.filter(pl.col("launch_id").is_in(launches["launch_id"].implode()))
    names = _scalar_metric_names()
    wide = _wide(metrics, names)

    gpu = (
        profile.devices.select("device_id", pl.col("name").alias("gpu"))
        if profile.devices.height
        else pl.DataFrame(schema={"device_id": pl.Int64, "gpu": pl.Utf8})
    )
    identity = (
        launches.select("launch_id", "kernel_name", "device_id")
        .join(gpu, on="device_id", how="left", maintain_order="left")
        .join(wide.select("launch_id", pl.col(DURATION).alias("duration_ns")), on="launch_id", how="left", maintain_order="left")
    )

    levels = _levels(wide)
    work = pl.concat([_pipes(wide), _tensor(metrics, wide)])
    level_ok = pl.col("bytes_per_s").is_not_null() & pl.col("peak_bytes_per_s").is_not_null()
    work_ok = pl.col("flop_per_s").is_not_null() & pl.col("peak_flop_per_s").is_not_null()

    table = (
        identity.join(levels.filter(level_ok), on="launch_id")
        .join(work.filter(work_ok), on="launch_id")
        .filter(pl.col("duration_ns").is_not_null())
        .pipe(_derive)
        .pipe(_order)
        .select(TABLE_COLUMNS.keys())
        .cast(TABLE_COLUMNS)
    )
    return Roofline(
        table=table,
        ceilings=_report_ceilings(identity, levels.filter(level_ok), work.filter(work_ok)),
        missing=_missing(identity, levels, work, level_ok, work_ok),
        pipe_roofs=_pipe_roofs(launches, table),
    )


def _pipe_roofs(launches: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """The launches whose bound (speed of light's verdict) is a pipe in ``PIPE_ROOFS``, with the roof
    of their instruction mix at their main precision's FLOP rate."""
    from coach.analyze.kernel_rules.speed_of_light import verdict  # noqa: PLC0415 - the one owner of the bound

    rows = []
    main = headline(table).filter((pl.col("level") == "DRAM") & (pl.col("flop") > 0))
    for launch in launches.iter_rows(named=True):
        v = verdict(launch)
        spec = PIPE_ROOFS.get(str(v.category)) if v is not None else None
        pct = launch.get(spec[0]) if spec else None
        if spec is None or not pct:
            continue
        point = main.filter(pl.col("launch_id") == launch["launch_id"])
        if point.is_empty():
            continue
        r = point.row(0, named=True)
        rows.append((launch["launch_id"], launch["kernel_name"], spec[1], pct, r["precision"], r["flop_per_s"],
                     r["flop_per_s"] / (pct / 100.0), r["intensity_flop_per_byte"]))
    return pl.DataFrame(rows, schema=PIPE_ROOF_SCHEMA, orient="row")


def _derive(df: pl.DataFrame) -> pl.DataFrame:
    seconds = pl.col("duration_ns") * 1e-9
    intensity = pl.when(pl.col("bytes_per_s") > 0).then(pl.col("flop_per_s") / pl.col("bytes_per_s"))
    compute_pct = 100 * pl.col("flop_per_s") / pl.col("peak_flop_per_s")
    bandwidth_pct = 100 * pl.col("bytes_per_s") / pl.col("peak_bytes_per_s")
    return df.with_columns(
        (pl.col("flop_per_s") * seconds).alias("flop"),
        (pl.col("bytes_per_s") * seconds).alias("bytes"),
        intensity.alias("intensity_flop_per_byte"),
        (pl.col("peak_flop_per_s") / pl.col("peak_bytes_per_s")).alias("ridge_flop_per_byte"),
        pl.min_horizontal(pl.col("peak_flop_per_s"), intensity * pl.col("peak_bytes_per_s")).alias("roof_flop_per_s"),
        compute_pct.alias("compute_pct"),
        bandwidth_pct.alias("bandwidth_pct"),
        # achieved / roof = max(compute utilisation, bandwidth utilisation); see the module docstring
        pl.max_horizontal(compute_pct, bandwidth_pct).alias("pct_of_roof"),
        pl.when((compute_pct == 0) & (bandwidth_pct == 0))
        .then(None)
        .when(compute_pct >= bandwidth_pct)
        .then(pl.lit("compute"))
        .otherwise(pl.lit("memory"))
        .alias("bound"),
    )


def _precision_rank() -> pl.Expr:
    fixed = {p.precision: i for i, p in enumerate(PIPES)}
    return pl.col("precision").replace_strict(fixed, default=len(fixed), return_dtype=pl.Int64)


def _order(df: pl.DataFrame) -> pl.DataFrame:
    level_rank = pl.col("level").replace_strict({n: i for i, n in enumerate(LEVEL_ORDER)}, return_dtype=pl.Int64)
    return df.sort(pl.col("launch_id"), level_rank, _precision_rank(), pl.col("precision"))


def _report_ceilings(identity: pl.DataFrame, levels: pl.DataFrame, work: pl.DataFrame) -> pl.DataFrame:
    device = identity.select("launch_id", "device_id", "gpu")
    bandwidth = (
        levels.join(device, on="launch_id")
        .group_by("device_id", "gpu", pl.col("level").alias("name"))
        .agg(pl.col("peak_bytes_per_s").max().alias("peak_per_s"))
        .with_columns(pl.lit("bandwidth").alias("kind"), pl.col("name").replace_strict({n: i for i, n in enumerate(LEVEL_ORDER)}, return_dtype=pl.Int64).alias("rank"))
    )
    compute = (
        work.join(device, on="launch_id")
        .group_by("device_id", "gpu", pl.col("precision").alias("name"))
        .agg(pl.col("peak_flop_per_s").max().alias("peak_per_s"))
        .with_columns(pl.lit("compute").alias("kind"), pl.col("name").alias("precision"))
        .with_columns((100 + _precision_rank()).alias("rank"))
        .drop("precision")
    )
    return (
        pl.concat([bandwidth, compute], how="diagonal")
        .sort("device_id", "rank", "name")
        .with_columns(
            pl.lit(SOURCE_REPORT).alias("source"),
            pl.lit("peak_sustained per cycle x clock, from the report (highest over its launches)").alias("note"),
        )
        .select(CEILING_SCHEMA.keys())
        .cast(CEILING_SCHEMA)
    )


def _missing(identity: pl.DataFrame, levels: pl.DataFrame, work: pl.DataFrame, level_ok: pl.Expr, work_ok: pl.Expr) -> pl.DataFrame:
    names = identity.select("launch_id", "kernel_name")
    level_gaps = levels.filter(~level_ok).select("launch_id", pl.lit("level").alias("part"), pl.col("level").alias("name"))
    pipe_gaps = work.filter(~work_ok).select("launch_id", pl.lit("precision").alias("part"), pl.col("precision").alias("name"))
    no_tensor = names.join(
        work.filter(pl.col("precision").str.starts_with(TENSOR_PREFIX)).select("launch_id").unique(), on="launch_id", how="anti"
    ).select("launch_id", pl.lit("precision").alias("part"), pl.lit("tensor").alias("name"))
    gaps = pl.concat([level_gaps, pipe_gaps, no_tensor])
    needs = pl.DataFrame(
        [("level", l.name, _needs("level", l.name)) for l in LEVELS]
        + [("precision", p.precision, _needs("precision", p.precision)) for p in PIPES],
        schema={"part": pl.Utf8, "name": pl.Utf8, "needs": pl.Utf8},
        orient="row",
    )
    return (
        gaps.join(names, on="launch_id", how="left", maintain_order="left")
        .join(needs, on=["part", "name"], how="left", maintain_order="left")
        .with_columns(pl.col("needs").fill_null(_needs("precision", "tensor")))
        .sort("launch_id", "part", pl.col("name").replace_strict({n: i for i, n in enumerate(LEVEL_ORDER)}, default=len(LEVEL_ORDER), return_dtype=pl.Int64), "name")
        .select(MISSING_SCHEMA.keys())
        .cast(MISSING_SCHEMA)
    )


def hardware_ceilings(rl: Roofline) -> pl.DataFrame:
    """Datasheet and measured ceilings (``coach.analyze.hardware``) of each GPU in ``rl`` that the
    hardware tables know, under the roofline's level and precision names, each with its source."""
    from coach.analyze import hardware

    rows = []
    for device_id, gpu_name in rl.ceilings.select("device_id", "gpu").unique(maintain_order=True).iter_rows():
        gpu = hardware.match(gpu_name) if gpu_name else None
        if gpu is None:
            continue
        sheet, best = hardware.ceilings(gpu, measured=False), hardware.ceilings(gpu)
        for kind, names, on_sheet, in_use in (
            ("bandwidth", HARDWARE_LEVELS, sheet.bandwidth, best.bandwidth),
            ("compute", HARDWARE_PRECISIONS, sheet.compute, best.compute),
        ):
            for theirs, ours in names.items():
                c = on_sheet[theirs]
                if c.value is not None:
                    rows.append((device_id, gpu_name, kind, ours, c.value, SOURCE_DATASHEET, f"{gpu.name}: {c.source}"))
                m = in_use[theirs]
                if m.origin == "measured" and m.value is not None:
                    rows.append((device_id, gpu_name, kind, ours, m.value, SOURCE_MEASURED, m.source))
    return pl.DataFrame(rows, schema=CEILING_SCHEMA, orient="row")


def with_hardware(rl: Roofline) -> Roofline:
    """``rl`` with the datasheet and measured ceilings of its GPU beside the report's own."""
    return rl.with_ceilings(hardware_ceilings(rl))


def missing_levels(rl: Roofline) -> list[str]:
    """The memory levels no launch of the profile has, in hierarchy order."""
    have = set(rl.ceilings.filter(pl.col("kind") == "bandwidth")["name"].to_list())
    return [n for n in LEVEL_ORDER if n not in have]


def headline(table: pl.DataFrame) -> pl.DataFrame:
    """Per launch and level, the row of the precision the launch used most (of its peak);
    FP32 for a launch without floating-point work, as Nsight Compute's default chart shows."""
    main_rank = pl.when(pl.col("compute_pct") > 0).then(0).when(pl.col("precision") == "fp32").then(1).otherwise(2)
    return (
        table.sort(main_rank, pl.col("compute_pct"), descending=[False, True])
        .group_by("launch_id", "level", maintain_order=True)
        .first()
        .pipe(_order)
    )


# --------------------------------------------------------------------------------------------
# Ridges in words
# --------------------------------------------------------------------------------------------

def ridges(ceilings: pl.DataFrame) -> pl.DataFrame:
    """Per device and source: the intensity at which each level's bandwidth roof meets each
    precision's compute roof (FLOP per byte)."""
    bw = ceilings.filter(pl.col("kind") == "bandwidth").select("device_id", "gpu", "source", pl.col("name").alias("level"), pl.col("peak_per_s").alias("peak_bytes_per_s"))
    fl = ceilings.filter(pl.col("kind") == "compute").select("device_id", "source", pl.col("name").alias("precision"), pl.col("peak_per_s").alias("peak_flop_per_s"))
    return bw.join(fl, on=["device_id", "source"]).with_columns(
        (pl.col("peak_flop_per_s") / pl.col("peak_bytes_per_s")).alias("ridge_flop_per_byte")
    )


def _approx(x: float) -> str:
    """Two significant figures, as a person would say it: 13.9 -> '14', 6.52 -> '6.5', 222 -> '220'."""
    if x >= 10:
        return f"{round(x, -len(str(int(x))) + 2):,.0f}"
    return f"{x:.2g}"


def _rate(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if x >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def explain_ridges(rl: Roofline, precisions: Sequence[str] | None = None) -> list[str]:
    """The ridge points in words, one sentence per precision, for each GPU in the profile.

    ``precisions`` defaults to those the profile's launches used, plus FP32 and BF16 tensor (the
    two ridges worth knowing by heart). Where measured ceilings are present (``with_hardware``),
    the ridge they imply at DRAM adds a sentence: the practical ridge, lower than the peak one.
    """
    r = ridges(rl.ceilings)
    if r.height == 0:
        return []
    if precisions is None:
        used = rl.table.filter(pl.col("flop") > 0)["precision"].unique().to_list()
        precisions = [p for p in ("fp32", "tensor_bf16") if p not in used] + used
    out = []
    for (_, gpu), by_gpu in r.group_by("device_id", "gpu", maintain_order=True):
        where = f"on the {gpu}" if gpu else "on this GPU"
        report = by_gpu.filter(pl.col("source") == SOURCE_REPORT)
        sheet = by_gpu.filter((pl.col("source") == SOURCE_DATASHEET) & (pl.col("level") == "DRAM"))
        for precision in _ordered_precisions(precisions):
            rows = report.filter(pl.col("precision") == precision)
            if rows.height:
                out.append(_ridge_sentence(where, precision, rows)
                           + _datasheet_clause(rows, sheet.filter(pl.col("precision") == precision)))
        measured = by_gpu.filter(
            (pl.col("source") == SOURCE_MEASURED) & (pl.col("level") == "DRAM") & pl.col("precision").is_in(list(precisions))
        )
        out.extend(
            f"{where[0].upper()}{where[1:]}, the best measured rates ({precision_label(row['precision'])} "
            f"{_rate(row['peak_flop_per_s'], 'FLOP/s')}, DRAM {_rate(row['peak_bytes_per_s'], 'B/s')}) put the practical "
            f"ridge at {_as_numbers(row['ridge_flop_per_byte'])} FLOP/byte."
            for row in measured.iter_rows(named=True)
        )
    return out


#: A datasheet ridge this far from the report's is named beside it (the report's peaks are taken at
#: the clocks of the profile: the H200's BF16 tensor peak is 1.07 PFLOP/s at 1.98 GHz, the datasheet's
#: 989 TFLOP/s at 1.83 GHz).
RIDGE_DIFFERS = 0.03


def _datasheet_clause(report: pl.DataFrame, sheet: pl.DataFrame) -> str:
    """Where the datasheet's ridge at DRAM differs from the report's, what it is and why: so that the
    ridge said here and the one ``coach numbers`` prints from the datasheet are not two unexplained
    numbers for one GPU."""
    dram = report.filter(pl.col("level") == "DRAM")
    if dram.is_empty() or sheet.is_empty():
        return ""
    ours, theirs = dram.row(0, named=True), sheet.row(0, named=True)
    if abs(theirs["ridge_flop_per_byte"] / ours["ridge_flop_per_byte"] - 1) <= RIDGE_DIFFERS:
        return ""
    return (f" These are Nsight Compute's peaks at the profile's clocks; the datasheet's "
            f"({_rate(theirs['peak_flop_per_s'], 'FLOP/s')}, {_rate(theirs['peak_bytes_per_s'], 'B/s')}) put the ridge "
            f"at {_as_numbers(theirs['ridge_flop_per_byte'])}.")


def _as_numbers(ridge: float) -> str:
    """A datasheet or measured ridge as ``coach numbers`` prints it (the same table's value)."""
    from coach.reference.numbers import shown  # noqa: PLC0415 - the reference sheet's own format

    return shown(ridge, "FLOP/B")


def _ordered_precisions(precisions: Sequence[str]) -> list[str]:
    fixed = [p.precision for p in PIPES]
    return sorted(dict.fromkeys(precisions), key=lambda p: (fixed.index(p) if p in fixed else len(fixed), p))


def _ridge_sentence(where: str, precision: str, rows: pl.DataFrame) -> str:
    by_level = {r["level"]: r for r in rows.iter_rows(named=True)}
    label = precision_label(precision)
    unit = "operations" if precision.startswith(TENSOR_PREFIX + "int") else "FLOPs"
    first = by_level.get("DRAM") or next(iter(by_level.values()))
    text = (
        f"{where[0].upper()}{where[1:]}, a kernel doing fewer than ~{_approx(first['ridge_flop_per_byte'])} {label} {unit} "
        f"per {first['level']} byte is memory-bound: below that, {first['level']} bandwidth "
        f"({_rate(first['peak_bytes_per_s'], 'B/s')}) caps it before the {label} peak "
        f"({_rate(first['peak_flop_per_s'], 'FLOP/s' if unit == 'FLOPs' else 'OP/s')}) does."
    )
    inner = [by_level[n] for n in LEVEL_ORDER if n in by_level and by_level[n] is not first]
    if inner:
        text += " Counting " + " and ".join(f"{r['level']}" for r in inner) + " traffic instead, the ridge" + (
            "s are" if len(inner) > 1 else " is"
        ) + " at ~" + " and ~".join(_approx(r["ridge_flop_per_byte"]) for r in inner) + f" {unit} per byte."
    return text


# --------------------------------------------------------------------------------------------
# Before and after
# --------------------------------------------------------------------------------------------

PAIR_KEYS = ("level", "precision")


def pair(before: Roofline, after: Roofline) -> pl.DataFrame:
    """Rows of ``before`` and ``after`` for the same kernel, level and precision, side by side
    (columns suffixed ``_before`` and ``_after``).

    Launches pair by kernel name and the order they ran in. When no kernel name is in both
    profiles and each holds one kernel (a rewrite under a new name, say), those two pair.
    """

    def keyed(t: pl.DataFrame, by_name: bool) -> pl.DataFrame:
        first_seen = pl.col("launch_id").rank("dense").over("kernel_name")
        key = pl.concat_str(pl.col("kernel_name"), pl.lit("#"), first_seen.cast(pl.Utf8)) if by_name else pl.lit("only")
        return t.with_columns(key.alias("pair_key"))

    shared = set(before.table["kernel_name"].unique().to_list()) & set(after.table["kernel_name"].unique().to_list())
    by_name = bool(shared) or not (before.table["launch_id"].n_unique() == 1 and after.table["launch_id"].n_unique() == 1)
    b = keyed(before.table, by_name)
    a = keyed(after.table, by_name)
    values = [c for c in TABLE_COLUMNS if c not in PAIR_KEYS]
    joined = b.select("pair_key", *PAIR_KEYS, *[pl.col(c).alias(f"{c}_before") for c in values]).join(
        a.select("pair_key", *PAIR_KEYS, *[pl.col(c).alias(f"{c}_after") for c in values]), on=["pair_key", *PAIR_KEYS]
    )
    return joined.with_columns((pl.col("duration_ns_before") / pl.col("duration_ns_after")).alias("speedup")).drop("pair_key")
