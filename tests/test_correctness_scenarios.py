"""The correctness scenarios as data: every scenario.toml loads and names real lines, every program
compiles with nvcc for sm_90 (and keeps its buggy and fixed kernels apart), every placeholder is
one the recording fills, a broken file fails in one line naming the field; and the exercises."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from coach import correctness, scenarios
from coach.correctness import buggy_region
from coach.correctness_recordings import RESULTS_FILE
from coach.errors import CoachError, InputError
from coach.exercises.bank import load_bank
from coach.exercises.correctness import build
from coach.exercises.player import play
from coach.scenarios import placeholders

ALL = correctness.all_scenarios()
NVCC = shutil.which("nvcc")


def test_the_scenarios_and_how_they_are_found():
    assert [s.id for s in ALL] == [f"scenario-{n}" for n in range(21, 27)]
    assert {s.tool for s in ALL} == {"memcheck", "racecheck", "initcheck"}
    # synccheck is recorded too (scenario 24's extra runs: it was silent on the H200)
    assert {r.tool for s in ALL for r in s.runs if r.tool} == {"memcheck", "racecheck", "initcheck", "synccheck"}
    assert {s.found_with for s in ALL} == {"sanitizer", "launch-checks", "float64-reference"}
    # the performance scenarios are what they were: readers of that format never see these
    assert all(int(s.id[-2:]) <= 20 for s in scenarios.all_scenarios())
    assert correctness.is_correctness("21") and correctness.is_correctness("scenario-26-fp16-accumulation")
    assert not correctness.is_correctness("07") and not correctness.is_correctness("nonsense")
    with pytest.raises(CoachError, match="scenario-22 is a correctness scenario"):
        scenarios.find("22")


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_planted_lines_are_in_the_buggy_kernel(scenario):
    text = scenario.source.read_text()
    lines = text.splitlines()
    first, last = buggy_region(text)
    for snippet, n in scenario.planted.items():
        assert first <= n <= last and snippet in lines[n - 1]
    assert re.search(rf"__global__ void {scenario.kernel}\(", text), "the expected kernel is in the source"
    assert [r.name for r in scenario.runs[:4]] == ["buggy", "fixed", f"buggy-{scenario.tool}", f"fixed-{scenario.tool}"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_each_program_builds_for_sm90_with_line_info(scenario, tmp_path):
    binary = tmp_path / scenario.binary_name
    cmd = scenario.build_command(binary, nvcc=NVCC)
    assert "-lineinfo" in cmd and "-arch=sm_90" in cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=scenario.source.parent)
    assert proc.returncode == 0, proc.stderr
    assert binary.is_file()
    # the SASS carries line info (what lets compute-sanitizer print file:line) for sm_90
    cubin = tmp_path / "k.cubin"
    subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-lineinfo", "-o", str(cubin), str(scenario.source)], check=True,
                   capture_output=True, timeout=300, cwd=scenario.source.parent)
    assert b".nv_debug_line_sass" in cubin.read_bytes() or b".debug_line" in cubin.read_bytes()


def _result_keys(scenario) -> set[str]:
    """What the program's result line holds (correctness.cuh: Result.add("key", ...), plus its own)."""
    return set(re.findall(r'result\.add\("([a-z_0-9]+)"', scenario.source.read_text())) | {"variant", "seed", "ok"}


def _allowed(scenario) -> set[str]:
    allowed = {"gpu", "gpu_short", "recorded_date", "driver", "cuda", "sanitizer_version", "report_rule", "report_lines",
               "report_kernel", *correctness.static_values(scenario)}
    keys = _result_keys(scenario)
    for run in scenario.runs:
        k = run.key
        allowed |= {f"{k}_exit", f"{k}_ok", f"{k}_cuda_error", f"{k}_cuda_error_call", f"{k}_cuda_error_line"}
        allowed |= {f"{k}_{key}" for key in keys}
        if run.tool:
            allowed |= {f"{k}_errors", f"{k}_hazards", f"{k}_records"}
    return allowed


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_every_placeholder_is_one_the_recording_fills(scenario):
    texts = [scenario.symptom, scenario.question, *scenario.hints, scenario.fix.summary, scenario.fix.details,
             scenario.fix.wrong_fix, *scenario.rubric.strong, *scenario.rubric.red_flags,
             scenario.narrative_path.read_text()]
    unknown = set().union(*(placeholders(t) for t in texts)) - _allowed(scenario)
    assert not unknown, f"{scenario.id}: unknown placeholders {sorted(unknown)}"


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_notes_hold_a_prediction(scenario):
    notes = (scenario.folder / "notes.md").read_text()
    assert "## Prediction" in notes


