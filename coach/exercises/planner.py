"""Curated day-by-day preparation plans over scenarios, version ladders, drills, interview questions
and the reference material, weighted by the user's weak topics.

The plans are data: ``data/plans.toml`` holds one curated plan per length offered (3, 7, 14, 28 and
56 days), each a sequence of themed phases (the execution model before the tensor cores, systems
and a mock interview at the end). Every day holds the same mix (``DAILY``): one scenario exercise,
a version ladder every other day, something to read (a glossary term, a quick-reference section or
the numbers sheet), two drills and four interview questions.

Weak topics weigh in two ways. Each topic gets a weight from the user's recent scores in it
(``coach.exercises.progress``): within a phase, the phase's weaker topics get more of its questions
and drills and their scenarios and ladders come first; and one question and one drill a day come
from all topics, weakest first, so a weak topic recurs whatever the week's theme. Picks are spread
with smooth weighted round robin, so a topic recurs every few days instead of filling one.

A length with no curated plan gets the curated plan of the next longer length (or the longest)
fitted to its days: each day takes the phase at the same relative position, and the plan says so.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from coach.errors import CoachError, InputError
from coach.exercises.bank import LEVELS, Bank, load_bank
from coach.exercises.drills import KIND_TOPICS
from coach.exercises.progress import WEAK_FRACTION, topic_strength
from coach.exercises.topics import BOTTLENECK_TOPICS, ladder_topic
from coach.paths import kernels_dir

PLANS = Path(__file__).resolve().parent / "data" / "plans.toml"
#: Tasks per day and the minutes each takes: one scenario exercise, one ladder every other day, one
#: thing to read, two drills and four interview questions: about an hour and a half, a sustainable
#: daily session.
DAILY = {"exercise": 1, "read": 1, "drill": 2, "quiz": 4}
LADDER_EVERY_DAYS = 2
MINUTES = {"exercise": 20, "ladder": 30, "read": 10, "drill": 5, "quiz": 6}
#: Of the day's questions and drills, this many come from all topics (weakest first) rather than
#: from the phase's theme.
QUIZ_ANY_TOPIC = 1
DRILL_ANY_TOPIC = 1
#: A topic never tried weighs as much as one answered at 30%: probably a gap, but less certain than a
#: topic the user has shown to be weak.
UNTRIED_WEIGHT = 0.7
#: Even a mastered topic keeps this weight, so it comes back for review in long plans.
MIN_WEIGHT = 0.1
#: The longest plan made: a year of daily practice.
MAX_DAYS = 365
ALL_TOPICS = "*"


class PlanError(CoachError):
    """A plan that cannot be made (a length out of range)."""


@dataclass(frozen=True)
class Task:
    kind: str  # exercise, ladder, read, drill, quiz
    target: str  # scenario id, ladder name, glossary term / ref section / numbers, drill kind, question id
    topic: str
    title: str
    command: str
    why: str
    minutes: int


@dataclass(frozen=True)
class Day:
    number: int
    tasks: tuple[Task, ...]
    theme: str = ""
    phase: int = 0  # index of the phase in the plan

    @property
    def minutes(self) -> int:
        return sum(t.minutes for t in self.tasks)


@dataclass(frozen=True)
class Plan:
    days: tuple[Day, ...]
    weights: dict[str, float]  # topic -> weight used
    focus: tuple[str, ...]  # weak topics, weakest first
    notes: tuple[str, ...] = field(default=())
    title: str = ""
    curated: int = 0  # the curated plan's length it follows (== len(days) when curated for this length)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "curated": self.curated,
                "days": [{"day": d.number, "theme": d.theme, "phase": d.phase, "minutes": d.minutes,
                          "tasks": [asdict(t) for t in d.tasks]} for d in self.days],
                "weights": self.weights, "focus": list(self.focus), "notes": list(self.notes)}


# --------------------------------------------------------------------------------------------
# The curated plans
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    days: int
    theme: str
    topics: tuple[str, ...]
    glossary: tuple[str, ...] = ()
    ref: tuple[str, ...] = ()  # "cuda:ID" / "triton:ID"
    numbers: bool = False


@dataclass(frozen=True)
class Curated:
    days: int
    title: str
    summary: str
    phases: tuple[Phase, ...]


@lru_cache(maxsize=4)
def curated_plans(path: Path = PLANS) -> dict[int, Curated]:
    """The curated plans by length, checked: phases add up to the length, fields are of the right kind."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(path, "missing") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(path, f"not valid TOML: {err}") from None
    plans: dict[int, Curated] = {}
    for key, p in raw.get("plans", {}).items():
        if not key.isdigit():
            raise InputError(path, f"plan '{key}': the key is the plan's length in days")
        phases = []
        for i, ph in enumerate(p.get("phases", []), 1):
            if unknown := set(ph) - {"days", "theme", "topics", "glossary", "ref", "numbers"}:
                raise InputError(path, f"plan {key}, phase {i}: unknown keys {sorted(unknown)}")
            if not isinstance(ph.get("days"), int) or ph["days"] < 1 or not ph.get("theme") or not ph.get("topics"):
                raise InputError(path, f"plan {key}, phase {i}: needs days >= 1, a theme and topics")
            for r in ph.get("ref", ()):
                if r.split(":")[0] not in ("cuda", "triton") or ":" not in r:
                    raise InputError(path, f"plan {key}, phase {i}: ref '{r}' is not cuda:ID or triton:ID")
            phases.append(Phase(ph["days"], ph["theme"], tuple(ph["topics"]), tuple(ph.get("glossary", ())),
                                tuple(ph.get("ref", ())), bool(ph.get("numbers", False))))
        total = sum(ph.days for ph in phases)
        if total != int(key):
            raise InputError(path, f"plan {key}: its phases add up to {total} days")
        plans[int(key)] = Curated(int(key), p.get("title", f"{key} days"), p.get("summary", ""), tuple(phases))
    if not plans:
        raise InputError(path, "no [plans.N] tables")
    return plans


