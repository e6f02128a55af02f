"""The scenario format: the pilot scenarios load and agree with coach's schemas; every kind of bad
field is refused with one line naming the file and the field."""

from __future__ import annotations

import ast
import re
import shutil

import pytest
from test_capture_support import FAKE_SCENARIO

from coach import best_rates, model, scenarios
from coach.analyze.findings import Bottleneck
from coach.errors import CoachError, InputError
from coach.recordings import placeholder_values

# Ceilings recorded on the H200 by coach.capture.calibrate (hardware/measured/h200.json), which the
# scenarios' models name with "measured:<measurement>".
COPY_BPS = 4.191160650465186e12
BF16_FLOPS = 683.0011648876456e12



def test_pilot_scenarios():
    found = scenarios.all_scenarios()
    ids = [s.id for s in found]
    assert ids == sorted(ids) and {"scenario-01", "scenario-15"} <= set(ids)
    s01, s15 = scenarios.find("1"), scenarios.find("scenario-15-pageable-copies")
    assert (s01.slug, s01.tool, s01.bottleneck, s01.first_rule) == ("aos-particles", "ncu",
                                                                    Bottleneck.MEMORY_ACCESS, "uncoalesced-global-access")
    assert (s15.slug, s15.tool, s15.bottleneck, s15.first_rule) == ("pageable-copies", "nsys", Bottleneck.PAGEABLE,
                                                                    "pageable-memcpy")
    assert s01.programs["slow"].argv("python")[1:] == [str(s01.folder / "particles.py"), "--variant", "slow"]
    assert (s01.profile.ncu, s01.profile.ncu_kernel, s01.profile.ncu_launch_count, s01.profile.keep_ncu_rep) == \
        (True, "drift_x", 1, ("slow", "fixed"))
    assert (s15.profile.nsys, s15.profile.ncu) == (True, False)
    # the bytes model: n = 3 * 2^27 particles, 12 useful bytes each; the slow layout moves 36
    m = s01.model
    assert m.sizes["n"] == 402653184 and isinstance(m.sizes["n"], int)
    assert m.value(m.useful_bytes) == 4831838208
    assert m.value(m.moved_bytes["slow"]) == 14495514624
    # the measured ceiling: the calibration, raised to the best rate recorded on the H200 (coach.best_rates)
    assert m.bytes_per_s == best_rates.ceiling_for("h200", "dram_copy_bandwidth_bytes_per_s", COPY_BPS)[0] >= COPY_BPS
    assert m.floor_s() == pytest.approx(4831838208 / m.bytes_per_s)
    # scenario 15 is bound by arithmetic once the copy overlaps: 4.4 TFLOP per step against 0.27 GB
    m = s15.model
    assert m.value(m.flops) == 2 * 8192**3 * 4
    assert m.flop_per_s == best_rates.ceiling_for("h200", "bf16_tensor_matmul_flop_per_s", BF16_FLOPS)[0] >= BF16_FLOPS
    assert m.floor_s() == pytest.approx(2 * 8192**3 * 4 / m.flop_per_s)


@pytest.mark.parametrize("scenario", scenarios.all_scenarios(), ids=lambda s: s.id)
def test_evidence_names_canonical_columns(scenario):
    schemas = {**model.KERNEL_PROFILE_TABLES, **model.TIMELINE_TABLES}
    for e in scenario.evidence:
        columns = schemas[e.table]
        for col in (e.metric, e.per, *(k for k, _ in e.where)):
            assert col is None or col in columns, f"{scenario.id} evidence {e.name}: {col} not in {e.table}"
        if e.kernel:
            assert scenarios.NAME_COLUMNS[e.table] in columns