def _broken(tmp_path, edit):
    folder = tmp_path / "scenario-21-transpose-missing-barrier"
    shutil.copytree(ALL[0].folder, folder)
    toml = folder / "scenario.toml"
    toml.write_text(edit(toml.read_text()))
    return folder


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('tool = "racecheck"', 'tool = "helgrind"'),
     "field 'tool': 'helgrind' is not one of memcheck, racecheck, initcheck, synccheck"),
    (lambda t: t.replace('error_class = "shared-memory-race"', 'error_class = "slow"'),
     "field 'expected.error_class': 'slow' is not a correctness class"),
    (lambda t: t.replace('"tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];"', '"tile["'),
     "field 'expected.lines[0]': 'tile[' matches 3 lines of the buggy namespace in transpose.cu, not exactly one"),
    (lambda t: t.replace('source = "transpose.cu"', 'source = "missing.cu"'),
     "field 'program.source': 'missing.cu' does not exist"),
    (lambda t: t + '\n[[runs]]\nname = "buggy"\nvariant = "buggy"\n', "field 'runs': two runs are named 'buggy'"),
    (lambda t: t + '\n[[runs]]\nname = "x"\nvariant = "buggy"\ntool_options = ["--padding", "64"]\n',
     "field 'runs[0].tool_options': apply only to a run under a compute-sanitizer tool"),
    (lambda t: t.replace('level = "intermediate"', 'level = "intermediate"\ncolour = "red"'),
     "field 'colour': is not a known field"),
])
def test_a_broken_scenario_fails_in_one_line(tmp_path, edit, message):
    folder = _broken(tmp_path, edit)
    with pytest.raises(InputError) as err:
        correctness.load(folder)
    assert message in str(err.value) and str(err.value).startswith(str(folder / "scenario.toml"))


def test_the_performance_reader_refuses_a_correctness_file(tmp_path):
    folder = _broken(tmp_path, lambda t: t)
    with pytest.raises(InputError, match="field 'kind': is 'correctness': coach.correctness reads this scenario"):
        scenarios.load(folder)


def test_unrecorded_scenarios_have_no_results_in_traces():
    """Until the recording is imported, traces/ holds nothing for these (coach run says 'not recorded yet')."""
    from coach.paths import traces_dir

    for s in ALL:
        for gpu in (traces_dir().iterdir() if traces_dir().is_dir() else []):
            if (gpu / s.id / RESULTS_FILE).is_file():
                assert '"kind": "correctness"' in (gpu / s.id / RESULTS_FILE).read_text()


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.id)
def test_each_has_an_exercise_whose_right_answers_score(scenario):
    bank = load_bank()
    ex = build(scenario, others=ALL, bank=bank)
    assert ex.topic == "debugging" and [p.key for p in ex.points][:4] == ["look-first", "meaning", "fix", "verify"]
    assert all(r.concept is not None for r in ex.rubric_strong), "every strong rubric line is graded"
    letters = iter("abcdefgh"[p.correct] for p in ex.points)
    result = play(ex, lambda prompt, **kw: next(letters))
    assert sum(p.choice_correct for p in result.points) == len(ex.points)
    look = ex.points[0].choices[ex.points[0].correct]
    expected = {"sanitizer": f"--tool {scenario.tool}" if scenario.tool != "memcheck" else "memcheck",
                "launch-checks": "CUDA_LAUNCH_BLOCKING=1", "float64-reference": "float64 reference"}[scenario.found_with]
    assert expected in look


def test_a_good_answer_scores_on_the_rubric():
    scenario = correctness.find("25")
    ex = build(scenario, others=ALL)
    answers = iter([
        "a: kernel errors are asynchronous, reported at the next synchronising call; rerun with CUDA_LAUNCH_BLOCKING=1 "
        "and check cudaGetLastError after each launch",
        "b", "c", "a: compute-sanitizer memcheck with -lineinfo names the line; the error is sticky, every later call "
        "fails", "a"])
    letters = [ex.points[i].correct for i in range(len(ex.points))]
    texts = []
    for i, text in enumerate(answers):
        texts.append("abcdefgh"[letters[i]] + text[1:] if len(text) > 1 else "abcdefgh"[letters[i]])
    result = play(ex, lambda prompt, **kw: texts.pop(0))
    assert result.rubric.score >= 3, [c.label for c in result.rubric.missed]
