"""Every number in every scenario's texts (narrative.md, and the symptom, question, hints, fix and
rubric of scenario.toml) traces to where it comes from: a placeholder filled from the recording, a
size of the model, a hardware constant of the recorded GPU, a constant listed with its reason, or a
derivation declared in the scenario's numbers.toml and evaluated here (coach/scenario_numbers.py).
A number typed in that matches only a measurement fails: it would go stale at the next recording.

The checker itself is tested on SYNTHETIC texts below (made up to exercise each rule).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from coach import recordings, scenario_numbers, scenarios
from coach.capture import harness
from coach.errors import InputError

SCENARIOS = scenarios.all_scenarios()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_every_number_in_the_texts_is_traced(scenario):
    if not recordings.recorded_gpus(scenario.id):
        pytest.skip(f"{scenario.id} has no recording under traces/")
    rec = recordings.open_recording(scenario)
    problems = scenario_numbers.check_scenario(scenario, rec.results["gpu_slug"], rec.values())
    assert not problems, "\n".join(f"{scenario.id} {p}" for p in problems)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_stored_values_are_the_ones_coach_run_prints(scenario):
    """results.json keeps the placeholder values computed at import; a ceiling measured again or a
    model changed since must not leave them stale (recordings.refresh_values recomputes them)."""
    if not recordings.recorded_gpus(scenario.id):
        pytest.skip(f"{scenario.id} has no recording under traces/")
    rec = recordings.open_recording(scenario)
    assert rec.results["values"] == rec.values()


def test_shared_constants_that_name_the_harness_agree_with_it():
    values, reasons = scenario_numbers.shared_constants()
    assert values["harness_repeat"] == harness.REPEAT and values["harness_warmup"] == harness.WARMUP
    assert all(reasons[name].strip() for name in values)


# --------------------------------------------------------------------------------------------
# The checker, on SYNTHETIC texts
# --------------------------------------------------------------------------------------------


@pytest.fixture
def s01():
    return scenarios.find("01")


def problems_in(text, scenario, *, derived=None, recorded=None):
    decl = scenario_numbers.Declared(Path("numbers.toml"), derived or {})
    sources = scenario_numbers.sources_for(scenario, "h200", recorded)
    return [str(p) for p in scenario_numbers.check({"narrative.md": text}, sources, decl)]


def test_a_typed_measurement_fails_and_its_placeholder_passes(s01):
    assert problems_in("The kernel takes {slow_ms:.2f} ms.", s01) == []
    bad = problems_in("The kernel takes 3.24 ms.", s01, recorded={"slow_ms": 3.2361})
    assert bad == ["narrative.md:1: 3.24: traces to no size, hardware constant, declared constant or derivation: "
                   "a measurement must be a {placeholder}"]


def test_sizes_and_hardware_constants_in_their_units(s01):
    ceiling = scenario_numbers.hardware_constants("h200")["measured_dram_copy_bandwidth_bytes_per_s"]
    text = (f"For 402,653,184 particles of 32 bytes on 132 SMs at 1.98 GHz: {ceiling / 1e12:.2f} TB/s measured, "
            "4.8 TB/s on the datasheet, a 60 MiB L2, 228 KB of shared memory, compute capability 9.0.")
    assert problems_in(text, s01) == []
    # a rate is not read in 1024-based units, and a count is not read as a fraction of itself
    assert problems_in("450 TFLOP/s", s01)  # 494.5e12 / 1024^4 would be 450
    assert problems_in("0.132 of them", s01)  # 132 SMs are not "0.132"


def test_a_measured_ceiling_is_the_one_the_floors_use(s01):
    """A text that quotes the calibration's copy rate where the floors use the higher best recorded
    rate states a floor that its own numbers do not give: the calibration's value does not trace."""
    import json

    from coach import best_rates
    from coach.paths import hardware_dir

    name = "dram_copy_bandwidth_bytes_per_s"
    calibrated = json.loads((hardware_dir() / "measured" / "h200.json").read_text())["measurements"][name]["value"]
    ceiling, raised = best_rates.measured_ceiling(name, calibrated, best_rates.read("h200"))
    assert scenario_numbers.hardware_constants("h200")[f"measured_{name}"] == ceiling
    assert s01.model.bytes_per_s == pytest.approx(ceiling)  # the floor's ceiling
    if raised and f"{calibrated / 1e12:.2f}" != f"{ceiling / 1e12:.2f}":
        assert problems_in(f"at {calibrated / 1e12:.2f} TB/s measured", s01)


def test_declared_derivations_are_evaluated(s01):
    assert problems_in("36 bytes move where 12 are needed", s01,
                       derived={"36": "particle_bytes + float_bytes", "12": "3 * float_bytes"}) == []
    wrong = problems_in("36 bytes", s01, derived={"36": "particle_bytes"})
    assert wrong == ["numbers.toml: 36: particle_bytes evaluates to 32", "narrative.md:1: 36: traces to no size, "
                     "hardware constant, declared constant or derivation: a measurement must be a {placeholder}"]
    stale = problems_in("nothing here", s01, derived={"36": "particle_bytes + float_bytes"})
    assert stale == ["numbers.toml: 36: is declared but printed in none of the texts"]
    # a derivation may use the recording's values, and fails when a re-recording changes them
    assert problems_in("80 registers", s01, derived={"80": "-(-slow_registers // 8) * 8"},
                       recorded={"slow_registers": 74.0}) == []
    assert problems_in("80 registers", s01, derived={"80": "-(-slow_registers // 8) * 8"},
                       recorded={"slow_registers": 81.0})[0] == \
        "numbers.toml: 80: -(-slow_registers // 8) * 8 evaluates to 88"
    assert "uses 'nope'" in problems_in("80", s01, derived={"80": "nope"})[0]


def test_what_is_not_a_number():
    found = [p.text for p in scenario_numbers.printed_numbers(
        "H200 fp32 sm_90 x16 v2 2025.3.1 on 2026-11-30, {slow_ms:.2f} ms, 16 * 10**9 bytes\n1. first step\n"
        "2. then 7 and 2**10 and 4.18e12, 0.27-0.36 ms")]
    assert found == ["16", "7", "2**10", "4.18e12", "0.27", "0.36"]
    [sci] = [p for p in scenario_numbers.printed_numbers("4.18e12") if p.text == "4.18e12"]
    assert sci.matches(4.1817e12) and not sci.matches(4.2e12)  # printed to three significant digits
    assert math.isclose(sci.tolerance, 0.005e12)


def test_a_constant_needs_a_value_and_a_reason(tmp_path):
    (tmp_path / "numbers.toml").write_text('[constants]\nx = { value = 3 }\n')
    with pytest.raises(InputError, match="constant 'x' needs a numeric value and a reason"):
        scenario_numbers.shared_constants(tmp_path)
