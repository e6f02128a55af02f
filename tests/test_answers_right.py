"""Every answer the coach gives is right, on the shipped recordings (read at test time: re-recording
moves the numbers, these tests follow).

- The exercise's "what speed-up do you expect?" key is the band that holds the recorded speed-up;
  the planted fix's gain model lands in that band, or the explanation says why the simple model
  misses.
- No figure exceeds a ceiling labelled measured (ladder rungs and peers, scenario variants, Nsight
  Compute's DRAM rates), and the best-rates file those ceilings come from is current.
- A metric missing from a report is "not in report", never 0.
- Numbers the named contradictions were about: the tail's waves, scenario 07's floor in `coach run`
  and `coach explain`, `coach diff --talk` on a compute-bound kernel, scenario 12's per-token result.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from test_capture_support import flat, run_cli

from coach import best_rates, ladders, recorded_rates, recordings, scenarios
from coach.analyze import gain
from coach.analyze.diagnose import diagnose
from coach.analyze.diff import diff, fmt_value
from coach.analyze.hardware import ceilings, get
from coach.analyze.kernel_metrics import with_derived
from coach.analyze.kernel_summary import summarize_kernels
from coach.analyze.quantities import NOT_IN_REPORT, Waves, dram_rate, fmt_share, fmt_waves
from coach.analyze.talking_points import explain, for_diff
from coach.exercises.player import GAIN_BUCKETS, _gain_note, build, predicted_speedup
from coach.ingest import load
from coach.paths import traces_dir

DATA = Path(__file__).parent / "data"
H200_DETAILS_CSV = DATA / "ncu_strided_copy" / "nvidia" / "details.csv"
RECORDED = [s for s in scenarios.all_scenarios() if recordings.recorded_gpus(s.id)]
SPEEDUP_SCENARIOS = [s for s in RECORDED if s.bottleneck.value != "measurement"]


def _band(x: float) -> int:
    return next(i for i, (upper, _) in enumerate(GAIN_BUCKETS) if x < upper)


# --------------------------------------------------------------------------------------------
# The gain question
# --------------------------------------------------------------------------------------------


def test_bands_are_one_table():
    assert gain.BANDS == GAIN_BUCKETS


@pytest.mark.parametrize("scenario", SPEEDUP_SCENARIOS, ids=lambda s: s.id)
def test_gain_key_is_the_band_of_the_recording(scenario):
    rec = recordings.open_recording(scenario)
    measured = rec.results["speedup"]
    ex = build(scenario, others=[])
    point = ex.points[3]
    assert point.key == "gain"
    lower = GAIN_BUCKETS[point.correct - 1][0] if point.correct else 0.0
    assert lower <= measured < GAIN_BUCKETS[point.correct][0], (scenario.id, measured, point.choices[point.correct])
    assert f"The recording measured {measured:.2f}x" in point.explain
    assert point.expected_speedup == pytest.approx(measured)
    # the prediction is the planted fix's gain model on the recorded profiles
    predicted, how = predicted_speedup(scenario)
    assert how.startswith("the fix's gain model (")
    if _band(predicted) == point.correct:
        assert "The model lands in the same band." in point.explain
    else:  # the simple model misses: the exercise says why, from the scenario's lesson or the profile
        assert "Why the simple model misses:" in point.explain, point.explain
        said = point.explain.split("Why the simple model misses:")[1]
        assert len(said.split()) >= 12


@pytest.mark.parametrize("scenario", SPEEDUP_SCENARIOS, ids=lambda s: s.id)
def test_diff_talk_predicts_what_the_exercise_predicts(scenario):
    """One gain model for both: `coach diff --talk` on the recording gives the exercise's number."""
    rec = recordings.open_recording(scenario)
    before, after = rec.profile("slow", scenario.tool), rec.profile("fixed", scenario.tool)
    params = {k: scenario.model.value(v) for k, v in scenario.fix.gain_params.items()}
    points = for_diff(diff(before, after), before, after, params)
    predicted, how = predicted_speedup(scenario)
    assert f"{predicted:.3g}x" in points.estimate and f"'{scenario.fix.id}'" in points.estimate


def test_scenario_05_first_principles_answer_is_not_called_wrong():
    s05 = scenarios.find("05")
    ex = build(s05, others=[])
    point = ex.points[3]
    assert "the model predicts about 2x" not in point.explain.lower()
    assert "12 -> 64 warps per SM, 5.33x" in point.explain  # 64/12 warps: Little's law
    note = _gain_note("64/12 warps, about 5.3x", point.expected_speedup)
    assert note.startswith("your 5.3x agrees with the measured")


