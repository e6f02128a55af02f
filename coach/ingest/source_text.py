"""The text of the source files a kernel profile's line information names, where the report lacks it.

Nsight Compute embeds a file's text only with ``--import-source yes`` and only when it can read the
file at the path the line information names, on the machine that profiled. Kernels compiled at run
time rarely qualify: NVRTC names its input whatever the caller says (CuPy's RawModule passes a
temporary ``/tmp/tmpXXXX/<hash>.cubin.cu`` that is gone by the time the profiler looks; the report
keeps the name and an empty text), and a report read on another machine names paths that do not
exist here. The line numbers still count lines of the source that was compiled, so a local copy of
that source gives the text back. A file without text is matched, in this order, to:

1. the file at the path the report names, when it exists here;
2. a file of the same name in one of the search folders;
3. a file in the search folders that defines one of the kernels whose instructions point into it
   (``__global__ ... NAME(`` for CUDA C, ``def NAME(`` for Triton), when exactly one does.

A candidate must be long enough to hold every line the instructions name. ``text_origin`` records
which rule matched, so a reader can judge the match. Nothing is guessed where nothing matches: the
text stays null and the lines are shown as file:line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import polars as pl

from coach.model import SOURCE_FILES, KernelProfile, conform
from coach.paths import data_root

SOURCE_SUFFIXES = frozenset({".cu", ".cuh", ".cuh", ".py", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"})
#: Larger files are not source a kernel is compiled from (and reading them would be slow).
MAX_SOURCE_BYTES = 4 * 1024 * 1024
#: The file that marks a recorded scenario's folder in traces/ (coach.recordings.RESULTS_FILE).
RESULTS_FILE = "results.json"


def fill(profile: KernelProfile, search: Iterable[str | Path] = ()) -> KernelProfile:
    """``profile`` with the text of each source file the report lacks, where a local file matches."""
    files = profile.source_files
    if files.is_empty() or files["text"].is_not_null().all():
        return profile
    need = _needs(profile)
    candidates = _candidates(search)
    texts, origins, local = [], [], []
    for row in files.iter_rows(named=True):  # a handful of files: matching reads them from disk
        text, origin, where = row["text"], row["text_origin"], row["local_path"]
        if text is None and row["file_id"] in need:
            max_line, kernels = need[row["file_id"]]
            found = _match(row["path"], max_line, kernels, candidates)
            if found is not None:
                text, origin, where = found
        texts.append(text)
        origins.append(origin)
        local.append(where)
    filled = files.with_columns(pl.Series("text", texts, dtype=pl.Utf8), pl.Series("text_origin", origins, dtype=pl.Utf8),
                                pl.Series("local_path", local, dtype=pl.Utf8))
    return replace(profile, source_files=conform(filled, SOURCE_FILES, table="source_files"))


def search_folders(path: str | Path, profile: KernelProfile) -> list[Path]:
    """Where to look for a profile's sources by default: the report's own folder and, for a
    recorded scenario (its provenance names it, or a traces/ results.json above the report does),
    that scenario's folder."""
    p = Path(path)
    out = [p if p.is_dir() else p.parent]
    scenario = (profile.source.meta or {}).get("scenario") or _recorded_scenario(p)
    if isinstance(scenario, str):
        from coach import scenarios  # noqa: PLC0415 - only for recorded scenarios

        try:
            out.append(scenarios.find(scenario).folder)
        except Exception:  # a scenario this checkout does not have
            pass
    return out


def _recorded_scenario(path: Path) -> str | None:
    for parent in list(path.resolve().parents)[:3]:
        results = parent / RESULTS_FILE
        if results.is_file():
            try:
                return json.loads(results.read_text()).get("scenario")
            except (OSError, ValueError, AttributeError):
                return None
    return None


def _needs(profile: KernelProfile) -> dict[int, tuple[int, tuple[str, ...]]]:
    """file_id -> (the highest line its instructions name, the kernels those instructions belong to)."""
    names = profile.launches.select("launch_id", "kernel_name")
    per_file = (profile.sass.filter(pl.col("file_id").is_not_null())
                .join(names, on="launch_id", how="left")
                .group_by("file_id")
                .agg(pl.col("line").max().alias("max_line"), pl.col("kernel_name").drop_nulls().unique().sort()))
    return {r["file_id"]: (int(r["max_line"] or 0), tuple(r["kernel_name"])) for r in per_file.iter_rows(named=True)}


def _candidates(search: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for s in search:
        p = Path(s)
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out.extend(sorted(q for q in p.iterdir() if q.is_file() and q.suffix in SOURCE_SUFFIXES))
    seen: set[Path] = set()
    return [p for p in out if not (p.resolve() in seen or seen.add(p.resolve()))]


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _long_enough(text: str, max_line: int) -> bool:
    return len(text.splitlines()) >= max_line


def _match(path: str, max_line: int, kernels: Sequence[str], candidates: Sequence[Path]) -> tuple[str, str, str] | None:
    own = Path(path)
    if own.is_file() and (text := _read(own)) is not None and _long_enough(text, max_line):
        return text, f"local: {_shown(own)} (the path the report names)", _shown(own)
    for c in candidates:
        if c.name == own.name and (text := _read(c)) is not None and _long_enough(text, max_line):
            return text, f"local: {_shown(c)} (same file name)", _shown(c)
    defining = []
    for c in candidates:
        text = _read(c)
        if text is None or not _long_enough(text, max_line):
            continue
        hit = next((k for k in kernels if defines(text, k)), None)
        if hit is not None:
            defining.append((c, text, hit))
    if len(defining) == 1:
        c, text, kernel = defining[0]
        return text, f"local: {_shown(c)} (defines kernel {kernel})", _shown(c)
    return None


def _shown(path: Path) -> str:
    """A matched file's path as recorded: relative to the project's data folder when inside it (so
    that a shipped trace names ``scenarios/.../particles.cu``, not a folder of the importing machine)."""
    try:
        return path.resolve().relative_to(data_root()).as_posix()
    except ValueError:
        return str(path)


def defines(text: str, kernel: str) -> bool:
    """Whether source ``text`` defines kernel ``kernel``: a CUDA ``__global__`` function or a Python
    ``def`` of that name (template arguments and a signature in the name are ignored)."""
    name = re.split(r"[<(\s]", kernel.strip(), maxsplit=1)[0].split("::")[-1]
    if not name:
        return False
    n = re.escape(name)
    return bool(re.search(rf"__global__[^;{{}}]*?\b{n}\s*\(", text) or re.search(rf"^\s*def\s+{n}\s*\(", text, re.M))
