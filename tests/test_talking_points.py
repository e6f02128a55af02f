"""Talking points ("say it in two minutes") for findings and diffs, from the recorded fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_capture_support import run_cli

from coach.analyze.diagnose import diagnose
from coach.analyze.diff import diff, fixes, only_kernels
from coach.analyze.findings import Bottleneck
from coach.analyze.hardware import ceilings, get
from coach.analyze.kernel_rules._common import fmt_rate, fmt_time
from coach.analyze.talking_points import FOLLOW_UPS, NUMBERS, _questions, explain, for_diff, questions
from coach.ingest import load

DATA = Path(__file__).parent / "data"
NCU = DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"
NSYS = DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"


@pytest.fixture(scope="module")
def report():
    return load(NCU)


def test_finding_points_for_the_strided_copy(report):
    points = explain(report, diagnose(report))
    assert [p.subject for p in points] == ["copy_strided", "copy_coalesced"]
    p = points[0]
    assert p.headline == "copy_strided: Uncoalesced global loads: 32 sectors per request, ideal 4 (memory-access-pattern)."
    assert len(p.numbers) == NUMBERS and p.numbers[0].startswith("load_sectors_per_request = 32 sector/request")
    # the floor: 2^26 floats read and written (the useful bytes, 536.9 MB) at the H200's measured DRAM
    # ceiling (the calibration raised to the best rate recorded on the H200: coach.best_rates)
    dram = ceilings(get("h200"), True).bandwidth["dram"]
    assert dram.origin == "measured" and dram.value >= 4.19e12
    floor_ns = 2 ** 26 * 4 * 2 / dram.value * 1e9
    assert "536.87 MB" in p.estimate and f"at {fmt_rate(dram.value)}, measured: {fmt_time(floor_ns)}" in p.estimate
    pct = 100 * floor_ns / 1179872.0
    assert f"It takes 1.18 ms, {pct:.0f}% of the floor's speed ({1179872.0 / floor_ns:.1f}x the floor)" in p.estimate
    assert "Nsight Compute's UncoalescedGlobalAccess estimates 77%" in p.fix
    assert len(p.follow_ups) <= FOLLOW_UPS
    assert f"The kernel runs at {pct:.0f}% of its floor's speed: where does the rest of the time go?" in p.follow_ups
    assert questions("category", "memory-access-pattern")[0] in p.follow_ups


def test_timeline_points(report):
    tl = load(NSYS)
    p = explain(tl, diagnose(tl), top=1)[0]
    assert p.subject == "memcpy" and "pageable" in p.headline
    assert p.numbers[0] == "pageable_copies = 3 copies (healthy: 0: every host buffer in a transfer is pinned)"
    assert p.follow_ups == questions("category", "pageable-memcpy")


def test_diff_points(report):
    d = diff(only_kernels(report, "copy_strided"), only_kernels(report, "copy_coalesced"), fix="coalesce")
    p = for_diff(d, only_kernels(report, "copy_strided"), only_kernels(report, "copy_coalesced"))
    assert p.headline.startswith("copy_strided -> copy_coalesced: 1.18 ms -> 198.1 us, 5.96x faster")
    assert p.numbers == ("global load sectors per request: 32 sector/request -> 4 sector/request",
                         "excess load sectors: 58.72M sectors -> 0 sectors",
                         "DRAM bytes read: 4.29 GB -> 268.47 MB")
    # the coalesce fix's gain model (bytes): DRAM bytes 4.564 GB -> 517.7 MB, 8.82x fewer; the kernel got 5.96x faster
    assert "bytes model" in p.estimate and "8.82x fewer; measured 5.96x between these profiles" in p.estimate
    # without the profiles, no kernel model: a bytes ratio alone says nothing of a kernel not bandwidth-bound
    assert "no gain model applies" in for_diff(d).estimate
    assert p.follow_ups[0].startswith("Why is the speed-up below what the model predicts?")
    assert "matches the fix" in p.fix and "saved 83%" in p.fix


def test_question_tables_cover_the_classes_and_fixes():
    table = _questions()
    assert {str(b) for b in Bottleneck} - {str(Bottleneck.OTHER)} <= set(table["category"])
    assert set(table["fix"]) <= set(fixes())
    assert all(q.endswith("?") or ")" in q for group in table.values() for qs in group.values() for q in qs)


def test_cli_explain_json(capsys):
    code, out, _ = run_cli(["explain", str(NCU), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert [d["subject"] for d in data] == ["copy_strided", "copy_coalesced"]
    code, out, _ = run_cli(["explain", str(NCU)], capsys)
    assert code == 0 and "Be ready for:" in out
