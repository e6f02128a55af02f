"""Recorded scenarios: turn raw recordings into ``traces/``, and read them back.

``coach record`` on a GPU machine writes raw folders (``coach.capture.record``); ``import_raw``
reads their reports into coach's model and keeps them compactly::

    traces/<gpu>/<scenario-id>/
        results.json          timings, speed-up, evidence values, provenance (RESULTS_FILE)
        slow/ncu/             the Nsight Compute report as Parquet tables (coach.model.save)
        slow/nsys/            the Nsight Systems export, as the canonical timeline tables
        slow/kineto/          the PyTorch-profiler trace, likewise
        slow/report.ncu-rep   the full report, only where the scenario keeps it for the source view
        fixed/...

``open_recording`` finds a scenario's recording for ``coach run``; ``measure`` and
``check_evidence`` compute the scenario's evidence from the profiles.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from coach import scenarios
from coach.capture.record import MANIFEST, RAW_FORMAT
from coach.capture.staging import staged_folder
from coach.errors import CoachError, InputError
from coach.model import Profile, save
from coach.paths import traces_dir
from coach.scenarios import VARIANTS, Evidence, Scenario

RESULTS_FILE = "results.json"
RESULTS_FORMAT = 1
PROFILE_TOOLS = ("ncu", "nsys", "kineto")
KEPT_NCU_REP = "report.ncu-rep"
#: The whole traces/ folder ships inside the package: keep it small enough to install anywhere.
TRACES_BUDGET_BYTES = 40 * 1000**2
#: An evidence metric the fix should leave alone ("same") may differ by this fraction of the slow
#: value: run-to-run spread of a repeated measurement on one GPU stays within a few percent, while a
#: movement the fix causes is a multiple. 25% separates the two with room on both sides.
SAME_TOLERANCE = 0.25
#: The GPU whose recording ``coach run`` shows when several exist: the one the project records on.
PREFERRED_GPU = "h200"

Log = Callable[[str], None]


# --------------------------------------------------------------------------------------------
# Evidence
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceValue:
    evidence: Evidence
    slow: float | None
    fixed: float | None

    @property
    def moved_as_expected(self) -> bool | None:
        if self.slow is None or self.fixed is None:
            return None
        if self.evidence.direction == "down":
            return self.fixed < self.slow
        if self.evidence.direction == "up":
            return self.fixed > self.slow
        return abs(self.fixed - self.slow) <= SAME_TOLERANCE * abs(self.slow)

    @property
    def slow_in_range(self) -> bool | None:
        rng = self.evidence.slow_range
        if rng is None or self.slow is None:
            return None
        return rng[0] <= self.slow <= rng[1]

    def to_dict(self) -> dict[str, Any]:
        e = self.evidence
        return {"name": e.name, "label": e.label, "unit": e.unit, "direction": e.direction, "slow": self.slow,
                "fixed": self.fixed, "moved_as_expected": self.moved_as_expected,
                "slow_range": list(e.slow_range) if e.slow_range else None, "slow_in_range": self.slow_in_range}


def measure(scenario: Scenario, evidence: Evidence, profile: Profile) -> float | None:
    """The evidence's value on one profile, or None when no row qualifies or the metric is empty."""
    if evidence.table not in profile.TABLES:
        raise InputError(scenario.path, f"evidence '{evidence.name}': a {profile.kind} has no {evidence.table} table")
    frame = getattr(profile, evidence.table)
    name_col = scenarios.NAME_COLUMNS.get(evidence.table)
    needed = [evidence.metric, *([evidence.per] if evidence.per else []), *(k for k, _ in evidence.where),
              *([name_col] if evidence.kernel and name_col else [])]
    for col in needed:
        if col not in frame.columns:
            raise InputError(scenario.path, f"evidence '{evidence.name}': '{col}' is not a column of the "
                                            f"canonical {evidence.table} table")
    lf = frame.lazy()
    if evidence.kernel and name_col:
        match = pl.col(name_col).str.contains(evidence.kernel)
        signature = scenarios.SIGNATURE_COLUMNS.get(evidence.table)
        if signature in frame.columns:
            match = match.fill_null(False) | pl.col(signature).str.contains(evidence.kernel).fill_null(False)
        lf = lf.filter(match)
    for key, value in evidence.where:
        lf = lf.filter(pl.col(key) == value)
    metric = pl.col(evidence.metric).cast(pl.Float64)
    if evidence.per:
        expr = metric.sum() / pl.col(evidence.per).cast(pl.Float64).sum()
    elif evidence.agg == "count":
        expr = pl.len().cast(pl.Float64)
    else:
        expr = getattr(metric, evidence.agg)()
    row = lf.select(expr.alias("value"), pl.col(evidence.metric).is_not_null().sum().alias("present")).collect()
    value, present = row["value"][0], row["present"][0]
    if evidence.agg != "count" and not present:
        return None  # the metric was not recorded (polars sums nothing to 0)
    if value is None or not math.isfinite(value):
        return None
    return float(value) * evidence.scale


