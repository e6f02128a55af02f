"""Recorded scenarios: turn raw recordings into ``traces/``, and read them back.

``coach record`` on a GPU machine writes raw folders (``coach.capture.record``); ``import_raw``
reads their reports into coach's model and keeps them compactly::

    traces/<gpu>/<scenario-id>/
        results.json          timings, speed-up, evidence values, provenance (RESULTS_FILE)
        slow/ncu/             the Nsight Compute report as Parquet tables (coach.model.save)
        slow/nsys/            the Nsight Systems export, as the canonical timeline tables
        slow/kineto/          the PyTorch-profiler trace, likewise
        slow/report.ncu-rep.xz  the full Nsight Compute report, xz-compressed (a tenth of its size),
                              where the scenario keeps it (``keep_ncu_rep``): its source pages and
                              anything a newer reader wants to take from it (``Recording.ncu_report``)
        fixed/...

    (the ncu folder's sass, stall_samples and source_files tables hold the source counters, with the
    text of the scenario's own files where the report lacks it: ``with_scenario_sources``)

``open_recording`` finds a scenario's recording for ``coach run``; ``measure`` and
``check_evidence`` compute the scenario's evidence from the profiles.
"""

from __future__ import annotations

import json
import lzma
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from coach import archives, correctness, scenarios
from coach.capture.record import MANIFEST, RAW_FORMAT
from coach.capture.staging import staged_folder
from coach.errors import CoachError, InputError
from coach.model import Profile, save
from coach.paths import traces_dir
from coach.scenarios import VARIANTS, Evidence, Scenario

RESULTS_FILE = "results.json"
RESULTS_FORMAT = 1
PROFILE_TOOLS = ("ncu", "nsys", "kineto")
KEPT_NCU_REP = "report.ncu-rep.xz"
#: The uncompressed form that recordings imported before the compressed one keep.
KEPT_NCU_REP_PLAIN = "report.ncu-rep"
#: xz preset for the kept reports: a 1.9 MB report of one kernel packs to ~0.2 MB (gzip: ~0.3 MB).
XZ_PRESET = 9
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

#: Fields of a program's result line that are not numbers for the text: its bookkeeping, and its
#: times, which the text names through V_ms and V_min_ms.
_NOT_PLACEHOLDERS = frozenset({"coach_result", "median_ms", "min_ms", "rel_error", "tolerance", "seed", "wall_s",
                               "ok", "times_ms"})


