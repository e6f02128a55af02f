"""Where a report lacks the counts of uncoalesced global access or bank conflicts, Nsight Compute's own
rule results of that kind decide (coach/analyze/kernel_rules/_ncu_fallback.py).

On the H200 pages of tests/data/ncu_pages_2025 (``--set full`` and a section subset, printed as text and
CSV: no sector or bank-conflict counts, but the rules' OPT paragraphs) the strided copy is led by
uncoalesced access and the transpose finds bank conflicts; the coalesced copy gets neither. Where the
counts are in the report (tests/data/ncu_strided_copy, tests/data/wild_ncu) they decide, as before.
The variants with metrics or rule results changed are labelled synthetic (their source path says so)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.analyze.kernel_rules._ncu_fallback import FROM_NCU_RULE
from coach.ingest import load
from ncu_variants import without_metrics

UNCOALESCED, BANK = "uncoalesced-global-access", "shared-bank-conflicts"
FULL_PAGES = ["full/details.txt", "full/csv_details.txt"]
SUBSET_PAGES = ["subset/details.txt", "subset/csv_details.txt"]
#: the metrics coach's own checks of the two read (L1 and L2 sectors, source counters, bank conflicts)
COUNTS = r"^l1tex__t_sectors|^lts__t_sectors_srcunit_tex|^memory_l2_theoretical|^smsp__sass_average_data_bytes|" \
         r"^l1tex__data_bank_conflicts|^l1tex__data_pipe_lsu_wavefronts_mem_shared"


def by_kernel(findings, name):
    return [f for f in findings if f.scope == name]


def confident(findings, name):
    return [f for f in by_kernel(findings, name) if not is_not_checked(f)]


def rules(findings, name):
    return {f.rule_id for f in by_kernel(findings, name)}


def with_rules(profile, rules_frame, label):
    return dataclasses.replace(profile, rules=rules_frame,
                               source=dataclasses.replace(profile.source, path=f"synthetic-variant-{label}"))


@pytest.fixture(scope="module")
def pages(data_dir):
    return data_dir / "ncu_pages_2025"


@pytest.mark.parametrize("page", FULL_PAGES + SUBSET_PAGES)
def test_the_strided_copy_is_led_by_uncoalesced_access_from_nsight_computes_rule(pages, page):
    found = diagnose(load(pages / page))
    top = confident(found, "copy_strided")[0]
    assert top.rule_id == UNCOALESCED and top.details[FROM_NCU_RULE] == "UncoalescedGlobalAccess"
    # 58,720,256 excessive of 75,497,472 sectors, as the rule's message counts them
    assert top.details["excess_share"] == pytest.approx(58_720_256 / 75_497_472)
    assert "Nsight Compute's rule UncoalescedGlobalAccess" in top.message
    assert "Coach's own sector counts cannot decide here" in top.message
    assert top.ncu_rule == "UncoalescedGlobalAccess"
    assert any(e.source == "Nsight Compute rule UncoalescedGlobalAccess" for e in top.evidence)
    assert f"not-checked:{UNCOALESCED}" not in rules(found, "copy_strided")  # the finding replaces the note


@pytest.mark.parametrize("page", FULL_PAGES)
def test_the_transpose_finds_bank_conflicts_and_the_coalesced_copy_neither(pages, page):
    found = diagnose(load(pages / page))
    [bank] = [f for f in confident(found, "transpose_conflict") if f.rule_id == BANK]
    assert bank.details[FROM_NCU_RULE] == "SharedMemoryConflicts"
    assert bank.details["excess_share"] == pytest.approx(65_315_200 / 67_412_352)
    coalesced = rules(found, "copy_coalesced")
    assert UNCOALESCED not in coalesced and BANK not in coalesced
    assert {f"not-checked:{UNCOALESCED}", f"not-checked:{BANK}"} <= coalesced  # neither exists: still not checked
    assert UNCOALESCED not in rules(found, "transpose_conflict")  # its global accesses are coalesced
    assert BANK not in rules(found, "copy_strided")


@pytest.mark.parametrize("page", SUBSET_PAGES)
def test_the_subsets_excess_shared_wavefronts_are_not_taken_for_bank_conflicts(pages, page):
    """The subset has no memory tables, so no SharedMemoryConflicts: only UncoalescedSharedAccess, whose
    excess wavefronts count shared atomics too. The transpose's bank conflicts stay not checked."""
    found = diagnose(load(pages / page))
    assert BANK not in rules(found, "transpose_conflict")
    [note] = [f for f in by_kernel(found, "transpose_conflict") if f.rule_id == f"not-checked:{BANK}"]
    assert "Nsight Compute's rule UncoalescedSharedAccess warns here (est. speedup 89.6%), not taken" in note.message
    [quiet] = [f for f in by_kernel(found, "copy_coalesced") if f.rule_id == f"not-checked:{BANK}"]
    assert "UncoalescedSharedAccess" not in quiet.message  # no such warning on the copy


