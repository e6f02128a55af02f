"""`coach plan`: curated plans of every length, weighted by weak topics."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import polars as pl
import pytest

from coach.exercises import planner
from coach.exercises.bank import load_bank
from coach.exercises.planner import DAILY, UNTRIED_WEIGHT, make_plan, topic_weights
from coach.exercises.player import scenarios
from coach.exercises.progress import ATTEMPT_SCHEMA
from coach.exercises.topics import BOTTLENECK_TOPICS


def attempts(scores: dict[str, float]) -> pl.DataFrame:
    """One quiz attempt per topic with the given fraction of the rubric."""
    rows = [{"uid": t, "at": f"2026-01-{i + 1:02d}", "kind": "quiz", "item": f"{t}-x", "topic": t, "score": 10 * f,
             "max_score": 10.0, "answer": "", "details": "{}"} for i, (t, f) in enumerate(scores.items())]
    return pl.DataFrame(rows, schema=ATTEMPT_SCHEMA).with_columns(fraction=pl.col("score") / pl.col("max_score"))


def strong_but(weak: dict[str, float]) -> pl.DataFrame:
    return attempts({t: 0.9 for t in load_bank().topics} | weak)


def test_weights_follow_recent_scores():
    topics = list(load_bank().topics)
    weights, why = topic_weights(attempts({"coalescing": 0.2, "atomics": 0.95}), topics)
    assert weights["coalescing"] == pytest.approx(0.8) and weights["atomics"] == pytest.approx(0.1)  # the floor
    assert weights["triton"] == UNTRIED_WEIGHT
    assert why["coalescing"] == "weak topic: coalescing (recent 20%)" and why["triton"] == "not tried yet: triton"


def test_curated_lengths_and_their_phases():
    plans = planner.curated_plans()
    assert sorted(plans) == [3, 7, 14, 28, 56]
    for n, p in plans.items():
        assert sum(ph.days for ph in p.phases) == n and p.title and p.summary
    # the order of a curated plan: fundamentals first, systems and a mock interview last
    assert plans[56].phases[0].topics == ("execution-model", "perf-model")
    assert plans[28].phases[-1].theme == "Mock interview" and plans[28].phases[-1].topics == ("*",)


def test_every_reading_task_of_every_plan_resolves():
    from coach.reference.glossary import load
    from coach.reference.quickref import sheet

    g = load()
    for n, p in planner.curated_plans().items():
        for ph in p.phases:
            for term in ph.glossary:
                assert g.resolve(term) is not None, (n, ph.theme, term)
            for ref in ph.ref:
                lang, section = ref.split(":")
                assert sheet(lang).section(section).id == section, (n, ref)


@pytest.mark.parametrize("days", [1, 2, 3, 5, 7, 10, 14, 21, 28, 40, 56, 90])
def test_every_length_has_the_daily_mix(days):
    plan = make_plan(days, attempts({}), ladders=["transpose", "reduction"])
    assert len(plan.days) == days and [d.number for d in plan.days] == list(range(1, days + 1))
    for day in plan.days:
        kinds = Counter(t.kind for t in day.tasks)
        assert kinds["exercise"] == 1 and kinds["drill"] == DAILY["drill"] and kinds["quiz"] == DAILY["quiz"]
        assert kinds["read"] >= 1
        assert kinds["ladder"] == (1 if day.number % 2 == 1 else 0)
        assert all(t.command.startswith("coach ") for t in day.tasks) and day.theme
    assert (plan.curated == days) == (days in (3, 7, 14, 28, 56))
    if days not in (3, 7, 14, 28, 56):
        assert f"no curated {days}-day plan" in plan.notes[0]


@pytest.mark.parametrize("days", [28, 56])
def test_a_long_plan_reaches_every_topic_and_scenario(days):
    plan = make_plan(days, attempts({}), ladders=["transpose", "reduction"])
    assert {t.topic for d in plan.days for t in d.tasks if t.kind == "quiz"} == set(load_bank().topics)
    assert {t.target for d in plan.days for t in d.tasks if t.kind == "exercise"} == {s.id for s in scenarios()}


def test_a_fitted_plan_follows_its_curated_plan_in_order():
    base, index, note = planner.phase_of_each_day(10)
    assert base.days == 14 and index == sorted(index) and index[0] == 0 and index[-1] == len(base.phases) - 1
    assert "fitted to 10 days" in note
    base, index, note = planner.phase_of_each_day(90)  # longer than any: the longest, stretched
    assert base.days == 56 and len(set(index)) == len(base.phases) and note.endswith("fitted to 90 days")


@pytest.mark.parametrize("days", [0, -3, 366])
def test_out_of_range_lengths_are_a_clear_error(days):
    with pytest.raises(planner.PlanError, match=f"--days: {days} is out of range; use 1 to 365"):
        make_plan(days, attempts({}))


def test_a_weak_topic_gets_more_practice_than_when_it_is_strong():
    def count(plan, topic):
        return sum(1 for d in plan.days for t in d.tasks if t.kind == "quiz" and t.topic == topic)

    for days in (7, 14, 28):
        weak = make_plan(days, strong_but({"coalescing": 0.1}), ladders=[])
        strong = make_plan(days, strong_but({}), ladders=[])
        assert count(weak, "coalescing") > count(strong, "coalescing"), days
        assert weak.focus == ("coalescing",)


def test_the_daily_any_topic_slot_goes_to_the_weakest_topics():
    plan = make_plan(14, strong_but({"streams": 0.1, "atomics": 0.3}), ladders=[])
    last = Counter(next(t.topic for t in reversed(d.tasks) if t.kind == "quiz") for d in plan.days)
    assert last.most_common(2)[0][0] == "streams" and last["streams"] > last["atomics"] > last["triton"]


def test_within_a_phase_the_weakest_topics_scenarios_come_first():
    # 14-day plan, days 3-4 are "Memory access: coalescing and shared memory"
    plan = make_plan(14, strong_but({"shared-memory": 0.1}), ladders=["softmax", "transpose"])
    memory_days = [d for d in plan.days if d.theme == "Memory access: coalescing and shared memory"]
    first = memory_days[0].tasks[0]
    bottleneck = next(s for s in scenarios() if s.id == first.target).bottleneck
    assert first.kind == "exercise" and BOTTLENECK_TOPICS[bottleneck] == "shared-memory"
    assert first.why == "weak topic: shared-memory (recent 10%)"
    ladder = next(t for d in memory_days for t in d.tasks if t.kind == "ladder")
    assert ladder.target == "transpose"  # it trains shared-memory


def test_cli_plan_json_and_text(tmp_path):
    env = {"COACH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": sys.path[0], "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "coach", "plan", "--days", "28", "--json"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert len(plan["days"]) == 28 and plan["focus"] == [] and plan["curated"] == 28 and plan["title"] == "Four weeks"
    assert plan["days"][0]["theme"] == "Execution model: warps, occupancy, latency"
    r = subprocess.run([sys.executable, "-m", "coach", "plan", "--days", "10"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith("10 days, fitted from the 14-day plan")
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    r = subprocess.run([sys.executable, "-m", "coach", "plan", "--days", "0"], capture_output=True, text=True, env=env)
    assert r.returncode != 0
    assert r.stderr.strip() == "coach: error: --days: 0 is out of range; use 1 to 365 (curated: 3, 7, 14, 28, 56)"
