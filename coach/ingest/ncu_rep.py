"""Read an Nsight Compute ``.ncu-rep`` through NVIDIA's own ``ncu_report`` module (PyPI ``ncu-report``).

Every metric of every profiled launch goes into the long ``metrics`` table; the canonical
``launches`` columns are derived from it through ``ncu_metrics.csv``; Nsight Compute's rule results
(``rule_results_as_dicts``) become the ``rules`` table; ``device__attribute_*`` metrics the
``devices`` table; the source counters per instruction, with their lines and files, the ``sass``,
``stall_samples`` and ``source_files`` tables (``coach.ingest.ncu_source``).

An instanced metric holds, besides its aggregate, one value per instance (``num_instances``,
``as_double(i)``), each identified by ``correlation_ids()``, itself a metric whose instances are
the IDs. Where the IDs are strings the instances are named things worth keeping: the executed SASS
opcodes of the InstructionStats section (``sass__inst_executed_per_opcode``: "HGMMA", "HMMA",
"FFMA", "LDGSTS", ... with their warp-level counts) and their categories; each becomes a row with
its name in ``instance``. Numbered instances (per-PC counters, occupancy curves) are left out.

``ncu_report`` has no wheel for Linux aarch64 (Grace Hopper). Where it is missing but the ``ncu``
command is there ($COACH_NCU, else PATH), the report is exported with ``ncu --import FILE --csv``
(the raw page for the metrics, the details page for the rule results) and read by the CSV reader;
that page holds instanced metrics' aggregates only, so the named instances are missing then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from coach.errors import InputError, ToolError
from coach.ingest.cubin_lines import report_line_maps
from coach.ingest.ncu_source import SourceTables
from coach.ingest.ncu_common import (RULE_SEVERITY, SPEEDUP_TYPE, canonical_metrics, devices, launch_config,
                                     plain_rule_message, to_base_units)
from coach.model import KernelProfile, Source, make_kernel_profile

_FIRST_RECORD = 10  # magic b"NVR\0" and a 6-byte header come first

# ncu_report.IMetric.ValueKind_* values
_STRING_KIND = 2


_EXPORT_TIMEOUT_S = 600

#: The Nsight Compute version a report was recorded with, as the report stores it: a process record
#: holds "Nsight Compute Target" and "2025.3.1.0 (build 36398880) (public-release)" (seen in the H200
#: reports of tests/data; "2023.3.0.0 (build ...)" in reports of 2023.3). Read in chunks that overlap
#: by more than the string, so a match across a chunk boundary is not missed.
_RECORDED_VERSION = re.compile(rb"(20\d\d\.\d+\.\d+(?:\.\d+)?) \(build \d+\)")
_VERSION_CHUNK = 1 << 20
_VERSION_OVERLAP = 64


def _import_ncu_report():
    try:
        import ncu_report  # noqa: PLC0415 - optional dependency, imported on use
    except ImportError:
        return None
    return ncu_report


def _ncu_binary() -> str | None:
    return os.environ.get("COACH_NCU") or shutil.which("ncu")


def _read_through_ncu_csv(path: Path, ncu: str) -> KernelProfile:
    """Export the report's raw and details pages with the ncu command and read them as CSV."""
    from coach.ingest import ncu_csv  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="coach-ncu-") as tmp:
        pages = {}
        for page in ("raw", "details"):
            out = Path(tmp) / f"{page}.csv"
            cmd = [ncu, "--import", str(path), "--csv", "--page", page, "--print-units", "base"]
            try:
                with out.open("w") as fh:
                    done = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=_EXPORT_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as err:
                raise ToolError(f"{path}: `{' '.join(cmd)}` failed ({err})") from None
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise InputError(path, f"ncu could not export it (exit {done.returncode}: {last})")
            pages[page] = ncu_csv.read(out)
    raw, details = pages["raw"], pages["details"]
    unread = details.source.meta.get("unread_sections")
    nan = raw.source.meta.get("unmeasured")
    source = Source(path=str(path), format="ncu-rep", tool="Nsight Compute", tool_version=raw.source.tool_version,
                    meta={"reader": "ncu --csv (ncu_report not installed)", **({"unread_sections": unread} if unread else {}),
                          **({"unmeasured": nan} if nan else {})})
    return make_kernel_profile(source, launches=raw.launches, metrics=raw.metrics, rules=details.rules, devices=raw.devices)


