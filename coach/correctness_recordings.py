"""Recorded correctness scenarios: import the raw outputs of ``coach.capture.sanitize`` into
``traces/``, and read them back for ``coach run`` and the exercises::

    traces/<gpu>/<scenario-id>/
        results.json              every run: command, exit, the program's result line, its stderr's
                                  last lines, the report's totals; the diagnosis of the buggy report
                                  and whether it names the planted line; provenance
        buggy-<tool>.txt          compute-sanitizer's text report, as printed
        buggy-<tool>/             the same report in the canonical tables (coach.model.save)
        buggy-<tool>.xml          its --xml file, where the tool wrote one (and it is small)
        fixed-<tool>.txt, fixed-<tool>/, ...

Every number ``coach run`` prints for such a scenario comes from this folder.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coach import correctness, scenarios
from coach.capture.staging import staged_folder
from coach.correctness import CorrectnessScenario
from coach.errors import CoachError, InputError
from coach.model import SanitizerReport, save
from coach.paths import traces_dir

RESULTS_FILE = "results.json"
RESULTS_FORMAT = 1
PREFERRED_GPU = "h200"
#: The --xml file is kept beside the text report up to this size (a hundred printed records take
#: well under it); the text report holds the same records, and traces/ has a budget.
MAX_XML_BYTES = 300_000
#: Lines of a run's stderr kept in results.json: where a CUDA error names the call that reported it.
STDERR_LINES = 12
Log = Callable[[str], None]


@dataclass(frozen=True)
class Imported:
    scenario: str
    folder: Path
    size_bytes: int
    results: dict[str, Any]


def import_one(folder: Path, manifest: Mapping[str, Any], traces: Path, log: Log) -> Imported:
    """Import one raw folder (its manifest already read) into ``traces/<gpu>/<scenario-id>/``."""
    from coach.analyze.sanitizer_rules import run_all  # noqa: PLC0415 - polars, only when importing
    from coach.ingest import load  # noqa: PLC0415

    manifest_path = folder / "manifest.json"
    scenario = correctness.find(str(manifest.get("scenario")))
    gpu = manifest.get("gpu")
    if not isinstance(gpu, str) or not re.fullmatch(r"[a-z0-9-]+", gpu):
        raise InputError(manifest_path, f"field 'gpu' must be a folder name like 'h200', not {gpu!r}")
    raw_runs = manifest.get("runs")
    if not isinstance(raw_runs, dict):
        raise InputError(manifest_path, "has no 'runs' table")
    missing = [r.name for r in scenario.runs if r.name not in raw_runs]
    if missing:
        raise InputError(manifest_path, f"records no '{missing[0]}' run (the scenario lists {len(scenario.runs)})")
    provenance = manifest.get("provenance") or {}
    dest = traces / gpu / scenario.id
    log(f"{scenario.id}: importing {folder} -> {dest}")
    with staged_folder(dest, replace=True) as stage:
        runs = {}
        reports: dict[str, SanitizerReport] = {}
        for run in scenario.runs:
            entry = raw_runs[run.name]
            files = entry.get("files") or {}
            kept: dict[str, str] = {}
            summary = None
            if run.tool is not None:
                if "report" not in files:
                    raise InputError(manifest_path, f"run '{run.name}' ran under {run.tool} but kept no text report")
                src = folder / files["report"]
                report = load(src)
                if report.kind != "sanitizer-report":
                    raise InputError(src, f"is a {report.kind}, not a compute-sanitizer report")
                meta = {**dict(report.source.meta), "scenario": scenario.id, "run": run.name, "sanitizer_tool": run.tool,
                        "provenance": provenance, "command": entry.get("command")}
                report = replace(report, source=replace(report.source, meta=meta,
                                                        tool_version=provenance.get("compute_sanitizer")))
                reports[run.name] = report
                save(report, stage / run.name)
                shutil.copyfile(src, stage / f"{run.name}.txt")
                kept = {"report": run.name, "text": f"{run.name}.txt"}
                xml = folder / files["xml"] if "xml" in files else None
                if xml is not None and xml.is_file() and xml.stat().st_size <= MAX_XML_BYTES:
                    shutil.copyfile(xml, stage / f"{run.name}.xml")
                    kept["xml"] = f"{run.name}.xml"
                summary = report.summary.row(0, named=True) if report.summary.height else {}
                summary["tool"] = summary.get("tool") or run.tool
            stderr = _read(folder / files["stderr"]) if "stderr" in files else ""
            runs[run.name] = {
                "variant": run.variant, "tool": run.tool, "command": entry.get("command"), "env": entry.get("env"),
                "exit": entry.get("exit"), "timed_out": entry.get("timed_out"), "seconds": entry.get("seconds"),
                "result": entry.get("result"), "stderr_tail": stderr.strip().splitlines()[-STDERR_LINES:],
                "cuda_error": _cuda_error(stderr), "summary": summary, "files": kept, "xml_note": entry.get("xml_note"),
            }
            log(f"{scenario.id}: {run.name}: {_describe(runs[run.name])}")
        buggy_tool = f"buggy-{scenario.tool}"
        findings = run_all(reports[buggy_tool]) if buggy_tool in reports else []
        diagnosis = _diagnosis(scenario, findings)
        fixed = runs.get(f"fixed-{scenario.tool}", {})
        results = {
            "coach_results_format": RESULTS_FORMAT,
            "kind": correctness.KIND,
            "scenario": scenario.id,
            "title": scenario.title,
            "gpu": (provenance.get("gpu") or {}).get("name"),
            "gpu_slug": gpu,
            "recorded_at": provenance.get("date"),
            "provenance": provenance,
            "build": manifest.get("build"),
            "runs": runs,
            "diagnosis": diagnosis,
            "fixed_clean": _clean(fixed.get("summary")),
            "fixed_check_ok": bool((runs["fixed"].get("result") or {}).get("ok")),
            "buggy_check_ok": bool((runs["buggy"].get("result") or {}).get("ok")),
        }
        results["values"] = values(scenario, results)
        (stage / RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    log(f"{scenario.id}: diagnosis {diagnosis.get('first_rule')} at line(s) {diagnosis.get('lines')} "
        f"({'names' if diagnosis.get('names_planted_line') else 'does NOT name'} the planted line); fixed run "
        f"{'clean' if results['fixed_clean'] else 'NOT clean'} under {scenario.tool}; {size / 1e3:.0f} kB in {dest}")
    return Imported(scenario.id, dest, size, results)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


_CUDA_ERROR = re.compile(r"^CUDA error (?P<error>\w+) \((?P<code>\d+)\) \"(?P<message>[^\"]*)\" at (?P<where>\S+) in "
                         r"(?P<call>.+)$", re.M)


def _cuda_error(stderr: str) -> dict[str, Any] | None:
    """The program's own error line (correctness.cuh): which call reported which error, at which line."""
    m = _CUDA_ERROR.search(stderr)
    if not m:
        return None
    file, _, line = m.group("where").rpartition(":")
    return {"error": m.group("error"), "code": int(m.group("code")), "message": m.group("message"), "file": file,
            "line": int(line) if line.isdigit() else None, "call": m.group("call")}


