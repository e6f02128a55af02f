"""A ladder's recorded measurements, written into its own files so that no number there is typed.

A ladder keeps, next to each rung's prediction in ``ladder.toml``, the measured outcome
(``measured``) and, where the two differ, the reason (``why``, written by hand from the evidence);
its ``NOTES.md`` ends with the results. The numbers come from two recorded files: the timing from
``results.json`` (through ``coach.ladders.rung_table``) and the profile from the rungs' Nsight
Compute launches (``traces/<gpu>/ladders/<name>/ncu``, each launch in the NVTX range ``<name>/<rung>``;
a nested name nests: ``matmul/fp32/03_smem_tiles``). A memory-bound ladder's rates are TB/s against
a DRAM ceiling, a compute-bound one's TFLOP/s against a matmul ceiling.
This module writes both the ``measured`` sentences and the results table of NOTES.md from them, and
checks that they still match:

    python -m coach.analyze.ladder_evidence write reduction scan
    python -m coach.analyze.ladder_evidence check          # every ladder with recorded results

For a rung of several kernels the profile quoted is its longest kernel's, where the time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl

from coach.errors import CoachError, InputError
from coach.ladders import (
    DEFINITION_FILE,
    FLOPS,
    LadderDef,
    LadderResults,
    Measured,
    Row,
    ladder_names,
    load_definition,
    load_results,
    percent_of,
    results_path,
    rung_table,
)

#: Where a recorded ladder keeps its Nsight Compute metrics, beside results.json.
PROFILE_FOLDER = "ncu"
NOTES_FILE = "NOTES.md"
#: NOTES.md holds the results table between these two lines; the prose around it is written by hand.
TABLE_BEGIN = "<!-- results table: written by python -m coach.analyze.ladder_evidence write -->"
TABLE_END = "<!-- end of results table -->"

#: Metrics read from the long ``metrics`` table because the ladder recordings collect only the
#: SpeedOfLight, MemoryWorkloadAnalysis, Occupancy and LaunchStats sections: the canonical
#: ``issue_active_pct`` (smsp__issue_active, WarpStateStats) and ``dram_bytes`` (dram__bytes.sum)
#: are not among them, while SpeedOfLight's breakdown carries these. Issue active here is the
#: SM-wide average over elapsed cycles, not over active ones.
RAW_METRICS = {
    "dram__bytes.sum.per_second": "dram_bytes_per_s",
    "sm__issue_active.avg.pct_of_peak_sustained_elapsed": "sm_issue_active_pct",
    "inst_executed": "warp_inst",
}
#: The pipe-utilisation metrics of the ComputeWorkloadAnalysis section: instructions issued to a pipe
#: (``inst_executed_pipe_<p>``) or cycles a pipe was busy (``pipe_<p>_cycles_active``), each as a % of
#: its peak over the SM's active cycles. The busiest of them names what a compute-bound rung is
#: limited by (FMA for CUDA-core matmul, tensor for HMMA/HGMMA, LSU when loads crowd out the math).
#: The "shared" pipe is left out: on Hopper it is the FP16 and tensor work together and repeats them.
PIPE_METRIC = r"^sm__(?:inst_executed_pipe_(?:[a-z0-9_]+)|pipe_(?:[a-z0-9_]+)_cycles_active)\.avg\.pct_of_peak_sustained_active$"
#: The SASS opcodes a compute-bound rung's sentence counts: Hopper warpgroup MMA (``wgmma``), warp-level
#: MMA (``mma.sync``, WMMA), and the CUDA-core FP32 FMA the SIMT rungs do their work with.
TENSOR_OPCODES = ("HGMMA", "HMMA")
#: Hopper's FP8 warpgroup MMA (``wgmma`` on e4m3/e5m2 operands) assembles to QGMMA, not HGMMA; a
#: sentence names it only where the rung has it, so the 16-bit ladders' sentences stay as they are.
FP8_TENSOR_OPCODES = ("QGMMA",)
EXECUTED_OPCODES = (*FP8_TENSOR_OPCODES, *TENSOR_OPCODES, "FFMA")
#: The InstructionStats metric whose named instances are the executed SASS opcodes, each with its
#: warp-level count (coach.model.METRICS ``instance``); its aggregate is every executed instruction.
OPCODE_METRIC = "sass__inst_executed_per_opcode"
#: The canonical launch columns a rung's sentence quotes.
LAUNCH_COLUMNS = ("launch_id", "nvtx_range", "kernel_name", "duration_ns", "dram_throughput_pct",
                  "l1_throughput_pct", "l2_throughput_pct", "l1_hit_rate_pct", "l2_hit_rate_pct",
                  "achieved_occupancy_pct", "theoretical_occupancy_pct", "registers_per_thread",
                  "grid_size", "block_size", "waves_per_sm")

_CEILING_WORDS = {"dram_copy_bandwidth_bytes_per_s": "DRAM copy ceiling",
                  "dram_read_bandwidth_bytes_per_s": "DRAM read ceiling",
                  "fp32_simt_matmul_flop_per_s": "FP32 CUDA-core matmul ceiling",
                  "tf32_tensor_matmul_flop_per_s": "TF32 tensor-core matmul ceiling",
                  "bf16_tensor_matmul_flop_per_s": "BF16 tensor-core matmul ceiling",
                  "fp8_tensor_matmul_flop_per_s": "FP8 tensor-core matmul ceiling"}


def profile_folder(name: str, gpu: str = "h200", root: Path | None = None) -> Path:
    """``traces/<gpu>/ladders/<name>/ncu``: the rungs' Nsight Compute metrics, saved by the import step."""
    return results_path(name, gpu, root).parent / PROFILE_FOLDER


