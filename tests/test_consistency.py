"""The same quantity printed by different commands is the same number, on the shipped recordings.

Each quantity has one owner (the scenario model and ``coach.recordings.placeholder_values`` for a
scenario's times, floors and rates; ``coach.analyze.quantities`` for a kernel's DRAM rate, waves
and floor; ``coach.analyze.gain`` for a fix's predicted speed-up; ``coach.best_rates`` with the
calibration for a measured ceiling). These tests read what each presenter prints (``coach run``,
``coach explain``, ``coach diagnose``, ``coach diff``, ``coach load``, the exercise, the dashboard's
walkthrough) and compare.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from test_capture_support import flat, run_cli

from coach import best_rates, correctness, correctness_recordings, ladders, recordings, scenarios
from coach.analyze.diagnose import diagnose
from coach.analyze.diff import diff, fmt_value
from coach.analyze.hardware import ceilings, get
from coach.analyze.kernel_summary import summarize_kernels
from coach.analyze.quantities import fmt_waves
from coach.analyze.talking_points import explain
from coach.app.walkthrough import from_scenario, kernel_pair, launch
from coach.exercises.player import build
from coach.paths import traces_dir

RECORDED = [s for s in scenarios.all_scenarios() if recordings.recorded_gpus(s.id)]


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")


@pytest.mark.parametrize("scenario", RECORDED, ids=lambda s: s.id)
def test_speedup_floor_and_rate_agree_across_run_exercise_and_dashboard(scenario, capsys):
    values = recordings.open_recording(scenario).values()
    code, out, err = run_cli(["run", scenario.id, "--no-interactive"], capsys)
    assert code == 0, err
    text = flat(out)
    # coach run
    assert f"speed-up {values['speedup']:.2f}x" in text
    for variant in ("slow", "fixed"):
        row = re.search(rf"\b{variant} (\S+ ms) (.+?) ([\d.]+ ms) ([\d.]+ %)", text)
        assert row, (variant, text[-600:])
        assert row.group(1) == f"{values[f'{variant}_ms']:.4g} ms"
        assert row.group(3) == f"{values[f'{variant}_floor_ms']:.4g} ms"
        assert row.group(4) == f"{values[f'{variant}_pct_of_floor']:.4g} %"
    # the dashboard's walkthrough
    walk = from_scenario(scenario)
    assert walk.speedup == pytest.approx(values["speedup"], rel=1e-12)
    assert walk.slow_floor_ns == pytest.approx(values["slow_floor_ms"] * 1e6)
    assert walk.fixed_rate == pytest.approx(values["fixed_rate"]) and walk.rate_label == scenario.model.rate_label
    # the exercise
    point = build(scenario, others=[]).points[3]
    if scenario.bottleneck.value == "measurement":
        assert f"{values['fixed_ms']:.4g} ms per call" in point.explain
    else:
        assert f"The recording measured {values['speedup']:.2f}x" in point.explain


def test_tail_waves_agree_across_diagnose_explain_and_diff():
    rec = recordings.open_recording(scenarios.find("07"))
    slow, fixed = rec.profile("slow", "ncu"), rec.profile("fixed", "ncu")
    waves = slow.launches["waves_per_sm"][0]
    shown = f"{fmt_waves(waves)} waves"
    tail = next(f for f in diagnose(slow) if f.rule_id == "tail-effect")
    assert shown in tail.title and shown in tail.message
    assert explain(slow, diagnose(slow))[0].numbers[0].startswith(f"waves_per_sm = {shown} (")
    d = diff(slow, fixed)
    row = d.movements.filter((d.movements["metric"] == "waves_per_sm") & (d.movements["pair"] == d.headline["pair"]))
    assert fmt_value(row["before"][0], "wave") == shown


@pytest.mark.parametrize("sid", ["01", "09", "12"])
def test_dram_rate_agrees_across_load_diagnose_and_dashboard(sid):
    profile = recordings.open_recording(scenarios.find(sid)).profile("slow", "ncu")
    launch_id = profile.launches["launch_id"][0]
    loaded = summarize_kernels(profile)["kernels"].row(0, named=True)["dram_bytes_per_s"]
    one = launch(profile, launch_id)
    walk = kernel_pair(before=one, after=one, evidence=[], id="x", title="x", level="x", symptom="x", question="x",
                       bottleneck="x", fix_summary="x")
    assert walk.slow_rate == pytest.approx(loaded)
    sol = next(f for f in diagnose(profile) if f.rule_id == "speed-of-light")
    evidence = next(e for e in sol.evidence if e.metric == "dram_bandwidth_bytes_per_s")
    assert evidence.value == pytest.approx(loaded)


def test_measured_dram_ceiling_agrees_across_scenarios_hardware_and_ladders(capsys):
    dram = ceilings(get("h200"), True)
    copy = scenarios.find("01").model.bytes_per_s  # measured:dram_copy_bandwidth_bytes_per_s
    read = scenarios.find("08").model.bytes_per_s  # measured:dram_read_bandwidth_bytes_per_s
    # the DRAM roof: at least the better of the two, and no recorded DRAM rate of any mix above it
    roof = best_rates.read("h200")["rates"]["dram_bandwidth_bytes_per_s"]["value"]
    assert dram.bandwidth["dram"].value == pytest.approx(max(copy, read, roof)) and roof > max(copy, read)
    code, out, err = run_cli(["ladder", "softmax", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["ceiling"]["value"] == pytest.approx(copy)
    code, out, err = run_cli(["ladder", "reduction", "--json"], capsys)
    assert json.loads(out)["ceiling"]["value"] == pytest.approx(read)
    assert ladders.load_results(traces_dir() / "h200" / "ladders" / "reduction" / "results.json").ceiling_value == read
    assert dram.compute["bf16"].value == pytest.approx(scenarios.find("12").model.flop_per_s)
    # `coach numbers` (and the Reference page, which shows the same sheet) and the Hardware page
    code, out, err = run_cli(["numbers", "--group", "memory", "--json"], capsys)
    assert code == 0, err
    rows = {r["quantity"]: r for r in json.loads(out)}
    assert rows["HBM copy bandwidth (measured)"]["value"] == pytest.approx(copy)
    assert rows["HBM read bandwidth (measured)"]["value"] == pytest.approx(read)
    assert rows["HBM bandwidth, any read/write mix (measured: the DRAM roof)"]["value"] == dram.bandwidth["dram"].value
    from coach.app.pages.hardware import ridges
    from coach.app import format as fmt

    shown = fmt.si(dram.bandwidth["dram"].value, "B/s")
    assert f"DRAM bandwidth {shown} " in str(ridges(dram).children[0].children)
    assert rows["HBM copy bandwidth (measured)"]["shown"] == f"{copy / 1e12:.2f} TB/s"
    # `coach run`'s floor note names the same ceiling
    code, out, err = run_cli(["run", "01", "--no-interactive"], capsys)
    assert f"at {copy / 1e12:.2f} TB/s (measured" in flat(out)


def test_07_floor_in_explain_matches_run(capsys):
    """Two sources, one number: the special-function floor from the scenario's sizes in `coach run`,
    from Nsight Compute's XU pipe counter in `coach explain`."""
    values = recordings.open_recording(scenarios.find("07")).values()
    code, out, err = run_cli(["explain", str(traces_dir() / "h200" / "scenario-07" / "slow" / "ncu")], capsys)
    assert code == 0, err
    shown = re.search(r"peak over the launch\): ([\d.]+) ms", flat(out))
    # The two derivations (the instruction count of the scenario's sizes; the XU pipe's measured share
    # of the launch) agree within 0.3% on the recording; printed at three digits (up to 0.5% more) they may straddle a
    # rounding boundary (1.064 ms and 1.066 ms), not more.
    assert shown and float(shown.group(1)) == pytest.approx(values["floor_ms"], rel=0.01)


