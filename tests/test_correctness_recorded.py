"""The recorded correctness scenarios (traces/<gpu>/scenario-2N/): on the real compute-sanitizer
output, the diagnosis of the buggy build names the planted line with the expected rule, the fixed
build is clean under the same tool and passes its check, and coach run shows it offline.

Each test skips, naming the command to make the recording, until the scenario is recorded.
"""

from __future__ import annotations

import pytest
from test_capture_support import flat, run_cli

from coach import correctness, correctness_recordings
from coach.analyze.diagnose import diagnose
from coach.errors import CoachError
from coach.ingest import load

ALL = correctness.all_scenarios()
HOW = ("not recorded yet: run scripts/record-sanitizer.sh RAW on a GPU machine (or the 'sanitizer' step of "
       "scripts/record-batch.sh), then coach record --import RAW")


def _recording(scenario):
    try:
        return correctness_recordings.open_recording(scenario)
    except correctness_recordings.NotRecorded:
        pytest.skip(f"{scenario.id} {HOW}")


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_the_buggy_report_names_the_planted_line(scenario):
    rec = _recording(scenario)
    report = rec.report(f"buggy-{scenario.tool}")
    assert report is not None and report.summary.row(0, named=True)["complete"]
    findings = diagnose(report)
    top = findings[0]
    assert top.rule_id == scenario.first_rule, [f.title for f in findings]
    if scenario.first_rule == "sanitizer-clean":
        assert rec.results["buggy_check_ok"] is False  # wrong, and no tool can see it
        return
    assert set(top.details["lines"]) & set(scenario.planted_lines), (top.title, scenario.planted_lines)
    assert top.scope.rsplit("::", 1)[-1] == scenario.kernel
    assert rec.results["diagnosis"]["names_planted_line"] is True


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_the_fixed_build_is_clean_and_right(scenario):
    rec = _recording(scenario)
    runs = rec.results["runs"]
    assert rec.results["fixed_clean"] is True, runs[f"fixed-{scenario.tool}"]["summary"]
    assert runs["fixed"]["exit"] == 0 and runs["fixed"]["result"]["ok"] is True
    assert not runs["buggy"]["timed_out"] or scenario.tool == "synccheck"  # a divergent barrier may hang
    assert rec.results["buggy_check_ok"] is False


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_the_text_report_and_the_saved_tables_agree(scenario):
    rec = _recording(scenario)
    run = f"buggy-{scenario.tool}"
    saved = rec.report(run)
    reread = load(rec.folder / rec.results["runs"][run]["files"]["text"])
    assert saved.records.drop("text").equals(reread.records.drop("text"))
    xml_name = rec.results["runs"][run]["files"].get("xml")
    if xml_name:  # the XML's layout is not published: its records must at least match the text's kinds and lines
        xml = load(rec.folder / xml_name)
        if xml.records.height:
            assert set(xml.records["kind"].to_list()) <= set(reread.records["kind"].to_list()) | {"other"}


def test_the_asynchronous_error_moves_to_its_kernel():
    scenario = correctness.find("25")
    rec = _recording(scenario)
    runs = rec.results["runs"]
    plain, blocking = runs["buggy"]["cuda_error"], runs["buggy-launch-blocking"]["cuda_error"]
    assert plain["error"] == "cudaErrorIllegalAddress" and plain["call"].startswith("cudaMemcpy")
    assert blocking["error"] == "cudaErrorIllegalAddress" and "embed" in blocking["call"]
    assert blocking["line"] != plain["line"]


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_coach_run_walks_through_the_recording(scenario, capsys, monkeypatch):
    _recording(scenario)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(["run", scenario.id, "--no-interactive"], capsys)
    assert code == 0, err
    text = flat(out)
    assert f"expected first finding: {scenario.first_rule}: matches" in text
    assert f"fixed: clean under {scenario.tool}, and its check passes" in text
    assert "[not recorded]" not in text


def test_unrecorded_is_a_clean_one_line_error(tmp_path):
    with pytest.raises(CoachError, match="is not recorded yet"):
        correctness_recordings.open_recording(ALL[0], tmp_path)
