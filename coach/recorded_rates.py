"""Collect the fastest rate of each calibration measurement recorded on a GPU, and keep it in
``traces/<gpu>/best-rates.json`` (``coach.best_rates`` reads it, with the standard library).

Three kinds of recording measure a rate of the same kind as a calibration ceiling:

- a ladder rung or peer (``traces/<gpu>/ladders/**/results*.json``): its work model (bytes or
  FLOPs) over its median time, against the ladder's own ceiling;
- a scenario variant (``traces/<gpu>/scenario-*/results.json``): its model's rate that fits the
  ceiling it names (useful bytes, or FLOPs, per unit of work over the median time per unit);
- a kernel profiled by Nsight Compute (every saved kernel profile under ``traces/<gpu>``): DRAM
  bytes over its duration, and FP32 FLOPs on the FMA pipe (against the FP32 matmul ceiling).

The two DRAM ceilings are different programs: the copy ceiling reads and writes (half and half),
the read ceiling only reads. Traffic of reads alone needs no read/write turnarounds on the DRAM bus
and can run faster than any copy, so a read-only kernel's rate says nothing of what a copy can do.
A DRAM rate therefore counts toward one of them only where its traffic is known to be of that kind:

- toward the copy ceiling (read plus written bytes over the time) where writes are a real share of
  the traffic, ``COPY_WRITE_SHARE``;
- toward the read ceiling (bytes read over the time) where the traffic is reads all but
  ``READ_ONLY_WRITE_SHARE``.

A kernel's split is what Nsight Compute counted (dram__bytes_read.sum and dram__bytes_write.sum, or
their sectors); a scenario's is its model's ``written_bytes`` over its ``useful_bytes``; a ladder's
ceiling is named by its work model (a ladder naming the copy ceiling reads and writes each element
once, tests/test_recorded_rates.py checks its declared size). A rate whose split is unknown, or fits
neither kind, is not used for them: it is listed under ``not_used``, with what it needs.

The roofline's DRAM roof is neither ceiling but the attainable DRAM bandwidth, whatever the mix: a
kernel recorded above the roof would contradict it. So every DRAM rate also counts toward ``ANY``
(``dram_bandwidth_bytes_per_s``, the datasheet's field): a kernel's read plus written bytes over its
duration, a scenario's or a ladder's useful bytes over its time, of any split, known or not.

A rate above the GPU's datasheet peak of the same kind is a miscount, not a measurement: it is kept
out of the ceiling and listed as rejected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from coach import best_rates, ladders, scenarios
from coach.capture.calibrate import MEASUREMENTS
from coach.errors import CoachError
from coach.paths import traces_dir

#: Rate measurements (the calibration's, less the launch latencies) and the datasheet field of each.
DATASHEET_FIELD = {
    "dram_copy_bandwidth_bytes_per_s": "dram_bandwidth_bytes_per_s",
    "dram_read_bandwidth_bytes_per_s": "dram_bandwidth_bytes_per_s",
    "dram_bandwidth_bytes_per_s": "dram_bandwidth_bytes_per_s",
    "fp32_simt_matmul_flop_per_s": "peak_fp32_flop_per_s",
    "tf32_tensor_matmul_flop_per_s": "peak_tf32_tensor_flop_per_s",
    "bf16_tensor_matmul_flop_per_s": "peak_bf16_tensor_flop_per_s",
    "fp8_tensor_matmul_flop_per_s": "peak_fp8_tensor_flop_per_s",
}
#: The DRAM ceilings, by the traffic each measures.
COPY = "dram_copy_bandwidth_bytes_per_s"
READ = "dram_read_bandwidth_bytes_per_s"
#: The DRAM roof: DRAM bytes read and written per second, whatever the mix (no calibration measures it).
ANY = "dram_bandwidth_bytes_per_s"
#: Write shares of DRAM traffic (written over read plus written bytes) that count as a copy's mix.
#: The calibration's copy writes half its bytes; the bounds take in a kernel that reads two arrays and
#: writes one (a third written) and leave out one that writes a tenth, whose traffic is mostly reads.
COPY_WRITE_SHARE = (0.30, 0.70)
#: Below this write share the traffic is reads: a reduction writes its partial sums (528 floats per
#: GiB read in kernels/reduction rung 04), a GEMV its output vector.
READ_ONLY_WRITE_SHARE = 0.05
_KINDS = "a copy ceiling counts a mix of reads and writes, the read ceiling reads alone"
#: What an Nsight Compute DRAM rate needs to count toward either DRAM ceiling.
NEEDS_SPLIT = f"not checked: needs dram__bytes_read.sum and dram__bytes_write.sum ({_KINDS})"
#: What a scenario's rate needs to count toward either DRAM ceiling.
NEEDS_WRITTEN = f"not checked: needs the model's written_bytes ({_KINDS})"


def dram_kind(write_share: float | None) -> str | None:
    """The DRAM ceiling (``COPY`` or ``READ``) traffic with ``write_share`` counts toward; None where
    the share is unknown or fits neither."""
    if write_share is None:
        return None
    if COPY_WRITE_SHARE[0] <= write_share <= COPY_WRITE_SHARE[1]:
        return COPY
    if write_share < READ_ONLY_WRITE_SHARE:
        return READ
    return None


def _neither(write_share: float, whose: str) -> str:
    lo, hi = COPY_WRITE_SHARE
    return (f"not used: writes are {write_share:.0%} of {whose}, neither a copy's mix ({lo:.0%}-{hi:.0%}) "
            f"nor reads alone (under {READ_ONLY_WRITE_SHARE:.0%})")


SCHEMA = {"measurement": pl.Utf8, "value": pl.Float64, "where": pl.Utf8, "why": pl.Utf8}


def recorded(gpu: str, traces: Path | None = None) -> pl.DataFrame:
    """Every recorded rate on ``gpu``: measurement, value, where, and why it is not used (null where
    it counts toward ``measurement``)."""
    base = (Path(traces) if traces is not None else traces_dir()) / gpu
    rows = [*_ladder_rates(base), *_scenario_rates(base, gpu, traces), *_ncu_rates(base)]
    # a ladder's or a scenario's DRAM rate, of either kind or neither, is also a DRAM rate of some mix
    # (a kernel profile gives its own ANY row: read plus written bytes, where its READ row counts reads)
    rows += [{**r, "measurement": ANY, "why": None} for r in rows
             if r["measurement"] in (COPY, READ) and not r["where"].startswith("Nsight Compute, ")]
    return pl.DataFrame([{"why": None, **r} for r in rows], schema=SCHEMA)


def candidates(gpu: str, traces: Path | None = None) -> pl.DataFrame:
    """Every recorded rate on ``gpu`` that counts toward a ceiling: measurement, value, where."""
    return recorded(gpu, traces).filter(pl.col("why").is_null()).drop("why")


def collect(gpu: str, traces: Path | None = None) -> dict[str, Any]:
    """The best-rates document for ``gpu`` (see ``coach.best_rates``)."""
    from coach.analyze import hardware  # noqa: PLC0415 - the datasheet, for the sanity bound

    every = recorded(gpu, traces)
    found = every.filter(pl.col("why").is_null() & pl.col("measurement").is_in(list(DATASHEET_FIELD)))
    try:
        entry = hardware.get(gpu)
    except CoachError:  # a GPU the tables lack, or a data folder without them: no datasheet to bound by
        entry = None
    limits = {m: (entry.value(f) if entry is not None else None) for m, f in DATASHEET_FIELD.items()}
    limit = pl.col("measurement").replace_strict(limits, default=None, return_dtype=pl.Float64)
    judged = found.with_columns(limit=limit).with_columns(ok=pl.col("limit").is_null() | (pl.col("value") <= pl.col("limit")))
    best = (judged.filter("ok").sort("value", descending=True).group_by("measurement", maintain_order=True).first()
            .sort("measurement"))
    rejected = judged.filter(~pl.col("ok")).sort("measurement", "value")
    unused = every.filter(pl.col("why").is_not_null()).sort("measurement", "value", "where", descending=[False, True, False])
    return {
        "coach_best_rates": best_rates.BEST_RATES_FORMAT,
        "gpu": gpu,
        "about": "the fastest rate of each calibration measurement recorded on this GPU (coach/recorded_rates.py)",
        "rates": {r["measurement"]: {"value": r["value"], "where": r["where"]} for r in best.iter_rows(named=True)},
        "rejected": [{"measurement": r["measurement"], "value": r["value"], "where": r["where"],
                      "why": f"above the datasheet's {r['limit']:.4g}: a miscount, not a measurement"}
                     for r in rejected.iter_rows(named=True)],
        "not_used": [{"measurement": r["measurement"], "value": r["value"], "where": r["where"], "why": r["why"]}
                     for r in unused.iter_rows(named=True)],
    }


def write(gpu: str, traces: Path | None = None) -> Path:
    """Write ``traces/<gpu>/best-rates.json`` from the traces; returns its path."""
    doc = collect(gpu, traces)
    path = best_rates.path_for(gpu, traces)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _ladder_rates(base: Path) -> Iterator[dict[str, Any]]:
    # A ladder's rates count toward the ceiling it names: the one its work model's traffic is of
    # (kernels/<ladder>/ladder.toml's size says what is read and what written).
    for path in sorted((base / "ladders").rglob("results*.json")):
        try:
            res = ladders.load_results(path)
        except Exception:  # noqa: BLE001 - a file that is not a ladder's results records no rate
            continue
        if res.ceiling_name not in MEASUREMENTS or res.synthetic:
            continue
        for kind, items in (("rung", res.rungs), ("peer", res.peers)):
            for m in items:
                rate = m.rate(res.ceiling_unit) if m.status == "ok" else None
                if rate:
                    yield {"measurement": res.ceiling_name, "value": float(rate),
                           "where": f"ladder {res.ladder} ({res.size_name}), {kind} {m.key}"}


def _scenario_rates(base: Path, gpu: str, traces: Path | None) -> Iterator[dict[str, Any]]:
    from coach.recordings import open_recording  # noqa: PLC0415 - recordings imports this module's writer

    for scn in scenarios.all_scenarios():
        if not (base / scn.id / "results.json").is_file():
            continue
        values = open_recording(scn, traces, gpu).values()
        m = scn.model
        for variant in scenarios.VARIANTS:
            t_ms = values.get(f"{variant}_ms")
            if not isinstance(t_ms, (int, float)) or t_ms <= 0:
                continue
            seconds = t_ms * 1e-3
            where = f"{scn.id} {variant}, the model's work over its median time per {scn.unit or 'run'}"
            if m.bytes_ceiling_name:
                yield _scenario_bytes_rate(m, variant, seconds, where)
            flops = m.value(m.flops)
            if m.flops_ceiling_name and flops:
                yield {"measurement": m.flops_ceiling_name, "value": flops / seconds, "where": where}


def _scenario_bytes_rate(m: scenarios.Model, variant: str, seconds: float, where: str) -> dict[str, Any]:
    """A scenario's useful bytes per second, toward the DRAM ceiling its model's traffic is of."""
    row = {"measurement": m.bytes_ceiling_name, "value": m.useful(variant) / seconds, "where": where}
    if m.bytes_ceiling_name not in (COPY, READ):
        return row
    share = m.write_share(variant)
    kind = dram_kind(share)
    if share is None:
        return {**row, "why": NEEDS_WRITTEN}
    if kind is None:
        return {**row, "why": _neither(share, "the model's bytes")}
    return {**row, "measurement": kind}


def _ncu_rates(base: Path) -> Iterator[dict[str, Any]]:
    from coach.ingest import load  # noqa: PLC0415

    for meta in sorted(base.rglob("coach-profile.json")):
        try:
            kind = json.loads(meta.read_text(encoding="utf-8")).get("kind")
        except (OSError, ValueError):
            continue
        if kind != "kernel-profile":
            continue
        yield from profile_rates(load(meta.parent), f"Nsight Compute, {meta.parent.relative_to(base)}")


#: Canonical columns a saved profile's launches may lack where it was read before the mapping
#: (coach/ingest/ncu_metrics.csv) derived them: taken again from its long metrics table.
_REDERIVED = ("duration_ns", "dram_bytes", "dram_read_bytes", "dram_write_bytes")


def profile_rates(profile: Any, where: str) -> list[dict[str, Any]]:
    """The rates one kernel profile records, as rows of ``recorded``: its fastest DRAM rate of each
    kind (copy, read) among the launches whose read/write split is known to be of that kind, its
    fastest DRAM rate of any mix (toward the DRAM roof, ``ANY``), its fastest FP32 rate, and its
    fastest DRAM rate that counts toward neither the copy nor the read ceiling (with why)."""
    from coach.analyze.kernel_metrics import ratio, with_derived  # noqa: PLC0415

    launches = _with_metric_columns(profile)
    seconds = pl.col("duration_ns") * 1e-9
    read, written = pl.col("dram_read_bytes"), pl.col("dram_write_bytes")
    wide = with_derived(launches, profile.devices).with_columns(
        fp32_flop_per_s=ratio(pl.col("fp32_flop"), seconds),
        dram_write_share=ratio(written, read + written),
    ).with_columns(
        kind=pl.when(pl.col("dram_write_share").is_between(*COPY_WRITE_SHARE)).then(pl.lit(COPY))
        .when(pl.col("dram_write_share") < READ_ONLY_WRITE_SHARE).then(pl.lit(READ)),
    )
    rows: list[dict[str, Any]] = []

    def fastest(frame: pl.DataFrame, column: str) -> tuple[Any, ...] | None:
        best = frame.filter(pl.col(column).is_not_null()).sort(column, descending=True).head(1)
        return best.select("kernel_name", column, "dram_write_share").row(0) if best.height else None

    copy = fastest(wide.filter(pl.col("kind") == COPY), "dram_bandwidth_bytes_per_s")
    if copy:
        rows.append({"measurement": COPY, "value": float(copy[1]),
                     "where": f"{where} {copy[0]}, {copy[2]:.0%} of its DRAM bytes written"})
    read_only = fastest(wide.filter(pl.col("kind") == READ), "dram_read_bandwidth_bytes_per_s")
    if read_only:
        rows.append({"measurement": READ, "value": float(read_only[1]),
                     "where": f"{where} {read_only[0]}, {read_only[2]:.1%} of its DRAM bytes written"})
    fp32 = wide.filter(pl.col("fp32_flop_per_s").is_not_null()).sort("fp32_flop_per_s", descending=True).head(1)
    if fp32.height:
        rows.append({"measurement": "fp32_simt_matmul_flop_per_s", "value": float(fp32["fp32_flop_per_s"][0]),
                     "where": f"{where} {fp32['kernel_name'][0]}"})
    every = fastest(wide, "dram_bandwidth_bytes_per_s")
    if every:  # toward the DRAM roof, whatever the mix
        name, value, share = every
        split = "its read/write split not counted" if share is None else f"{share:.0%} of its DRAM bytes written"
        rows.append({"measurement": ANY, "value": float(value), "where": f"{where} {name}, {split}"})
    other = fastest(wide.filter(pl.col("kind").is_null()), "dram_bandwidth_bytes_per_s")
    if other:
        name, value, share = other
        why = NEEDS_SPLIT if share is None else _neither(share, "its DRAM bytes")
        # the kernel's DRAM bytes, read and written, per second: the DRAM roof's (ANY) kind, not the
        # copy's nor the read's, so listed as not used for those
        rows.append({"measurement": ANY, "value": float(value), "where": f"{where} {name}",
                     "why": why})
    return rows


def _with_metric_columns(profile: Any) -> pl.DataFrame:
    """``profile.launches`` with ``_REDERIVED`` filled from its metrics table where null."""
    launches = profile.launches
    metrics = getattr(profile, "metrics", None)
    if metrics is None or metrics.height == 0 or "launch_id" not in launches.columns:
        return launches
    from coach.ingest.ncu_common import canonical_metrics  # noqa: PLC0415

    again = canonical_metrics(metrics).select("launch_id", *[pl.col(c).alias(f"{c}__again") for c in _REDERIVED])
    return (launches.join(again, on="launch_id", how="left", maintain_order="left")
            .with_columns(pl.coalesce(c, f"{c}__again").alias(c) for c in _REDERIVED)
            .drop(f"{c}__again" for c in _REDERIVED))