@pytest.mark.parametrize("sid", ["01", "07", "14"])
def test_evidence_reads_the_same_in_diagnose_and_explain(sid, capsys):
    """`coach explain`'s numbers are `coach diagnose`'s evidence lines, value for value: one format
    (before, diagnose said 'sync_points = 1377 calls' and explain '1.38e+03 calls'; diagnose
    '12.9 GB', explain '12.88 GB')."""
    scenario = scenarios.find(sid)
    path = str(traces_dir() / "h200" / scenario.id / "slow" / scenario.tool)
    code, explained, err = run_cli(["explain", path], capsys)
    assert code == 0, err
    code, diagnosed, err = run_cli(["diagnose", path], capsys)
    assert code == 0, err
    numbers = re.findall(r"^\s+\d\. (\w+ = .+?)(?: \(healthy|$)", explained, flags=re.M)
    assert len(numbers) >= 2, explained
    evidence = flat(diagnosed)
    for number in numbers:
        if number.startswith("duration = "):
            continue
        assert f"- {number} " in evidence or evidence.endswith(f"- {number}"), (number, evidence[:2000])


def test_a_measured_small_share_and_a_count_are_not_misread():
    """A share that was measured reads with its digits, never '0.0%' (scenario 07's DRAM throughput
    is 7.8e-05% of peak); a count reads whole below a million, thousands separated, neither in exponent
    form nor as '65.54k'; a missing value says so."""
    assert fmt_value(7.781e-05, "%") == "0.000078%" and fmt_value(0.01581, "%") == "0.016%"
    assert fmt_value(0.0, "%") == "0.0%" and fmt_value(92.74, "%") == "92.7%"
    assert fmt_value(1377, "calls") == "1,377 calls" and fmt_value(65536, "kernels") == "65,536 kernels"
    assert fmt_value(58.72e6, "sector") == "58.72M sectors"
    assert fmt_value(None, "%") == "not in report"