def test_scenario_20_asks_what_the_kernel_takes():
    s20 = scenarios.find("20")
    values = recordings.open_recording(s20).values()
    point = build(s20, others=[]).points[3]
    assert point.key == "gain" and "How long does one call of the kernel take" in point.prompt
    assert f"{values['slow_ms']:.4g} ms" in point.prompt and point.expected_speedup is None
    ratio = values["slow_ms"] / values["fixed_ms"]
    upper = [2.0, 10.0, 100.0, float("inf")]
    assert (upper[point.correct - 1] if point.correct else 1.0) <= ratio < upper[point.correct]
    assert f"{values['fixed_ms']:.4g} ms per call" in point.explain


# --------------------------------------------------------------------------------------------
# Ceilings labelled measured
# --------------------------------------------------------------------------------------------


def test_best_rates_file_is_current():
    """traces/h200/best-rates.json is what the traces give, and holds no rate above the datasheet."""
    kept = json.loads(best_rates.path_for("h200").read_text())
    fresh = recorded_rates.collect("h200")
    assert kept["rates"].keys() == fresh["rates"].keys()
    for name, entry in fresh["rates"].items():
        assert kept["rates"][name]["value"] == pytest.approx(entry["value"], rel=1e-9), name
        assert kept["rates"][name]["where"] == entry["where"]
    assert fresh["rejected"] == [] and kept["rejected"] == []
    assert kept["not_used"] == fresh["not_used"]


def test_no_ladder_rate_exceeds_its_measured_ceiling():
    for name in ladders.ladder_names():
        folder = traces_dir() / "h200" / "ladders" / name
        for path in sorted(folder.glob("results*.json")):
            res = ladders.load_results(path)
            assert res.ceiling_value >= (res.ceiling_calibrated or 0.0)
            for m in (*res.rungs, *res.peers):
                rate = m.rate(res.ceiling_unit) if m.status == "ok" else None
                if rate:
                    assert rate <= res.ceiling_value * (1 + 1e-9), (path, m.key, rate, res.ceiling_value)


@pytest.mark.parametrize("scenario", RECORDED, ids=lambda s: s.id)
def test_no_scenario_variant_beats_its_floor(scenario):
    values = recordings.open_recording(scenario).values()
    for variant in ("slow", "fixed"):
        assert values[f"{variant}_pct_of_floor"] <= 100.0 + 1e-6, (scenario.id, variant)
        rate = values[f"{variant}_rate"]
        assert rate <= scenario.model.rate_ceiling * (1 + 1e-9)


def test_no_nsight_compute_dram_rate_exceeds_the_measured_dram_ceiling():
    """No kernel's DRAM rate exceeds the measured roof, whatever its read/write mix: the roof is the
    best DRAM rate recorded of any mix. One faster than both the copy and the read ceiling, whose
    split is unknown or neither, is listed in the best-rates file as not used for those."""
    roof = ceilings(get("h200"), True).bandwidth["dram"]
    assert roof.origin == "measured"
    every = recorded_rates.recorded("h200").filter(pl.col("where").str.starts_with("Nsight Compute")
                                                   & pl.col("measurement").str.starts_with("dram_"))
    used = every.filter(pl.col("why").is_null())
    assert used.height > 10
    assert every["value"].max() <= roof.value * (1 + 1e-9)
    rates = best_rates.read("h200")["rates"]
    both = max(rates["dram_copy_bandwidth_bytes_per_s"]["value"], rates["dram_read_bandwidth_bytes_per_s"]["value"])
    above = every.filter(pl.col("why").is_not_null() & (pl.col("value") > both))
    listed = {e["where"] for e in best_rates.read("h200")["not_used"]}
    assert above.height and set(above["where"]) <= listed


