"""Kernel rules on reports with metrics missing: the recorded H200 strided/coalesced copy
(tests/data/ncu_strided_copy) with metrics removed from its long table (labelled synthetic variants
of a real report, as a report of a smaller section set or a --metrics list would be), read back
through the readers' own canonical mapping. A rule falls back to the metrics the report has, or
says it could not check and what it needs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.ingest import load
from coach.ingest.ncu_common import canonical_metrics, devices, launch_config
from coach.model import make_kernel_profile

L1_SECTORS = r"^l1tex__t_sectors"
BYTES_PER_SECTOR = r"^smsp__sass_average_data_bytes_per_sector"
SOURCE_COUNTERS = r"^memory_l2_theoretical"
L2_FROM_L1 = r"^lts__t_sectors_srcunit_tex"


@pytest.fixture(scope="module")
def report(strided_ncu_rep):
    return load(strided_ncu_rep)


def without(profile, *patterns: str):
    """``profile`` as if its report had not collected the metrics matching ``patterns``."""
    metrics = profile.metrics.filter(~pl.col("metric").str.contains("|".join(patterns)))
    aggregates = metrics.filter(pl.col("instance").is_null())
    identity = profile.launches.select("launch_id", "kernel_name", "demangled_name", "mangled_name", "nvtx_range")
    launches = (identity.join(launch_config(aggregates), on="launch_id", how="left", maintain_order="left")
                .join(canonical_metrics(aggregates), on="launch_id", how="left", maintain_order="left"))
    return make_kernel_profile(dataclasses.replace(profile.source, path="synthetic-variant.ncu-rep"),
                               launches=launches, metrics=metrics, rules=profile.rules, devices=devices(aggregates))


def by_launch(findings, launch_id):
    return [f for f in findings if f.launch_id == launch_id]


def test_without_l1_sectors_l2_sectors_find_the_strided_loads(report):
    findings = diagnose(without(report, L1_SECTORS, BYTES_PER_SECTOR, SOURCE_COUNTERS))
    strided = [f for f in by_launch(findings, 0) if not is_not_checked(f)]
    top = strided[0]
    assert top.rule_id == "uncoalesced-global-access" and top.details["sectors_from"] == "L2"
    assert top.details["sectors_per_request"] == pytest.approx(32.0)  # 67.1M L2 read sectors / 2.10M requests
    assert "Counted at L2" in top.message
    coalesced = by_launch(findings, 1)
    assert not any(f.rule_id.endswith("uncoalesced-global-access") for f in coalesced)  # 4.0 per request


def test_the_l2_count_agrees_with_l1_where_both_are_there(report):
    at_l1 = next(f for f in diagnose(report) if f.launch_id == 0 and f.rule_id == "uncoalesced-global-access"
                 and f.details["op"] == "load")
    at_l2 = next(f for f in diagnose(without(report, L1_SECTORS, BYTES_PER_SECTOR, SOURCE_COUNTERS))
                 if f.launch_id == 0 and f.rule_id == "uncoalesced-global-access" and f.details["op"] == "load")
    assert at_l1.details["sectors_per_request"] == pytest.approx(at_l2.details["sectors_per_request"])
    # the width unknown at L2, the excess is counted against the widest access: a lower bound
    assert at_l2.estimated_saving_ns < at_l1.estimated_saving_ns


def test_without_any_sector_count_the_rule_says_what_it_needs(report):
    variant = without(report, L1_SECTORS, BYTES_PER_SECTOR, SOURCE_COUNTERS, L2_FROM_L1)
    # with Nsight Compute's rule results, its UncoalescedGlobalAccess warning backs the strided copy's
    # finding (tests/test_kernel_rules_ncu_fallback.py), which says what coach's own check needs
    [backed] = [f for f in diagnose(variant) if f.rule_id == "uncoalesced-global-access"]
    assert backed.launch_id == 0 and "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in backed.message
    findings = diagnose(dataclasses.replace(variant, rules=variant.rules.clear()))  # and without them
    for launch_id in (0, 1):
        [note] = [f for f in by_launch(findings, launch_id) if f.rule_id == "not-checked:uncoalesced-global-access"]
        assert "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in note.message
        assert "lts__t_sectors_srcunit_tex_op_read.sum" in note.message
        needs = note.to_dict()["details"]["needs"]
        assert any("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in n for n in needs)
        assert any("lts__t_sectors_srcunit_tex_op_read.sum" in n for n in needs)
    assert not any(f.rule_id == "uncoalesced-global-access" for f in findings)


def test_the_full_report_keeps_its_l1_reading(report):
    top = diagnose(report)[0]
    assert top.launch_id == 0 and top.rule_id == "uncoalesced-global-access" and top.details["sectors_from"] == "L1"


def test_a_profile_saved_before_a_column_existed_gets_it_on_reading(report, tmp_path):
    from coach.model import save  # noqa: PLC0415

    folder = save(report, tmp_path / "saved")
    launches = pl.read_parquet(folder / "launches.parquet").drop("l1_to_l2_read_sectors", "l1_to_l2_write_sectors")
    launches.write_parquet(folder / "launches.parquet")
    again = load(folder)
    assert again.launches["l1_to_l2_read_sectors"].to_list() == report.launches["l1_to_l2_read_sectors"].to_list()
    assert again.launches["l1_to_l2_read_sectors"][0] == pytest.approx(67_108_864)


def test_with_only_the_source_counters_their_sector_totals_decide(report):
    """Neither L1 nor L2 per-request counts (a SourceCounters-only collection): the source counters'
    L2 sectors of global accesses against their coalesced ideal find the strided copy, not its twin."""
    findings = diagnose(without(report, L1_SECTORS, L2_FROM_L1))
    strided = [f for f in by_launch(findings, 0) if f.rule_id == "uncoalesced-global-access"]
    assert [f.details["sectors_from"] for f in strided] == ["source counters"]
    assert strided[0].details["sectors_per_ideal"] > 1.25
    assert not [f for f in by_launch(findings, 1) if "uncoalesced" in f.rule_id]


def test_sector_counts_without_request_counts_say_so(report):
    findings = diagnose(without(report, r"^l1tex__t_requests_pipe_lsu_mem_global_op_ld", r"inst_executed_op_global_ld"))
    notes = [f for f in by_launch(findings, 0) if f.rule_id == "not-checked:uncoalesced-global-access"]
    assert notes and "no count of global load requests" in notes[0].message


# --------------------------------------------------------------------------------------------
# Without the speed-of-light section (labelled synthetic variants, tests/ncu_variants.py)
# --------------------------------------------------------------------------------------------

SOL = ["sm__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
WILD = Path(__file__).resolve().parent / "data" / "wild_ncu"
TRACES = Path(__file__).resolve().parent.parent / "traces" / "h200"


def test_without_the_speed_of_light_a_tensor_pipe_at_its_roof_names_the_bound():
    """cuBLAS's GEMM: tensor pipe 96.9% busy. Without the SOL throughputs the root still calls it
    compute-bound on the tensor pipe, and its 19% theoretical occupancy (by design) is not put first."""
    from ncu_variants import without_metrics  # noqa: PLC0415

    found = diagnose(without_metrics(load(WILD / "healthy_gemm.full.ncu-rep"), SOL))
    top = found[0]
    assert top.rule_id == "speed-of-light" and top.details["measured_by"] == "tensor_pipe_active_pct"
    assert top.category == "compute-tensor" and "without the speed-of-light section" in top.title
    assert "occupancy-limit" not in {f.rule_id for f in found}
    assert "not-checked:speed-of-light" in {f.rule_id for f in found}  # and it says what it lacks


def test_the_tables_set_names_dram_at_its_roof_and_leaves_latency_alone():
    """The tables set has no SOL section; the copy kernels run DRAM at 80.5% and 86.9%: at the roof."""
    found = diagnose(load(WILD / "memory_patterns.tables.ncu-rep"))
    roots = {f.scope: f for f in found if f.rule_id == "speed-of-light"}
    assert (roots["copy_vec4"].details["unit"], roots["copy_vec4"].details["measured_by"]) == ("DRAM", "dram_throughput_pct")
    assert "87% of peak" in roots["copy_vec4"].title
    assert not [f for f in found if f.scope == "copy_vec4" and f.rule_id in ("occupancy-limit", "warp-stalls")]


def test_below_the_roof_without_the_speed_of_light_nothing_is_decided():
    """The coalesced copy at 54% of DRAM: below the roof, latency cannot be told from an unmeasured unit."""
    from coach.analyze.kernel_rules.speed_of_light import unit_verdict  # noqa: PLC0415

    assert unit_verdict({"duration_ns": 1e5, "dram_throughput_pct": 54.3, "l2_throughput_pct": 65.4}) is None
    # L2 reads above the SOL memory throughput: 88% is not its roof, 93% is
    assert unit_verdict({"duration_ns": 1e5, "l2_throughput_pct": 88.1}) is None
    v = unit_verdict({"duration_ns": 1e5, "l2_throughput_pct": 93.2})
    assert v is not None and (v.unit, v.busiest_pct, v.side) == ("L2", 93.2, "memory")
    assert v.subtrees == {"launch", "memory", "compute"}  # the compute half is not measured: looked into


def test_one_thread_per_warp_storing_is_not_uncoalesced():
    """scenario-05's kernel stores one 4-byte sum per warp: 1.00 sector per request, 4 useful bytes of
    32. A request cannot touch less than one sector: that is a small access, not an uncoalesced one."""
    found = diagnose(load(TRACES / "scenario-05" / "slow" / "report.ncu-rep.xz"))
    assert not [f for f in found if f.rule_id == "uncoalesced-global-access" and f.details["op"] == "store"]


def test_shared_atomics_are_not_bank_conflicts_of_loads_and_stores():
    """scenario-08/fixed's shared-atomic histogram: 9.85 M conflicts in the all-operations count, 7 in
    its loads and stores. Without the per-operation counts the rule says what it needs."""
    from ncu_variants import without_metrics  # noqa: PLC0415

    full = load(TRACES / "scenario-08" / "fixed" / "report.ncu-rep.xz")
    assert "shared-bank-conflicts" not in {f.rule_id for f in diagnose(full)}
    variant = without_metrics(full, patterns=[r"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_(ld|st)\."])
    found = diagnose(variant)
    assert "shared-bank-conflicts" not in {f.rule_id for f in found}
    assert "not-checked:shared-bank-conflicts" in {f.rule_id for f in found}
