"""Kernel rules on reports with metrics missing: the recorded H200 strided/coalesced copy
(tests/data/ncu_strided_copy) with metrics removed from its long table (labelled synthetic variants
of a real report, as a report of a smaller section set or a --metrics list would be), read back
through the readers' own canonical mapping. A rule falls back to the metrics the report has, or
says it could not check and what it needs."""

from __future__ import annotations

import dataclasses

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
    findings = diagnose(without(report, L1_SECTORS, BYTES_PER_SECTOR, SOURCE_COUNTERS, L2_FROM_L1))
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