def test_dram_ceilings_are_labelled_by_source():
    """The H200's DRAM bandwidth has three values; each page names which it shows."""
    from coach.analyze.quantities import dram_roofs

    profile = load(traces_dir() / "h200" / "scenario-07" / "slow" / "ncu")
    roofs = dram_roofs(get("h200"), profile.devices.row(0, named=True))
    assert {r.source for r in roofs.values()} == {"measured", "datasheet", "Nsight Compute's peak"}
    assert roofs["datasheet"].value == 4.8e12
    assert roofs["ncu"].value == pytest.approx(profile.devices["memory_bandwidth_bytes_per_s"][0])
    # the scenarios' floors and the copy ladders use the same measured copy ceiling; the roof (the
    # hardware page's) is at least it and the read ceiling: the best DRAM rate recorded of any mix
    copy = scenarios.find("01").model.bytes_per_s
    any_mix = best_rates.read("h200")["rates"]["dram_bandwidth_bytes_per_s"]["value"]
    assert roofs["measured"].value == pytest.approx(max(copy, scenarios.find("08").model.bytes_per_s, any_mix))
    softmax = ladders.load_results(traces_dir() / "h200" / "ladders" / "softmax" / "results.json")
    assert softmax.ceiling_name == "dram_copy_bandwidth_bytes_per_s" and softmax.ceiling_value == copy
    finding = next(f for f in diagnose(profile) if f.rule_id == "speed-of-light")
    assert "of Nsight Compute's peak 4.81 TB/s" in finding.message


# --------------------------------------------------------------------------------------------
# Missing is "not in report", never 0
# --------------------------------------------------------------------------------------------


def _without_dram_bytes(profile):
    cols = ("dram_bytes", "dram_read_bytes", "dram_write_bytes")
    return replace(profile, launches=profile.launches.with_columns(pl.lit(None, pl.Float64).alias(c) for c in cols))


def test_load_without_dram_bytes_uses_the_reports_throughput_not_zero(capsys, monkeypatch):
    profile = _without_dram_bytes(load(traces_dir() / "h200" / "scenario-01" / "slow" / "ncu"))
    k = summarize_kernels(profile)["kernels"].row(0, named=True)
    assert k["dram_bytes"] is None and k["dram_rate_source"] == "throughput %"
    pct, peak = profile.launches["dram_throughput_pct"][0], profile.devices["memory_bandwidth_bytes_per_s"][0]
    assert k["dram_bytes_per_s"] == pytest.approx(pct / 100 * peak)
    assert k["dram_pct_of_peak"] == pytest.approx(pct)


def test_load_of_a_details_csv_says_not_in_report(capsys, monkeypatch):
    """NVIDIA's details page of the strided copy: DRAM throughput 80.39% and the Memory Workload
    Analysis section's Memory Throughput (DRAM bytes per second) but no FLOP count and no peak."""
    monkeypatch.setenv("COLUMNS", "160")
    code, out, err = run_cli(["load", str(H200_DETAILS_CSV)], capsys)
    assert code == 0, err
    assert "0 B/s" not in out and "0.0 GB/s" not in out and "0 FLOP/s" not in out
    row = next(line for line in out.splitlines() if "copy_strided" in line)
    assert "not in report" in row and "80.4%" in row and "3.87 TB/s" in row
    code, out, err = run_cli(["load", str(H200_DETAILS_CSV), "--json"], capsys)
    kernels = json.loads(out)["summary"]["kernels"]
    assert all(k["flop_per_s"] is None for k in kernels)
    assert [round(k["dram_bytes_per_s"] / 1e12, 2) for k in kernels] == [3.87, 2.61]
    assert [round(k["dram_pct_of_peak"], 2) for k in kernels] == [80.39, 54.32]


def test_missing_values_read_not_in_report():
    assert fmt_value(None, "byte/s") == fmt_value(None, "ns") == NOT_IN_REPORT
    profile = _without_dram_bytes(load(traces_dir() / "h200" / "scenario-01" / "slow" / "ncu"))
    for f in diagnose(profile):
        assert not re.search(r"\b0(\.0+)? ?[GMKT]?B/s\b", f.message), f.message
    wide = with_derived(profile.launches, profile.devices)
    assert wide.select(dram_rate()).item() == pytest.approx(
        profile.launches["dram_throughput_pct"][0] / 100 * profile.devices["memory_bandwidth_bytes_per_s"][0])


def test_dashboard_tables_show_not_in_report():
    from coach.app.components import data_table

    table = data_table("t", pl.DataFrame({"x": [None, 1.5]}, schema={"x": pl.Float64}), {"x": "x"})
    assert table.columns[0]["format"]["nully"] == NOT_IN_REPORT


# --------------------------------------------------------------------------------------------
# The named contradictions
# --------------------------------------------------------------------------------------------