def rung_profiles(ladder: str, folder: Path) -> pl.DataFrame:
    """One row per rung profiled: the rung's launch count and total duration, and the metrics of its
    longest launch (``kernel_name``, ``duration_ns``, throughputs, occupancy, hit rates, ...)."""
    return (launch_profiles(ladder, folder)
            .sort("duration_ns", descending=True)
            .group_by("rung", maintain_order=True)
            .agg(pl.len().alias("launches"), pl.col("duration_ns").sum().alias("total_duration_ns"), pl.all().first()))


def launch_profiles(ladder: str, folder: Path) -> pl.DataFrame:
    """One row per launch of the ladder's rungs: its ``rung`` (the NVTX range's last part) and metrics."""
    from coach.ingest import load
    from coach.model import KernelProfile

    profile = load(folder)
    if not isinstance(profile, KernelProfile):
        raise InputError(folder, "is not a kernel profile (Nsight Compute)")
    raw = (profile.metrics.filter(pl.col("metric").is_in(list(RAW_METRICS)))
           .pivot(on="metric", index="launch_id", values="value", aggregate_function="first")
           .rename(lambda c: RAW_METRICS.get(c, c)))
    missing = [c for c in RAW_METRICS.values() if c not in raw.columns]
    if missing:
        raise InputError(folder, f"lacks the metrics {', '.join(sorted(missing))} (SpeedOfLight section)")
    prefix = f"{ladder}/"
    launches = profile.launches.select(LAUNCH_COLUMNS).filter(pl.col("nvtx_range").str.starts_with(prefix))
    if launches.is_empty():
        raise InputError(folder, f"has no launch in an NVTX range {prefix}<rung> (recorded without --nvtx?)")
    return (launches.join(raw, on="launch_id", how="left", maintain_order="left")
            .join(busiest_pipes(profile.metrics), on="launch_id", how="left", maintain_order="left")
            .join(executed_opcodes(profile.metrics), on="launch_id", how="left", maintain_order="left")
            .with_columns(pl.col("nvtx_range").str.split("/").list.last().alias("rung"))
            .drop("nvtx_range"))


def busiest_pipes(metrics: pl.DataFrame) -> pl.DataFrame:
    """Per launch, the pipe-utilisation metric with the highest value (``PIPE_METRIC``; ties go to the
    first name): ``launch_id``, ``busiest_pipe_metric``, ``busiest_pipe_pct``. Launches profiled
    without the ComputeWorkloadAnalysis section have none."""
    return (metrics.filter(pl.col("metric").str.contains(PIPE_METRIC) & ~pl.col("metric").str.contains("_shared"))
            .sort(["launch_id", "value", "metric"], descending=[False, True, False])
            .group_by("launch_id", maintain_order=True).first()
            .select("launch_id", pl.col("metric").alias("busiest_pipe_metric"), pl.col("value").alias("busiest_pipe_pct")))