def reported_fields(script) -> set[str]:
    """The fields a scenario program may report beside its times: the keyword arguments of its
    harness.emit call and the keys of the dicts it builds (the extras it passes on)."""
    tree = ast.parse(script.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "emit":
            names |= {k.arg for k in node.keywords if k.arg}
        elif isinstance(node, ast.Dict):
            names |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            names.add(node.slice.value)  # extra["partition_ms"] = ...
    return names


@pytest.mark.parametrize("scenario", scenarios.all_scenarios(), ids=lambda s: s.id)
def test_every_placeholder_has_a_value(scenario):
    """Each {name} in the scenario's text and narrative is one that a recording fills: from the
    times, the evidence, the model, and the numbers the program reports (read from its source)."""
    reported = {v: {name: 1.0 for name in reported_fields(scenario.programs[v].script)} for v in ("slow", "fixed")}
    fake = {"gpu": "NVIDIA H200", "recorded_at": "2026-12-01T00:00:00+00:00",
            "variants": {"slow": {**reported["slow"], "median_ms": 2.0},
                         "fixed": {**reported["fixed"], "median_ms": 1.0}},
            "evidence": [{"name": e.name, "slow": 1.0, "fixed": 1.0} for e in scenario.evidence]}
    known = set(placeholder_values(scenario, fake))
    texts = [scenario.symptom, scenario.question, scenario.fix.summary, scenario.fix.details, scenario.fix.wrong_fix,
             *scenario.hints, *scenario.rubric.strong, *scenario.rubric.red_flags]
    if scenario.narrative_path.exists():
        texts.append(scenario.narrative_path.read_text())
    used = set().union(*(scenarios.placeholders(t) for t in texts))
    assert used - known == set()
    assert scenario.narrative_path.is_file()


def test_find_and_ids():
    for ident in ("1", "01", "scenario-01", "scenario-01-aos-particles"):
        assert scenarios.find(ident).id == "scenario-01"
    known = ", ".join(s.id for s in scenarios.all_scenarios())
    assert known.startswith("scenario-01, ")
    with pytest.raises(CoachError, match=rf"^unknown scenario 'scenario-99'; known scenarios: {known}$"):
        scenarios.find("99")
    with pytest.raises(CoachError, match="is not a scenario id"):
        scenarios.normalise_id("seven")
    assert scenarios.parse_only("01, 2,scenario-15,") == ["scenario-01", "scenario-02", "scenario-15"]


def test_render():
    values = {"slow_ms": 3.4567, "n": 402653184, "missing": None}
    assert scenarios.render("{slow_ms:.2f} ms for {n:,} items", values) == "3.46 ms for 402,653,184 items"
    assert scenarios.render("{unknown} and {missing:.1f} stay; { int i = 0; }", values) == \
        "{unknown} and {missing:.1f} stay; { int i = 0; }"
    assert scenarios.placeholders("{a} {b:.2f} {c d}") == {"a", "b"}


def test_evaluate():
    sizes = {"n": 1024, "b": 4}
    assert scenarios.evaluate("3 * n * b + max(n, 2) // 2 - 2 ** 3", sizes) == 3 * 1024 * 4 + 512 - 8
    for expr, message in [("n * m", "'m', which is not a named size"), ("n / 0", "divides by zero"),
                          ("__import__('os')", "may use only numbers"), ("n *", "is not an arithmetic expression"),
                          ("n.real", "may use only numbers"), ("True + 1", "may use only numbers")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            scenarios.evaluate(expr, sizes)


# --------------------------------------------------------------------------------------------
# Bad files: each case changes the valid fake scenario in one place
# --------------------------------------------------------------------------------------------

BAD = [
    ('title = "A fake', 'titel = "A fake', "field 'title': is missing"),
    ('level = "beginner"', 'level = "expert"', "field 'level': 'expert' is not one of beginner, intermediate, advanced"),
    ('tool = "ncu"', 'tool = "perf"', "field 'tool': 'perf' is not one of ncu, nsys, kineto"),
    ('tool = "ncu"', 'tool = "ncu"\ncolour = "blue"', "field 'colour': is not a known field"),
    ('symptom = "It takes {slow_ms:.1f} ms."', "symptom = 3", "field 'symptom': must be text, not an integer (3)"),
    ('question = "What would you check first?"', 'question = "  "', "field 'question': is empty"),
    ('id = "scenario-99"', 'id = "scenario-98"', "field 'id': 'scenario-98' does not match the folder name"),
    ('bottleneck = "memory-access-pattern"', 'bottleneck = "slow-memory"',
     "field 'expected.bottleneck': 'slow-memory' is not a bottleneck class (one of dram-bandwidth"),
    ('first_rule = "uncoalesced-global-access"', 'first_rule = "Uncoalesced Access"',
     "field 'expected.first_rule': 'Uncoalesced Access' is not a rule id"),
    ("min_speedup = 1.5", "min_speedup = 0.5", "field 'expected.min_speedup': must be at least 1, not 0.5"),
    ("min_speedup = 1.5", 'min_speedup = "2x"', "field 'expected.min_speedup': must be a number, not text ('2x')"),
    ('strong = ["Checks sectors per request."]', "strong = []", "field 'rubric.strong': is an empty list"),
    ('red_flags = ["Raises occupancy."]', 'red_flags = ["ok", 3]', "field 'rubric.red_flags[1]': must be non-empty text"),
    ('table = "launches"', 'table = "sectors"', "field 'evidence[0].table': 'sectors' is not one of launches, kernels"),
    ('direction = "down"', 'direction = "sideways"', "field 'evidence[0].direction': 'sideways' is not one of down"),
    ("slow_range = [16.0, 32.0]", "slow_range = [32.0, 16.0]",
     "field 'evidence[0].slow_range': must be [low, high] with low <= high, not [32.0, 16.0]"),
    ('kernel = "copy"\nmetric', 'kernel = "copy("\nmetric', "field 'evidence[0].kernel': is not a regular expression"),
    ('table = "launches"\nkernel = "copy"', 'table = "memcpy"\nkernel = "copy"',
     "field 'evidence[0].kernel': cannot filter the memcpy table by name"),
    ('name = "sectors_per_request"', 'name = "Sectors per request"',
     "field 'evidence[0].name': 'Sectors per request' is not a valid name"),
    ("[[evidence]]", "[evidence]", "field 'evidence': must be an array of tables ([[...]]), not a table"),
    ('useful_bytes = "8 * n"', 'useful_bytes = "8 * m"', "field 'model.useful_bytes': '8 * m' uses 'm', which is not a named size"),
    ('useful_bytes = "8 * n"', "useful_bytes = \"open('x')\"", "field 'model.useful_bytes': 'open('x')' may use only numbers"),
    ('slow = "36 * n"', 'slower = "36 * n"', "field 'model.moved_bytes.slower': is not a variant (one of slow, fixed)"),
    ("sizes = { n = 1024 }", "sizes = { n = -1 }", "field 'model.sizes.n': must be at least 0, not -1"),
    ('bound = "dram"', 'bound = "disk"', "field 'model.bound': 'disk' is not one of dram, pcie, compute"),
    ('ceiling_source = "a round number for the tests"\n', "", "field 'model.ceiling_source': is missing"),
    ('script = "prog.py"\nargs = ["--variant", "slow"]', 'script = "missing.py"\nargs = ["--variant", "slow"]',
     "field 'programs.slow.script': 'missing.py' does not exist in scenario-99-fake"),
    ('script = "prog.py"\nargs = ["--variant", "fixed"]', 'script = "../prog.py"\nargs = ["--variant", "fixed"]',
     "field 'programs.fixed.script': '../prog.py' must be a .py file inside the scenario folder"),
    ('ncu_kernel = "copy"\n', "", "field 'profile.ncu_kernel': is missing (profile only the scenario's kernels"),
    ("ncu = true\nnsys = true", "ncu = false\nnsys = true", "field 'profile.ncu': must be true: the scenario's tool is ncu"),
    ("timeout_s = 60", "timeout_s = 0", "field 'profile.timeout_s': must be at least 1, not 0"),
    ("timeout_s = 60", 'keep_ncu_rep = ["faster"]', "field 'profile.keep_ncu_rep': 'faster' is not a variant"),
    ("timeout_s = 60", "ncu_launch_count = { slow = 4 }", "field 'profile.ncu_launch_count.fixed': is missing"),
    ("timeout_s = 60", "ncu_launch_count = { slow = 4, fixed = 0 }",
     "field 'profile.ncu_launch_count.fixed': must be at least 1, not 0"),
    ("timeout_s = 60", "ncu_launch_count = { slow = 4, fixed = 1, faster = 1 }",
     "field 'profile.ncu_launch_count.faster': is not a known field"),
    ("min_speedup = 1.5", "min_speedup = 1.5\nunit = 3", "field 'expected.unit': must be text, not an integer (3)"),
    ("ncu = true\nnsys = true", "ncu = true\nnsys = false\nnsys_timed_only = true",
     "field 'profile.nsys_timed_only': is true, but nsys is false"),
    ("hints = [", "hint = [", "field 'hints': is missing"),
]


@pytest.mark.parametrize("old, new, message", BAD, ids=[b[2].split(":")[0] for b in BAD])
def test_bad_field(tmp_path, old, new, message):
    folder = tmp_path / "scenario-99-fake"
    folder.mkdir()
    (folder / "prog.py").write_text("")
    assert FAKE_SCENARIO.count(old) >= 1, old
    (folder / "scenario.toml").write_text(FAKE_SCENARIO.replace(old, new, 1))
    with pytest.raises(InputError) as exc:
        scenarios.load(folder)
    text = str(exc.value)
    assert text.startswith(f"{folder / 'scenario.toml'}: ")
    assert message in text
    assert "\n" not in text


def test_good_fake_scenario_loads(tmp_path):
    folder = tmp_path / "scenario-99-fake"
    folder.mkdir()
    (folder / "prog.py").write_text("")
    (folder / "scenario.toml").write_text(FAKE_SCENARIO)
    s = scenarios.load(folder / "scenario.toml")
    assert (s.id, s.number, s.slug, s.min_speedup) == ("scenario-99", 99, "fake", 1.5)
    assert s.evidence[0].slow_range == (16.0, 32.0) and s.evidence[0].agg == "sum"
    assert s.profile.ncu_set == "full" and s.profile.timeout_s == 60.0 and s.profile.nsys_timed_only is False


def test_launch_counts_per_variant_and_the_unit(tmp_path):
    folder = tmp_path / "scenario-99-fake"
    folder.mkdir()
    (folder / "prog.py").write_text("")
    text = FAKE_SCENARIO.replace("timeout_s = 60", "timeout_s = 60\nncu_launch_count = { slow = 4, fixed = 1 }")
    (folder / "scenario.toml").write_text(text.replace("min_speedup = 1.5", 'min_speedup = 1.5\nunit = "token"'))
    s = scenarios.load(folder)
    assert (s.profile.launch_count("slow"), s.profile.launch_count("fixed"), s.unit) == (4, 1, "token")
    assert scenarios.find("1").profile.launch_count("fixed") == 1 and scenarios.find("1").unit is None


def test_other_bad_files(tmp_path):
    folder = tmp_path / "scenario-99-fake"
    folder.mkdir()
    with pytest.raises(InputError, match="scenario.toml: is missing"):
        scenarios.load(folder)
    (folder / "scenario.toml").write_text('id = "scenario-99"\ntitle = "unterminated')
    with pytest.raises(InputError, match="scenario.toml: is not valid TOML"):
        scenarios.load(folder)
    odd = tmp_path / "Scenario_99"
    shutil.copytree(folder, odd)
    (odd / "scenario.toml").write_text(FAKE_SCENARIO)
    with pytest.raises(InputError, match="is not named scenario-NN-<slug>"):
        scenarios.load(odd)