def placeholder_values(scenario: Scenario, results: Mapping[str, Any]) -> dict[str, Any]:
    """Every value a scenario's text may name, computed from the recording and the bytes model.

    Recording: gpu, gpu_short, recorded_date, driver, cuda; per variant V: V_ms, V_min_ms, V_gb_per_s
    (V's useful bytes over V's time), V_tflop_per_s (its FLOPs over its time, in TFLOP or in the
    model's ``flop_unit``), V_rate (the rate that fits the bound, in ``rate_unit``: useful bytes/s,
    or FLOP/s for compute-bound work), V_pct_of_floor (V's floor over V's time), and
    V_<evidence name>, V_<number the program reported> (V_registers, ...) and V_timing_<how it
    timed> (V_timing_calls_per_sample); speedup.
    Model: each named size, useful_gb, gflop, bytes_ms, flops_ms, ceiling_tb_per_s and, where
    arithmetic matters, ceiling_tflop_per_s and ridge_flop_per_byte; floor_ms (the larger: the slow
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
             serial_ms=bytes_ms + (flops_ms or 0.0), rate_label=m.rate_label, rate_unit=m.rate_unit,
             ceiling_tb_per_s=m.bytes_per_s / 1e12)
    if m.flop_per_s:  # the ceilings the floor is worked from, and the ridge point between them
        v.update(ceiling_tflop_per_s=m.flop_per_s / 1e12, ridge_flop_per_byte=m.flop_per_s / m.bytes_per_s)
    for variant in VARIANTS:
        v[f"{variant}_floor_ms"] = m.floor_s(variant=variant) * 1e3
    for variant, expr in m.moved_bytes.items():
        moved = m.value(expr)
        v[f"{variant}_moved_gb"] = moved / 1e9
        v[f"{variant}_moved_ms"] = moved / m.bytes_per_s * 1e3
    timings = results.get("variants") or {}
    for variant in VARIANTS:
        # what the program reported beside its times (registers, grid, a partition's time, ...), and
        # how it timed (timing: calls per sample, samples, the L2 flush)
        plain = timings.get(variant) or {}
        method = plain.get("timing") if isinstance(plain.get("timing"), dict) else {}
        for key, value in [*plain.items(), *((f"timing_{k}", x) for k, x in method.items())]:
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in _NOT_PLACEHOLDERS:
                v[f"{variant}_{key}"] = value
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
    """The recorded scenario folders in ``raw``: ``raw`` itself if it is one, else its subfolders
    that are, else those one level further down (``scripts/record-batch.sh`` writes them under
    ``OUT/scenarios/``)."""
    raw = Path(raw)
    if (raw / MANIFEST).is_file():
        return [raw]
    if not raw.is_dir():
        raise InputError(raw, "is not a folder")
    for pattern in (f"*/{MANIFEST}", f"*/*/{MANIFEST}"):
        found = sorted(m.parent for m in raw.glob(pattern))
        if found:
            return found
    raise InputError(raw, f"holds no recorded scenarios (no */{MANIFEST} and no packed recording "
                          "NAME.tgz[.N]; was it written by coach record?)")


def import_raw(raw: Path, traces: Path | None = None, *, log: Log = lambda line: None) -> list[Imported]:
    """Import every recorded scenario under ``raw`` into ``traces`` (default: the project's traces/).
    ``raw`` may also be a folder of packed recordings (``scripts/pack-recording.sh``: NAME.tgz, or
    its parts NAME.tgz.0, NAME.tgz.1, ...), which are unpacked into a temporary folder first."""
    from coach.ingest import load  # the readers pull in polars and, for .ncu-rep, ncu_report

    traces = Path(traces) if traces is not None else traces_dir()
    with _raw_root(Path(raw), log) as root:
        done = [_import_one(folder, traces, load, log) for folder in raw_folders(root)]
    from coach import recorded_rates  # noqa: PLC0415 - needs the imported recordings

    for gpu in sorted({item.folder.parent.name for item in done}):
        log(f"best recorded rates: {recorded_rates.write(gpu, traces)}")
    return done


@contextmanager
def _raw_root(raw: Path, log: Log) -> Iterator[Path]:
    """``raw`` itself, or, where it holds packed recordings and no raw folders, their contents."""
    if raw.is_dir() and not (raw / MANIFEST).is_file() and not any(raw.glob(f"*/{MANIFEST}")) \
            and not any(raw.glob(f"*/*/{MANIFEST}")) and archives.find(raw):
        with archives.unpacked(raw) as root:
            log(f"unpacked {', '.join(archives.find(raw))} from {raw}")
            yield root
        return
    yield raw


def _import_one(folder: Path, traces: Path, load: Callable[[Path], Profile], log: Log) -> Imported:
    manifest_path = folder / MANIFEST
    manifest = _read_json(manifest_path)
    if manifest.get("coach_raw_format") != RAW_FORMAT:
        raise InputError(manifest_path, f"has raw format {manifest.get('coach_raw_format')!r}; this coach "
                                        f"imports format {RAW_FORMAT}")
    if manifest.get("kind") == "correctness":  # a correctness scenario's runs (coach.capture.sanitize)
        from coach import correctness_recordings  # noqa: PLC0415

        done = correctness_recordings.import_one(folder, manifest, traces, log)
        return Imported(done.scenario, done.folder, done.size_bytes, done.results)
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
                profile = with_scenario_sources(load(src), scenario)
                meta = {**dict(profile.source.meta), "scenario": scenario.id, "variant": variant,
                        "provenance": provenance, "command": (manifest.get("commands") or {}).get(variant)}
                profile.source = replace(profile.source, meta=meta)
                save(profile, stage / variant / tool)
                profiles[variant][tool] = profile
                kept[variant][tool] = f"{variant}/{tool}"
                log(f"{scenario.id}: {variant} {tool}: {_rows(profile)}")
                if tool == "ncu" and variant in scenario.profile.keep_ncu_rep and src.is_file():
                    with src.open("rb") as fin, lzma.open(stage / variant / KEPT_NCU_REP, "wb",
                                                         preset=XZ_PRESET) as fout:
                        shutil.copyfileobj(fin, fout)
                    kept[variant]["ncu_rep"] = f"{variant}/{KEPT_NCU_REP}"
        evidence = check_evidence(scenario, profiles)
        results = _results(scenario, manifest, timings, evidence, kept)
        (stage / RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")
    for item in evidence:
        log(f"{scenario.id}: evidence {_describe(item)}")
    size = folder_size(dest)
    log(f"{scenario.id}: {size / 1e6:.2f} MB in {dest}")
    return Imported(scenario.id, dest, size, results)


def with_scenario_sources(profile: Profile, scenario: Scenario) -> Profile:
    """A kernel profile with the text of its source lines matched to the scenario's own files, where
    the report lacks it (kernels compiled through NVRTC name a temporary file): the saved trace then
    shows its lines wherever it is read. Other profiles are returned as they are."""
    if profile.kind != "kernel-profile":
        return profile
    from coach.ingest import source_text  # noqa: PLC0415

    return source_text.fill(profile, [scenario.folder])


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
        # what each recording step took on the GPU machine (the next recording's time estimate)
        "record_steps": manifest.get("steps") or [],
    }
    results["values"] = placeholder_values(scenario, results)
    return results


#: The unit of an evidence value that is a share, 0 to 1 (printed as a percentage).
FRACTION = "fraction"


def fmt_evidence(value: Any, unit: str, missing: str = "not recorded") -> str:
    """A scenario's evidence value as every page prints it (``coach run``, the exercise, the import log,
    the dashboard's walkthrough): a share (unit "fraction") as a percentage ("88%", as the narratives
    say it; a percentage as "37.5%"), a whole number as the count it is (``fmt_count``: "65,536", never "6.554e+04" or
    "65.54k"), other values to four significant digits or, from a thousand on, whole ("1,401"); the
    scenario's unit after it."""
    from coach.analyze.kernel_rules._common import fmt_count  # noqa: PLC0415 - the one format of a count
    from coach.analyze.quantities import fmt_share  # noqa: PLC0415

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return missing
    if unit == FRACTION:
        return fmt_share(value)
    text = fmt_count(value) if float(value).is_integer() else f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return f"{text}%" if unit == "%" else f"{text} {unit}".strip()  # 37.5%, as coach prints every percentage


