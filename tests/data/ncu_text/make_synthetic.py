"""Build the synthetic ncu text reports in this folder from the real H200 details export.

    python tests/data/ncu_text/make_synthetic.py tests/data/ncu_text

Every number comes from NVIDIA's own CSV export of tests/data/ncu_strided_copy/copy_strided_vs_coalesced.ncu-rep
(../ncu_strided_copy/nvidia/details.csv, Nsight Compute 2025.3.1); only the layout is changed, to the one
ncu prints on the terminal without --csv (PROVENANCE.md says where each layout is seen in public output).
"""

from __future__ import annotations

import csv
import sys
import textwrap
from itertools import groupby
from pathlib import Path

NVIDIA = Path(__file__).resolve().parent.parent / "ncu_strided_copy" / "nvidia"
KERNEL_TIME = "2026-Nov-30 00:00:00"  # placeholder launch timestamp of the 2019.x-2021.1 launch line
# display units as versions before 2023 spell them
UNITS_OLDER = {"ms": "msecond", "us": "usecond", "Ghz": "cycle/nsecond", "Mhz": "cycle/usecond", "Tbyte/s": "Tbyte/second",
               "Gbyte/s": "Gbyte/second"}
RULE_WIDTH = 110


def _rows() -> list[dict[str, str]]:
    with (NVIDIA / "details.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _table(rows: list[tuple[str, ...]], *, header: bool, indent: str = "    ") -> list[str]:
    names = ["Metric Name", "Metric Unit", "Metric Value"] if header else ["", "", ""]
    if len(rows[0]) == 5:  # --print-summary: minimum, maximum, average
        names = ["Metric Name", "Metric Unit", "Minimum", "Maximum", "Average"]
        widths = [max(len(r[i]) for r in [*rows, tuple(names)]) for i in range(5)]
        dashes = indent + " ".join("-" * w for w in widths)
        head = indent + " ".join(f"{n:<{w}}" if i == 0 else f"{n:>{w}}" for i, (n, w) in enumerate(zip(names, widths)))
        body = [indent + " ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(r, widths)))
                for r in rows]
        return [dashes, head, dashes, *body, dashes]
    widths = [max(len(r[i]) for r in [*rows, tuple(names)]) for i in range(3)]
    dashes = indent + " ".join("-" * w for w in widths)
    out = [dashes]
    if header:
        out += [indent + f"{names[0]:<{widths[0]}} {names[1]:>{widths[1]}} {names[2]:>{widths[2]}}", dashes]
    out += [indent + f"{n:<{widths[0]}} {u:>{widths[1]}} {v:>{widths[2]}}".rstrip() for n, u, v in rows]
    return [*out, dashes]


def render(*, old: bool, summary: bool = False) -> str:
    """The report as ncu prints it: 2023-2025 (``old=False``), or 2019.x-2021.1 (no header row inside a
    table, the launch line with a timestamp and without launch shape or device, older unit spellings)."""
    lines = ["==PROF== Connected to process 490 (/work/copy_strided_vs_coalesced)",
             "==PROF== Profiling \"copy_strided\" - 0: 0%....50%....100% - 40 passes",
             "==PROF== Profiling \"copy_coalesced\" - 1: 0%....50%....100% - 40 passes",
             "==PROF== Disconnected from process 490"]
    rows = _rows()
    first = rows[0]
    lines.append(f"[{first['Process ID']}] {first['Process Name']}@{first['Host Name']}")
    for _, launch_rows in groupby(rows, key=lambda r: r["ID"]):
        launch_rows = list(launch_rows)
        r0 = launch_rows[0]
        if summary:  # --print-summary per-kernel of 2023 and later: one invocation of each kernel here
            lines.append(f"  {r0['Kernel Name']} {r0['Grid Size']}x{r0['Block Size']}, Device {r0['Device']}, "
                         f"CC {r0['CC']}, Invocations 1")
        elif old:
            lines.append(f"  {r0['Kernel Name']}, {KERNEL_TIME}, Context {r0['Context']}, Stream {r0['Stream']}")
        else:
            lines.append(f"  {r0['Kernel Name']} {r0['Grid Size']}x{r0['Block Size']}, Context {r0['Context']}, "
                         f"Stream {r0['Stream']}, Device {r0['Device']}, CC {r0['CC']}")
        for section, sec_rows in groupby(launch_rows, key=lambda r: r["Section Name"]):
            sec_rows = list(sec_rows)
            metrics = [(r["Metric Name"], UNITS_OLDER.get(r["Metric Unit"], r["Metric Unit"]) if old else r["Metric Unit"],
                       r["Metric Value"]) for r in sec_rows if not r["Rule Name"] and r["Metric Name"]]
            if summary:
                metrics = [(n, u, v, v, v) for n, u, v in metrics]
            if metrics:  # a section of rule results alone (their section id) prints under the table before it
                lines += [f"    Section: {section}", *_table(metrics, header=not old)]
            if summary:
                lines.append("")
                continue
            if not old and section == "GPU Speed Of Light Throughput":  # what --print-details all adds after it
                chart = [m for m in metrics if m[0] in ("Memory Throughput", "Compute (SM) Throughput")]
                lines += ["", "    GPU Throughput Chart", "    Table Name : GPU Throughput",
                          *_table([(n.replace(" Throughput", " [%]"), u, v) for n, u, v in chart], header=True)]
            rules = [r for r in sec_rows if r["Rule Name"] and r["Rule Description"]]
            for k, r in enumerate(rules):
                # 2019.x-2021.1: a table's first result under its closing dashes, the next after a blank line;
                # later: a blank line, then a dashed line between two results
                lines += ([] if k == 0 else [""]) if old else [""] if k == 0 else [f"    {'-' * 5} {'-' * RULE_WIDTH}"]
                lines += _rule(r, old=old)
            if metrics:
                lines.append("")
    return "\n".join(lines) + "\n"


def _rule(r: dict[str, str], *, old: bool) -> list[str]:
    """A rule result as ncu prints it: its type, then its message wrapped at RULE_WIDTH. 2023 and later
    put the estimate first ("Est. Speedup" for a global one, "Est. Local Speedup" for a local one), pad
    every line to the full width, and cut a word longer than a line (a URL) where the line ends."""
    wrapped = textwrap.wrap(r["Rule Description"], RULE_WIDTH, break_on_hyphens=False)
    if not old and r["Estimated Speedup"]:
        local = " Local" if r["Estimated Speedup Type"] == "local" else ""
        wrapped = [f"Est.{local} Speedup: {r['Estimated Speedup']}%", *wrapped]
    lines = [f"    {r['Rule Type']:<5} {wrapped[0]}", *(f"          {w}" for w in wrapped[1:])]
    return lines if old else [f"{line:<{10 + RULE_WIDTH}}" for line in lines]


# what a `ncu --metrics A,B` run prints: one "Command line profiler metrics" table per launch
CLI_METRICS = (("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "request"),
               ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector"))


def render_metrics_only() -> str:
    """``ncu --metrics`` of the two global-load counters, without the duration, from the raw page's values."""
    with (NVIDIA / "raw.csv").open(newline="") as fh:
        raw = list(csv.reader(fh))
    header, launches = raw[0], raw[2:]
    col = {h: i for i, h in enumerate(header)}
    lines = [f"[{launches[0][col['Process ID']]}] {launches[0][col['Process Name']]}@{launches[0][col['Host Name']]}"]
    for r in launches:
        lines.append(f"  {r[col['Kernel Name']]} {r[col['Grid Size']]}x{r[col['Block Size']]}, Context {r[col['Context']]}, "
                     f"Stream {r[col['Stream']]}, Device {r[col['Device']]}, CC {r[col['CC']]}")
        values = [(m, unit, f"{float(r[col[m]].replace(',', '')):,.0f}") for m, unit in CLI_METRICS]
        lines += ["    Section: Command line profiler metrics", *_table(values, header=True), ""]
    return "\n".join(lines) + "\n"


# a --print-summary per-kernel --details-all report: raw metric names per section, min / max / average
SUMMARY_SECTIONS = {
    "GPU Speed Of Light Throughput": ("dram__cycles_elapsed.avg.per_second", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                                      "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum",
                                      "l1tex__throughput.avg.pct_of_peak_sustained_active", "launch__waves_per_multiprocessor",
                                      "lts__throughput.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    "Launch Statistics": ("launch__block_size", "launch__grid_size", "launch__registers_per_thread"),
}


def render_summary() -> str:
    """``ncu --print-summary per-kernel --details-all`` of the raw page's values (one invocation a kernel)."""
    with (NVIDIA / "raw.csv").open(newline="") as fh:
        raw = list(csv.reader(fh))
    header, units, launches = raw[0], raw[1], raw[2:]
    col = {h: i for i, h in enumerate(header)}
    lines = ["==PROF== Disconnected from process 490",
             f"[{launches[0][col['Process ID']]}] {launches[0][col['Process Name']]}@{launches[0][col['Host Name']]}",
             "  Device 0"]
    for r in launches:
        block = r[col["Block Size"]].strip("()").split(",")[0]
        grid = r[col["Grid Size"]].strip("()").split(",")[0]
        for section, metrics in SUMMARY_SECTIONS.items():
            rows = [(m, units[col[m]], f"{float(r[col[m]].replace(',', '')):.6f}") for m in metrics]
            widths = [max(len(x[0]) for x in rows + [("Metric Name", "", "")]),
                      max(len(x[1]) for x in rows + [("", "Metric Unit", "")]), max(len(x[2]) for x in rows) + 1]
            lines += [f"    {r[col['Kernel Name']]}, Block Size {block}, Grid Size {grid}, 1 invocations ",
                      f"      Section: {section}",
                      "      " + f"{'Metric Name':<{widths[0]}} {'Metric Unit':<{widths[1]}} "
                      + " ".join(f"{h:<{widths[2]}}" for h in ("Minimum", "Maximum", "Average")),
                      "      " + " ".join("-" * w for w in [widths[0], widths[1], widths[2], widths[2], widths[2]])]
            lines += ["      " + f"{n:<{widths[0]}} {u:<{widths[1]}} " + " ".join(f"{v:<{widths[2]}}" for _ in range(3))
                      for n, u, v in rows]
            lines.append("")
    return "\n".join(lines) + "\n"


def main(out: Path) -> None:
    (out / "summary_per_kernel_synthetic.txt").write_text(render_summary())
    (out / "summary_2025_layout_synthetic.txt").write_text(render(old=False, summary=True))
    (out / "metrics_only_synthetic.txt").write_text(render_metrics_only())
    (out / "details_2025_layout_synthetic.txt").write_text(render(old=False))
    (out / "details_2020_layout_synthetic.txt").write_text(render(old=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
