"""The numbers quoted in the ladders' `why` fields and NOTES.md prose match their recordings
(coach.analyze.prose_quotes): a re-recording that leaves one stale fails here, naming the file, the
rung and the quoted and recorded values. The unit tests below change copies of real whys to show
that a wrong number is caught and a prediction or another recording's number is not checked. Those
unit tests read the scan ladder as it was recorded on 2026-12-03 at 14:08 UTC (its prose, sources,
results and Nsight Compute profile, kept in tests/data/ladders/frozen-scan), so a re-recording of the
ladder does not change the numbers they quote."""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from functools import cache
from pathlib import Path

import pytest

from coach.analyze import ladder_evidence as ev
from coach.analyze import prose_quotes as pq
from coach.ladders import ladder_names, results_path

ROOT = Path(__file__).resolve().parents[1]
NAMES = [n for n in ladder_names() if results_path(n).is_file()]


FROZEN = ROOT / "tests" / "data" / "ladders" / "frozen-scan"  # scan as recorded on 2026-12-03 14:08 UTC
_FROZEN_KERNELS: list[tempfile.TemporaryDirectory] = []  # held until the tests end, then removed


@cache
def frozen_kernels() -> Path:
    """A kernels/ folder with the frozen ladder.toml and NOTES.md beside the ladder's current sources
    (the check reads the prose, never the sources; a ladder definition needs its rungs' files)."""
    _FROZEN_KERNELS.append(tempfile.TemporaryDirectory(prefix="frozen-scan-"))
    root = Path(_FROZEN_KERNELS[-1].name)
    shutil.copytree(ROOT / "kernels" / "scan", root / "scan", ignore=shutil.ignore_patterns("trial-*", "__pycache__"))
    for f in ("ladder.toml", "NOTES.md"):
        shutil.copy(FROZEN / "kernels" / "scan" / f, root / "scan" / f)
    return root


def kernels_root(name: str) -> Path:
    return frozen_kernels() if name == "scan" else ROOT / "kernels"


@cache
def rec(name: str) -> ev.Recorded:
    """Scan's frozen recording; another ladder's current one."""
    if name == "scan":
        return ev.recorded(name, kernels=frozen_kernels(), traces=FROZEN / "traces")
    return ev.recorded(name)


def why(name: str, rung_id: str) -> str:
    doc = tomllib.loads((kernels_root(name) / name / "ladder.toml").read_text())
    return next(r["why"] for r in doc["rungs"] if r["id"] == rung_id)


def check(name: str, text: str, rung_id: str = "09") -> list[pq.Quote]:
    key = rec(name).defn.rung(rung_id).key
    return pq.check_text(rec(name), text, key, file=f"kernels/{name}/ladder.toml", where=f"rung {rung_id} why")


def by_text(found: list[pq.Quote], text: str) -> pq.Quote:
    return next(q for q in found if q.text.startswith(text))


@pytest.mark.parametrize("name", NAMES)
def test_quoted_numbers_match_the_recording(name):
    stale = [q.message() for q in pq.quotes(name) if q.status == "stale"]
    assert not stale, "\n".join(stale)


def test_most_ladders_have_checked_quotes():
    """The checker reads the prose it is meant to: a rule change that silently checks nothing fails here."""
    checked = {name: sum(q.status == "ok" for q in pq.quotes(name)) for name in NAMES}
    assert sum(checked.values()) >= 300, checked
    assert all(checked[n] >= 10 for n in ("scan", "transpose", "gemv", "reduction", "layernorm", "softmax")), checked


def test_a_wrong_number_in_a_copy_of_a_why_is_caught_and_a_prediction_is_not():
    text = why("scan", "09")
    assert text.count("193.1 us") == 1
    ok = check("scan", text)
    assert by_text(ok, "193.1 us").status == "ok" and by_text(ok, "x1.11").status == "ok"
    wrong = check("scan", text.replace("193.1 us", "183.1 us") + "; predicted 183.1 us for the next rung")
    bad = [q for q in wrong if q.status == "stale"]
    assert [q.text for q in bad] == ["183.1 us"]
    assert bad[0].message().startswith("kernels/scan/ladder.toml, rung 09 why: '183.1 us' (time of 09_lagged_lookback)")
    assert "median 193.056 us" in bad[0].message()
    assert by_text(wrong[len(ok):], "183.1 us").status == "not checked"  # the prediction appended


@pytest.mark.parametrize("right, wrong, caught", [
    ("x1.11 over torch.cumsum", "x1.21 over torch.cumsum", "x1.21 vs torch.cumsum"),
    ("(2.78 TB/s)", "(2.88 TB/s)", "2.88 TB/s"),
    ("DRAM 56.8% of peak", "DRAM 58.6% of peak", "58.6%"),
    ("(196.4 us;", "(186.4 us;", None),  # a tuning time: another recording, not checked
])
def test_a_wrong_ratio_rate_or_percent_in_a_copy_is_caught(right, wrong, caught):
    text = why("scan", "09")
    assert right in text
    stale = [q.text for q in check("scan", text.replace(right, wrong)) if q.status == "stale"]
    assert stale == ([caught] if caught else [])


def test_a_wrong_warp_instruction_count_and_ordering_claim_are_caught():
    assert [q.status for q in check("scan", "70.31 M warp instructions; 71.31 M warp instructions")] == ["ok", "stale"]
    level = check("scan", "level with rung 00, the fastest rung of the ladder", "04")
    assert [q.status for q in level if q.kind == "order"] == ["stale", "stale"]
    assert [q.status for q in check("scan", "slower than rung 06: 225.4 us", "08")] == ["ok", "ok"]