def check_complete(path: Path) -> None:
    """Refuse a truncated report, which ``ncu_report`` would load silently with launches missing.

    A report is the 4-byte magic and a 6-byte header, then a chain of records, each a little-endian
    u32 size and that many bytes; a complete file ends exactly where its last record does (seen in
    reports of Nsight Compute 2025.3). A chain that runs past the end of the file means the file was
    cut short.
    """
    size = path.stat().st_size
    off = _FIRST_RECORD
    with path.open("rb") as fh:
        while off + 4 <= size:
            fh.seek(off)
            (length,) = struct.unpack("<I", fh.read(4))
            off += 4 + length
    if off != size:
        raise InputError(path, f"is truncated or damaged: its records need {off:,} bytes but the file has {size:,}")


def recorded_version(path: Path) -> str | None:
    """The Nsight Compute version that recorded ``path`` ("2025.3.1.0"), or None where it is not found."""
    with path.open("rb") as fh:
        carry = b""
        while chunk := fh.read(_VERSION_CHUNK):
            found = _RECORDED_VERSION.search(carry + chunk)
            if found:
                return found.group(1).decode()
            carry = chunk[-_VERSION_OVERLAP:]
    return None


def read(path: Path) -> KernelProfile:
    profile = _read(path)
    version = recorded_version(path)
    if version is None:
        return profile
    return dataclasses.replace(profile, source=dataclasses.replace(profile.source, tool_version=version))


def _read(path: Path) -> KernelProfile:
    check_complete(path)
    ncu_report = _import_ncu_report()
    if ncu_report is None:
        ncu = _ncu_binary()
        if ncu is None:
            raise ToolError(
                f"{path}: reading .ncu-rep needs NVIDIA's ncu_report module (pip install ncu-report; it has no "
                "Linux aarch64 wheel) or the ncu command; or pass `ncu --import FILE --csv --page raw` output"
            )
        return _read_through_ncu_csv(path, ncu)
    try:
        with _native_stderr_silenced():
            ctx = ncu_report.load_report(str(path))
    except Exception as err:  # the module raises its own exception types for damaged files
        why = str(err).strip() or type(err).__name__
        version = recorded_version(path)
        if version:  # an old report the module no longer reads, or a newer one it does not yet
            raise InputError(path, f"recorded by Nsight Compute {version}, which ncu_report {_module_version()} "
                                   f"cannot read ({why}): open it with the Nsight Compute that recorded it, or pass "
                                   "its `ncu --import FILE --csv --page raw` export") from None
        raise InputError(path, f"is not a readable Nsight Compute report ({why})") from None

    metric_rows: dict[str, list[Any]] = {"launch_id": [], "metric": [], "raw_value": [], "raw_unit": [], "text": [],
                                         "instance": []}
    identity: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    source = SourceTables(line_maps=lambda: report_line_maps(path))
    launch_id = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            action = rng.action_by_idx(i)
            identity.append(_identity(ncu_report, action, launch_id))
            _collect_metrics(action, launch_id, metric_rows)
            rules.extend(_rules(action, launch_id))
            source.add_launch(action, launch_id)
            launch_id += 1
    if launch_id == 0:
        version = recorded_version(path)
        if version:
            raise InputError(path, f"holds no kernel launches that ncu_report {_module_version()} can read (recorded by "
                                   f"Nsight Compute {version}; did the ncu filter -k/-c match any kernel? open it with "
                                   "that Nsight Compute to tell a damaged report from an empty one)")
        raise InputError(path, "holds no profiled kernel launches (did the ncu filter -k/-c match any kernel? or is the report damaged?)")

    # ncu_report skips a launch record it cannot decode and still lists the launch, empty: a
    # damaged file would pass for a report with a launch that measured nothing.
    empty = sorted(set(range(launch_id)) - set(metric_rows["launch_id"]))
    if empty:
        raise InputError(path, f"is damaged: launch {empty[0]} has no readable metrics")

    metrics = _metrics_frame(metric_rows)
    aggregates = metrics.filter(pl.col("instance").is_null())
    launches = _launches(pl.DataFrame(identity), aggregates)
    origin = Source(path=str(path), format="ncu-rep", tool="Nsight Compute", tool_version=None,
                    meta={"reader": f"ncu_report {ncu_report.get_version() if hasattr(ncu_report, 'get_version') else ''}".strip(),
                          # per launch with source counters: "innermost" (lines from the binary's table) or why not
                          **({"source_lines": {str(k): v for k, v in source.inline_status.items()}}
                             if source.inline_status else {})})
    return make_kernel_profile(
        origin,
        launches=launches,
        metrics=metrics,
        rules=pl.DataFrame(rules) if rules else None,
        devices=devices(aggregates),
        **source.frames(),
    )