def check_evidence(scenario: Scenario, profiles: Mapping[str, Mapping[str, Profile]]) -> list[EvidenceValue]:
    """Each evidence entry measured on the slow and the fixed profiles (``profiles[variant][tool]``)."""
    out = []
    for ev in scenario.evidence:
        values = {}
        for variant in VARIANTS:
            profile = _profile_for(ev, profiles.get(variant, {}))
            values[variant] = measure(scenario, ev, profile) if profile is not None else None
        out.append(EvidenceValue(ev, values["slow"], values["fixed"]))
    return out


def _profile_for(evidence: Evidence, by_tool: Mapping[str, Profile]) -> Profile | None:
    order = ("ncu",) if evidence.profile_kind == "kernel-profile" else ("nsys", "kineto")
    return next((by_tool[t] for t in order if t in by_tool), None)


# --------------------------------------------------------------------------------------------
# Numbers for the text: {placeholders}
# --------------------------------------------------------------------------------------------


def placeholder_values(scenario: Scenario, results: Mapping[str, Any]) -> dict[str, Any]:
    """Every value a scenario's text may name, computed from the recording and the bytes model.

    Recording: gpu, gpu_short, recorded_date, driver, cuda; per variant V: V_ms, V_min_ms, V_gb_per_s
    (V's useful bytes over V's time), V_tflop_per_s (its FLOPs over its time, in TFLOP or in the
    model's ``flop_unit``), V_rate (the rate that fits the bound, in ``rate_unit``: useful bytes/s,
    or FLOP/s for compute-bound work), V_pct_of_floor (V's floor over V's time), and
    V_<evidence name>; speedup.
    Model: each named size, useful_gb, gflop, bytes_ms, flops_ms, floor_ms (the larger: the slow
    variant's work), serial_ms (their sum), V_floor_ms (V's own work's floor: the same as floor_ms
    unless the fix changes the work per unit), V_moved_gb and V_moved_ms for the bytes each variant is
    predicted to move; rate_label and rate_unit (what V_rate counts).
    """
    m = scenario.model
    gpu = str(results.get("gpu") or "")
    prov = results.get("provenance") or {}
    v: dict[str, Any] = {"gpu": gpu, "gpu_short": re.sub(r"^NVIDIA\s+", "", gpu),
                         "recorded_date": str(results.get("recorded_at") or "")[:10],
                         "driver": (prov.get("gpu") or {}).get("driver"), "cuda": prov.get("cuda_driver_version")}
    v.update(m.sizes)
    useful, flops = m.useful("slow"), m.value(m.flops)
    bytes_ms = m.bytes_s("slow") * 1e3
    flops_ms = m.flops_s() * 1e3 if m.flop_per_s else None
    floor_ms = m.floor_s() * 1e3
    v.update(useful_gb=useful / 1e9, gflop=flops / 1e9, bytes_ms=bytes_ms, flops_ms=flops_ms, floor_ms=floor_ms,
             serial_ms=bytes_ms + (flops_ms or 0.0), rate_label=m.rate_label, rate_unit=m.rate_unit)
    for variant in VARIANTS:
        v[f"{variant}_floor_ms"] = m.floor_s(variant=variant) * 1e3
    for variant, expr in m.moved_bytes.items():
        moved = m.value(expr)
        v[f"{variant}_moved_gb"] = moved / 1e9
        v[f"{variant}_moved_ms"] = moved / m.bytes_per_s * 1e3
    timings = results.get("variants") or {}
    for variant in VARIANTS:
        t = (timings.get(variant) or {}).get("median_ms")
        if not isinstance(t, (int, float)) or t <= 0:
            continue
        seconds = t * 1e-3
        v[f"{variant}_ms"] = t
        v[f"{variant}_min_ms"] = timings[variant].get("min_ms")
        v[f"{variant}_gb_per_s"] = m.useful(variant) / seconds / 1e9
        v[f"{variant}_tflop_per_s"] = flops / seconds / 1e12
        v[f"{variant}_rate"] = m.rate(variant, seconds)
        v[f"{variant}_pct_of_floor"] = v[f"{variant}_floor_ms"] / t * 100
    if "slow_ms" in v and "fixed_ms" in v:
        v["speedup"] = v["slow_ms"] / v["fixed_ms"]
    for item in results.get("evidence") or []:
        for variant in VARIANTS:
            v[f"{variant}_{item['name']}"] = item.get(variant)
    return v


