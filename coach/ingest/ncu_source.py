"""Source counters of an Nsight Compute report: per SASS instruction and, through the line
information, per CUDA C / Triton Python line (the report's Source page).

The SourceCounters section (in ``--set full``, or ``--section SourceCounters``) records metrics
whose instances are keyed by program counter: ``inst_executed`` has one value per instruction of
the function, the warp-state sampling metrics (``smsp__pcsamp_*``) one per sampled instruction, the
memory counters (``memory_l2_theoretical_sectors_global`` and its ``_ideal``, the shared-memory
wavefronts, the local-memory sectors) one per memory instruction. Each instance's correlation ID is
the instruction's address; ``IAction.source_info(address)`` names the file and line it was compiled
from where the binary has line information (``nvcc -lineinfo``, NVRTC ``-lineinfo``, Triton
always), ``IAction.sass_by_pc`` gives the instruction text, and ``IAction.source_files()`` the files
with their text where the report imported it (``--import-source yes``; an empty string otherwise).

Which metric fills which column is data (``ncu_source_metrics.csv``, first name found wins). The
stall reasons are the members of the ``group:smsp__pcsamp_warp_stall_reasons`` metric (a list of
metric names), or every ``smsp__pcsamp_warps_issue_stalled_*`` metric where a report has no group;
the ``*_not_issued`` variants are left out: the ``selected`` reason already separates the samples
of issuing warps. A report without ``smsp__pcsamp_sample_count`` gets each instruction's samples
as the sum of its reasons (which is what the count is where both are recorded). Addresses become
offsets from the function's first instruction (``launch__function_pcs``, else the lowest address),
which stay put from run to run.

Inlined code: where the report embeds the binary with its line table (``cubin_lines``), each
instruction is charged to its innermost line (the callee's: the ``switch`` of an inlined function,
not the line that calls it), and the line it is inlined at is kept beside it (``call_file_id``,
``call_line``). ``source_info`` alone gives the first line the table holds at the address, which
for inlined code is sometimes the caller's. The binary's table is used only where its first lines
agree with ``source_info`` on every instruction of the launch; otherwise the lines stay as
``source_info`` gives them (``SourceTables.inline_status`` says which, per launch).

Only instructions with a non-zero counter are kept: the table stays small enough to ship.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable

import polars as pl

from coach.ingest import cubin_lines
from coach.model import SASS, SOURCE_FILES, STALL_SAMPLES, conform, empty

_MAPPING = Path(__file__).with_name("ncu_source_metrics.csv")
STALL_GROUP = "group:smsp__pcsamp_warp_stall_reasons"
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
FUNCTION_PCS = "launch__function_pcs"
#: Columns computed as a difference of two others where both are present (the Source page's definition).
EXCESS = {"l2_global_excess_sectors": ("l2_global_sectors", "l2_global_sectors_ideal"),
          "shared_excess_wavefronts": ("shared_wavefronts", "shared_wavefronts_ideal")}
_PREDICATE = re.compile(r"^@!?U?P[0-9T]\s+")


@cache
def mappings() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(column, metric names in order of preference) for each per-instruction column."""
    with _MAPPING.open(newline="") as fh:
        return tuple((row["column"], tuple(row["metrics"].split("|"))) for row in csv.DictReader(fh))


def opcode(sass: str | None) -> str | None:
    """The opcode of a SASS instruction: ``@!P0 BRA 0x...`` -> ``BRA``, ``LDG.E.128 R4, ...`` -> ``LDG``."""
    if not sass:
        return None
    head = _PREDICATE.sub("", sass.strip()).split(maxsplit=1)
    return head[0].split(".")[0] if head else None


