"""Kernel diagnosis on reports recorded on the H200.

Each recorded case is one line of ``RECORDED``: the report, the kernel, and the rule and class its
top finding must have. Add a line per scenario as its traces are recorded.
"""

from __future__ import annotations

import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.analyze.findings import Bottleneck
from coach.ingest import load

STRIDED = "ncu_strided_copy/copy_strided_vs_coalesced.ncu-rep"

RECORDED = [
    # report (under tests/data), kernel, top rule, top class
    (STRIDED, "copy_strided", "uncoalesced-global-access", Bottleneck.MEMORY_ACCESS),
    (STRIDED, "copy_coalesced", "too-few-bytes-in-flight", Bottleneck.LATENCY),
]

_cache: dict[str, list] = {}


def findings_of(data_dir, report: str, kernel: str) -> list:
    if report not in _cache:
        _cache[report] = diagnose(load(data_dir / report))
    return [f for f in _cache[report] if f.scope == kernel and not is_not_checked(f)]


@pytest.mark.parametrize(("report", "kernel", "rule", "category"), RECORDED, ids=[r[1] for r in RECORDED])
def test_top_finding(data_dir, report, kernel, rule, category):
    top = findings_of(data_dir, report, kernel)[0]
    assert (top.rule_id, top.category) == (rule, category)


@pytest.mark.parametrize(("report", "kernel"), [(r[0], r[1]) for r in RECORDED], ids=[r[1] for r in RECORDED])
def test_every_finding_is_complete_and_ranked(data_dir, report, kernel):
    found = findings_of(data_dir, report, kernel)
    assert found
    for f in found:
        assert f.evidence and f.next_step and f.gain_model and f.message
        assert all(e.metric and e.value is not None for e in f.evidence)
        assert f.estimated_saving_ns is not None and 0 <= f.estimated_gain_pct <= 100
    savings = [f.estimated_saving_ns for f in found]
    assert savings == sorted(savings, reverse=True)


def test_full_report_leaves_nothing_unchecked(data_dir):
    findings_of(data_dir, STRIDED, "copy_strided")
    assert not [f for f in _cache[STRIDED] if is_not_checked(f)]


def test_strided_evidence(data_dir):
    top = findings_of(data_dir, STRIDED, "copy_strided")[0]
    ev = {e.metric: e for e in top.evidence}
    # 32 sectors per request where 4-byte loads by a warp need 4
    assert ev["load_sectors_per_request"].value == 32.0
    assert top.details["ideal_sectors_per_request"] == 4.0
    assert ev["global_load_bytes_per_sector"].value == 4.0
    # useful bytes: 2^26 floats read; DRAM delivered 4.29 GB, 16x that
    assert top.details["useful_bytes"] == 2**26 * 4
    assert ev["dram_read_bytes"].value == 4_294_982_144.0
    # Nsight Compute's source-level count agrees: 75.5M L2 sectors for the global accesses, 16.8M ideal
    assert (ev["l2_global_sectors"].value, ev["l2_global_sectors"].threshold) == (75_497_472.0, 16_777_216.0)
    assert top.details["dram_read_over_useful"] == pytest.approx(16.0, abs=0.001)
    # saving: all of the 1.18 ms (DRAM-bound) x 58.7M excess of 75.5M global sectors
    assert top.estimated_saving_ns == pytest.approx(1_179_872 * 58_720_256 / 75_497_472)
    assert top.estimated_gain_pct == pytest.approx(77.78, abs=0.01)
    # Nsight Compute's own rule agrees (77.4% from its L2-weighted model) but does not lead with it
    assert top.ncu_rule == "UncoalescedGlobalAccess"
    assert top.ncu_speedup_pct == pytest.approx(77.39, abs=0.01)
    assert "IssueSlotUtilization" in top.differs_from_ncu and "HighPipeUtilization" in top.differs_from_ncu


def test_strided_root_is_dram_at_its_roof(data_dir):
    root = next(f for f in findings_of(data_dir, STRIDED, "copy_strided") if f.rule_id == "speed-of-light")
    assert root.category == Bottleneck.DRAM and root.details["regime"] == "at-roof"
    # the gap to the roof (19.6% of 1.18 ms) is less than the coalescing fix saves: it ranks second
    assert root.estimated_saving_ns == pytest.approx(1_179_872 * (1 - 0.8039221447849803))
    assert [f.rule_id for f in findings_of(data_dir, STRIDED, "copy_strided")][:2] == [
        "uncoalesced-global-access", "speed-of-light"]


def test_coalesced_copy(data_dir):
    found = findings_of(data_dir, STRIDED, "copy_coalesced")
    assert "uncoalesced-global-access" not in {f.rule_id for f in found}
    root = next(f for f in found if f.rule_id == "speed-of-light")
    assert root.details["unit"] == "DRAM" and root.details["side"] == "memory"
    ev = {e.metric: e.value for e in root.evidence}
    # 518 MB in 198 us: 2.61 TB/s, 54% of the 4.81 TB/s peak: DRAM-bound by nature, latency-limited
    assert ev["dram_throughput_pct"] == pytest.approx(54.32, abs=0.01)
    assert ev["dram_bandwidth_bytes_per_s"] == pytest.approx(2.614e12, rel=1e-3)
    assert root.ncu_rule == "SOLBottleneck" and "latency issue" in root.differs_from_ncu
    # the cause of the gap, which leads below the 60% latency mark: one 4-byte load in flight per thread
    first = found[0]
    assert first.rule_id == "too-few-bytes-in-flight" and first.category == Bottleneck.LATENCY
    assert first.details["bytes_in_flight_per_thread"] == pytest.approx(3.19, abs=0.01)
    assert first.estimated_saving_ns == root.estimated_saving_ns
