"""`coach run scenario-NN` from a recording (built in the test until real traces exist): the symptom
with the recorded numbers, the question, the evidence, the fix, before and after, and where the
numbers come from; and the messages for an unknown scenario, a missing recording, --live without GPU."""

from __future__ import annotations

import io

import pytest
from test_capture_support import build_raw_scenario_01, fake_bin, flat, run_cli, set_mode  # noqa: F401, F811  (fixtures)

from coach import recordings, scenarios


@pytest.fixture
def traces(tmp_path):
    raw = tmp_path / "raw"
    build_raw_scenario_01(raw)
    recordings.import_raw(raw, tmp_path / "traces")
    return tmp_path / "traces"


def test_run_from_recording(traces, capsys):
    code, out, err = run_cli(["run", "scenario-01", "--no-interactive", "--traces", str(traces)], capsys)
    assert code == 0, err
    text = flat(out)
    assert text.startswith("scenario-01: Uncoalesced global access: particles stored as an array of structs "
                           "(beginner; Nsight Compute)")
    where = ("Recorded on an NVIDIA H200 (driver 580.95.05, CUDA 13.0) on 2026-12-01 09:30 UTC: these numbers "
             "come from that recording, not from this machine.")
    assert text.count(where) == 2  # at the top and after the numbers
    # the symptom, with the recorded and modelled numbers filled in
    assert "takes 3.45 ms for 402,653,184 particles on the H200" in text
    floor_ms = 4831838208 / scenarios.find("01").model.bytes_per_s * 1e3  # at the measured DRAM ceiling
    assert f"4.83 GB in all, which at the H200's measured copy bandwidth would take {floor_ms:.2f} ms" in text
    assert "DRAM throughput is 91% of peak" in text and "runs at 1401 GB/s of useful bytes" in text
    assert "What would you check first in the Nsight Compute report" in text
    assert "Compare your answer" not in text  # --no-interactive
    # evidence rows: label, slow, fixed, expected direction, verdict
    assert "global load sectors per request 32 4 down yes" in text
    assert "bytes read from DRAM 12.9 GB 3.22 GB down yes" in text
    assert "DRAM throughput, % of peak 91% 88% about the same yes" in text
    assert "expected first finding: uncoalesced-global-access: matches" in text  # coach.analyze.diagnose
    assert "Store the particles as a structure of arrays" in text
    assert "speed-up 2.97x (meets the scenario's minimum of 2x)" in text
    # time, useful bytes/s, the floor, % of floor (each from coach.recordings.placeholder_values)
    v = recordings.open_recording(scenarios.find("01"), traces).values()
    assert v["slow_floor_ms"] == v["fixed_floor_ms"] == pytest.approx(floor_ms)
    assert f"slow 3.45 ms 1.4 TB/s {floor_ms:.4g} ms {v['slow_pct_of_floor']:.4g} %" in text
    assert f"fixed 1.16 ms 4.17 TB/s {floor_ms:.4g} ms {v['fixed_pct_of_floor']:.4g} %" in text
    assert v["fixed_pct_of_floor"] == pytest.approx(100 * floor_ms / v["fixed_ms"])
    assert "{" not in out.split("The fix")[0]  # every placeholder before the fix text was filled


def test_run_interactive_shows_the_rubric_after_an_answer(traces, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("sectors per request in the memory tables\n"))
    code, out, err = run_cli(["run", "01", "--traces", str(traces)], capsys)
    assert code == 0, err
    text = flat(out)
    assert "Compare your answer with what a strong one covers:" in text
    assert "+ Checks sectors per request (or Nsight Compute's uncoalesced-access rule)" in text
    assert "- Proposes more threads, larger blocks or higher occupancy" in text


def test_unknown_scenario_lists_the_known_ones(capsys):
    code, _, err = run_cli(["run", "scenario-42", "--no-interactive"], capsys)
    assert code == 2
    known = ", ".join(s.id for s in scenarios.all_scenarios())
    assert err.strip() == f"coach: error: unknown scenario 'scenario-42'; known scenarios: {known}"
    code, _, err = run_cli(["run", "not-a-scenario"], capsys)
    assert code == 2 and err.strip().endswith("'not-a-scenario' is not a scenario id (scenario-NN, or just NN)")


def test_scenario_without_recording(tmp_path, capsys):
    empty = tmp_path / "traces"
    empty.mkdir()
    code, _, err = run_cli(["run", "15", "--no-interactive", "--traces", str(empty)], capsys)
    assert code == 2
    assert err.strip() == (f"coach: error: scenario-15 has no recorded traces under {empty}: record it on a GPU "
                           "machine with `coach record scenario-15 --out RAW`, then `coach record --import RAW`")


def test_unknown_gpu(traces, capsys):
    code, _, err = run_cli(["run", "01", "--no-interactive", "--traces", str(traces), "--gpu", "a100"], capsys)
    assert code == 2
    assert err.strip() == f"coach: error: scenario-01 has no recording for GPU 'a100' under {traces} (recorded on: h200)"


def test_live_needs_a_gpu(fake_bin, capsys):
    set_mode(fake_bin, "nvidia-smi", "fail")
    code, _, err = run_cli(["run", "01", "--live", "--no-interactive"], capsys)
    assert code == 2
    assert err.strip().startswith("coach: error: --live needs an NVIDIA GPU (nvidia-smi: NVIDIA-SMI has failed")