@dataclass
class SourceTables:
    """Rows gathered over the launches of one report; ``frames()`` gives the three canonical tables."""

    sass: list[dict[str, Any]] = field(default_factory=list)
    stalls: list[dict[str, Any]] = field(default_factory=list)
    file_ids: dict[str, int] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    #: Gives the line tables of the report's binaries (``cubin_lines.line_maps``); asked once, on need.
    line_maps: Callable[[], dict[str, list[cubin_lines.LineMap]]] | None = None
    #: Per launch: "innermost" (lines from the binary's table), or why ``source_info``'s lines are kept.
    inline_status: dict[int, str] = field(default_factory=dict)
    _maps: dict[str, list[cubin_lines.LineMap]] | None = None

    def file_id(self, path: str) -> int:
        return self.file_ids.setdefault(path, len(self.file_ids))

    def add_launch(self, action: Any, launch_id: int) -> None:
        """Add one launch's (an ``ncu_report.IAction``'s) source counters; nothing where it has none."""
        columns = _per_pc_columns(action)
        stalls = _per_pc_stalls(action)
        pcs = set().union(*(v.keys() for v in columns.values()), *(v.keys() for v in stalls.values()))
        if not pcs:
            return
        base = _function_start(action, pcs)
        for path, text in _source_files(action).items():
            self.file_id(path)
            if text:
                self.texts.setdefault(path, text)
        where = {pc: _source_info(action, pc) for pc in pcs}
        chains = self._inline_chains(action, launch_id, {pc - base: info for pc, info in where.items()})
        for pc in sorted(pcs):
            values = {col: per_pc.get(pc) for col, per_pc in columns.items()}
            for col, (whole, ideal) in EXCESS.items():
                if values.get(whole) is not None and values.get(ideal) is not None:
                    values[col] = values[whole] - values[ideal]
            reasons = {reason: per_pc[pc] for reason, per_pc in stalls.items() if per_pc.get(pc)}
            if "samples" not in columns and stalls:  # a report without the sample count: its reasons' sum
                values["samples"] = sum(reasons.values()) if reasons else None
            if not reasons and not any(v for v in values.values()):
                continue
            info, call = where[pc], None
            if chains is not None and info is not None and len(chain := chains[pc - base]) > 0:
                info, call = chain[0], (chain[1] if len(chain) > 1 else None)
            text = _sass(action, pc)
            self.sass.append({"launch_id": launch_id, "pc_offset": pc - base,
                              "file_id": self.file_id(info[0]) if info else None, "line": info[1] if info else None,
                              "call_file_id": self.file_id(call[0]) if call else None,
                              "call_line": call[1] if call else None,
                              "sass": text, "opcode": opcode(text), **values})
            self.stalls.extend({"launch_id": launch_id, "pc_offset": pc - base, "reason": reason, "samples": n}
                               for reason, n in reasons.items())

    def _inline_chains(self, action: Any, launch_id: int,
                       lines: dict[int, tuple[str, int] | None]) -> dict[int, cubin_lines.Chain] | None:
        """{pc_offset: (file, line) innermost first} from the binary's line table, where one of the
        function's tables agrees with ``source_info`` (``lines``) on every instruction; else None."""
        if not any(lines.values()):
            self.inline_status[launch_id] = "no line information"
            return None
        if self._maps is None:
            self._maps = self.line_maps() if self.line_maps is not None else {}
        candidates = self._maps.get(_mangled_name(action) or "", [])
        if not candidates:
            self.inline_status[launch_id] = "source_info: the report's binary for this function was not found"
            return None
        for m in candidates:
            if all(_same_place(m.first(pc), info) for pc, info in lines.items() if info is not None):
                self.inline_status[launch_id] = "innermost"
                # the table's spelling of a path -> source_info's (which names the imported source files)
                spelled = {m.first(pc)[0]: info[0] for pc, info in lines.items() if info is not None}
                return {pc: tuple((spelled.get(f, f), n) for f, n in m.chain(pc)) for pc in lines}
        self.inline_status[launch_id] = "source_info: the binary's line table disagrees with it"
        return None

    def frames(self) -> dict[str, pl.DataFrame]:
        sass = conform(pl.DataFrame(self.sass, infer_schema_length=None), SASS, table="sass") if self.sass else empty(SASS)
        stalls = (conform(pl.DataFrame(self.stalls), STALL_SAMPLES, table="stall_samples") if self.stalls
                  else empty(STALL_SAMPLES))
        files = pl.DataFrame({"file_id": list(self.file_ids.values()), "path": list(self.file_ids),
                              "text": [self.texts.get(p) for p in self.file_ids],
                              "text_origin": ["report" if p in self.texts else None for p in self.file_ids]},
                             schema={"file_id": pl.Int64, "path": pl.Utf8, "text": pl.Utf8, "text_origin": pl.Utf8})
        used = sass["file_id"].drop_nulls().unique().implode()
        return {"sass": sass, "stall_samples": stalls,
                "source_files": conform(files.filter(pl.col("file_id").is_in(used)), SOURCE_FILES, table="source_files")}


