"""The numbers to carry into the room, per GPU, computed from hardware/ and never typed in.

Every row comes from ``coach.analyze.hardware`` (datasheet values with their source, measured
ceilings from hardware/measured/ or the user's own calibration) or from
``coach.analyze.collectives``, or is derived from such values by a formula the row states. Each row
says where it comes from: ``datasheet`` (a published figure, or a device attribute the project's GPU
reported), ``measured`` (a calibration run on that GPU), ``derived`` (arithmetic on the rows it
names) or ``missing`` (and why: not published, or not measured yet).

``sheet(gpu)`` is one Polars frame with a row per quantity: group, quantity, value, unit, shown (the
value as printed), origin and source. The CLI (`coach numbers`) and the dashboard's Reference page
both print ``shown``, so they cannot disagree.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from coach.analyze import collectives, hardware

SCHEMA = {"gpu": pl.Utf8, "group": pl.Utf8, "quantity": pl.Utf8, "value": pl.Float64, "unit": pl.Utf8,
          "shown": pl.Utf8, "origin": pl.Utf8, "source": pl.Utf8}
GROUPS = ("memory", "compute", "ridge points", "links", "launch", "latency")
#: Message size for the all-reduce row: large enough that bandwidth, not latency, sets the time.
ALLREDUCE_BYTES = 1e9
#: Measurements that a calibration may carry for memory latency; until one does, the rows say so.
LATENCY_MEASUREMENTS = (("L1 hit load latency", "l1_load_latency_s"), ("L2 hit load latency", "l2_load_latency_s"),
                        ("DRAM load latency", "dram_load_latency_s"))
PRECISIONS = (("FP64", "fp64"), ("FP32 (FMA pipes)", "fp32"), ("TF32 tensor", "tf32"), ("BF16 tensor", "bf16"),
              ("FP8 tensor", "fp8"), ("FP6 tensor", "fp6"), ("FP4 tensor", "fp4"), ("INT8 tensor", "int8"))
RIDGE_PRECISIONS = (("FP32", "fp32"), ("BF16", "bf16"), ("FP8", "fp8"), ("FP4", "fp4"))

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SMALL = ((1e-3, "m"), (1e-6, "u"), (1e-9, "n"))


def shown(value: float | None, unit: str) -> str:
    """3 significant digits with an SI prefix: 4.8e12 B/s -> '4.80 TB/s', 1.26e-5 s -> '12.6 us'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit in ("", "links", "GPUs", "FLOP/B", "x", "registers", "warps"):
        return f"{value:,.0f}" if value >= 100 or float(value).is_integer() else f"{value:.3g}"
    v = float(value)
    if unit == "bytes":  # on-chip sizes, which are powers of two: KiB and MiB as the guides print them
        for factor, prefix in ((2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki")):
            if v >= factor:
                return f"{v / factor:.4g} {prefix}B"
        return f"{v:.0f} B"
    scales = _SMALL if unit == "s" and abs(v) < 1 else _PREFIXES
    for factor, prefix in scales:
        if abs(v) >= factor:
            return f"{_sig(v / factor)} {prefix}{unit}"
    return f"{_sig(v)} {unit}"


def _sig(x: float) -> str:
    digits = 3 - 1 - math.floor(math.log10(abs(x))) if x else 0
    return f"{x:.{max(0, digits)}f}"


def _row(gpu: str, group: str, quantity: str, value: float | None, unit: str, origin: str, source: str) -> dict[str, Any]:
    return {"gpu": gpu, "group": group, "quantity": quantity, "value": None if value is None else float(value),
            "unit": unit, "shown": shown(value, unit), "origin": origin if value is not None else "missing",
            "source": source}


def _sheet_origin(s: hardware.Sourced) -> str:
    return {"published": "datasheet", "recorded": "datasheet", "device": "datasheet", "derived": "derived",
            "missing": "missing"}.get(s.origin, s.origin)


def _field(gpu: hardware.GPU, group: str, quantity: str, name: str, unit: str) -> dict[str, Any]:
    s = gpu.source(name)
    source = s.describe()
    if s.origin == "recorded":
        source = f"reported by the device: {source}"
    return _row(gpu.id, group, quantity, gpu.value(name), unit, _sheet_origin(s), source)


def sheet(gpu_id: str, *, measured: bool | hardware.Measurements | str | Path = True) -> pl.DataFrame:
    """Every number of one GPU, as rows (see the module docstring). ``measured`` as for
    ``coach.analyze.hardware.ceilings``: False for datasheet numbers only, or a calibration to use."""
    gpu = hardware.get(gpu_id)
    sheet_roofs = hardware.ceilings(gpu, measured=False)
    roofs = hardware.ceilings(gpu, measured=measured)
    m = roofs.measurements
    rows: list[dict[str, Any]] = []
    g = gpu.id

    # memory
    rows.append(_field(gpu, "memory", "HBM capacity", "dram_bytes", "B"))
    rows.append(_field(gpu, "memory", "HBM bandwidth (datasheet)", "dram_bandwidth_bytes_per_s", "B/s"))
    for label, key in (("HBM copy bandwidth (measured)", "dram_copy_bandwidth_bytes_per_s"),
                       ("HBM read bandwidth (measured)", "dram_read_bandwidth_bytes_per_s")):
        if m is not None and key in m.values:
            # the measured ceiling, as the floors, the roofline and the ladders use it: the calibration
            # raised to the best rate recorded on this GPU, so that no recorded rate exceeds it
            value, raised = hardware.measured_ceiling(gpu, m, key)
            rows.append(_row(g, "memory", label, value, "B/s", "measured",
                             f"{m.describe(key)}: {key}" + (f"; raised to {raised}" if raised else "")))
    dram = roofs.bandwidth["dram"]
    if dram.origin == "measured":
        # the roofline's DRAM roof and the ridge points' bandwidth: the better of the two above, and at
        # least the best DRAM rate of any read/write mix recorded on this GPU (shipped calibration only)
        rows.append(_row(g, "memory", "HBM bandwidth, any read/write mix (measured: the DRAM roof)", dram.value, "B/s",
                         "measured", dram.source))
    if gpu.dram_bytes and dram.value:
        rows.append(_row(g, "memory", "Time to read all of HBM once", gpu.dram_bytes / dram.value, "s", "derived",
                         f"HBM capacity / HBM bandwidth ({'measured' if dram.origin == 'measured' else 'datasheet'}): "
                         "the floor of a decode step that reads every byte"))
    rows.append(_field(gpu, "memory", "L2 cache", "l2_bytes", "bytes"))
    rows.append(_field(gpu, "memory", "Shared memory per SM", "shared_mem_per_sm_bytes", "bytes"))
    rows.append(_field(gpu, "memory", "Registers per SM", "registers_per_sm", "registers"))
    rows.append(_field(gpu, "memory", "Max warps per SM", "max_warps_per_sm", "warps"))
    rows.append(_field(gpu, "memory", "SMs", "sm_count", ""))

    # compute: dense peaks, then measured matmul rates
    for label, p in PRECISIONS:
        field = hardware.PRECISION_FIELDS[p]
        rows.append(_field(gpu, "compute", f"{label}, dense", field, "OP/s" if p == "int8" else "FLOP/s"))
    for p, label in (("fp32", "FP32 matmul (measured)"), ("tf32", "TF32 matmul (measured)"),
                     ("bf16", "BF16 matmul (measured)")):
        c = roofs.compute[p]
        if c.origin == "measured":
            rows.append(_row(g, "compute", label, c.value, "FLOP/s", "measured", c.source))

    # ridge points: against the datasheet bandwidth, and against the measured ceilings where there are some
    for label, p in RIDGE_PRECISIONS:
        ridge = sheet_roofs.ridge_point(p)
        if ridge is not None or p in ("fp32", "bf16"):
            rows.append(_row(g, "ridge points", f"{label} ridge (datasheet)", ridge, "FLOP/B", "derived",
                             f"dense {label} peak / HBM bandwidth, both datasheet"))
        if roofs.compute[p].origin == "measured" and dram.origin == "measured":
            rows.append(_row(g, "ridge points", f"{label} ridge (measured)", roofs.ridge_point(p), "FLOP/B", "derived",
                             f"measured {label} matmul rate / the measured DRAM roof"))

    # links
    rows.append(_field(gpu, "links", "PCIe, each direction", "pcie_bytes_per_s_per_direction", "B/s"))
    rows.append(_field(gpu, "links", "NVLink, bidirectional", "peer_link_bytes_per_s_bidirectional", "B/s"))
    bidir = gpu.peer_link_bytes_per_s_bidirectional
    if bidir:
        rows.append(_row(g, "links", "NVLink, each direction", collectives.link(g).bytes_per_s_per_direction, "B/s",
                         "derived", "half the bidirectional figure: the rate a collective's bytes flow out of a GPU"))
    rows.append(_field(gpu, "links", "NVLink links per GPU", "peer_link_count", "links"))
    rows.append(_field(gpu, "links", "GPUs in one NVLink domain", "nvlink_domain_gpus", "GPUs"))
    if bidir and collectives.switched(g):
        lnk = collectives.link(g)
        n = lnk.domain_gpus or 8
        t = collectives.seconds(collectives.ring_allreduce_bytes(ALLREDUCE_BYTES, n), lnk)
        assumed = "" if lnk.domain_gpus else " (8 GPUs assumed: the tables give no domain size)"
        rows.append(_row(g, "links", "All-reduce of 1 GB in one domain", t, "s", "derived",
                         f"ring over n = {n} GPUs: 2(n-1)/n x 1 GB / NVLink each direction{assumed}"))

    # launch
    stream, graph = roofs.launch.get("stream"), roofs.launch.get("graph")
    why = "not measured: run `coach calibrate` on this GPU"
    rows.append(_row(g, "launch", "Kernel launch, back to back", stream.value if stream else None, "s", "measured",
                     stream.source if stream else why))
    rows.append(_row(g, "launch", "CUDA graph, per kernel", graph.value if graph else None, "s", "measured",
                     graph.source if graph else why))
    if stream and graph:
        rows.append(_row(g, "launch", "Graph launch saving", stream.value / graph.value, "x", "derived",
                         "kernel launch / graph per-kernel cost, both measured"))

    # latency, and what it implies by Little's law
    for label, key in LATENCY_MEASUREMENTS:
        value = m.values.get(key) if m is not None else None
        withheld = m.withheld.get(key) if m is not None else None
        rows.append(_row(g, "latency", label, value, "s", "measured",
                         f"{m.describe(key)}: {key}" if value is not None
                         else f"not measured: {withheld}" if withheld
                         else "not measured: needs a pointer-chase calibration on this GPU (coach calibrate)"))
    dram_latency = m.values.get("dram_load_latency_s") if m is not None else None
    in_flight = dram.value * dram_latency if dram.value and dram_latency else None
    rows.append(_row(g, "latency", "Bytes in flight to fill HBM", in_flight, "B", "derived",
                     f"Little's law: HBM bandwidth ({dram.origin}) x DRAM load latency"
                     + ("" if in_flight else "; needs the DRAM load latency")))
    if in_flight and gpu.sm_count:
        rows.append(_row(g, "latency", "... per SM", in_flight / gpu.sm_count, "B", "derived",
                         f"bytes in flight / {gpu.sm_count} SMs"))
    return pl.DataFrame(rows, schema=SCHEMA)


def compare(gpu_ids: list[str], *, measured: bool | hardware.Measurements | str | Path = True) -> pl.DataFrame:
    """One row per quantity and one column per GPU (the shown values): the sheets side by side."""
    frames = [sheet(g, measured=measured) for g in gpu_ids]
    # rows in the order the sheets give them: a quantity one GPU lacks goes after its predecessor
    keys: list[tuple[str, str]] = []
    for f in frames:
        before = -1
        for k in zip(f["group"], f["quantity"]):
            if k in keys:
                before = keys.index(k)
            else:
                before += 1
                keys.insert(before, k)
    order = pl.DataFrame({"group": [k[0] for k in keys], "quantity": [k[1] for k in keys]}).with_row_index("order")
    wide = pl.concat(frames).pivot(on="gpu", index=["group", "quantity"], values="shown", aggregate_function="first")
    ids = [hardware.get(g).id for g in gpu_ids]
    return (order.join(wide, on=["group", "quantity"], how="left").sort("order")
            .select("group", "quantity", *ids).fill_null("-"))