def test_speed_of_light_message_quotes_its_numbers_as_the_rest_of_coach():
    """Scenario 01's bytes read as the gain model and the diff say them (14.49 GB, was '14493 MB');
    its intensity as the evidence and the roofline (0.0556, was '0.06'); scenario 07's measured
    memory shares keep their digits (0.016%, was '0.0%')."""
    slow01 = recordings.open_recording(scenarios.find("01")).profile("slow", "ncu")
    sol = next(f for f in diagnose(slow01) if f.rule_id == "speed-of-light")
    assert f"Moving its {fmt_value(slow01.launches['dram_bytes'][0], 'byte')} at" in sol.message
    ai = next(e for e in sol.evidence if e.metric == "arithmetic_intensity_flop_per_byte").value
    assert f"Arithmetic intensity is {ai:.3g} FLOP" in sol.message and "14.49 GB" in sol.message
    slow07 = recordings.open_recording(scenarios.find("07")).profile("slow", "ncu")
    lean = next(f for f in diagnose(slow07) if f.rule_id == "speed-of-light")
    mem = next(e for e in lean.evidence if e.metric == "memory_throughput_pct").value
    assert 0 < mem < 0.05 and "0.0%" not in lean.message and f"memory throughput {fmt_value(mem, '%')}" in lean.message


