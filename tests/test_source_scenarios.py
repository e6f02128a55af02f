"""Each Nsight Compute scenario's planted line: `coach source` on the slow report puts it first and
the top finding of `coach diagnose --json` points at it.

The table names the line by a pattern on the scenario's own source (line numbers move when a file
is edited; the statement does not). The slow report is the saved ncu profile of the recording
(traces/<gpu>/<scenario>/slow/ncu) when it carries source counters, else the full report the
recording keeps (slow/report.ncu-rep.xz); a recording with neither is skipped, saying so.

Where the slowness has no line (a launch-configuration limit, or a library kernel whose binary has
no line information), the table says why and the test checks that side: no line is blamed.
Rows marked ``predicted`` name the line the lesson is about before a recording with source counters
exists; a recording that disagrees fails the test, which is the point.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from coach import scenarios
from coach.analyze import source
from coach.ingest import load, source_text
from coach.paths import traces_dir
from coach.recordings import KEPT_NCU_REP
from cli_support import run_cli

pytest.importorskip("ncu_report")

GPU = "h200"


@dataclass(frozen=True)
class Planted:
    scenario: str
    file: str | None  # the scenario's source file holding the line; None: no line causes it
    pattern: str | None  # a regular expression matching exactly one line of that file
    why: str  # what the line does wrong, or why no line is to blame
    predicted: bool = True  # named before a recording with source counters confirmed it
    # False where the planted line is not first even by the leading finding's counter (coach source's
    # order): it is then checked to be listed and marked as the top finding's cause, not first.
    hottest: bool = True


PLANTED = (
    Planted("scenario-01", "particles.cu", r"x_out\[i\] = p\[i\]\.x \+ dt \* p\[i\]\.vx;",
            "two 4-byte fields read 32 bytes apart: 32 sectors per warp-wide load", predicted=False),
    Planted("scenario-02", "transpose.cu", r"out\[.*\] = tile\[tx\]\[ty \+ j\];",
            "a column of the unpadded 32x32 tile: 32 threads in one bank", predicted=False),
    Planted("scenario-03", "histogram.cu", r"hist\[bin_of\(word, k\)\] \+= 1;",
            "a dynamically indexed per-thread array in local memory", predicted=False),
    Planted("scenario-04", "scores.cu", r"chunk = __shfl_sync\(FULL, word, LANES - 1\);",
            "the pointer chase waits on each load (charged to the shuffle that uses it) with too few warps to hide it", predicted=False),
    Planted("scenario-05", "segments.cu", r"if \(lane < LANES - 1\) s \+= dict\[word & \(DICT - 1\)\];",
            "the page chase waits on each load with the warps the shared-memory copy leaves room for: the wait "
            "lands on the load's first use, the decode of the word (scenario 04's build charges it to the shuffle)",
            predicted=False),
    Planted("scenario-06", "materials.cu", r"switch \(material\) \{",
            "the per-thread material splits every warp into up to eight paths: the switch's branches (inlined "
            "into the call on line 54, charged to the switch's own line) split off every lane the divergence "
            "costs; the samples fall in the paths' series, so it leads by the finding's counter, not by samples",
            predicted=False),
    Planted("scenario-07", None, None, "a partial last wave: the launch configuration, no line"),
    Planted("scenario-08", "histogram.cu", r"atomicAdd\(&bins\[bin_of\(x\[i\]\)\], 1u\);",
            "every thread's global atomic on one of 64 bins", predicted=False),
    Planted("scenario-09", "scale_shift.cu", r"y\[i\] = a \* x\[i\] \+ b;",
            "one 4-byte load in flight per thread and iteration", predicted=False),
    Planted("scenario-10", None, None, "a cuBLAS kernel: its binary has no line information"),
    Planted("scenario-11", None, None, "PyTorch's elementwise kernels: built without line information"),
    Planted("scenario-12", None, None, "a cuBLAS GEMV: its binary has no line information"),
)


def _ncu_scenarios() -> list[str]:
    return [s.id for s in scenarios.all_scenarios() if s.tool == "ncu"]


def test_the_table_covers_every_nsight_compute_scenario():
    assert [p.scenario for p in PLANTED] == _ncu_scenarios()


@pytest.mark.parametrize("planted", PLANTED, ids=lambda p: p.scenario)
def test_the_pattern_names_one_line_of_the_scenario_source(planted):
    if planted.file is None:
        pytest.skip(planted.why)
    line = planted_line(planted)
    assert line > 0


def planted_line(planted: Planted) -> int:
    text = (scenarios.find(planted.scenario).folder / planted.file).read_text()
    hits = [i for i, line in enumerate(text.splitlines(), 1) if re.search(planted.pattern, line)]
    assert len(hits) == 1, f"{planted.scenario}: {planted.pattern!r} matches lines {hits} of {planted.file}"
    return hits[0]


def slow_report(scenario_id: str) -> Path | None:
    folder = traces_dir() / GPU / scenario_id / "slow"
    saved = folder / "ncu"
    if (saved / "coach-profile.json").is_file() and source.has_counters(load(saved)):
        return saved
    kept = folder / KEPT_NCU_REP
    return kept if kept.is_file() else None


@pytest.mark.parametrize("planted", PLANTED, ids=lambda p: p.scenario)
def test_coach_source_and_diagnose_name_the_planted_line(planted, capsys):
    report = slow_report(planted.scenario)
    if report is None:
        pytest.skip(f"the {GPU} recording of {planted.scenario} has no source counters yet ({source.NEED_COUNTERS})")
    profile = load(report)
    if not source.has_counters(profile):
        pytest.skip(f"{report}: {source.gap(profile)}")
    code, out, err = run_cli(["source", str(report), "--json", "--top", "1" if planted.hottest else "0"], capsys)
    assert code == 0, err
    launches = [l for l in json.loads(out)["launches"] if l["lines"] or l["instructions"]]
    code, out, err = run_cli(["diagnose", str(report), "--json"], capsys)
    assert code == 0, err
    kernels = json.loads(out)["kernels"]
    if planted.file is None:
        # no line to blame: the top finding of each launch points at none
        for k in kernels:
            if k["findings"]:  # SASS offsets at most (the binary has no line table): no source line
                assert all(loc["line"] is None for loc in k["findings"][0]["locations"]), f"{planted.scenario}: {planted.why}"
        return
    line = planted_line(planted)
    top = next(k for k in kernels if k["launch_id"] == launches[0]["launch_id"])["findings"][0]
    if planted.hottest:
        first = launches[0]["lines"][0]
        assert (Path(first["local_file"] or first["file"]).name, first["line"]) == (planted.file, line), (
            f"{planted.scenario}: coach source puts {first['where']} first, not {planted.file}:{line} ({planted.why})")
    else:
        marked = [l for l in launches[0]["lines"] if top["rule_id"] in l["findings"]]
        assert (planted.file, line) in [(Path(l["local_file"] or l["file"]).name, l["line"]) for l in marked]
    assert f"{planted.file}:{line}" in [loc["where"] for loc in top["locations"]], (
        f"{planted.scenario}: the top finding {top['rule_id']} points at "
        f"{[loc['where'] for loc in top['locations']]}, not {planted.file}:{line}")


def test_a_recorded_scenarios_sources_are_found_for_its_kept_report():
    """The kept full report (xz-compressed beside the recording's results.json, which names the
    scenario): its sources are looked for in the scenario's folder."""
    report = traces_dir() / GPU / "scenario-01" / "slow" / KEPT_NCU_REP
    folders = source_text.search_folders(report, load(report))
    assert scenarios.find("scenario-01").folder in folders
