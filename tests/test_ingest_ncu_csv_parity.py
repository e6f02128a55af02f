"""The two ways coach reads one Nsight Compute report give the rules the same numbers.

Where ``ncu_report`` is not installed (the H200 recording machine; Linux aarch64, which has no
wheel), a ``.ncu-rep`` is read
through ``ncu --csv`` (``ncu_rep._read_through_ncu_csv``), which prints most values with two
decimals. Every column a kernel rule reads must agree with the ``ncu_report`` reading within that
printed precision, and the diagnosis must be the same. Waves per SM, whose fraction above a whole
number decides the tail effect, must agree exactly: printed as "1.00", the 1.0038 waves of
scenario-07 hid its tail effect on the CSV path.

Real pairs: the strided-copy report (tests/data/ncu_strided_copy) with NVIDIA's exports of it, and
the roofline kernels (tests/data/ncu_roofline, read by ``ncu_report`` and stored as Parquet) with
NVIDIA's raw page of the same report.
"""

import csv
import math
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose
from coach.analyze.kernel_metrics import with_derived
from coach.analyze.kernel_rules import specs
from coach.ingest import load, ncu_csv, ncu_rep
from coach.ingest.ncu_common import LAUNCH_CONFIG, devices, mappings
from coach.model import make_kernel_profile

# ncu prints a non-integer value in base units with two decimals: it is within half a digit.
HALF_DIGIT = 0.005
# Columns computed from waves per SM, whose whole part and fraction the tail rule reads.
WAVE_COLUMNS = ("waves_per_sm", "full_waves", "tail_wave_fraction", "tail_idle_fraction")
ROOT = Path(__file__).parent.parent
SCENARIO_07 = ROOT / "traces" / "h200" / "scenario-07" / "slow" / "ncu"


def _fake_ncu(tmp_path, raw, details):
    """An ``ncu`` that answers ``--import R --csv --page P`` with NVIDIA's recorded export of that page."""
    script = tmp_path / "ncu"
    script.write_text('#!/bin/sh\ncase "$*" in\n'
                      f'  *"--page raw"*) cat "{raw}" ;;\n'
                      f'  *"--page details"*) cat "{details}" ;;\n'
                      "esac\n")
    script.chmod(0o755)
    return str(script)


@pytest.fixture(scope="module")
def pairs(data_dir, strided_ncu_rep, tmp_path_factory):
    """name -> (the ncu_report reading, the CSV reading) of one report."""
    nvidia = data_dir / "ncu_strided_copy" / "nvidia"
    fallback = ncu_rep._read_through_ncu_csv(
        strided_ncu_rep, _fake_ncu(tmp_path_factory.mktemp("ncu"), nvidia / "raw_base_units.csv", nvidia / "details_base_units.csv"))
    strided = load(strided_ncu_rep)
    roofline = load(data_dir / "ncu_roofline" / "roofline_kernels")
    # The stored devices table predates the readers' rule that a device's row comes from its first
    # launch (commit 1a72e13); today's ncu_report reader derives it from the same metrics so.
    roofline = make_kernel_profile(roofline.source, launches=roofline.launches, metrics=roofline.metrics,
                                   rules=roofline.rules, devices=devices(roofline.metrics))
    return {
        "strided, ncu_rep fallback": (strided, fallback),
        "strided, --print-fp": (strided, ncu_csv.read(nvidia / "raw_fp_base_units.csv")),
        "roofline": (roofline, ncu_csv.read(data_dir / "ncu_roofline" / "nvidia" / "raw_base_units.csv")),
    }


def _rule_inputs(launches: pl.DataFrame) -> list[str]:
    """Every column of the launches table that a kernel rule names as evidence it needs or uses.

    The rest of what the rules read is derived from these by ``with_derived``, the same expressions
    for both readers; of those only the wave columns have a step (floor, ceil) that a rounding can
    cross, and they are compared exactly below.
    """
    named = {c for s in specs() for c in (*s.requires, *s.optional)}
    return sorted(named & set(launches.columns))