def _clean(summary: Mapping[str, Any] | None) -> bool | None:
    """No error and no race reported, by a run that finished (the program's own non-zero exit,
    which the tool may count as one error, with nothing printed, is not the tool's finding)."""
    if not summary:
        return None
    if not summary.get("complete") or (summary.get("hazards_displayed") or 0):
        return False
    errors = summary.get("errors") or 0
    return errors == 0 or (bool(summary.get("target_error")) and not summary.get("records") and errors <= 1)


def _diagnosis(scenario: CorrectnessScenario, findings: list[Any]) -> dict[str, Any]:
    from coach.analyze.diagnose import is_not_checked  # noqa: PLC0415

    found = [f for f in findings if not is_not_checked(f)]
    if not found:
        return {"first_rule": None, "findings": 0}
    top = found[0]
    lines = [n for n in top.details.get("lines") or [] if n is not None]
    planted = set(scenario.planted_lines)
    return {"first_rule": top.rule_id, "title": top.title, "category": str(top.category), "kernel": top.scope,
            "file": top.details.get("file"), "lines": lines, "findings": len(found),
            "matches_expected_rule": top.rule_id == scenario.first_rule,
            "names_planted_line": bool(planted & set(lines)), "planted_lines": sorted(planted),
            "rules": [f.rule_id for f in found]}


def _describe(run: Mapping[str, Any]) -> str:
    status = "timed out" if run.get("timed_out") else f"exit {run.get('exit')}"
    result = run.get("result") or {}
    check = "" if not result else (", check ok" if result.get("ok") else ", check failed")
    s = run.get("summary") or {}
    tool = "" if not s else f", {s.get('errors', s.get('hazards_displayed'))} errors reported"
    if s and s.get("hazards_displayed") is not None:
        tool = f", {s['hazards_displayed']} races reported"
    return status + check + tool


# --------------------------------------------------------------------------------------------
# Numbers for the text
# --------------------------------------------------------------------------------------------