def executed_opcodes(metrics: pl.DataFrame) -> pl.DataFrame:
    """Per launch, the executed warp-level count of each of ``EXECUTED_OPCODES`` (``hgmma_inst``,
    ``hmma_inst``, ``ffma_inst``; 0 where the launch executed none), from the per-opcode instances of
    ``OPCODE_METRIC``. Launches profiled without the InstructionStats section (or read from a CSV
    export, which prints the aggregate only) have no row."""
    per_opcode = metrics.filter((pl.col("metric") == OPCODE_METRIC) & pl.col("instance").is_not_null())
    return per_opcode.group_by("launch_id", maintain_order=True).agg(
        pl.col("value").filter(pl.col("instance") == op).sum().alias(f"{op.lower()}_inst") for op in EXECUTED_OPCODES)


@dataclass(frozen=True)
class Recorded:
    """A ladder's definition, its recorded results and, per rung key, its profile (if recorded)."""

    defn: LadderDef
    results: LadderResults
    rows: tuple[Row, ...]
    profiles: Mapping[str, Mapping[str, Any]]

    def previous(self, i: int) -> Row | None:
        """The last rung before row ``i`` that was correct: what ``vs_previous`` compares with."""
        return next((r for r in reversed(self.rows[:i]) if _ok(r.result)), None)


def recorded(name: str, gpu: str = "h200", kernels: Path | None = None, traces: Path | None = None) -> Recorded:
    defn = load_definition(name, kernels)
    results = load_results(results_path(name, gpu, traces))
    if results.ladder != defn.name:
        raise InputError(results.path, f"holds results of ladder {results.ladder!r}, not {defn.name!r}")
    folder = profile_folder(name, gpu, traces)
    profiles = {r["rung"]: r for r in rung_profiles(name, folder).iter_rows(named=True)} if folder.exists() else {}
    return Recorded(defn, results, tuple(rung_table(defn, results)), profiles)


def _ok(m: Measured | None) -> bool:
    return m is not None and m.status == "ok"


# --------------------------------------------------------------------------------------------
# The sentences and the table
# --------------------------------------------------------------------------------------------


def measured_text(rec: Recorded, i: int) -> str:
    """The ``measured`` sentence of rung ``i``: median time and spread, bandwidth against the
    ceiling, speed-ups, then (if profiled) what Nsight Compute measured for its longest kernel."""
    row, results = rec.rows[i], rec.results
    m = row.result
    if m is None:
        return "not in the recorded run"
    if m.status != "ok":
        return f"{m.status}: {m.error}"
    text = f"{_us(m.time_s)} median (p20-p80 {_us(m.p20_s, unit=False)}-{_us(m.p80_s)}), {_rate(row.rate, results)}"
    if row.pct_of_ceiling is not None:
        text += f" = {row.pct_of_ceiling:.1f}% of the {_CEILING_WORDS.get(results.ceiling_name, results.ceiling_name)}"
    previous = rec.previous(i)
    ratios = [f"x{row.vs_previous:.2f} over rung {previous.rung.id}"] if previous and row.vs_previous else []
    if row.vs_baseline is not None:
        ratios.append(f"x{row.vs_baseline:.2f} over {results.baseline}")
    if ratios:
        text += "; " + ", ".join(ratios)
    profile = rec.profiles.get(row.rung.key)
    if results.ceiling_unit != FLOPS:
        return f"{text}. {profile_text(profile)}" if profile is not None else text
    executed = profile is not None and profile.get("ffma_inst") is not None
    static = None if executed else sass_text(m.sass, profile and profile["kernel_name"])
    return ". ".join([text, *([compute_profile_text(profile)] if profile is not None else []), *([static] if static else [])])