def _printed_bound(exact: dict[str, float], column: str) -> float:
    """How far ``column`` may be off when each Nsight Compute metric it is computed from is printed
    with two decimals: the mapping's first alternative the report has, each product's factors
    widened by half a digit."""
    if column in LAUNCH_CONFIG:
        return 0.0  # launch configuration: integers, printed exactly
    mapping = next((m for m in mappings() if m.column == column), None)
    if mapping is None:
        return 0.0
    for alt in mapping.alternatives:
        if all(x in exact for t in alt for x in t.metrics):
            return sum(abs(t.factor) * (math.prod(abs(exact[x]) + HALF_DIGIT for x in t.metrics)
                                        - math.prod(abs(exact[x]) for x in t.metrics)) for t in alt)
    return 0.0


@pytest.mark.parametrize("name", ["strided, ncu_rep fallback", "strided, --print-fp", "roofline"])
def test_every_rule_input_agrees_within_the_printed_precision(pairs, name):
    rep, via_csv = pairs[name]
    a, b = rep.launches, via_csv.launches
    columns = _rule_inputs(a)
    assert len(columns) > 60 and {"waves_per_sm", "sm_count", "grid_size", "duration_ns"} <= set(columns)
    assert a["launch_id"].to_list() == b["launch_id"].to_list()
    exact = {lid: dict(g.select("metric", "value").drop_nulls().iter_rows())
             for (lid,), g in rep.metrics.group_by("launch_id")}
    off = []
    for col in columns:
        for lid, x, y in zip(a["launch_id"], a[col], b[col]):
            if x is None or y is None:
                if (x is None) != (y is None):
                    off.append((col, lid, x, y))
            elif isinstance(x, str):
                if x != y:
                    off.append((col, lid, x, y))
            elif abs(x - y) > _printed_bound(exact[lid], col) + 1e-9 * abs(x):
                off.append((col, lid, x, y))
    assert off == []


@pytest.mark.parametrize("name", ["strided, ncu_rep fallback", "strided, --print-fp", "roofline"])
def test_device_columns_the_rules_read_agree(pairs, name):
    rep, via_csv = pairs[name]
    a, b = rep.devices.row(0, named=True), via_csv.devices.row(0, named=True)
    for col in ("sm_count", "cc_major", "cc_minor", "max_warps_per_sm", "registers_per_sm", "shared_mem_per_sm_bytes"):
        assert b[col] == a[col], col
    # bytes per DRAM cycle (an integer) x the DRAM clock (two decimals, in Hz)
    peak = rep.metrics.filter((pl.col("launch_id") == 0) & (pl.col("metric") == "dram__bytes.sum.peak_sustained"))["value"].item()
    assert abs(b["memory_bandwidth_bytes_per_s"] - a["memory_bandwidth_bytes_per_s"]) <= peak * HALF_DIGIT


@pytest.mark.parametrize("name", ["strided, ncu_rep fallback", "strided, --print-fp", "roofline"])
def test_waves_and_the_tail_are_exact(pairs, name):
    rep, via_csv = pairs[name]
    a, b = with_derived(rep.launches, rep.devices), with_derived(via_csv.launches, via_csv.devices)
    for col in WAVE_COLUMNS:
        assert b[col].to_list() == pytest.approx(a[col].to_list(), rel=1e-12, abs=1e-12), col
    # the raw pages print 248.24 (strided) and 15.52 / 7.76 (roofline): the quotients are restored
    printed = via_csv.metrics.filter(pl.col("metric") == "launch__waves_per_multiprocessor")["value"]
    assert (printed.round(2) == printed).all() and (b["waves_per_sm"] != printed).any()


