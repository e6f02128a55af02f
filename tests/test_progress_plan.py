"""`coach plan`: a day-by-day plan weighted by weak topics."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import polars as pl
import pytest

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


def test_weights_follow_recent_scores():
    topics = list(load_bank().topics)
    weights, why = topic_weights(attempts({"coalescing": 0.2, "atomics": 0.95}), topics)
    assert weights["coalescing"] == pytest.approx(0.8) and weights["atomics"] == pytest.approx(0.1)  # the floor
    assert weights["triton"] == UNTRIED_WEIGHT
    assert why["coalescing"] == "weak topic: coalescing (recent 20%)" and why["triton"] == "not tried yet: triton"


@pytest.mark.parametrize("days", [3, 7, 14, 56])
def test_every_day_has_the_daily_mix(days):
    plan = make_plan(days, attempts({}), ladders=["transpose", "reduction"])
    assert len(plan.days) == days
    for day in plan.days:
        kinds = Counter(t.kind for t in day.tasks)
        assert kinds["exercise"] == 1 and kinds["drill"] == DAILY["drill"] and kinds["quiz"] == DAILY["quiz"]
        assert kinds["ladder"] == (1 if day.number % 2 == 1 else 0)
        assert all(t.command.startswith("coach ") for t in day.tasks)
    if days == 56:  # a long plan reaches every question topic and every scenario
        assert {t.topic for d in plan.days for t in d.tasks if t.kind == "quiz"} == set(load_bank().topics)
        assert {t.target for d in plan.days for t in d.tasks if t.kind == "exercise"} == {s.id for s in scenarios()}


def test_weak_topics_get_more_practice_and_come_first():
    scores = {t: 0.9 for t in load_bank().topics} | {"coalescing": 0.1, "streams": 0.3, "shared-memory": 0.5}
    plan = make_plan(14, attempts(scores), ladders=["softmax", "transpose"])
    assert plan.focus == ("coalescing", "streams", "shared-memory")
    quiz = Counter(t.topic for d in plan.days for t in d.tasks if t.kind == "quiz")
    assert quiz["coalescing"] > quiz["streams"] > quiz["triton"]
    assert plan.days[0].tasks[0].target == "scenario-01"  # its bottleneck belongs to coalescing, the weakest
    assert plan.days[0].tasks[0].why == "weak topic: coalescing (recent 10%)"
    # then the other scenarios of the weakest topics, in id order within a topic

    def of(topic):
        return sorted(s.id for s in scenarios() if BOTTLENECK_TOPICS[s.bottleneck] == topic)

    weakest_first = of("coalescing") + of("streams")
    assert [d.tasks[0].target for d in plan.days[:len(weakest_first)]] == weakest_first
    ladders = [t.target for d in plan.days for t in d.tasks if t.kind == "ladder"]
    assert ladders[:2] == ["transpose", "softmax"]  # transpose trains shared-memory (weight 0.5), softmax perf-model (0.1)


def test_cli_plan_json(tmp_path):
    env = {"COACH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": sys.path[0]}
    r = subprocess.run([sys.executable, "-m", "coach", "plan", "--days", "7", "--json"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert len(plan["days"]) == 7 and plan["focus"] == []
    assert plan["days"][0]["tasks"][0]["command"] == "coach exercise scenario-01"
