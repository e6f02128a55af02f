"""`coach run` on every scenario recorded in traces/, without a GPU, as a user would run it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coach import recordings, scenarios

RECORDED = [s for s in scenarios.all_scenarios() if recordings.recorded_gpus(s.id)]


def test_every_scenario_is_recorded():
    assert [s.id for s in RECORDED] == [s.id for s in scenarios.all_scenarios()]
    assert len(RECORDED) == 20


@pytest.mark.parametrize("scenario", RECORDED, ids=lambda s: s.id)
def test_run_walks_through_the_recording(scenario):
    r = subprocess.run([sys.executable, "-m", "coach", "run", scenario.id, "--no-interactive"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Recorded on an NVIDIA H200" in out and "not from this machine" in out
    assert f"expected first finding: {scenario.first_rule}: matches" in out
    assert "speed-up" in out and "meets the scenario's minimum" in out
    assert "{" not in out.split("Symptom", 1)[1].split("Your move", 1)[0]  # every placeholder filled
    assert "[not recorded]" not in out