@pytest.mark.parametrize("name", ["strided, ncu_rep fallback", "strided, --print-fp", "roofline"])
def test_both_readings_give_the_same_diagnosis(pairs, name):
    rep, via_csv = pairs[name]
    first, second = diagnose(rep), diagnose(via_csv)
    assert [(f.launch_id, f.rule_id, f.title) for f in second] == [(f.launch_id, f.rule_id, f.title) for f in first]
    for f, g in zip(first, second):
        assert (g.estimated_saving_ns is None) == (f.estimated_saving_ns is None)
        if f.estimated_saving_ns is not None:
            assert g.estimated_saving_ns == pytest.approx(f.estimated_saving_ns, rel=0.01), (f.rule_id, f.launch_id)


@pytest.mark.parametrize("name", ["details.csv", "details_base_units.csv"])
def test_details_pages_give_exact_waves_too(data_dir, name):
    page = ncu_csv.read(data_dir / "ncu_strided_copy" / "nvidia" / name)
    # "Waves Per SM" 248.24; "Grid Size" 262,144, "# SMs" 132, "Block Limit Warps" 8, the least limit
    assert page.launches["waves_per_sm"].to_list() == [262_144 / (132 * 8)] * 2


def _recorded_kernel_profiles():
    folders = sorted({p.parent for d in ("traces", "tests/data") for p in (ROOT / d).rglob("launches.parquet")})
    return [*folders, *sorted((ROOT / "traces").rglob("*.ncu-rep")), *sorted((ROOT / "tests" / "data").rglob("*.ncu-rep"))]


def test_ncu_computes_waves_from_the_block_limits_on_every_recorded_report():
    """What the CSV reader relies on: ncu's waves per SM is grid size / (SMs x the least block limit),
    on every launch that ncu_report read from the H200 reports kept here."""
    limits = ["launch__occupancy_limit_blocks", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
              "launch__occupancy_limit_warps", "launch__occupancy_limit_barriers"]
    terms = ["launch__grid_size", "launch__sm_count", "launch__waves_per_multiprocessor", *limits]
    tables = []
    for path in _recorded_kernel_profiles():
        profile = load(path)
        if profile.kind == "kernel-profile":
            tables.append(profile.metrics.filter(pl.col("metric").is_in(terms))
                          .pivot(on="metric", index="launch_id", values="value", aggregate_function="first"))
    waves = pl.concat(tables, how="diagonal").select(
        "launch__waves_per_multiprocessor",
        (pl.col("launch__grid_size") / (pl.col("launch__sm_count") * pl.min_horizontal(limits))).alias("quotient"))
    assert waves.height >= 128 and waves.null_count().sum_horizontal().item() == 0
    assert waves["quotient"].to_list() == pytest.approx(waves["launch__waves_per_multiprocessor"].to_list(), rel=1e-12)


# --------------------------------------------------------------------------------------------
# scenario-07: the tail effect read through the CSV
# --------------------------------------------------------------------------------------------