# --------------------------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Imported:
    scenario: str
    folder: Path
    size_bytes: int
    results: dict[str, Any]


def raw_folders(raw: Path) -> list[Path]:
    """The recorded scenario folders in ``raw`` (or ``raw`` itself if it is one)."""
    raw = Path(raw)
    if (raw / MANIFEST).is_file():
        return [raw]
    if not raw.is_dir():
        raise InputError(raw, "is not a folder")
    found = sorted(d for d in raw.iterdir() if (d / MANIFEST).is_file())
    if not found:
        raise InputError(raw, f"holds no recorded scenarios (no */{MANIFEST}; was it written by coach record?)")
    return found


def import_raw(raw: Path, traces: Path | None = None, *, log: Log = lambda line: None) -> list[Imported]:
    """Import every recorded scenario under ``raw`` into ``traces`` (default: the project's traces/)."""
    from coach.ingest import load  # the readers pull in polars and, for .ncu-rep, ncu_report

    traces = Path(traces) if traces is not None else traces_dir()
    done = []
    for folder in raw_folders(raw):
        done.append(_import_one(folder, traces, load, log))
    from coach import recorded_rates  # noqa: PLC0415 - needs the imported recordings

    for gpu in sorted({item.folder.parent.name for item in done}):
        log(f"best recorded rates: {recorded_rates.write(gpu, traces)}")
    return done