def _mangled_name(action: Any) -> str | None:
    for args in ((getattr(action, "NameBase_MANGLED", None),), ()):
        try:
            return action.name(*[a for a in args if a is not None])
        except Exception:  # an action without name bases, or without names
            continue
    return None


def _same_place(table: tuple[str, int] | None, info: tuple[str, int]) -> bool:
    """The line table's first row and ``source_info`` name one line (file compared by name: the
    table joins the compile directory to a relative path, ``source_info`` may not)."""
    return table is not None and table[1] == info[1] and Path(table[0]).name == Path(info[0]).name


def _instances(action: Any, name: str) -> dict[int, float] | None:
    """{address: value} of a metric keyed by address, or None where the report lacks it."""
    m = action.metric_by_name(name)
    try:
        if m is None or not m.num_instances() or not m.has_correlation_ids():
            return None
        ids = m.correlation_ids()
    except AttributeError:  # a module whose metrics have no instances or correlation IDs
        return None
    out = {}
    for i in range(m.num_instances()):
        try:
            out[int(ids.as_uint64(i))] = float(m.as_double(i))
        except (TypeError, ValueError):
            continue
    return out


def _per_pc_columns(action: Any) -> dict[str, dict[int, float]]:
    names = set(action.metric_names())
    out = {}
    for column, alternatives in mappings():
        found = next((n for n in alternatives if n in names), None)
        if found is not None and (values := _instances(action, found)) is not None:
            out[column] = values
    return out


def stall_metrics(action: Any) -> list[str]:
    """The per-instruction stall-reason metrics of a launch: the stall group's members, or every
    ``smsp__pcsamp_warps_issue_stalled_*`` metric other than the not-issued variants."""
    names = set(action.metric_names())
    group = action.metric_by_name(STALL_GROUP) if STALL_GROUP in names else None
    text = group.as_string() if group is not None else None
    if text:
        return [n.strip() for n in text.split(",") if n.strip() in names]
    return sorted(n for n in names if n.startswith(STALL_PREFIX) and not n.endswith("_not_issued"))


def _per_pc_stalls(action: Any) -> dict[str, dict[int, float]]:
    out = {}
    for name in stall_metrics(action):
        values = _instances(action, name)
        if values:
            out[name.removeprefix(STALL_PREFIX)] = values
    return out


def _function_start(action: Any, pcs: set[int]) -> int:
    m = action.metric_by_name(FUNCTION_PCS)
    if m is not None and m.num_instances():
        try:
            return min(int(m.as_uint64(i)) for i in range(m.num_instances()))
        except (TypeError, ValueError):
            pass
    return min(pcs)


def _source_info(action: Any, pc: int) -> tuple[str, int] | None:
    try:
        info = action.source_info(pc)
    except Exception:  # a module without source correlation
        return None
    if info is None or not info.file_name():
        return None
    line = int(info.line())
    return (info.file_name(), line) if line > 0 else None


def _sass(action: Any, pc: int) -> str | None:
    try:
        text = action.sass_by_pc(pc)
    except Exception:
        return None
    return " ".join(text.split()) or None


def _source_files(action: Any) -> dict[str, str]:
    try:
        return dict(action.source_files())
    except Exception:  # modules that predate source_files
        return {}
