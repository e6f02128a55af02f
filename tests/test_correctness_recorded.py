"""The recorded correctness scenarios (traces/<gpu>/scenario-2N/): on the real compute-sanitizer
output, the diagnosis of the buggy build names the planted line with the expected rule, the fixed
build is clean under the same tool and passes its check, and coach run shows it offline.

Each test skips, naming the command to make the recording, until the scenario is recorded.
"""

from __future__ import annotations

import polars as pl
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


#: Columns the text report and the --xml file of one run must agree on, record by record.
SAME_IN_BOTH = ["kind", "severity", "space", "access", "size_bytes", "address", "address_problem", "hazard_count",
                "line", "thread_x", "thread_y", "thread_z", "block_x", "block_y", "block_z", "api_call", "api_error",
                "api_error_code", "backtrace_at", "host_function"]


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_the_text_report_and_the_saved_tables_agree(scenario):
    rec = _recording(scenario)
    run = f"buggy-{scenario.tool}"
    saved = rec.report(run)
    reread = load(rec.folder / rec.results["runs"][run]["files"]["text"])
    assert saved.records.drop("text").equals(reread.records.drop("text"))


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_the_xml_file_holds_the_text_reports_records(scenario):
    """The --xml file of the same run, read by its own reader, gives the same records: kind, access,
    address, line, thread and block, hazards, the failed call (the file names the kernel without its
    namespace and the source by its absolute path, the text report qualified and as given)."""
    rec = _recording(scenario)
    files = rec.results["runs"][f"buggy-{scenario.tool}"]["files"]
    if "xml" not in files:
        pytest.skip(f"{scenario.id}: the recording kept no --xml file")
    text = load(rec.folder / files["text"])
    xml = load(rec.folder / files["xml"])
    assert xml.records.height == text.records.height
    assert xml.records.select(SAME_IN_BOTH).equals(text.records.select(SAME_IN_BOTH))
    short = [k.rsplit("::", 1)[-1] if k else k for k in text.records["kernel"].to_list()]
    assert xml.records["kernel"].to_list() == short
    assert [f.rsplit("/", 1)[-1] if f else f for f in xml.records["file"].to_list()] == text.records["file"].to_list()
    keys = ["record_id", "position", "role", "access", "line", "hazards"]
    assert xml.locations.select(keys).equals(text.locations.filter(pl.col("role") != "device-frame").select(keys))
    if text.records.height:  # what coach diagnose says first is the same from either file
        assert diagnose(xml)[0].rule_id == diagnose(text)[0].rule_id


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
    assert max(len(line) for line in out.splitlines()) <= 80  # the report's own lines wrapped too


def test_unrecorded_is_a_clean_one_line_error(tmp_path):
    with pytest.raises(CoachError, match="is not recorded yet"):
        correctness_recordings.open_recording(ALL[0], tmp_path)


def test_the_xml_file_says_nothing_of_the_nearest_allocation():
    """The text report of scenario 25 puts the padding token's read 4.4 TB past a 512-byte table;
    the --xml file of the same run names no allocation, and the diagnosis says it cannot tell
    rather than that no allocation is near."""
    scenario = correctness.find("25")
    rec = _recording(scenario)
    files = rec.results["runs"]["buggy-memcheck"]["files"]
    text, xml = load(rec.folder / files["text"]), load(rec.folder / files["xml"])
    assert text.records["allocation_distance_bytes"][0] > 4_000_000_000_000
    assert xml.records["allocation_relation"].null_count() == xml.records.height
    from_text, from_xml = diagnose(text)[0], diagnose(xml)[0]
    assert "the index is garbage" in from_text.message
    assert "is not checked: the --xml file does not say" in from_xml.message
    assert "outside every allocation" not in from_xml.message


def test_the_off_by_one_is_one_byte_after_in_the_tools_words():
    """Scenario 22's text quotes the tool: the last row's overrun starts exactly at the image's end,
    which compute-sanitizer 2025.3.1 prints as "1 bytes after", and the rule reads it as one element past."""
    scenario = correctness.find("22")
    rec = _recording(scenario)
    report = rec.report("buggy-memcheck")
    row = report.records.filter(pl.col("kind") == "memory-access").row(0, named=True)
    assert row["address"] - row["allocation_address"] == row["allocation_bytes"] == 4_000_000
    assert row["allocation_relation"] == "after" and row["allocation_distance_bytes"] == 1
    assert "is 1 bytes after the nearest allocation" in rec.report_text("buggy-memcheck")
    assert "'1 bytes after the nearest allocation'" in " ".join(scenario.rubric.strong)
    assert "starts at the end" in diagnose(report)[0].message


def test_synccheck_was_silent_on_the_divergent_barrier():
    """Scenario 24 as recorded: synccheck reports nothing on the buggy build while the same run's
    check fails; racecheck reports the race the misplaced barrier leaves, between the addition in the
    branch and the read of partial[0], and nothing on the fixed build."""
    scenario = correctness.find("24")
    rec = _recording(scenario)
    runs = rec.results["runs"]
    assert runs["buggy-synccheck"]["summary"]["errors"] == 0 and rec.report("buggy-synccheck").records.height == 0
    assert runs["buggy-synccheck"]["result"]["ok"] is False and runs["buggy-synccheck"]["exit"] == 1
    assert runs["buggy-racecheck"]["summary"]["hazards_displayed"] >= 1
    assert runs["fixed-racecheck"]["summary"]["hazards_displayed"] == 0
    assert scenario.tool == "racecheck" and scenario.first_rule == "shared-memory-race"
    assert scenario.found_with == "sanitizer" and "synccheck reports no error" in scenario.question


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_the_exercise_takes_its_numbers_from_the_recording(scenario):
    from coach.exercises.correctness import build
    from coach.exercises.player import play

    rec = _recording(scenario)
    ex = build(scenario, others=ALL)
    shown = "\n".join([p.prompt for p in ex.points] + [c for p in ex.points for c in p.choices])
    assert "[not recorded]" not in shown and "{" not in shown
    if scenario.found_with == "float64-reference":  # the count the tool printed on this build
        errors = rec.results["runs"][f"buggy-{scenario.tool}"]["summary"]["errors"]
        assert f"compute-sanitizer {scenario.tool} reports {errors} errors" in ex.points[1].prompt
    letters = iter("abcdefgh"[p.correct] for p in ex.points)
    assert all(p.choice_correct for p in play(ex, lambda prompt, **kw: next(letters)).points)