def compute_profile_text(p: Mapping[str, Any]) -> str:
    """What Nsight Compute measured for a compute-bound rung's longest launch: the busiest pipe first,
    the executed tensor-core instructions (HGMMA, HMMA) and FFMA's share of all executed last, where
    the profile has the InstructionStats section's per-opcode counts."""
    head = (f"Nsight Compute, {p['launches']} kernels in {_us(p['total_duration_ns'] / 1e9)}; the longest, "
            if p["launches"] > 1 else "Nsight Compute, ")
    pipe = ("" if p.get("busiest_pipe_metric") is None else
            f"busiest pipe {_pipe_name(p['busiest_pipe_metric'])} at {p['busiest_pipe_pct']:.1f}% of its peak, ")
    return (f"{head}{p['kernel_name']}: {_us(p['duration_ns'] / 1e9)}, {p['grid_size']:,} blocks of "
            f"{p['block_size']} ({p['waves_per_sm']:.2f} waves), {pipe}issue active {p['sm_issue_active_pct']:.1f}%, "
            f"warps {p['achieved_occupancy_pct']:.1f}% of the SM ({p['theoretical_occupancy_pct']:.1f}% possible, "
            f"{p['registers_per_thread']} registers), DRAM {p['dram_throughput_pct']:.1f}% of peak, L2 "
            f"{p['l2_throughput_pct']:.1f}% and L1 {p['l1_throughput_pct']:.1f}% of peak, "
            f"{p['warp_inst'] / 1e6:.2f} M warp instructions{_executed_text(p)}")


def _executed_text(p: Mapping[str, Any]) -> str:
    """" executed: 8.39 M HGMMA, 0 HMMA, no FFMA" or " executed: 0 HGMMA, 0 HMMA, FFMA 89.5% of them"
    (" executed: 4.19 M QGMMA, 0 HGMMA, 0 HMMA, no FFMA" for an FP8 rung)
    (warp-level executed counts), or "" where the profile lacks them."""
    if p.get("ffma_inst") is None:
        return ""
    fp8 = [op for op in FP8_TENSOR_OPCODES if p.get(f"{op.lower()}_inst")]
    tensor = ", ".join(f"{_millions(p[f'{op.lower()}_inst'])} {op}" for op in (*fp8, *TENSOR_OPCODES))
    ffma = f"FFMA {100 * p['ffma_inst'] / p['warp_inst']:.1f}% of them" if p["ffma_inst"] else "no FFMA"
    return f" executed: {tensor}, {ffma}"


def _millions(count: float) -> str:
    return "0" if count == 0 else f"{count / 1e6:,.2f} M"


def _pipe_name(metric: str) -> str:
    """``sm__pipe_fma_cycles_active...`` -> "fma (cycles active)"; ``sm__inst_executed_pipe_lsu...`` ->
    "lsu (instructions issued)"."""
    m = re.match(r"^sm__(?:inst_executed_pipe_(?P<inst>[a-z0-9_]+)|pipe_(?P<cyc>[a-z0-9_]+)_cycles_active)\.", metric)
    if m is None:
        return metric
    return f"{m['inst']} (instructions issued)" if m["inst"] else f"{m['cyc']} (cycles active)"


def sass_text(sass: Mapping[str, Mapping[str, int]], kernel: str | None = None) -> str | None:
    """The tensor-core evidence in a rung's SASS (static counts, in the code): HGMMA or HMMA, and FFMA;
    of ``kernel`` (the profiled longest one) when its histogram is there, else of all its kernels.
    None where no histogram holds an instruction: an empty histogram is a failed disassembly, not
    evidence that the code has no tensor-core instruction."""
    present = {k: h for k, h in sass.items() if h}
    chosen = {kernel: present[kernel]} if kernel in present else present
    if not chosen:
        return None
    total = {op: sum(h.get(op, 0) for h in chosen.values()) for op in EXECUTED_OPCODES}
    tensor = [f"{total[op]:,} {op}" for op in (*FP8_TENSOR_OPCODES, *TENSOR_OPCODES) if total[op]]
    where = f"SASS of {next(iter(chosen))}" if len(chosen) == 1 else f"SASS of its {len(chosen)} kernels"
    mma = ", ".join(tensor) if tensor else "no tensor-core instruction (HGMMA, HMMA)"
    return f"{where}: {mma}, {total['FFMA']:,} FFMA (instructions in the code, not executions)"