def test_tail_effect_says_how_full_the_last_wave_is():
    profile = load(traces_dir() / "h200" / "scenario-07" / "slow" / "ncu")
    launch = profile.launches.row(0, named=True)
    w = Waves(launch["waves_per_sm"], launch["grid_size"])
    tail = next(f for f in diagnose(profile) if f.rule_id == "tail-effect")
    per_wave = launch["grid_size"] / launch["waves_per_sm"]
    last = launch["grid_size"] - per_wave * int(launch["waves_per_sm"])
    assert round(last) == w.blocks_in_last
    assert f"{fmt_waves(w.waves)} waves" in tail.title and fmt_waves(w.waves) not in ("1.00", "1")
    assert f"a last wave {fmt_share(last / per_wave)} full" in tail.message
    assert f"{fmt_share(1 - last / per_wave)} of the SMs' block slots idle" in tail.message
    assert "0% full" not in tail.message and "100% of the SMs" not in tail.message
    text = flat(" ".join(explain(profile, diagnose(profile))[0].numbers))
    assert f"waves_per_sm = {fmt_waves(w.waves)} waves" in text


def test_scenario_07_floor_is_the_special_function_floor_in_run_and_explain(capsys, monkeypatch):
    s07 = scenarios.find("07")
    values = recordings.open_recording(s07).values()
    profile = load(traces_dir() / "h200" / "scenario-07" / "slow" / "ncu")
    estimate = explain(profile, diagnose(profile))[0].estimate
    assert "special-function (XU) pipe" in estimate
    shown = float(re.search(r"launch\): ([\d.]+) ms", estimate).group(1))
    assert shown == pytest.approx(values["floor_ms"], rel=0.01)  # the counters and the model agree
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(["run", "07", "--no-interactive"], capsys)
    assert code == 0, err
    assert f"{values['floor_ms']:.4g} ms" in out and "sines/s" in out and "useful GB/s" not in out


def test_diff_talk_on_a_compute_bound_kernel_uses_its_gain_model(capsys, monkeypatch):
    rec = recordings.open_recording(scenarios.find("07"))
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(["diff", str(rec.folder / "slow" / "ncu"), str(rec.folder / "fixed" / "ncu"), "--talk"],
                             capsys)
    assert code == 0, err
    estimate = flat(out.split("Estimate:")[1].split("Fix:")[0])
    assert "waves model" in estimate and "DRAM bytes" not in estimate and "0.90x" not in estimate


def test_scenario_12_result_is_per_token_against_each_variants_floor():
    s12 = scenarios.find("12")
    v = recordings.open_recording(s12).values()
    m = s12.model
    assert v["fixed_floor_ms"] < v["slow_floor_ms"]  # a batch shares one read of the weights
    assert v["fixed_pct_of_floor"] <= 100 and v["slow_pct_of_floor"] <= 100
    assert v["fixed_rate"] == pytest.approx(m.useful("fixed") / (v["fixed_ms"] * 1e-3))
    assert v["fixed_rate"] < m.bytes_per_s  # not hundreds of TB/s


def test_scenario_07_rate_fits_its_bound():
    s07 = scenarios.find("07")
    v = recordings.open_recording(s07).values()
    assert s07.model.rate_kind == "flops" and s07.model.rate_label == "sines/s"
    assert v["slow_rate"] == pytest.approx(s07.model.value(s07.model.flops) / (v["slow_ms"] * 1e-3))


def test_a_small_measured_dram_rate_is_not_printed_as_zero():
    """Scenario 07's compute-bound kernel moves a few MB/s: the speed-of-light message says so, as
    its evidence does, instead of "0.0 GB/s"."""
    profile = load(traces_dir() / "h200" / "scenario-07" / "slow" / "ncu")
    sol = next(f for f in diagnose(profile) if f.rule_id.startswith("compute") or f.rule_id == "speed-of-light")
    rate = next(e.value for e in sol.evidence if e.metric == "dram_bandwidth_bytes_per_s")
    assert 0 < rate < 1e8
    assert "0.0 GB/s" not in sol.message and f"{rate / 1e6:.2f} MB/s" in sol.message


def test_dashboard_finding_badge_says_what_the_gain_is():
    """A finding's estimated gain is the share of the time its fix could save: `coach diagnose`
    prints "saves ~X (82%)"; the dashboard's card says the same, not "82% faster" (that is 5.6x)."""
    from coach.app.components import finding_card

    profile = load(traces_dir() / "h200" / "scenario-01" / "slow" / "ncu")
    top = diagnose(profile)[0]
    text = str(finding_card(top, top=True))
    pct = f"{top.estimated_gain_pct:.0f}%"
    assert f"saves up to {pct} of its time" in text
    assert "faster" not in text.split("Next")[0]