@pytest.mark.parametrize("page", FULL_PAGES)
def test_the_saving_is_nsight_computes_estimate_bounded_by_the_rules_model(pages, page):
    profile = load(pages / page)
    found = diagnose(profile)
    strided = confident(found, "copy_strided")[0]
    duration = profile.launches.filter(pl.col("kernel_name") == "copy_strided")["duration_ns"][0]
    assert strided.estimated_saving_ns == pytest.approx(duration * 0.7728)  # its "Est. Speedup: 77.28%"
    assert strided.estimated_saving_ns <= duration * strided.details["excess_share"]  # memory-bound: weight 1
    [bank] = [f for f in confident(found, "transpose_conflict") if f.rule_id == BANK]
    duration = profile.launches.filter(pl.col("kernel_name") == "transpose_conflict")["duration_ns"][0]
    assert bank.estimated_saving_ns == pytest.approx(duration * 0.6041)
    # the transpose is L1-bound in the latency regime: the conflicts' fix outranks the gap to the roof
    assert confident(found, "transpose_conflict")[0].rule_id == BANK


@pytest.mark.parametrize("page", SUBSET_PAGES)
def test_without_a_duration_the_finding_stands_unranked_by_time(pages, page):
    strided = confident(diagnose(load(pages / page)), "copy_strided")[0]
    assert strided.estimated_saving_ns is None and strided.gain_model.startswith("not estimated")


def test_the_basic_set_has_no_such_rule_results_and_stays_not_checked(pages):
    for page in ("basic.ncu-rep", "basic/details.txt"):
        found = diagnose(load(pages / page))
        for kernel in ("copy_strided", "transpose_conflict", "copy_coalesced"):
            assert not rules(found, kernel) & {UNCOALESCED, BANK}
            assert {f"not-checked:{UNCOALESCED}", f"not-checked:{BANK}"} <= rules(found, kernel)


def test_an_info_only_result_backs_nothing(pages):
    profile = load(pages / "full/details.txt")
    info = with_rules(profile, profile.rules.with_columns(severity=pl.lit("info")), "rules-as-info")
    found = diagnose(info)
    for kernel in ("copy_strided", "transpose_conflict"):
        assert not rules(found, kernel) & {UNCOALESCED, BANK}
    assert f"not-checked:{UNCOALESCED}" in rules(found, "copy_strided")


def test_a_message_that_does_not_state_the_problem_backs_nothing(pages):
    profile = load(pages / "full/details.txt")
    reworded = with_rules(profile, profile.rules.with_columns(message=pl.lit("This kernel has no such problem.")),
                          "rules-reworded")
    found = diagnose(reworded)
    assert not rules(found, "copy_strided") & {UNCOALESCED, BANK}


@pytest.fixture(scope="module")
def strided(strided_ncu_rep):
    return load(strided_ncu_rep)


def test_with_the_counts_in_the_report_coachs_own_check_decides(strided):
    found = diagnose(strided)
    mine = [f for f in found if f.rule_id == UNCOALESCED]
    assert mine and all(f.launch_id == 0 and f.details["sectors_from"] == "L1" and FROM_NCU_RULE not in f.details
                        for f in mine)