def test_ridges_in_roofline_are_those_of_numbers(capsys, tmp_path):
    """`coach roofline` and `coach numbers` on one GPU: the measured ridges are the same numbers (they
    were '~11' and '~160' against 11.5 and 155), and where Nsight Compute's own ridge (its peaks at the
    profile's clocks: BF16 ~220) differs from the datasheet's, the datasheet's is named beside it."""
    code, out, err = run_cli(["numbers", "--gpu", "h200", "--group", "ridge points", "--json"], capsys)
    assert code == 0, err
    sheet = {r["quantity"]: r["shown"] for r in json.loads(out)}
    code, out, err = run_cli(["numbers", "--gpu", "h200", "--json"], capsys)
    assert code == 0, err
    from coach.analyze.roofline import _rate

    # the DRAM roof `coach numbers` lists, as the roofline's sentences write a rate
    roof = _rate(next(r["value"] for r in json.loads(out)
                      if r["quantity"] == "HBM bandwidth, any read/write mix (measured: the DRAM roof)"), "B/s")
    path = str(traces_dir() / "h200" / "scenario-01" / "slow" / "ncu")
    code, out, err = run_cli(["roofline", path, "--out", str(tmp_path / "r.html")], capsys)
    assert code == 0, err
    text = flat(out)
    assert f"(FP32 51.2 TFLOP/s, DRAM {roof}) put the practical ridge at {sheet['FP32 ridge (measured)']} FLOP/byte" in text
    assert f"put the practical ridge at {sheet['BF16 ridge (measured)']} FLOP/byte" in text
    assert f"the datasheet's (990 TFLOP/s, 4.8 TB/s) put the ridge at {sheet['BF16 ridge (datasheet)']}." in text


@pytest.mark.parametrize("sid", ["13", "17", "18"])
def test_exercise_gain_names_the_speedup_diff_talk_quotes(sid, capsys):
    """The exercise's gain key is the timed runs' speed-up; `coach diff --talk` puts the same gain model
    beside the speed-up between the two profiles. Where they differ (scenario 17: 2.12x timed, 3.53x
    between the profiles) both read as measured: the exercise names the profiles' one too, and it is
    the number `coach diff --talk` prints."""
    scenario = scenarios.find(sid)
    folder = traces_dir() / "h200" / scenario.id
    code, out, err = run_cli(["diff", str(folder / "slow" / "nsys"), str(folder / "fixed" / "nsys"), "--talk"], capsys)
    assert code == 0, err
    talk = re.search(r"measured ([\d.]+)x between these profiles", flat(out))
    assert talk, flat(out)[:800]
    values = recordings.open_recording(scenario).values()
    assert abs(float(talk.group(1)) / values["speedup"] - 1) > 0.1  # the case this test is about
    point = build(scenario, others=[]).points[3]
    assert f"The recording measured {values['speedup']:.2f}x" in point.explain
    assert f"Between the two profiles, which the model works from and `coach diff` compares, the fix measured {talk.group(1)}x" in point.explain


def _times_said(number: str, text: str) -> int:
    """How often ``number`` (as printed: "4.48", "692") stands alone in ``text``."""
    return len(re.findall(rf"(?<![\d.]){re.escape(number)}(?![\d])", text))


@pytest.mark.parametrize("name", [n for n in ladders.ladder_names()
                                  if ladders.results_path(n, main=ladders.load_definition(n).main_size).is_file()])
def test_ladder_caption_says_its_ceiling_once(name, capsys):
    """A ladder's ceiling is printed once in each caption that names it: `coach ladder NAME`'s, NOTES.md's
    results table and the Ladders page's (the CLI said '4.27 TB/s: the best rate recorded on this GPU,
    4.27 TB/s (...)', the value and then the note that repeated it)."""
    from coach.analyze.ladder_evidence import recorded, results_table
    from coach.app.pages.ladders import rung_table

    rec = recorded(name)
    res = rec.results
    compute = res.ceiling_unit == ladders.FLOPS
    number = f"{res.ceiling_value / 1e12:.1f}" if compute else f"{res.ceiling_value / 1e12:.2f}"
    code, out, err = run_cli(["ladder", name], capsys)
    assert code == 0, err
    caption = next(line for line in out.splitlines() if line.startswith("% of the measured"))
    assert _times_said(number, caption) == 1, caption
    notes = next(line for line in results_table(rec).splitlines() if line.startswith("Ceiling:"))
    assert _times_said(number, notes) == 1, notes
    page = flat(" ".join(str(c) for c in rung_table(rec, {}).children[1].children))
    shown = re.search(r"Ceiling: .*?, (\S+) [TGP]?(?:FLOP|B)/s ?, measured", page)
    assert shown and _times_said(shown.group(1), page) == 1, page


