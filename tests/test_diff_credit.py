"""`coach diff SLOW FIXED` without --fix: the planted fix of every scenario is credited first, from
the metric movements alone, on the scenario's own recordings (read at test time: a re-recording
moves the numbers, not the conclusion); and profiles from different GPUs are not comparable.

The credit uses no scenario id: the same rules run on any before/after pair (coach.analyze.diff.fixes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_capture_support import run_cli

from coach import recordings, scenarios
from coach.analyze.diff import diff, fixes, only_kernels, verdict
from coach.ingest import load

DATA = Path(__file__).parent / "data"
CROSS = DATA / "diff_cross_gpu"
H200_SERIAL = DATA / "kineto_timeline_cases" / "serial_copy.json.gz"
H200_PIPELINED = DATA / "kineto_timeline_cases" / "pipelined_copy.json.gz"
MI300X_PIPELINED = CROSS / "pipelined_copy_mi300x_synthetic.json.gz"
H200_NCU_CSV = DATA / "ncu_strided_copy" / "nvidia" / "details.csv"
B200_NCU_CSV = DATA / "ncu_superbench_b200" / "cublaslt_ncu.log"

RECORDED = [s for s in scenarios.all_scenarios() if recordings.recorded_gpus(s.id)]


def _pair(scenario):
    rec = recordings.open_recording(scenario)
    slow, fixed = rec.profile("slow", scenario.tool), rec.profile("fixed", scenario.tool)
    if slow is None or fixed is None:
        pytest.skip(f"{scenario.id} has no {scenario.tool} profile of both variants")
    return slow, fixed


def test_every_scenario_is_recorded_and_names_a_known_fix():
    assert len(RECORDED) == 20
    for s in scenarios.all_scenarios():
        assert s.fix.id in fixes(), s.id


@pytest.mark.parametrize("scenario", RECORDED, ids=lambda s: s.id)
def test_planted_fix_credited_first(scenario):
    slow, fixed = _pair(scenario)
    d = diff(slow, fixed)
    assert d.suggested, f"{scenario.id}: no fix credited ({verdict(d)[1]})"
    assert d.suggested[0] == scenario.fix.id, f"{scenario.id}: credited {d.suggested}, planted {scenario.fix.id}"
    assert d.credited == scenario.fix.id
    lines = verdict(d)
    assert any(f"the fix '{scenario.fix.id}'" in line for line in lines[:3]), lines
    # the credit names only movements that were measured (scenario 12's reports count no tensor FLOPs)
    credit = next(line for line in lines if f"the fix '{scenario.fix.id}'" in line)
    assert "not in report ->" not in credit and "-> not in report" not in credit, credit
    # the planted fix also matches when named
    assert diff(slow, fixed, fix=scenario.fix.id).fix_verdict == "matches"


def test_cli_credits_the_planted_fix_without_being_told(capsys):
    s = scenarios.find("18")
    rec = recordings.open_recording(s)
    code, stdout, err = run_cli(["diff", str(rec.folder / "slow" / "nsys"), str(rec.folder / "fixed" / "nsys"), "--json"],
                                capsys)
    assert code == 0, err
    out = json.loads(stdout)
    assert out["credited_fix"] == s.fix.id == "parallel-input"
    assert out["comparable"] is True


# --------------------------------------------------------------------------------------------
# Different GPUs
# --------------------------------------------------------------------------------------------


def test_same_gpu_control_pair_credits_a_fix():
    """The real H200 pair (serial copies, then pipelined) credits the overlap: so the cross-GPU test
    below, on the same events with the after side relabelled, fails for the GPU alone."""
    d = diff(load(H200_SERIAL), load(H200_PIPELINED))
    assert d.suggested and d.suggested[0] == "overlap-copies"
    assert not d.not_comparable


def test_cross_vendor_timeline_diff_leads_with_not_comparable():
    d = diff(load(H200_SERIAL), load(MI300X_PIPELINED))
    lines = verdict(d)
    assert lines[0].startswith("Not comparable:"), lines
    assert "NVIDIA H200 vs AMD Instinct MI300X" in lines[0]
    assert d.suggested == () and d.credited is None
    assert "faster" not in lines[1] and "slower" not in lines[1]
    named = diff(load(H200_SERIAL), load(MI300X_PIPELINED), fix="overlap-copies")
    assert named.fix_verdict == "not comparable"
    assert verdict(named)[0].startswith("Not comparable:")


def test_cross_gpu_kernel_diff_leads_with_not_comparable():
    """Two real ncu CSV exports: an H200 copy kernel and a Blackwell (cc 10.0) GEMM. Neither names
    its GPU; the compute capability tells them apart."""
    d = diff(only_kernels(load(H200_NCU_CSV), "copy_coalesced"), load(B200_NCU_CSV))
    lines = verdict(d)
    assert lines[0].startswith("Not comparable:") and "compute capability differs (9.0 vs 10.0)" in lines[0]
    assert d.suggested == ()
    assert "slower" not in lines[1]


def test_cli_cross_gpu(capsys, monkeypatch):
    code, stdout, err = run_cli(["diff", str(H200_SERIAL), str(MI300X_PIPELINED), "--json"], capsys)
    assert code == 0, err
    out = json.loads(stdout)
    assert out["comparable"] is False and out["credited_fix"] is None and out["suggested_fixes"] == []
    assert out["verdict"][0].startswith("Not comparable:")
    monkeypatch.setenv("COLUMNS", "200")
    code, stdout, err = run_cli(["diff", str(H200_SERIAL), str(MI300X_PIPELINED)], capsys)
    first = [line for line in stdout.splitlines() if line.startswith("- ")][0]
    assert first.startswith("- Not comparable:")