def profile_text(p: Mapping[str, Any]) -> str:
    """What Nsight Compute measured for a rung: its longest launch, with the numbers that place it."""
    head = (f"Nsight Compute, {p['launches']} kernels in {_us(p['total_duration_ns'] / 1e9)}; the longest, "
            if p["launches"] > 1 else "Nsight Compute, ")
    return (f"{head}{p['kernel_name']}: {_us(p['duration_ns'] / 1e9)}, {p['grid_size']:,} blocks of "
            f"{p['block_size']} ({p['waves_per_sm']:.2f} waves), DRAM {p['dram_throughput_pct']:.1f}% of peak "
            f"({p['dram_bytes_per_s'] / 1e12:.2f} TB/s), L1 {p['l1_throughput_pct']:.1f}% and L2 "
            f"{p['l2_throughput_pct']:.1f}% of peak, issue active {p['sm_issue_active_pct']:.1f}%, warps "
            f"{p['achieved_occupancy_pct']:.1f}% of the SM ({p['theoretical_occupancy_pct']:.1f}% possible, "
            f"{p['registers_per_thread']} registers), L1 hit {p['l1_hit_rate_pct']:.1f}%, L2 hit "
            f"{p['l2_hit_rate_pct']:.1f}%, {p['warp_inst'] / 1e6:.2f} M warp instructions")


def results_table(rec: Recorded) -> str:
    """NOTES.md's results table (Markdown): every rung, then every peer, as recorded, and the goal."""
    res = rec.results
    head = ["rung", "median", "TFLOP/s" if res.ceiling_unit == FLOPS else "TB/s", "% of ceiling", "x prev",
            f"x {res.baseline}",
            "DRAM % of peak (ncu)", "issue active % (ncu)"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for row in rec.rows:
        m, p = row.result, rec.profiles.get(row.rung.key)
        name = f"{row.rung.id} {row.rung.title}"
        if not _ok(m):
            lines.append(f"| {name} | {'not run' if m is None else m.status} |" + " - |" * (len(head) - 2))
            continue
        lines.append(f"| {name} | {_us(m.time_s)} | {_rate(row.rate, res, unit=False)} | {_num(row.pct_of_ceiling, '.1f')} | "
                     f"{_num(row.vs_previous, '.2f')} | {_num(row.vs_baseline, '.2f')} | "
                     f"{_num(p and p['dram_throughput_pct'], '.1f')} | {_num(p and p['sm_issue_active_pct'], '.1f')} |")
    for peer in res.peers:
        if not _ok(peer):
            lines.append(f"| peer: {peer.key} | {peer.status} |" + " - |" * (len(head) - 2))
            continue
        rate = peer.rate(res.ceiling_unit)
        pct = percent_of(rate, res.ceiling_value)
        lines.append(f"| peer: {peer.key} | {_us(peer.time_s)} | {_rate(rate, res, unit=False)} | {_num(pct, '.1f')} |"
                     + " - |" * (len(head) - 4))
    ceiling = _rate(res.ceiling_value, res) if res.ceiling_value else "unknown"
    prov = res.provenance
    lines += ["", f"Ceiling: the {_CEILING_WORDS.get(res.ceiling_name, res.ceiling_name)}, {ceiling}. "
                  f"x: time ratios, > 1 is faster. Nsight Compute columns: the rung's longest kernel. "
                  f"{prov.get('gpu_name', res.gpu)}, driver {prov.get('driver')}, CUDA {prov.get('cuda')}, "
                  f"torch {prov.get('torch')}, {prov.get('date')}."]
    return "\n".join(lines)


def _rate(rate: float | None, res: LadderResults, unit: bool = True) -> str:
    """A rate as the tables print it: TB/s to two places, or TFLOP/s to one."""
    if rate is None:
        return "-"
    if res.ceiling_unit == FLOPS:
        return f"{rate / 1e12:.1f}" + (" TFLOP/s" if unit else "")
    return f"{rate / 1e12:.2f}" + (" TB/s" if unit else "")


def _us(seconds: float | None, unit: bool = True) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f}" + (" us" if unit else "")


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


# --------------------------------------------------------------------------------------------
# Writing them into ladder.toml and NOTES.md, leaving everything hand-written as it is
# --------------------------------------------------------------------------------------------

_RUNGS = re.compile(r"^\[\[rungs\]\]\s*$")
_KEY = re.compile(r"^(?P<key>[A-Za-z_]+)\s*=")
_ID = re.compile(r'^id\s*=\s*"(?P<id>\d\d)"\s*$')


def _key(line: str) -> str:
    m = _KEY.match(line)
    return m["key"] if m else ""