def _floor_ceiling_measured(scenario) -> bool:
    """Whether the ceiling that sets the scenario's floor is a measured one (not derived in its TOML)."""
    m = scenario.model
    return bool(m.flops_ceiling_name if (m.flops_s() or 0.0) > m.bytes_s("slow") else m.bytes_ceiling_name)


@pytest.mark.parametrize("scenario", [s for s in RECORDED if _floor_ceiling_measured(s)], ids=lambda s: s.id)
def test_run_floor_note_says_its_ceiling_once(scenario, capsys):
    """`coach run`'s floor line names the measured ceiling it divides by once (it said 'at 4.48 TB/s
    (measured: the best rate recorded on this GPU, 4.48 TB/s ...)'). A ceiling the scenario derives
    (scenario 07's 16 x 132 x 1.98 GHz = 4.18e12 per second) ends its derivation with the result."""
    code, out, err = run_cli(["run", scenario.id, "--no-interactive"], capsys)
    assert code == 0, err
    text = flat(out)
    floor = re.search(r"floor: the least time the work can take.*?(?= Recorded on )", text)
    assert floor, text[-800:]
    at = re.search(r" at (\d[\d.]*) [TGPk]?(?:B/s| per second)", floor.group(0))
    assert at, floor.group(0)
    assert _times_said(at.group(1), floor.group(0)) == 1, floor.group(0)


_LEFT_OVER = re.compile(r"\{[a-z_][a-z0-9_]*(?::[^{}]*)?\}")


def _texts(scenario) -> dict[str, str]:
    """The texts of a scenario a learner reads, by name (templates, with their placeholders)."""
    return {"symptom": scenario.symptom, "question": scenario.question, "fix.summary": scenario.fix.summary,
            "fix.details": scenario.fix.details, "fix.wrong_fix": scenario.fix.wrong_fix,
            **{f"rubric.strong[{i}]": t for i, t in enumerate(scenario.rubric.strong)},
            **{f"rubric.red_flags[{i}]": t for i, t in enumerate(scenario.rubric.red_flags)},
            **{f"hints[{i}]": t for i, t in enumerate(scenario.hints)}}


def test_some_scenario_rubric_names_a_recorded_number():
    """The next test has something to catch: rubrics and hints hold placeholders (scenario 04's
    '{slow_registers:.0f} registers'), which `coach run` and the walkthrough printed raw."""
    held = {s.id for s in RECORDED for name, t in _texts(s).items()
            if name.startswith(("rubric", "hints")) and scenarios.placeholders(t)}
    assert {"scenario-04", "scenario-07", "scenario-08", "scenario-09"} <= held