def _import_one(folder: Path, traces: Path, load: Callable[[Path], Profile], log: Log) -> Imported:
    manifest_path = folder / MANIFEST
    manifest = _read_json(manifest_path)
    if manifest.get("coach_raw_format") != RAW_FORMAT:
        raise InputError(manifest_path, f"has raw format {manifest.get('coach_raw_format')!r}; this coach "
                                        f"imports format {RAW_FORMAT}")
    scenario = scenarios.find(str(manifest.get("scenario")))
    gpu = manifest.get("gpu")
    if not isinstance(gpu, str) or not re.fullmatch(r"[a-z0-9-]+", gpu):
        raise InputError(manifest_path, f"field 'gpu' must be a folder name like 'h200', not {gpu!r}")
    provenance = manifest.get("provenance") or {}
    variants = manifest.get("variants") or {}
    missing = [v for v in VARIANTS if v not in variants]
    if missing:
        raise InputError(manifest_path, f"records no {missing[0]} variant")
    dest = traces / gpu / scenario.id
    log(f"{scenario.id}: importing {folder} -> {dest}")
    with staged_folder(dest, replace=True) as stage:
        profiles: dict[str, dict[str, Profile]] = {}
        timings: dict[str, Any] = {v: _plain_result(folder, variants[v], manifest_path, v) for v in VARIANTS}
        _check_units(scenario, timings, folder, variants)
        kept: dict[str, dict[str, str]] = {}
        for variant in VARIANTS:
            files = variants[variant]
            profiles[variant], kept[variant] = {}, {}
            for tool in PROFILE_TOOLS:
                if tool not in files:
                    continue
                src = folder / files[tool]
                profile = load(src)
                meta = {**dict(profile.source.meta), "scenario": scenario.id, "variant": variant,
                        "provenance": provenance, "command": (manifest.get("commands") or {}).get(variant)}
                profile.source = replace(profile.source, meta=meta)
                save(profile, stage / variant / tool)
                profiles[variant][tool] = profile
                kept[variant][tool] = f"{variant}/{tool}"
                log(f"{scenario.id}: {variant} {tool}: {_rows(profile)}")
                if tool == "ncu" and variant in scenario.profile.keep_ncu_rep and src.is_file():
                    shutil.copyfile(src, stage / variant / KEPT_NCU_REP)
                    kept[variant]["ncu_rep"] = f"{variant}/{KEPT_NCU_REP}"
        evidence = check_evidence(scenario, profiles)
        results = _results(scenario, manifest, timings, evidence, kept)
        (stage / RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")
    for item in evidence:
        log(f"{scenario.id}: evidence {_describe(item)}")
    size = folder_size(dest)
    log(f"{scenario.id}: {size / 1e6:.2f} MB in {dest}")
    return Imported(scenario.id, dest, size, results)


def _plain_result(folder: Path, files: Mapping[str, str], manifest_path: Path, variant: str) -> dict[str, Any]:
    if "plain" not in files:
        raise InputError(manifest_path, f"records no plain run of the {variant} variant")
    data = _read_json(folder / files["plain"])
    if not data.get("ok"):
        raise InputError(folder / files["plain"], "records a run whose result check failed")
    keep = ("median_ms", "min_ms", "times_ms", "unit", "rel_error", "tolerance", "seed", "ok", "wall_s")
    return {k: data.get(k) for k in keep} | {k: data[k] for k in data if k not in keep and k != "coach_result"}


def _check_units(scenario: Scenario, timings: Mapping[str, Any], folder: Path, files: Mapping[str, Any]) -> None:
    """The speed-up is a ratio of times per unit of work: both variants must time the same unit
    (the scenario's, when it names one: per token, the ratio is one of tokens per second)."""
    units = {v: timings[v].get("unit") for v in VARIANTS}
    wanted = scenario.unit or units["slow"]
    for variant in VARIANTS:
        if units[variant] != wanted:
            raise InputError(folder / files[variant]["plain"],
                             f"times one {units[variant]!r} where the {'scenario' if scenario.unit else 'slow variant'} "
                             f"times one {wanted!r}: the speed-up compares times per the same unit of work")


def _results(scenario: Scenario, manifest: Mapping[str, Any], timings: dict[str, Any],
             evidence: list[EvidenceValue], kept: dict[str, dict[str, str]]) -> dict[str, Any]:
    provenance = manifest.get("provenance") or {}
    gpu = (provenance.get("gpu") or {}).get("name")
    slow, fixed = timings["slow"].get("median_ms"), timings["fixed"].get("median_ms")
    speedup = slow / fixed if isinstance(slow, (int, float)) and isinstance(fixed, (int, float)) and fixed > 0 else None
    results: dict[str, Any] = {
        "coach_results_format": RESULTS_FORMAT,
        "scenario": scenario.id,
        "title": scenario.title,
        "gpu": gpu,
        "gpu_slug": manifest.get("gpu"),
        "recorded_at": provenance.get("date"),
        "provenance": provenance,
        "commands": manifest.get("commands"),
        "profile_settings": manifest.get("profile"),
        "variants": timings,
        "speedup": speedup,
        "min_speedup": scenario.min_speedup,
        "meets_min_speedup": None if speedup is None else speedup >= scenario.min_speedup,
        "evidence": [e.to_dict() for e in evidence],
        "profiles": kept,
    }
    results["values"] = placeholder_values(scenario, results)
    return results


def _describe(item: EvidenceValue) -> str:
    e = item.evidence

    def fmt(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4g}{(' ' + e.unit) if e.unit else ''}"

    moved = {True: "as expected", False: "NOT as expected", None: "not measured"}[item.moved_as_expected]
    rng = {True: "", False: f"; slow value outside the expected {list(e.slow_range or [])}", None: ""}[item.slow_in_range]
    return f"{e.name}: {fmt(item.slow)} -> {fmt(item.fixed)} ({e.direction}, {moved}{rng})"


def _rows(profile: Profile) -> str:
    return ", ".join(f"{name} {df.height}" for name, df in profile.tables().items() if df.height)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    except ValueError as err:
        raise InputError(path, f"is not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise InputError(path, "is not a JSON object")
    return data


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


# --------------------------------------------------------------------------------------------
# Reading a recording back
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recording:
    scenario: Scenario
    folder: Path
    results: dict[str, Any]

    def profile(self, variant: str, tool: str) -> Profile | None:
        """A saved profile of this recording, or None if it was not recorded."""
        rel = ((self.results.get("profiles") or {}).get(variant) or {}).get(tool)
        if rel is None:
            return None
        from coach.ingest import load

        return load(self.folder / rel)

    def profiles(self) -> dict[str, dict[str, Profile]]:
        out: dict[str, dict[str, Profile]] = {}
        for variant in VARIANTS:
            out[variant] = {}
            for tool in PROFILE_TOOLS:
                p = self.profile(variant, tool)
                if p is not None:
                    out[variant][tool] = p
        return out

    def values(self) -> dict[str, Any]:
        return placeholder_values(self.scenario, self.results)


def recorded_gpus(scenario_id: str, traces: Path | None = None) -> list[str]:
    """GPU folders under traces/ that hold a recording of ``scenario_id``, preferred GPU first."""
    base = Path(traces) if traces is not None else traces_dir()
    if not base.is_dir():
        return []
    found = sorted(d.name for d in base.iterdir() if (d / scenario_id / RESULTS_FILE).is_file())
    return sorted(found, key=lambda g: g != PREFERRED_GPU)


def open_recording(scenario: Scenario, traces: Path | None = None, gpu: str | None = None) -> Recording:
    """The recording of ``scenario`` (on ``gpu``, or the preferred one); a CoachError that says how
    to make one when none exists."""
    base = Path(traces) if traces is not None else traces_dir()
    gpus = recorded_gpus(scenario.id, base)
    if gpu is not None and gpu not in gpus:
        have = f" (recorded on: {', '.join(gpus)})" if gpus else ""
        raise CoachError(f"{scenario.id} has no recording for GPU '{gpu}' under {base}{have}")
    if not gpus:
        raise CoachError(f"{scenario.id} has no recorded traces under {base}: record it on a GPU machine with "
                         f"`coach record {scenario.id} --out RAW`, then `coach record --import RAW`")
    folder = base / (gpu or gpus[0]) / scenario.id
    results = _read_json(folder / RESULTS_FILE)
    if results.get("coach_results_format") != RESULTS_FORMAT:
        raise InputError(folder / RESULTS_FILE, f"has results format {results.get('coach_results_format')!r}; "
                                                f"this coach reads format {RESULTS_FORMAT}")
    return Recording(scenario, folder, results)