def plan_lengths() -> tuple[int, ...]:
    """The lengths with a curated plan."""
    return tuple(sorted(curated_plans()))


def phase_of_each_day(days: int) -> tuple[Curated, list[int], str]:
    """The curated plan a ``days``-day plan follows, the phase index of each day, and a note when
    the plan is fitted rather than curated for this length."""
    if not 1 <= days <= MAX_DAYS:
        raise PlanError(f"--days: {days} is out of range; use 1 to {MAX_DAYS} (curated: "
                        f"{', '.join(map(str, plan_lengths()))})")
    plans = curated_plans()
    longer = [n for n in sorted(plans) if n >= days]
    base = plans[longer[0] if longer else max(plans)]
    starts = []
    for i, ph in enumerate(base.phases):
        starts += [i] * ph.days
    index = [starts[int((d + 0.5) * base.days / days)] for d in range(days)]
    note = ""
    if base.days != days:
        skipped = len(base.phases) - len(set(index))
        note = (f"no curated {days}-day plan: the {base.days}-day plan's phases fitted to {days} "
                f"day{'s' if days > 1 else ''}"
                + (f" ({skipped} of its phases left out)" if skipped else ""))
    return base, index, note


# --------------------------------------------------------------------------------------------
# Weights and picking
# --------------------------------------------------------------------------------------------


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


class RoundRobin:
    """Picks in proportion to the weights, spread out (smooth weighted round robin); it keeps its
    state, so consecutive days continue the same sequence."""

    def __init__(self, weights: dict[str, float]):
        self.weights = dict(weights)
        self.current = dict.fromkeys(weights, 0.0)
        self.total = sum(weights.values())

    def pick(self) -> str:
        for k, w in self.weights.items():
            self.current[k] += w
        best = max(self.current, key=lambda k: self.current[k])  # ties: the first key in order
        self.current[best] -= self.total
        return best