@pytest.mark.parametrize("scenario", RECORDED, ids=lambda s: s.id)
def test_scenario_texts_are_filled_in_run_json_and_walkthrough(scenario, capsys, monkeypatch):
    """Every text of a scenario (symptom, question, rubric, hints, fix), as `coach run` prints it (with
    the rubric, after an answer), as `coach run --json` writes it and as the dashboard's walkthrough
    holds it: no placeholder left, and each number the one the recording gives."""
    values = recordings.open_recording(scenario).values()
    want = {name: scenarios.render(t, values) for name, t in _texts(scenario).items() if t}
    assert not any(_LEFT_OVER.search(t) for t in want.values()), "the recording fills every placeholder"
    monkeypatch.setattr("sys.stdin", io.StringIO("the registers per thread\n"))
    code, out, err = run_cli(["run", scenario.id], capsys)
    assert code == 0, err
    assert not _LEFT_OVER.search(out), _LEFT_OVER.search(out).group(0)
    shown = flat(out)
    for name, text in want.items():
        if not name.startswith("hints"):  # coach run shows no hints
            assert flat(text) in shown, name
    code, out, err = run_cli(["run", scenario.id, "--json"], capsys)
    assert code == 0, err
    assert not _LEFT_OVER.search(out), _LEFT_OVER.search(out).group(0)
    doc = json.loads(out)
    assert flat(doc["symptom"]) == flat(want["symptom"]) and flat(doc["question"]) == flat(want["question"])
    for key, rubric in (("strong", scenario.rubric.strong), ("red_flags", scenario.rubric.red_flags)):
        assert [flat(t) for t in doc["rubric"][key]] == [flat(scenarios.render(t, values)) for t in rubric]
    assert flat(doc["fix"]["summary"]) == flat(want["fix.summary"]) and flat(doc["fix"]["details"]) == flat(want["fix.details"])
    walk = from_scenario(scenario)
    held = {"symptom": walk.symptom, "question": walk.question, "fix.summary": walk.fix_summary,
            "fix.details": walk.fix_details, "fix.wrong_fix": walk.wrong_fix,
            **{f"rubric.strong[{i}]": t for i, t in enumerate(walk.strong)},
            **{f"rubric.red_flags[{i}]": t for i, t in enumerate(walk.red_flags)},
            **{f"hints[{i}]": t for i, t in enumerate(walk.hints)}}
    for name, text in want.items():
        assert flat(held[name]) == flat(text), name


@pytest.mark.parametrize("scenario", [s for s in correctness.all_scenarios()
                                      if correctness_recordings.recorded_gpus(s.id)], ids=lambda s: s.id)
def test_correctness_scenario_texts_are_filled_in_run(scenario, capsys, monkeypatch):
    """A correctness scenario's texts as `coach run` prints them, the rubric too: no placeholder left,
    each number the recording's."""
    values = correctness_recordings.open_recording(scenario).values()
    monkeypatch.setattr("sys.stdin", io.StringIO("an out-of-bounds read\n"))
    code, out, err = run_cli(["run", scenario.id], capsys)
    assert code == 0, err
    assert not _LEFT_OVER.search(out), _LEFT_OVER.search(out).group(0)
    shown = flat(out)
    for name, text in _texts(scenario).items():
        if text and not name.startswith("hints"):
            assert flat(_LEFT_OVER.sub("[not recorded]", scenarios.render(text, values))) in shown, name


def test_quiz_ceilings_are_the_ones_coach_numbers_prints(capsys):
    """A worked answer's measured ceiling (``h200.measured.<name>``) is the number `coach numbers`
    prints for it, value and text: the calibration raised to the best recorded rate (design-01 said
    4.19 TB/s read and 683 TFLOP/s where coach numbers says 4.27 and 692), and perf-07 names the
    copy ceiling through its table rather than typing the calibration's 4.19."""
    from coach.exercises.bank import load_bank

    code, out, err = run_cli(["numbers", "--gpu", "h200", "--json"], capsys)
    assert code == 0, err
    rows = json.loads(out)

    def printed(key: str) -> dict:
        return next(r for r in rows if r["origin"] == "measured" and f": {key}" in r["source"])

    seen = set()
    for q in load_bank().questions:
        for n in q.numbers.values():
            for ref in n.refs:
                if ref.measured and ref.gpu == "h200" and n.is_hardware:
                    row = printed(ref.field)
                    assert n.value == pytest.approx(row["value"], rel=1e-12), (q.id, n.name)
                    assert n.shown == row["shown"], (q.id, n.name)
                    seen.add((q.id, ref.field))
    assert ("design-01", "dram_read_bandwidth_bytes_per_s") in seen
    assert ("design-01", "bf16_tensor_matmul_flop_per_s") in seen
    assert ("perf-07", "dram_copy_bandwidth_bytes_per_s") in seen
    for qid, key in (("perf-07", "dram_copy_bandwidth_bytes_per_s"), ("design-01", "dram_read_bandwidth_bytes_per_s"),
                     ("design-01", "bf16_tensor_matmul_flop_per_s")):
        code, out, err = run_cli(["quiz", "--id", qid, "--show"], capsys)
        assert code == 0, err
        assert printed(key)["shown"] in flat(out), (qid, key)


