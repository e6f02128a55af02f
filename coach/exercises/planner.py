"""A day-by-day study plan over scenarios, version ladders, drills and interview questions, weighted
by the user's weak topics.

Each topic gets a weight from the user's recent scores in it (``coach.exercises.progress``): the
weaker the topic, the more of the plan's questions and drills go to it, and scenarios and ladders
that train it come first. Every day holds the same mix (``DAILY``), so a 3-day plan is a short
sprint and a 56-day plan walks through all the material several times, weakest topics most often.
Weights are spread over the days with smooth weighted round robin, so a weak topic recurs every few
days instead of filling one day.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl

from coach.exercises.bank import LEVELS, Bank, load_bank
from coach.exercises.drills import KIND_TOPICS
from coach.exercises.progress import WEAK_FRACTION, topic_strength
from coach.exercises.topics import BOTTLENECK_TOPICS, ladder_topic
from coach.paths import kernels_dir

#: Tasks per day and the minutes each takes: one scenario exercise, one ladder every other day, two
#: drills and four interview questions: about an hour and a quarter, a sustainable daily session.
DAILY = {"exercise": 1, "drill": 2, "quiz": 4}
LADDER_EVERY_DAYS = 2
MINUTES = {"exercise": 20, "ladder": 30, "drill": 5, "quiz": 6}
#: A topic never tried weighs as much as one answered at 30%: probably a gap, but less certain than a
#: topic the user has shown to be weak.
UNTRIED_WEIGHT = 0.7
#: Even a mastered topic keeps this weight, so it comes back for review in long plans.
MIN_WEIGHT = 0.1


@dataclass(frozen=True)
class Task:
    kind: str  # exercise, ladder, drill, quiz
    target: str  # scenario id, ladder name, drill kind, question id
    topic: str
    title: str
    command: str
    why: str
    minutes: int


@dataclass(frozen=True)
class Day:
    number: int
    tasks: tuple[Task, ...]

    @property
    def minutes(self) -> int:
        return sum(t.minutes for t in self.tasks)


@dataclass(frozen=True)
class Plan:
    days: tuple[Day, ...]
    weights: dict[str, float]  # topic -> weight used
    focus: tuple[str, ...]  # weak topics, weakest first
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"days": [{"day": d.number, "minutes": d.minutes, "tasks": [asdict(t) for t in d.tasks]} for d in self.days],
                "weights": self.weights, "focus": list(self.focus), "notes": list(self.notes)}


def topic_weights(attempts: pl.DataFrame, topics: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """Weight and a reason in words for every topic, from the user's recent scores."""
    weights, why = {}, {}
    for row in topic_strength(attempts, topics).iter_rows(named=True):
        t, recent = row["topic"], row["recent"]
        if recent is None:
            weights[t], why[t] = UNTRIED_WEIGHT, f"not tried yet: {t}"
        else:
            weights[t] = max(MIN_WEIGHT, 1.0 - recent)
            label = "weak topic" if recent < WEAK_FRACTION else "review"
            why[t] = f"{label}: {t} (recent {100 * recent:.0f}%)"
    return weights, why


def _round_robin(weights: dict[str, float], n: int) -> list[str]:
    """``n`` picks in proportion to the weights, spread out (smooth weighted round robin)."""
    current = dict.fromkeys(weights, 0.0)
    total = sum(weights.values())
    picks = []
    for _ in range(n):
        for k, w in weights.items():
            current[k] += w
        best = max(current, key=lambda k: current[k])  # ties: the first topic in bank order
        current[best] -= total
        picks.append(best)
    return picks


def make_plan(days: int, attempts: pl.DataFrame, *, bank: Bank | None = None, scenarios: list[Any] | None = None,
              ladders: list[str] | None = None) -> Plan:
    """The plan for ``days`` days given the user's ``attempts`` (``ProgressStore.attempts()``)."""
    bank = bank or load_bank()
    if scenarios is None:
        from coach.exercises.player import scenarios as all_scenarios

        scenarios = all_scenarios()
    ladders = available_ladders() if ladders is None else ladders
    topics = list(bank.topics)
    weights, why = topic_weights(attempts, topics)
    tried = attempts.group_by("item").agg(best=pl.col("fraction").max(), n=pl.len())
    best = dict(zip(tried["item"].to_list(), tried["best"].to_list()))

    def by_weakness(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """(target, topic) ordered: weakest topic first, then untried targets, then lowest best score."""
        return sorted(items, key=lambda it: (-weights[it[1]], it[0] in best, best.get(it[0], 0.0), it[0]))

    scenario_order = by_weakness([(s.id, BOTTLENECK_TOPICS[s.bottleneck]) for s in scenarios])
    titles = {s.id: s.title for s in scenarios}
    ladder_order = by_weakness([(name, ladder_topic(name)) for name in ladders])
    quiz_topics = _round_robin(weights, days * DAILY["quiz"])
    drill_weights = {k: weights[t] for k, t in KIND_TOPICS.items()}
    drill_kinds = _round_robin(drill_weights, days * DAILY["drill"])
    # within a topic: questions never tried first, easiest level first; then the lowest best scores
    questions = {t: sorted((q for q in bank.questions if q.topic == t),
                           key=lambda q: (q.id in best, best.get(q.id, 0.0), LEVELS.index(q.level), q.id))
                 for t in topics}
    asked = dict.fromkeys(topics, 0)

    plan_days = []
    for d in range(days):
        tasks = []
        if scenario_order:
            sid, topic = scenario_order[d % len(scenario_order)]
            tasks.append(Task("exercise", sid, topic, titles[sid], f"coach exercise {sid}", why[topic], MINUTES["exercise"]))
        if ladder_order and d % LADDER_EVERY_DAYS == 0:
            name, topic = ladder_order[(d // LADDER_EVERY_DAYS) % len(ladder_order)]
            tasks.append(Task("ladder", name, topic, f"version ladder: {name}", f"coach ladder {name}", why[topic],
                              MINUTES["ladder"]))
        for i, kind in enumerate(drill_kinds[d * DAILY["drill"]:(d + 1) * DAILY["drill"]]):
            seed = 100 * (d + 1) + i
            topic = KIND_TOPICS[kind]
            tasks.append(Task("drill", kind, topic, f"estimation drill: {kind}", f"coach drill --kind {kind} --seed {seed}",
                              why[topic], MINUTES["drill"]))
        for topic in quiz_topics[d * DAILY["quiz"]:(d + 1) * DAILY["quiz"]]:
            pool = questions[topic]
            q = pool[asked[topic] % len(pool)]
            asked[topic] += 1
            tasks.append(Task("quiz", q.id, topic, f"interview question ({q.level}): {_short(q.question)}",
                              f"coach quiz --id {q.id}", why[topic], MINUTES["quiz"]))
        plan_days.append(Day(d + 1, tuple(tasks)))
    focus = tuple(sorted((t for t in topics if why[t].startswith("weak topic")), key=lambda t: -weights[t]))
    notes = []
    if not scenarios:
        notes.append("no scenarios found: the plan has no exercises")
    if not ladders:
        notes.append("no version ladders found under kernels/: the plan has no ladders")
    return Plan(tuple(plan_days), weights, focus, tuple(notes))


def available_ladders() -> list[str]:
    """The version ladders: folders under kernels/ that hold rungs."""
    root = kernels_dir()
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))
                  and any(f.suffix in (".cu", ".py") for f in d.iterdir()))


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + "…"