def test_the_quoted_precision_sets_the_tolerance():
    """193.1 us claims 193.05-193.15 us; the recording says 193.056 us."""
    status = {t: by_text(check("scan", f"it took {t}"), t).status for t in ("193.1 us", "193.06 us", "193.0 us", "193.05 us", "0.19 ms")}
    assert status == {"193.1 us": "ok", "193.06 us": "ok", "193.0 us": "stale", "193.05 us": "stale", "0.19 ms": "ok"}


@pytest.mark.parametrize("sentence, reason", [
    ("in the trial of 2026-12-03 it took 183.1 us", "another recording"),
    ("the first recording of this rung took 183.1 us", "another recording"),
    ("in the recording of 2026-11-30 it took 183.1 us", "another recording"),
    ("its sweep took 183.1 us", "another recording"),
    ("the trials of that evening took 183.1 us", "another recording"),
    ("torch's copy_ took 183.1 us in this run's probe", "another recording"),
    ("predicted 183.1 us", "a prediction"),
    ("not 183.1-190.0 us", None),  # a range: not read as a quantity at all
    ("under 183.1 us", "a prediction, a bound or a range"),
    ("a round 186.6 us / 41.4 = 4.5 us", "arithmetic"),
])
def test_numbers_from_elsewhere_are_not_checked(sentence, reason):
    found = check("scan", sentence)
    assert all(q.status == "not checked" for q in found), found
    assert reason is None and not found or any(q.reason.startswith(reason) for q in found), found


def test_a_number_at_another_size_is_checked_against_that_sizes_recording():
    """Attention's D64 and causal sizes are in results.h200_d64.json etc.; Nsight Compute profiles the main size only."""
    found = check("attention", "at D64 1,138.2 us = 483.0 TFLOP/s, x1.11 over rung 08; causal 1,338.2 us; "
                               "x0.84 causal; DRAM 12.0% of peak at D64")
    status = [(q.text.split(" vs ")[0], q.status) for q in found]
    assert status == [("x1.11", "ok"), ("1,138.2 us", "ok"), ("483.0 TFLOP/s", "ok"), ("1,338.2 us", "stale"),
                      ("x0.84", "stale"), ("12.0%", "not checked")], status
    assert "results.h200_d64.json" in found[1].recorded and "results.h200_causal.json" in found[3].recorded


def test_the_recording_named_by_its_own_date_is_checked():
    found = check("scan", "193.1 us in the recording of 2026-12-03 ~14:08 UTC; 183.1 us in the recording of 2026-12-03 ~11:00 UTC")
    assert [(q.text, q.status) for q in found] == [("193.1 us", "ok"), ("183.1 us", "not checked")]


def test_whose_number_follows_the_words():
    found = check("scan", "x1.01 over rung 05 (195.0 us) and x1.11 over torch.cumsum (214.1 us); DRAM 56.8% of peak (rung 05 57.1%)")
    assert [(q.referent.split(" / ")[-1], q.status) for q in found] == [
        ("09_lagged_lookback", "ok"), ("09_lagged_lookback", "ok"), ("05_lookback_vec4", "ok"), ("torch.cumsum", "ok"),
        ("09_lagged_lookback", "ok")]
    kernel = check("scan", "Rung 02's tile pass (scan02_tiles, 132.1 us) at 80.9% of DRAM peak", "04")
    assert [(q.referent, q.status) for q in kernel] == [("scan02_tiles", "ok"), ("02_warp_shuffle_scan", "ok")]


def test_a_stale_why_in_a_copy_of_the_ladder_fails_with_file_rung_and_values(tmp_path):
    shutil.copytree(kernels_root("scan") / "scan", tmp_path / "scan")
    toml = tmp_path / "scan" / "ladder.toml"
    toml.write_text(toml.read_text().replace("x1.01 over rung 05 (195.0 us)", "x1.05 over rung 05 (195.0 us)"))
    stale = [q for q in pq.quotes("scan", kernels_root=tmp_path, rec=rec("scan")) if q.status == "stale"]
    assert len(stale) == 1 and stale[0].where == "rung 09 why" and stale[0].file == str(toml)
    assert "'x1.05 vs 05_lookback_vec4'" in stale[0].message() and "1.0099" in stale[0].message()
    allow = {(str(toml), "09", "x1.05 over rung 05"): "quoted from the recording of 2026-11-30 (a fixture)"}
    allowed = pq.quotes("scan", kernels_root=tmp_path, rec=rec("scan"), allowlist=allow)
    assert not [q for q in allowed if q.status == "stale"]
    assert any(q.reason.startswith("allowlisted: quoted from the recording") for q in allowed)


def test_notes_paragraphs_take_their_rung_from_the_lead_and_skip_other_recordings(tmp_path):
    shutil.copytree(kernels_root("scan") / "scan", tmp_path / "scan")
    notes = tmp_path / "scan" / "NOTES.md"
    notes.write_text(notes.read_text() + "\n**Rung 09, again.** It took 183.1 us.\n\n"
                     "**Rung 05 in the trial of 2026-12-03** (its numbers then):\n\n- *Time*: 183.1 us.\n- DRAM 11.0% of peak.\n")
    found = [q for q in pq.quotes("scan", kernels_root=tmp_path, rec=rec("scan")) if q.file == str(notes)]
    stale = [q for q in found if q.status == "stale"]
    assert [(q.text, q.referent) for q in stale] == [("183.1 us", "09_lagged_lookback")]
    tail = [q for q in found if q.text in ("183.1 us", "11.0%")]
    assert [q.status for q in tail] == ["stale", "not checked", "not checked"]


def test_allowlist_entries_name_a_reason():
    assert all(reason.strip() for reason in pq.ALLOWLIST.values())