def test_a_count_reads_the_same_in_every_command(capsys):
    """Scenario 13's 65,536 launches: one format (``fmt_count``) in coach run's evidence, the
    diagnosis, coach explain, coach diff, the exercise and the dashboard's walkthrough (they said
    65536, 65.54k and 6.554e+04)."""
    from coach.app.pages.scenario import evidence_table_card

    scenario = scenarios.find("13")
    count = {e["name"]: e for e in recordings.open_recording(scenario).results["evidence"]}["kernels"]["slow"]
    assert count == 65536
    slow = str(traces_dir() / "h200" / scenario.id / "slow" / "nsys")
    fixed = str(traces_dir() / "h200" / scenario.id / "fixed" / "nsys")
    shown = {}
    for name, argv in (("run", ["run", "13", "--no-interactive"]), ("diagnose", ["diagnose", slow]),
                       ("explain", ["explain", slow]), ("diff", ["diff", slow, fixed])):
        code, out, err = run_cli(argv, capsys)
        assert code == 0, err
        shown[name] = out
    shown["exercise"] = "\n".join(p.prompt + "\n" + p.explain for p in build(scenario, others=[]).points)
    shown["dashboard"] = str(evidence_table_card(from_scenario(scenario)))
    for name, text in shown.items():
        assert "65,536" in text, name
        for other in ("65536", "65.54k", "6.554e+04", "6.55e+04"):
            assert other not in text, (name, other)


@pytest.mark.parametrize("sid", ["04", "05", "15", "18"])
def test_a_share_reads_as_a_percentage_in_every_command(sid, capsys):
    """A share of the evidence (warp cycles on long scoreboard, copies from pageable memory) is printed
    as the percentage the narrative says ('88%'), not as '0.8809', in coach run, its --json unit, the
    exercise and the dashboard."""
    from coach.analyze.quantities import fmt_share
    from coach.app.pages.scenario import evidence_table_card

    scenario = scenarios.find(sid)
    share = next(e for e in scenario.evidence if e.name.endswith("_share"))
    item = {e["name"]: e for e in recordings.open_recording(scenario).results["evidence"]}[share.name]
    assert share.unit == "fraction" and 0.0 <= item["slow"] <= 1.0
    want = fmt_share(item["slow"])
    code, out, err = run_cli(["run", sid, "--no-interactive"], capsys)
    assert code == 0, err
    assert f"{share.label} {want} {fmt_share(item['fixed'])}" in flat(out)
    code, out, err = run_cli(["run", sid, "--json"], capsys)
    assert {e["name"]: e for e in json.loads(out)["evidence"]}[share.name]["unit"] == "fraction"
    meaning = build(scenario, others=[]).points[1].prompt
    assert f"{share.label}: {want} in the slow version" in meaning
    cells = re.findall(r"Td\(children='([^']*)'", str(evidence_table_card(from_scenario(scenario))))
    assert want in cells and f"{item['slow']:.4g}" not in cells, cells


@pytest.mark.parametrize("scenario", RECORDED, ids=lambda s: s.id)
def test_run_evidence_prints_no_raw_float(scenario, capsys):
    """Every value of coach run's evidence table is a count, a percentage or a number with at most
    four significant digits, never a float's raw digits or an exponent."""
    code, out, err = run_cli(["run", scenario.id, "--no-interactive"], capsys)
    assert code == 0, err
    evidence = out.split("Evidence (slow -> fixed")[1].split("Diagnosis of")[0]
    assert not re.search(r"\de[+-]?\d", evidence), evidence
    for number in re.findall(r"(?<![\w.])\d[\d,]*\.\d+", evidence):  # a decimal: at most four significant digits
        assert len(number.replace(",", "").replace(".", "").lstrip("0")) <= 4, (number, evidence)
