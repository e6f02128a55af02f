"""Every scenario against its recording on the H200 (``traces/h200/scenario-NN/``): the fixed version
is faster by at least the scenario's minimum, every evidence metric sits in its predicted range and
moved the way the scenario says, and the diagnosis of the slow version's profile puts the planted
problem first, with evidence. A scenario not recorded yet is skipped, and the skip says how to record it.
"""

from __future__ import annotations

import pytest

from coach import recordings, scenarios
from coach.analyze.diagnose import diagnose, is_not_checked

GPU = "h200"
#: Scenarios whose careful measurement must agree with the profiler: the evidence entry holding the
#: kernel's mean duration in the fixed profile (us). CUDA events around one launch add the launch
#: latency (a few microseconds) to a kernel of a few hundred: 10% covers it.
AGREES_WITH_PROFILER = {"scenario-20": "kernel_us"}
AGREEMENT = 0.10


def recording_of(scenario):
    if GPU not in recordings.recorded_gpus(scenario.id):
        pytest.skip(f"{scenario.id} has no {GPU} recording in traces/ yet: record it with "
                    f"scripts/record-scenarios.sh DEBS_DIR RAW {scenario.id}, then coach record --import RAW")
    return recordings.open_recording(scenario, gpu=GPU)


@pytest.mark.parametrize("scenario", scenarios.all_scenarios(), ids=lambda s: s.id)
def test_fixed_is_faster_by_the_recorded_ratio(scenario):
    results = recording_of(scenario).results
    slow, fixed = (results["variants"][v]["median_ms"] for v in ("slow", "fixed"))
    assert results["speedup"] == pytest.approx(slow / fixed)
    assert results["speedup"] >= scenario.min_speedup, f"{scenario.id}: {results['speedup']:.2f}x"
    assert results["variants"]["slow"]["unit"] == results["variants"]["fixed"]["unit"]


@pytest.mark.parametrize("scenario", scenarios.all_scenarios(), ids=lambda s: s.id)
def test_evidence_moved_as_predicted(scenario):
    evidence = recording_of(scenario).results["evidence"]
    assert [e["name"] for e in evidence] == [e.name for e in scenario.evidence]
    for e in evidence:
        assert e["slow"] is not None and e["fixed"] is not None, e["name"]
        assert e["slow_in_range"] in (True, None), f"{e['name']}: {e['slow']} outside {e['slow_range']}"
        assert e["moved_as_expected"] is True, f"{e['name']}: {e['slow']} -> {e['fixed']} ({e['direction']})"


@pytest.mark.parametrize("scenario", scenarios.all_scenarios(), ids=lambda s: s.id)
def test_diagnosis_puts_the_planted_problem_first(scenario):
    recording = recording_of(scenario)
    profile = recording.profile("slow", scenario.tool)
    assert profile is not None, f"{scenario.id}: no {scenario.tool} profile of the slow version"
    found = [f for f in diagnose(profile) if not is_not_checked(f)]
    assert found, f"{scenario.id}: no findings"
    top = found[0]
    assert top.rule_id == scenario.first_rule, f"{scenario.id}: first is {top.rule_id}: {top.title}"
    assert top.evidence and all(e.value is not None for e in top.evidence)
    assert top.message and top.next_step


@pytest.mark.parametrize("sid", sorted(AGREES_WITH_PROFILER))
def test_careful_measurement_agrees_with_the_profiler(sid):
    results = recording_of(scenarios.find(sid)).results
    kernel_us = next(e for e in results["evidence"] if e["name"] == AGREES_WITH_PROFILER[sid])["fixed"]
    assert results["variants"]["fixed"]["median_ms"] * 1e3 == pytest.approx(kernel_us, rel=AGREEMENT)


def gemm_self_overlap_ms(timeline) -> tuple[float, float]:
    """(sum of the matrix-product kernels' durations, the part of it during which another product
    was already running), in ms, from a timeline's kernel table."""
    import polars as pl

    k = timeline.kernels.filter(pl.col("name").str.contains("gemm|nvjet|xmma|cutlass|Kernel2")).sort("start_ns")
    running = pl.col("end_ns").cum_max().shift(1).fill_null(pl.col("start_ns"))  # the latest end before each start
    overlap = (pl.min_horizontal(pl.col("end_ns"), running) - pl.col("start_ns")).clip(lower_bound=0)
    row = k.select(pl.col("dur_ns").sum().alias("total"), overlap.sum().alias("shared"))
    return row["total"][0] / 1e6, row["shared"][0] / 1e6


def test_scenario_16_products_overlap_each_other_on_three_streams():
    """The narrative's account of the fixed version's longer product time: on three streams the
    products of neighbouring chunks overlap each other (sharing the SMs), by about the excess over
    the slow version's sum, and on one stream never."""
    rec = recording_of(scenarios.find("16"))
    slow_total, slow_shared = gemm_self_overlap_ms(rec.profile("slow", "nsys"))
    fixed_total, fixed_shared = gemm_self_overlap_ms(rec.profile("fixed", "nsys"))
    gemm = {e["name"]: e for e in rec.results["evidence"]}["gemm_ms"]
    assert (slow_total, fixed_total) == (pytest.approx(gemm["slow"]), pytest.approx(gemm["fixed"]))
    assert slow_shared == 0
    assert fixed_shared == pytest.approx(fixed_total - slow_total, rel=0.3)