def values(scenario: CorrectnessScenario, results: Mapping[str, Any]) -> dict[str, Any]:
    """Every value a correctness scenario's text may name (scenarios/README.md lists them).

    Recording: gpu, gpu_short, recorded_date, driver, cuda, sanitizer_version. Per run R (its name
    with '-' as '_': buggy, fixed, buggy_racecheck, ...): R_exit, R_ok (the program's check), and
    each scalar of its result line as R_<key> (lists joined with ', '); for runs under a tool also
    R_errors, R_hazards, R_records. The program's own CUDA error line: R_cuda_error, R_cuda_error_call,
    R_cuda_error_line. The diagnosis: report_rule, report_lines, report_kernel. The source: kernel,
    source, bug_line, bug_lines, tool.
    """
    prov = results.get("provenance") or {}
    gpu = str(results.get("gpu") or "")
    v: dict[str, Any] = {"gpu": gpu, "gpu_short": re.sub(r"^NVIDIA\s+", "", gpu),
                         "recorded_date": str(results.get("recorded_at") or "")[:10],
                         "driver": (prov.get("gpu") or {}).get("driver"), "cuda": prov.get("cuda_driver_version"),
                         "sanitizer_version": _version(prov.get("compute_sanitizer"))}
    v.update(correctness.static_values(scenario))
    for run in scenario.runs:
        r = (results.get("runs") or {}).get(run.name)
        if not r:
            continue
        k = run.key
        v[f"{k}_exit"] = "timed out" if r.get("timed_out") else r.get("exit")
        result = r.get("result") or {}
        if result:
            v[f"{k}_ok"] = bool(result.get("ok"))
        for key, value in result.items():
            if key in ("coach_result", "variant"):
                continue
            v[f"{k}_{key}"] = ", ".join(str(x) for x in value) if isinstance(value, list) else value
        s = r.get("summary") or {}
        if s:
            v[f"{k}_errors"] = s.get("errors")
            v[f"{k}_hazards"] = s.get("hazards_displayed")
            v[f"{k}_records"] = s.get("records")
        err = r.get("cuda_error") or {}
        if err:
            v[f"{k}_cuda_error"] = err.get("error")
            v[f"{k}_cuda_error_call"] = err.get("call")
            v[f"{k}_cuda_error_line"] = err.get("line")
    d = results.get("diagnosis") or {}
    v["report_rule"] = d.get("first_rule")
    v["report_lines"] = ", ".join(str(n) for n in d.get("lines") or [])
    v["report_kernel"] = d.get("kernel")
    return {k: x for k, x in v.items() if x is not None}


def _version(line: str | None) -> str | None:
    if not line:
        return None
    m = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", line)
    return m.group(1) if m else line


# --------------------------------------------------------------------------------------------
# Reading a recording back
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorrectnessRecording:
    scenario: CorrectnessScenario
    folder: Path
    results: dict[str, Any]

    def report(self, run: str) -> SanitizerReport | None:
        files = ((self.results.get("runs") or {}).get(run) or {}).get("files") or {}
        if "report" not in files:
            return None
        from coach.ingest import load  # noqa: PLC0415

        return load(self.folder / files["report"])  # type: ignore[return-value]

    def report_text(self, run: str) -> str | None:
        files = ((self.results.get("runs") or {}).get(run) or {}).get("files") or {}
        return _read(self.folder / files["text"]) if "text" in files else None

    def values(self) -> dict[str, Any]:
        return values(self.scenario, self.results)

    def filled(self) -> CorrectnessScenario:
        """The scenario with its texts filled from this recording (``coach.scenarios.filled``)."""
        return scenarios.filled(self.scenario, self.values())


def recorded_gpus(scenario_id: str, traces: Path | None = None) -> list[str]:
    base = Path(traces) if traces is not None else traces_dir()
    if not base.is_dir():
        return []
    found = sorted(d.name for d in base.iterdir() if (d / scenario_id / RESULTS_FILE).is_file())
    return sorted(found, key=lambda g: g != PREFERRED_GPU)


class NotRecorded(CoachError):
    """A correctness scenario that has no recording yet."""


def open_recording(scenario: CorrectnessScenario, traces: Path | None = None,
                   gpu: str | None = None) -> CorrectnessRecording:
    base = Path(traces) if traces is not None else traces_dir()
    gpus = recorded_gpus(scenario.id, base)
    if gpu is not None and gpu not in gpus:
        have = f" (recorded on: {', '.join(gpus)})" if gpus else ""
        raise NotRecorded(f"{scenario.id} has no recording for GPU '{gpu}' under {base}{have}")
    if not gpus:
        raise NotRecorded(f"{scenario.id} is not recorded yet: there is no {base.name}/<gpu>/{scenario.id}/. Record "
                          "it on a GPU machine with `scripts/record-sanitizer.sh RAW`, then `coach record --import RAW`")
    folder = base / (gpu or gpus[0]) / scenario.id
    path = folder / RESULTS_FILE
    try:
        results = json.loads(path.read_text())
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    except ValueError as err:
        raise InputError(path, f"is not valid JSON ({err})") from None
    if not isinstance(results, dict) or results.get("coach_results_format") != RESULTS_FORMAT \
            or results.get("kind") != correctness.KIND:
        raise InputError(path, f"is not a correctness recording of format {RESULTS_FORMAT}")
    return CorrectnessRecording(scenario, folder, results)