def _as_raw_page(profile, path, drop=()):
    """Write ``profile``'s metrics as an ``ncu --csv --page raw --print-units base`` page: header,
    unit row, one row per launch, each value with ncu's two decimals (integers without).

    A rendering of a real recording, not an export by ncu: the scenario-07 report was read on the
    GPU machine and stored as Parquet, and only its tables were kept. The lay-out and the number
    format are those of the NVIDIA exports in tests/data/ncu_strided_copy/nvidia.
    """
    m = profile.metrics.filter(~pl.col("metric").str.contains(":") & ~pl.col("metric").is_in(list(drop)))
    names = m["metric"].unique(maintain_order=True).to_list()
    unit = dict(m.select("metric", "unit").unique("metric").iter_rows())
    launches = profile.launches.sort("launch_id")

    def printed(value, text):
        if text is not None:
            return text
        if value is None:
            return ""
        return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"

    with path.open("w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                    "Block Size", "Grid Size", "Device", "CC", *names])
        w.writerow([""] * 11 + [unit[n] for n in names])
        for launch in launches.iter_rows(named=True):
            cells = {r["metric"]: printed(r["value"], r["text"])
                     for r in m.filter(pl.col("launch_id") == launch["launch_id"]).iter_rows(named=True)}
            w.writerow([launch["launch_id"], "", "", "", launch["demangled_name"], "", "",
                        f"({launch['block_x']}, {launch['block_y']}, {launch['block_z']})",
                        f"({launch['grid_x']}, {launch['grid_y']}, {launch['grid_z']})", "", "",
                        *[cells.get(n, "") for n in names]])
    return path


@pytest.fixture(scope="module")
def scenario_07():
    return load(SCENARIO_07)


def test_scenario_07_tail_effect_is_found_through_the_csv(scenario_07, tmp_path):
    page = _as_raw_page(scenario_07, tmp_path / "raw.csv")
    header, _units, row = list(csv.reader(page.read_text().splitlines()))
    assert row[header.index("launch__waves_per_multiprocessor")] == "1.00"  # what the live run read
    via_csv = ncu_csv.read(page)
    # 265 blocks / (132 SMs x 2 blocks per SM, the register and warp limits)
    assert via_csv.launches["waves_per_sm"].item() == pytest.approx(265 / 264, rel=1e-15)
    recorded = diagnose(scenario_07)
    found = diagnose(via_csv)
    assert recorded[0].rule_id == "tail-effect"
    assert [f.rule_id for f in found] == [f.rule_id for f in recorded]
    tail = found[0]
    assert tail.rule_id == "tail-effect"
    assert tail.details["waves"] == pytest.approx(1.0037878787878788, rel=1e-12)
    evidence = {e.metric: e.value for e in tail.evidence}
    assert evidence["tail_idle_fraction"] == pytest.approx(0.49810606060606, rel=1e-9)


def test_printed_waves_stay_where_the_block_limits_are_missing(scenario_07, tmp_path):
    """Without the occupancy limits the quotient cannot be formed: the printed 1.00 stays, and with
    it no tail effect (the reading the live run of scenario-07 gave)."""
    limits = [m for m in scenario_07.metrics["metric"].unique() if m.startswith("launch__occupancy_limit_")]
    via_csv = ncu_csv.read(_as_raw_page(scenario_07, tmp_path / "raw.csv", drop=limits))
    assert via_csv.launches["waves_per_sm"].item() == 1.0
    rules = [f.rule_id for f in diagnose(via_csv)]
    assert "tail-effect" not in rules and rules[0] == "warp-stalls"


def test_the_printed_waves_alone_explain_the_live_diagnosis(scenario_07):
    """traces/h200/live-runs/live-scenario-07.log led with shared-memory (mio throttle) stalls, then
    the XU pipe below its roof, then occupancy: the recorded diagnosis less its tail effect, in the
    same order. Waves per SM as printed is the only difference needed to get there."""
    printed = make_kernel_profile(scenario_07.source, launches=scenario_07.launches.with_columns(pl.col("waves_per_sm").round(2)),
                                  metrics=scenario_07.metrics, rules=scenario_07.rules, devices=scenario_07.devices)
    live = [f.rule_id for f in diagnose(printed)]
    assert live[:3] == ["warp-stalls", "speed-of-light", "occupancy-limit"]
    assert live == [f.rule_id for f in diagnose(scenario_07) if f.rule_id != "tail-effect"]


def test_waves_from_a_limit_that_disagrees_with_the_printed_value_are_not_used(scenario_07, tmp_path):
    """A block limit missing from the page would make the quotient too small; the printed value,
    which it does not round to, stays."""
    via_csv = ncu_csv.read(_as_raw_page(scenario_07, tmp_path / "raw.csv",
                                        drop=["launch__occupancy_limit_registers", "launch__occupancy_limit_warps"]))
    assert via_csv.launches["waves_per_sm"].item() == 1.0  # 265 / (132 x 7) = 0.29 does not print as 1.00