def with_measured(text: str, measured: Mapping[str, str], path: Path | str = DEFINITION_FILE) -> str:
    """``text`` (a ladder.toml) with each rung's ``measured = "..."`` line set from ``measured`` (rung
    id -> sentence): replaced where present, otherwise inserted after the rung's ``prediction`` line.
    Comments, order and the hand-written ``why`` lines are kept."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if _RUNGS.match(line):
            blocks.append([])
        blocks[-1].append(line)
    out = blocks[0][:]
    for block in blocks[1:]:
        rung_id = next((m["id"] for m in map(_ID.match, block) if m), None)
        if rung_id is None or rung_id not in measured:
            out.extend(block)
            continue
        kept = [line for line in block if _key(line) != "measured"]
        at = next((i for i, line in enumerate(kept) if _key(line) == "prediction"), None)
        if at is None:
            raise InputError(path, f"rung {rung_id}: no single-line prediction to put `measured` after")
        kept.insert(at + 1, f"measured = {json.dumps(measured[rung_id], ensure_ascii=False)}\n")
        out.extend(kept)
    new = "".join(out)
    got = {r.get("id"): r.get("measured") for r in tomllib.loads(new).get("rungs", [])}
    if any(got.get(k) != v for k, v in measured.items()):
        raise InputError(path, "the rewritten file does not read back to the measured sentences")
    return new


def with_table(text: str, table: str, path: Path | str = NOTES_FILE) -> str:
    """``text`` (a NOTES.md) with the lines between TABLE_BEGIN and TABLE_END replaced by ``table``."""
    begin, end = text.find(TABLE_BEGIN), text.find(TABLE_END)
    if begin < 0 or end < begin:
        raise InputError(path, f"has no results table to fill in: put the lines {TABLE_BEGIN!r} and {TABLE_END!r} "
                               "where it belongs")
    return f"{text[:begin + len(TABLE_BEGIN)]}\n{table}\n{text[end:]}"


def updated_files(rec: Recorded) -> dict[Path, tuple[str, str]]:
    """ladder.toml and NOTES.md: path -> (text now, text with the recorded numbers filled in)."""
    toml, notes = rec.defn.folder / DEFINITION_FILE, rec.defn.folder / NOTES_FILE
    measured = {row.rung.id: measured_text(rec, i) for i, row in enumerate(rec.rows)}
    old_toml, old_notes = toml.read_text(encoding="utf-8"), notes.read_text(encoding="utf-8")
    return {toml: (old_toml, with_measured(old_toml, measured, toml)),
            notes: (old_notes, with_table(old_notes, results_table(rec), notes))}


def write(name: str, gpu: str = "h200", kernels: Path | None = None, traces: Path | None = None) -> list[Path]:
    """Fill in a ladder's ``measured`` lines and results table; return the files that changed."""
    changed = []
    for path, (old, new) in updated_files(recorded(name, gpu, kernels, traces)).items():
        if new != old:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(new)
            os.replace(tmp, path)
            changed.append(path)
    return changed


def stale(name: str, gpu: str = "h200", kernels: Path | None = None, traces: Path | None = None) -> list[Path]:
    """The ladder's files whose recorded numbers differ from the recorded files'."""
    return [path for path, (old, new) in updated_files(recorded(name, gpu, kernels, traces)).items() if old != new]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coach.analyze.ladder_evidence",
                                     description="Fill in (write) or verify (check) the recorded numbers of "
                                                 "kernels/<op>/ladder.toml and NOTES.md.")
    parser.add_argument("action", choices=("write", "check"))
    parser.add_argument("ladders", nargs="*", help="ladder names (default: every ladder with recorded results)")
    parser.add_argument("--gpu", default="h200", help="whose recording: traces/<GPU>/ladders/")
    args = parser.parse_args(argv)
    names = args.ladders or [n for n in ladder_names() if results_path(n, args.gpu).is_file()]
    failed = False
    try:
        for name in names:
            if args.action == "write":
                changed = write(name, args.gpu)
                print(f"{name}: " + (", ".join(p.name for p in changed) + " updated" if changed else "unchanged"))
            elif bad := stale(name, args.gpu):
                print(f"{name}: {', '.join(p.name for p in bad)} differ from the recorded files; "
                      f"run: python -m coach.analyze.ladder_evidence write {name}", file=sys.stderr)
                failed = True
    except CoachError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