def test_without_the_counts_the_recorded_warning_finds_the_strided_copy_only(strided):
    found = diagnose(without_metrics(strided, patterns=[COUNTS], label="synthetic-variant-without-counts"))
    [f] = [f for f in found if f.rule_id == UNCOALESCED]
    assert f.launch_id == 0 and f.details[FROM_NCU_RULE] == "UncoalescedGlobalAccess"
    assert f"not-checked:{UNCOALESCED}" in {g.rule_id for g in found if g.launch_id == 1}


def test_without_the_counts_the_tables_set_finds_the_transpose_from_its_rule(data_dir):
    """memory_patterns' tables set without its counts: the transpose's SharedMemoryConflicts backs the
    bank conflicts; the strided copy's only warning of its kind is MemoryCacheAccessPattern, not taken."""
    tables = load(data_dir / "wild_ncu" / "memory_patterns.tables.ncu-rep")
    found = diagnose(without_metrics(tables, patterns=[COUNTS], label="synthetic-variant-without-counts"))
    assert {(f.scope, f.rule_id, f.details.get(FROM_NCU_RULE)) for f in found if f.rule_id in (UNCOALESCED, BANK)} == {
        ("transpose_conflict", BANK, "SharedMemoryConflicts")}
    assert f"not-checked:{UNCOALESCED}" in rules(found, "copy_strided")


TRACES = Path(__file__).resolve().parent.parent / "traces" / "h200"


def test_a_small_store_is_not_taken_for_an_uncoalesced_one():
    """scenario-05 stores one 4-byte sum per warp: MemoryCacheAccessPattern warns "only 4.0 of the 32 bytes"
    used; coach's counts give one sector per store request. Without them, that warning backs nothing."""
    profile = load(TRACES / "scenario-05" / "slow" / "report.ncu-rep.xz")
    assert "MemoryCacheAccessPattern" in profile.rules["rule_id"].to_list()
    found = diagnose(without_metrics(profile, patterns=[COUNTS], label="synthetic-variant-without-counts"))
    assert UNCOALESCED not in {f.rule_id for f in found}
    # its shared loads and stores conflict, as coach's counts also find (67%): both results, added
    [bank] = [f for f in found if f.rule_id == BANK]
    assert bank.details["excess_share"] == pytest.approx((41_330_287 + 613_233) / (58_107_503 + 4_807_537))
    [own] = [f for f in diagnose(profile) if f.rule_id == BANK]
    assert own.details["conflict_fraction"] == pytest.approx(bank.details["excess_share"], abs=0.01)


def test_shared_atomics_excess_wavefronts_are_not_taken_for_bank_conflicts():
    """scenario-08/fixed's shared-atomic histogram: UncoalescedSharedAccess warns of 50% excess wavefronts,
    its loads and stores have 7 conflicts. With or without the counts, no bank-conflict finding."""
    profile = load(TRACES / "scenario-08" / "fixed" / "report.ncu-rep.xz")
    for variant in (profile, without_metrics(profile, patterns=[COUNTS], label="synthetic-variant-without-counts")):
        assert BANK not in {f.rule_id for f in diagnose(variant)}


def test_a_recorded_disagreement_is_said_on_the_top_finding():
    """scenario-08/slow's global-atomic histogram: UncoalescedGlobalAccess counts 33% excess sectors (its
    scattered atomics), coach's sector counts find the loads and stores coalesced. The counts decide; the
    top finding (the atomics) says where Nsight Compute reads it otherwise."""
    found = diagnose(load(TRACES / "scenario-08" / "slow" / "report.ncu-rep.xz"))
    assert UNCOALESCED not in {f.rule_id for f in found}
    top = next(f for f in found if not is_not_checked(f))
    assert ("Nsight Compute's rule UncoalescedGlobalAccess reports uncoalesced global access (33% of the global "
            "sectors are excess") in top.differs_from_ncu