@contextlib.contextmanager
def _native_stderr_silenced():
    """Keep the module's native logging (a report it cannot parse makes its protobuf library print to
    file descriptor 2) off the terminal: the reader says what is wrong in its own one line."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _module_version() -> str:
    try:
        return importlib.metadata.version("ncu-report")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _identity(ncu_report, action, launch_id: int) -> dict[str, Any]:
    return {
        "launch_id": launch_id,
        "kernel_name": action.name(ncu_report.IAction.NameBase_FUNCTION),
        "demangled_name": action.name(ncu_report.IAction.NameBase_DEMANGLED),
        "mangled_name": action.name(ncu_report.IAction.NameBase_MANGLED),
        "nvtx_range": _innermost_nvtx_range(action),
    }


def _innermost_nvtx_range(action) -> str | None:
    """The innermost NVTX push/pop range open around the launch (Nsight Compute records them with
    --nvtx), preferring a named domain's over the default domain's; None where none was recorded."""
    try:
        state = action.nvtx_state()
    except Exception:  # reports without NVTX data
        return None
    if state is None:
        return None
    best = None
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        ranges = domain.push_pop_ranges()
        if ranges:
            named = domain.name() != "<default domain>"
            if best is None or named:
                best = ranges[-1]
    return best


def _collect_metrics(action, launch_id: int, rows: dict[str, list[Any]]) -> None:
    for name in action.metric_names():
        m = action.metric_by_name(name)
        if m is None or not m.has_value():
            continue
        unit = m.unit() or ""
        if m.kind() == _STRING_KIND:
            value, text = None, m.as_string()
        else:
            try:
                value, text = float(m.as_double()), None
            except (TypeError, ValueError):
                value, text = None, str(m.value())
        _append(rows, launch_id, name, value, unit, text, None)
        for instance, value, text in _named_instances(m):
            _append(rows, launch_id, name, value, unit, text, instance)


def _named_instances(m) -> list[tuple[str, float | None, str | None]]:
    """(name, value, text) of each instance of ``m`` whose correlation ID is a string; none otherwise."""
    if m.num_instances() == 0 or not m.has_correlation_ids():
        return []
    ids = m.correlation_ids()
    if ids.kind() != _STRING_KIND:
        return []
    text = m.kind() == _STRING_KIND
    return [(ids.as_string(i), None if text else float(m.as_double(i)), m.as_string(i) if text else None)
            for i in range(m.num_instances())]


def _append(rows: dict[str, list[Any]], launch_id: int, metric: str, value: float | None, unit: str, text: str | None,
            instance: str | None) -> None:
    for column, v in (("launch_id", launch_id), ("metric", metric), ("raw_value", value), ("raw_unit", unit),
                      ("text", text), ("instance", instance)):
        rows[column].append(v)


def _metrics_frame(rows: dict[str, list[Any]]) -> pl.DataFrame:
    return to_base_units(pl.DataFrame(rows, schema={"launch_id": pl.Int64, "metric": pl.Utf8, "raw_value": pl.Float64,
                                                    "raw_unit": pl.Utf8, "text": pl.Utf8, "instance": pl.Utf8}))


def _launches(identity: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    return identity.join(launch_config(metrics), on="launch_id", how="left", maintain_order="left").join(canonical_metrics(metrics), on="launch_id", how="left", maintain_order="left")


def _rules(action, launch_id: int) -> list[dict[str, Any]]:
    try:
        results = action.rule_results_as_dicts()
    except Exception:  # older reports or modules without rule results: nothing to add
        return []
    out = []
    for r in results:
        msg = r.get("rule_message") or {}
        speed = r.get("speedup_estimation") or {}
        out.append({
            "launch_id": launch_id,
            "rule_id": r.get("rule_identifier"),
            "rule_name": r.get("name"),
            "section_id": r.get("section_identifier"),
            "severity": RULE_SEVERITY.get(msg.get("type"), str(msg.get("type"))),
            "title": msg.get("title"),
            "message": plain_rule_message(msg.get("message")),
            "speedup_type": SPEEDUP_TYPE.get(speed.get("type")) if speed else None,
            "speedup_pct": speed.get("speedup") if speed else None,
            "focus_metrics": [
                {"name": f.get("name"), "value": f.get("value"), "info": f.get("info")} for f in r.get("focus_metrics", [])
            ],
        })
    return out