def _round_robin(weights: dict[str, float], n: int) -> list[str]:
    rr = RoundRobin(weights)
    return [rr.pick() for _ in range(n)]


class Queue:
    """Targets to visit, the phase's own first (weakest topic first), then any not yet planned, so
    that a long plan reaches every scenario and ladder; starts over once all have been planned."""

    def __init__(self, ordered: list[tuple[str, str]]):
        self.ordered = ordered  # (target, topic), weakest topic first
        self.planned: set[str] = set()

    def next(self, topics: set[str]) -> tuple[str, str] | None:
        if not self.ordered:
            return None
        if len(self.planned) == len(self.ordered):
            self.planned.clear()
        fresh = [it for it in self.ordered if it[0] not in self.planned]
        pick = next((it for it in fresh if it[1] in topics), fresh[0])
        self.planned.add(pick[0])
        return pick


def _quote(arg: str) -> str:
    return f'"{arg}"' if " " in arg or "'" in arg else arg


# --------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------


def make_plan(days: int, attempts: pl.DataFrame, *, bank: Bank | None = None, scenarios: list[Any] | None = None,
              ladders: list[str] | None = None) -> Plan:
    """The plan for ``days`` days given the user's ``attempts`` (``ProgressStore.attempts()``)."""
    base, phase_index, fit_note = phase_of_each_day(days)
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
        return sorted(items, key=lambda it: (-weights.get(it[1], 0.0), it[0] in best, best.get(it[0], 0.0), it[0]))

    scenario_queue = Queue(by_weakness([(s.id, BOTTLENECK_TOPICS[s.bottleneck]) for s in scenarios]))
    titles = {s.id: s.title for s in scenarios}
    ladder_queue = Queue(by_weakness([(name, ladder_topic(name)) for name in ladders]))
    # within a topic: questions never tried first, easiest level first; then the lowest best scores
    questions = {t: sorted((q for q in bank.questions if q.topic == t),
                           key=lambda q: (q.id in best, best.get(q.id, 0.0), LEVELS.index(q.level), q.id))
                 for t in topics}
    asked = dict.fromkeys(topics, 0)
    any_quiz = RoundRobin(weights)
    any_drill = RoundRobin({k: weights.get(t, MIN_WEIGHT) for k, t in KIND_TOPICS.items()})

    missing_topics: set[str] = set()
    phase_state: dict[int, dict[str, Any]] = {}

    def state(i: int) -> dict[str, Any]:
        """The phase's topics, weights, round robins and reading list, made at its first day."""
        if i not in phase_state:
            ph = base.phases[i]
            listed = topics if ALL_TOPICS in ph.topics else [t for t in ph.topics if t in weights]
            missing_topics.update(t for t in ph.topics if t != ALL_TOPICS and t not in weights)
            listed = listed or topics
            kinds = {k: weights[t] for k, t in KIND_TOPICS.items() if t in listed}
            reading: list[tuple[str, str]] = []
            for j in range(max(len(ph.glossary), len(ph.ref))):
                if j < len(ph.glossary):
                    reading.append(("glossary", ph.glossary[j]))
                if j < len(ph.ref):
                    reading.append(("ref", ph.ref[j]))
            phase_state[i] = {"topics": set(listed), "quiz": RoundRobin({t: weights[t] for t in listed}),
                              "drill": RoundRobin(kinds) if kinds else None, "reading": reading, "day": 0,
                              "read": 0, "topic": listed[0]}
        return phase_state[i]

    plan_days = []
    for d in range(days):
        i = phase_index[d]
        ph, st = base.phases[i], state(phase_index[d])
        theme_why = f"theme: {ph.theme}"
        tasks = []
        pick = scenario_queue.next(st["topics"])
        if pick:
            sid, topic = pick
            tasks.append(Task("exercise", sid, topic, titles[sid], f"coach exercise {sid}", why[topic], MINUTES["exercise"]))
        if ladders and d % LADDER_EVERY_DAYS == 0:
            name, topic = ladder_queue.next(st["topics"])  # type: ignore[misc]
            tasks.append(Task("ladder", name, topic, f"version ladder: {name}", f"coach ladder {name}", why[topic],
                              MINUTES["ladder"]))
        tasks += _reading(ph, st, theme_why)
        kinds_today: list[str] = []
        for j in range(DAILY["drill"]):
            from_any = j >= DAILY["drill"] - DRILL_ANY_TOPIC or st["drill"] is None
            kind = any_drill.pick() if from_any else st["drill"].pick()
            if kind in kinds_today and from_any:  # two of one kind in a day: take the next in line
                kind = any_drill.pick()
            kinds_today.append(kind)
            topic = KIND_TOPICS[kind]
            seed = 100 * (d + 1) + j
            tasks.append(Task("drill", kind, topic, f"estimation drill: {kind}", f"coach drill --kind {kind} --seed {seed}",
                              why[topic] if topic in why else theme_why, MINUTES["drill"]))
        for j in range(DAILY["quiz"]):
            topic = any_quiz.pick() if j >= DAILY["quiz"] - QUIZ_ANY_TOPIC else st["quiz"].pick()
            pool = questions[topic]
            if not pool:
                continue
            q = pool[asked[topic] % len(pool)]
            asked[topic] += 1
            tasks.append(Task("quiz", q.id, topic, f"interview question ({q.level}): {_short(q.question)}",
                              f"coach quiz --id {q.id}", why[topic], MINUTES["quiz"]))
        st["day"] += 1
        plan_days.append(Day(d + 1, tuple(tasks), ph.theme, i))
    focus = tuple(sorted((t for t in topics if why[t].startswith("weak topic")), key=lambda t: -weights[t]))
    notes = [fit_note] if fit_note else []
    if missing_topics:
        notes.append(f"topics the question bank does not have yet, skipped: {', '.join(sorted(missing_topics))}")
    if not scenarios:
        notes.append("no scenarios found: the plan has no exercises")
    if not ladders:
        notes.append("no version ladders found under kernels/: the plan has no ladders")
    title = base.title if base.days == days else f"{days} day{'s' if days > 1 else ''}, fitted from the {base.days}-day plan"
    return Plan(tuple(plan_days), weights, focus, tuple(notes), title, base.days)