def test_where_the_counts_find_nothing_a_warning_of_the_kind_is_a_disagreement_said(strided):
    """The strided copy's UncoalescedGlobalAccess warning put on its coalesced twin (synthetic): the twin's
    sector counts (4.0 per request) decide, and its top finding says Nsight Compute reads it otherwise."""
    warning = strided.rules.filter((pl.col("launch_id") == 0) & (pl.col("rule_id") == "UncoalescedGlobalAccess")
                                   & (pl.col("severity") == "warning"))
    moved = with_rules(strided, pl.concat([strided.rules, warning.with_columns(launch_id=pl.lit(1, pl.Int64))]),
                       "warning-on-the-coalesced-twin")
    found = diagnose(moved)
    twin = [f for f in found if f.launch_id == 1 and not is_not_checked(f)]
    assert not [f for f in twin if f.rule_id == UNCOALESCED]
    assert "UncoalescedGlobalAccess reports uncoalesced global access" in twin[0].differs_from_ncu
    assert "the counters decide here" in twin[0].differs_from_ncu
    assert [f.rule_id for f in diagnose(strided) if f.launch_id == 1] == [f.rule_id for f in found if f.launch_id == 1]


# --------------------------------------------------------------------------------------------
# Warp stalls: the details page prints the cycles between issues, not the stall reasons
# --------------------------------------------------------------------------------------------

STALLS = r"^smsp__average_warps_issue_stalled_|^smsp__average_warp_latency_issue_stalled_"


@pytest.mark.parametrize("page", FULL_PAGES)
def test_the_coalesced_copys_stall_reason_comes_from_cpistall(pages, page):
    found = diagnose(load(pages / page))
    [stalls] = [f for f in confident(found, "copy_coalesced") if f.rule_id == "warp-stalls"]
    assert stalls.details[FROM_NCU_RULE] == "CPIStall" and "long scoreboard" in stalls.title
    assert stalls.details["excess_share"] == pytest.approx(57.9 / 69.8)  # "57.9 cycles ... of 69.8 cycles"
    root = next(f for f in found if f.scope == "copy_coalesced" and f.rule_id == "speed-of-light")
    assert stalls.estimated_saving_ns <= root.estimated_saving_ns  # a latency cause: at most the gap
    # the strided copy's CPIStall warns too, but it runs at its roof: the root leaves the latency rules out
    assert "warp-stalls" not in {f.rule_id.removeprefix("not-checked:") for f in by_kernel(found, "copy_strided")}


def test_with_the_stall_reasons_in_the_report_they_decide_and_without_cpistall_names_the_same(strided):
    [own] = [f for f in diagnose(strided) if f.rule_id == "warp-stalls"]
    assert FROM_NCU_RULE not in own.details and own.details["stall"] == "long scoreboard"
    variant = without_metrics(strided, patterns=[STALLS], label="synthetic-variant-without-stalls")
    [backed] = [f for f in diagnose(variant) if f.rule_id == "warp-stalls"]
    assert backed.launch_id == own.launch_id and backed.details[FROM_NCU_RULE] == "CPIStall"
    assert "long scoreboard" in backed.title
    assert backed.details["excess_share"] == pytest.approx(own.details["share"], abs=0.01)


@pytest.mark.parametrize("page", FULL_PAGES)
def test_coach_diagnose_prints_the_same_top_findings_from_the_pasted_page(pages, page):
    """Through the CLI as the README runs it: the first finding of each kernel in ``coach diagnose --json``
    is the one diagnose() leads with, and says which Nsight Compute rule it rests on."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "coach", "diagnose", str(pages / page), "--json"],
                          capture_output=True, text=True, check=True)
    top = {k["kernel"]: k["findings"][0] for k in json.loads(done.stdout)["kernels"] if k.get("kernel")}
    assert (top["copy_strided"]["rule_id"], top["copy_strided"]["ncu_rule"]) == (UNCOALESCED, "UncoalescedGlobalAccess")
    assert (top["transpose_conflict"]["rule_id"], top["transpose_conflict"]["ncu_rule"]) == (BANK, "SharedMemoryConflicts")
    assert top["copy_coalesced"]["rule_id"] not in (UNCOALESCED, BANK)
    found = diagnose(load(pages / page))
    for name, first in top.items():
        assert first["rule_id"] == confident(found, name)[0].rule_id, name
