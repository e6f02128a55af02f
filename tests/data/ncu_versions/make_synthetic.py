"""Build the synthetic older-version ncu CSV fixtures in this folder from the real H200 exports.

    python tests/data/ncu_versions/make_synthetic.py tests/data/ncu_versions

Every number comes from NVIDIA's own export of tests/data/ncu_strided_copy/copy_strided_vs_coalesced.ncu-rep
(../ncu_strided_copy/nvidia/); only the layout is changed, to the one an older Nsight Compute
prints (columns, section and label names, unit spellings, metric names). PROVENANCE.md says which
version each layout follows and where that is documented.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

NVIDIA = Path(__file__).resolve().parent.parent / "ncu_strided_copy" / "nvidia"

IDENTITY_2020 = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream"]
# the identity columns of current versions (launch shape, device, compute capability)
IDENTITY_CURRENT = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                    "Block Size", "Grid Size", "Device", "CC"]
DETAILS = ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
# the 2021.2 header of an --nvtx run, as eth-easl/orion documents it
NVTX_2021 = ["thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
             "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"]
IDENTITY_2021 = ["ID", "Process ID", "Process Name", "Host Name", *NVTX_2021, "Kernel Name", "Kernel Time", "Context", "Stream"]
RULE_2021 = ["Rule Name", "Rule Type", "Rule Description"]
KERNEL_TIME = "2026-Nov-30 00:00:00"  # placeholder: the 2020 layout's launch timestamp, which coach does not read

# 2019.x-2020.x speed-of-light section: its display name and labels
SOL_2020 = {"DRAM Frequency": "Memory Frequency", "SM Frequency": "SM Frequency", "Elapsed Cycles": "Elapsed Cycles",
            "Memory Throughput": "Memory [%]", "DRAM Throughput": "SOL FB", "Duration": "Duration",
            "L1/TEX Cache Throughput": "SOL TEX", "L2 Cache Throughput": "SOL L2", "SM Active Cycles": "SM Active Cycles",
            "Compute (SM) Throughput": "SM [%]"}
# sections and labels the 2019.x-2020.x set did not have
NEW_SECTIONS = {"PM Sampling", "GPU and Memory Workload Distribution"}
NEW_LABELS = {"Local Memory Spilling Requests", "Local Memory Spilling Request Overhead", "L2 Compression Success Rate",
              "L2 Compression Ratio", "L2 Compression Input Sectors", "L2 Persisting Size", "Uses Green Context",
              "# TPCs", "Enabled TPC IDs", "Driver Shared Memory Per Block", "Block Limit Barriers", "Max Active Clusters",
              "Max Cluster Size", "Overall GPU Occupancy", "Cluster Occupancy", "Cluster Size", "Cluster Scheduling Policy",
              "Stack Size", "# SMs", "Branch Instructions Ratio"}
UNITS_2020 = {"ns": "nsecond", "hz": "cycle/second", "byte/s": "byte/second"}
NEW_LABELS_2021 = {"Local Memory Spilling Requests", "Local Memory Spilling Request Overhead", "Uses Green Context"}
# display units as versions before 2023 spell them
UNITS_OLDER_DISPLAY = {"ms": "msecond", "us": "usecond", "Ghz": "cycle/nsecond", "Mhz": "cycle/usecond", "Tbyte/s": "Tbyte/second"}

# raw-page metrics kept in the older-names fixture: current name -> the name an older version used
RAW_RENAMES = {
    "gpu__time_duration.sum": "gpu__time_duration.sum",
    "dram__bytes_read.sum": "dram__bytes_read.sum",
    "dram__bytes_write.sum": "dram__bytes_write.sum",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__t_sector_hit_rate.pct": "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct": "sm__maximum_warps_per_active_cycle_pct",
    "sm__cycles_elapsed.max": "sm__cycles_elapsed.max",
    "sm__cycles_elapsed.avg.per_second": "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second": "dram__cycles_elapsed.avg.per_second",
    "smsp__inst_executed.sum": "smsp__inst_executed.sum",
    "launch__grid_size": "launch__grid_size",
    "launch__block_size": "launch__block_size",
    "launch__registers_per_thread": "launch__registers_per_thread",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_inst_executed_op_global_ld.sum": "smsp__inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum": "smsp__inst_executed_op_shared_ld.sum",
    "smsp__sass_branch_targets_threads_divergent.sum": "smsp__branch_targets_threads_divergent.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active": "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active": "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "smsp__average_warp_latency_per_inst_issued.ratio": "smsp__average_warp_latency_per_inst_issued.ratio",
    "device__attribute_display_name": "device__attribute_display_name",
    "device__attribute_compute_capability_major": "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor": "device__attribute_compute_capability_minor",
    "device__attribute_multiprocessor_count": "device__attribute_multiprocessor_count",
    "launch__device_id": "launch__device_id",
}
STALL_REASONS = ["long_scoreboard", "short_scoreboard", "barrier", "mio_throttle", "lg_throttle", "math_pipe_throttle",
                 "not_selected", "wait", "tex_throttle", "membar", "branch_resolving", "dispatch_stall", "drain",
                 "no_instruction", "sleeping", "selected"]
LATENCY = "smsp__average_warp_latency_per_inst_issued.ratio"


def _read(name: str) -> list[list[str]]:
    with (NVIDIA / name).open(newline="") as fh:
        return list(csv.reader(fh))


def _write(path: Path, rows: list[list[str]]) -> None:
    """As ncu writes CSV: every field quoted, one row a line."""
    out = io.StringIO()
    for row in rows:
        out.write(",".join('"' + f.replace('"', '""') + '"' for f in row) + "\n")
    path.write_text(out.getvalue())


def _identity(r: list[str], h: dict[str, int], columns: list[str]) -> list[str]:
    return [KERNEL_TIME if c == "Kernel Time" else r[h[c]] for c in columns]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def details_2020(out: Path) -> None:
    """2019.x-2020.x details page: "Kernel Time", no launch-shape or device columns, no rule rows."""
    rows = _read("details_base_units.csv")
    h = {c: i for i, c in enumerate(rows[0])}
    table = [IDENTITY_2020 + DETAILS]
    for r in rows[1:]:
        section, label, unit, value = (r[h[c]] for c in DETAILS)
        if not label or section in NEW_SECTIONS or label in NEW_LABELS:
            continue  # rule rows and what the older sets lacked
        if section == "GPU Speed Of Light Throughput":
            section, label = "GPU Speed Of Light", SOL_2020[label]
        if label == "L1/TEX Hit Rate":
            label = "L1 Hit Rate"
        if label == "Theoretical Active Warps per SM":
            unit = "warp/cycle"
        unit = UNITS_2020.get(unit, unit)
        table.append(_identity(r, h, IDENTITY_2020) + [section, label, unit, value.replace(",", "")])  # the 2020 pages print no separators
    _write(out / "details_2020_layout_synthetic.csv", table)


def details_2021(out: Path) -> None:
    """The 2021.2 details page of an --nvtx run: NVTX columns, "Kernel Time", rule results without
    estimated speed-ups, no launch-shape or device columns; unit spellings of that era."""
    rows = _read("details.csv")
    h = {c: i for i, c in enumerate(rows[0])}
    table = [IDENTITY_2021 + DETAILS + RULE_2021]
    for r in rows[1:]:
        section, label, unit, value = (r[h[c]] for c in DETAILS)
        if section == "PM Sampling" or label in NEW_LABELS_2021:
            continue
        rule = [r[h[c]] if len(r) > h[c] else "" for c in RULE_2021]
        ident = ["" if c in NVTX_2021 else KERNEL_TIME if c == "Kernel Time" else r[h[c]] for c in IDENTITY_2021]
        table.append(ident + [section, label, UNITS_OLDER_DISPLAY.get(unit, unit), value] + rule)
    _write(out / "details_2021_layout_synthetic.csv", table)


def raw_older_names(out: Path) -> None:
    """Raw page of 2020-era names: dram__throughput, stall percentages per active warp, tensor-pipe
    instruction issue, smsp__inst_executed_op_* without the sass qualifier; the 2020 identity columns."""
    rows = _read("raw_base_units.csv")
    h = {c: i for i, c in enumerate(rows[0])}
    header = IDENTITY_2020 + list(RAW_RENAMES.values()) + [f"smsp__warp_issue_stalled_{s}_per_warp_active.pct" for s in STALL_REASONS]
    units = [""] * len(IDENTITY_2020) + [UNITS_2020.get(rows[1][h[m]], rows[1][h[m]]) for m in RAW_RENAMES] + ["%"] * len(STALL_REASONS)
    table = [header, units]
    for r in rows[2:]:
        values = [r[h[m]] for m in RAW_RENAMES]
        latency = _number(r[h[LATENCY]])
        # % of active warp cycles stalled for the reason = warps stalled per issue / warp cycles per issue
        stalls = [f"{100 * _number(r[h[f'smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio']]) / latency:.6f}" for s in STALL_REASONS]
        table.append(_identity(r, h, IDENTITY_2020) + values + stalls)
    _write(out / "raw_2020_names_synthetic.csv", table)


def raw_metrics_subset(out: Path) -> None:
    """`ncu --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum`
    with launch-shape and device columns, in the unit spellings of 2022-2023."""
    rows = _read("raw.csv")
    h = {c: i for i, c in enumerate(rows[0])}
    keep = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]
    table = [IDENTITY_CURRENT + keep, [""] * len(IDENTITY_CURRENT) + [UNITS_OLDER_DISPLAY.get(rows[1][h[m]], rows[1][h[m]]) for m in keep]]
    table += [_identity(r, h, IDENTITY_CURRENT + keep) for r in rows[2:]]
    _write(out / "raw_metrics_subset_synthetic.csv", table)


def details_cli_metrics(out: Path) -> None:
    """The same three metrics on the default (details) page, where ncu lists them under
    "Command line profiler metrics" by their raw names."""
    rows = _read("raw.csv")
    h = {c: i for i, c in enumerate(rows[0])}
    table = [IDENTITY_CURRENT + DETAILS]
    for r in rows[2:]:
        for m in ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]:
            unit = rows[1][h[m]]
            table.append(_identity(r, h, IDENTITY_CURRENT) + ["Command line profiler metrics", m, UNITS_OLDER_DISPLAY.get(unit, unit), r[h[m]]])
    _write(out / "details_cli_metrics_synthetic.csv", table)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for build in (details_2020, details_2021, raw_older_names, raw_metrics_subset, details_cli_metrics):
        build(out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