def _reading(ph: Phase, st: dict[str, Any], why: str) -> list[Task]:
    """The day's reading: the numbers sheet on the phase's first day where it asks for it, then the
    next glossary term or quick-reference section of the phase in turn."""
    out = []
    if ph.numbers and st["day"] == 0:
        out.append(Task("read", "numbers", "perf-model", "the numbers to carry into the room", "coach numbers", why,
                        MINUTES["read"]))
    reading = st["reading"]
    if reading and not out:
        kind, target = reading[st["read"] % len(reading)]
        st["read"] += 1
        if kind == "glossary":
            out.append(Task("read", f"glossary:{target}", st["topic"], f"glossary: {target}",
                            f"coach glossary {_quote(target)}", why, MINUTES["read"]))
        else:
            lang, section = target.split(":", 1)
            out.append(Task("read", f"ref:{target}", st["topic"], f"{lang} quick reference: {section}",
                            f"coach ref {lang} {section}", why, MINUTES["read"]))
    if not out:  # a phase with nothing listed reads the numbers sheet
        out.append(Task("read", "numbers", "perf-model", "the numbers to carry into the room", "coach numbers", why,
                        MINUTES["read"]))
    return out


def available_ladders() -> list[str]:
    """The version ladders: folders under kernels/ that hold rungs."""
    root = kernels_dir()
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))
                  and any(f.suffix in (".cu", ".py") for f in d.iterdir()))


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + "…"