def _describe(item: EvidenceValue) -> str:
    e = item.evidence

    def fmt(x: float | None) -> str:
        return fmt_evidence(x, e.unit, "n/a")

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

    def filled(self) -> Scenario:
        """The scenario with its texts filled from this recording (``coach.scenarios.filled``)."""
        return scenarios.filled(self.scenario, self.values())

    def ncu_report(self, variant: str) -> Path | None:
        """The full Nsight Compute report of ``variant`` as a ``.ncu-rep`` file (NVIDIA's ``ncu_report``
        and ``ncu`` read only files), where the recording keeps one; None where it does not. A
        compressed report is unpacked once into the temporary folder and reused from there."""
        rel = ((self.results.get("profiles") or {}).get(variant) or {}).get("ncu_rep")
        if rel is None:
            return None
        kept = self.folder / rel
        if not kept.is_file():
            raise InputError(kept, f"is missing: {RESULTS_FILE} names it as the kept Nsight Compute report")
        if kept.suffix != ".xz":
            return kept
        stat = kept.stat()
        gpu = self.folder.parent.name
        target = Path(tempfile.gettempdir()) / "coach-ncu-reports" / \
            f"{gpu}-{self.scenario.id}-{variant}-{stat.st_size}-{stat.st_mtime_ns}.ncu-rep"
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + f".partial-{os.getpid()}")
            try:
                with lzma.open(kept, "rb") as fin, partial.open("wb") as fout:
                    shutil.copyfileobj(fin, fout)
            except (lzma.LZMAError, EOFError) as err:
                partial.unlink(missing_ok=True)
                raise InputError(kept, f"is not a complete xz-compressed report ({err})") from None
            partial.replace(target)
        return target


def refresh_values(traces: Path | None = None, *, log: Log = lambda line: None) -> list[Path]:
    """Recompute the placeholder values stored in every recording's results.json under ``traces``
    (after a ceiling in hardware/measured or a scenario's model changed: the stored copy must say
    what ``coach run`` prints); only ``values`` changes. Returns the files rewritten."""
    base = Path(traces) if traces is not None else traces_dir()
    done = []
    for path in sorted(base.glob(f"*/scenario-*/{RESULTS_FILE}")):
        results = _read_json(path)
        if correctness.is_correctness(str(results.get("scenario"))):
            continue  # its values come from its own runs (coach.correctness_recordings), not from ceilings
        scenario = scenarios.find(str(results.get("scenario")))
        values = placeholder_values(scenario, results)
        if values != results.get("values"):
            results["values"] = values
            path.write_text(json.dumps(results, indent=2) + "\n")
            log(f"{path}: values recomputed")
            done.append(path)
    return done


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
