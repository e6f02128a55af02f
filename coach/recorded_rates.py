"""Collect the fastest rate of each calibration measurement recorded on a GPU, and keep it in
``traces/<gpu>/best-rates.json`` (``coach.best_rates`` reads it, with the standard library).

Three kinds of recording measure a rate of the same kind as a calibration ceiling:

- a ladder rung or peer (``traces/<gpu>/ladders/**/results*.json``): its work model (bytes or
  FLOPs) over its median time, against the ladder's own ceiling;
- a scenario variant (``traces/<gpu>/scenario-*/results.json``): its model's rate that fits the
  ceiling it names (useful bytes, or FLOPs, per unit of work over the median time per unit);
- a kernel profiled by Nsight Compute (every saved kernel profile under ``traces/<gpu>``): DRAM
  bytes read and written over its duration (against the copy ceiling, which also counts read plus
  written bytes), DRAM bytes read alone (against the read ceiling), and FP32 FLOPs on the FMA pipe
  (against the FP32 matmul ceiling).

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
    "fp32_simt_matmul_flop_per_s": "peak_fp32_flop_per_s",
    "tf32_tensor_matmul_flop_per_s": "peak_tf32_tensor_flop_per_s",
    "bf16_tensor_matmul_flop_per_s": "peak_bf16_tensor_flop_per_s",
    "fp8_tensor_matmul_flop_per_s": "peak_fp8_tensor_flop_per_s",
}
#: Nsight Compute's per-launch rates, by measurement: the derived column of coach.analyze.kernel_metrics.
NCU_RATES = {
    "dram_copy_bandwidth_bytes_per_s": "dram_bandwidth_bytes_per_s",
    "dram_read_bandwidth_bytes_per_s": "dram_read_bandwidth_bytes_per_s",
    "fp32_simt_matmul_flop_per_s": "fp32_flop_per_s",
}


def candidates(gpu: str, traces: Path | None = None) -> pl.DataFrame:
    """Every recorded rate on ``gpu``: measurement, value, where."""
    base = (Path(traces) if traces is not None else traces_dir()) / gpu
    rows = [*_ladder_rates(base), *_scenario_rates(base, gpu, traces), *_ncu_rates(base)]
    return pl.DataFrame(rows, schema={"measurement": pl.Utf8, "value": pl.Float64, "where": pl.Utf8})


def collect(gpu: str, traces: Path | None = None) -> dict[str, Any]:
    """The best-rates document for ``gpu`` (see ``coach.best_rates``)."""
    from coach.analyze import hardware  # noqa: PLC0415 - the datasheet, for the sanity bound

    found = candidates(gpu, traces).filter(pl.col("measurement").is_in(list(DATASHEET_FIELD)))
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
    return {
        "coach_best_rates": best_rates.BEST_RATES_FORMAT,
        "gpu": gpu,
        "about": "the fastest rate of each calibration measurement recorded on this GPU (coach/recorded_rates.py)",
        "rates": {r["measurement"]: {"value": r["value"], "where": r["where"]} for r in best.iter_rows(named=True)},
        "rejected": [{"measurement": r["measurement"], "value": r["value"], "where": r["where"],
                      "why": f"above the datasheet's {r['limit']:.4g}: a miscount, not a measurement"}
                     for r in rejected.iter_rows(named=True)],
    }


def write(gpu: str, traces: Path | None = None) -> Path:
    """Write ``traces/<gpu>/best-rates.json`` from the traces; returns its path."""
    doc = collect(gpu, traces)
    path = best_rates.path_for(gpu, traces)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _ladder_rates(base: Path) -> Iterator[dict[str, Any]]:
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
                yield {"measurement": m.bytes_ceiling_name, "value": m.useful(variant) / seconds, "where": where}
            flops = m.value(m.flops)
            if m.flops_ceiling_name and flops:
                yield {"measurement": m.flops_ceiling_name, "value": flops / seconds, "where": where}


def _ncu_rates(base: Path) -> Iterator[dict[str, Any]]:
    from coach.analyze.kernel_metrics import with_derived  # noqa: PLC0415
    from coach.ingest import load  # noqa: PLC0415

    for meta in sorted(base.rglob("coach-profile.json")):
        try:
            kind = json.loads(meta.read_text(encoding="utf-8")).get("kind")
        except (OSError, ValueError):
            continue
        if kind != "kernel-profile":
            continue
        profile = load(meta.parent)
        wide = with_derived(profile.launches, profile.devices).with_columns(
            fp32_flop_per_s=pl.when(pl.col("duration_ns") > 0).then(pl.col("fp32_flop") / (pl.col("duration_ns") * 1e-9)))
        rel = meta.parent.relative_to(base)
        for measurement, column in NCU_RATES.items():
            best = wide.select("kernel_name", column).drop_nulls().sort(column, descending=True).head(1)
            if best.height:
                name, value = best.row(0)
                yield {"measurement": measurement, "value": float(value),
                       "where": f"Nsight Compute, {rel} {name}"}
