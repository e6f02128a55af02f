"""Guided exercises: a scenario played as the decisions a performance engineer makes.

Every scenario gets an exercise built from its metadata alone, so a new scenario is playable the
moment it exists. The generic decision points are

1. **look-first**: where to look first, the scenario's own question (Nsight Compute on the slow
   kernel, or the Nsight Systems timeline, by the scenario's primary tool);
2. **meaning**: what the evidence says: which bottleneck class its metrics point to;
3. **fix**: which fix, against the scenario's plausible wrong fix and other scenarios' fixes;
4. **gain**: what speed-up to expect: keyed to the band that holds the recorded speed-up, explained
   by the planted fix's gain model (``coach.analyze.gain``) and, where that lands in another band,
   why the simple model misses; for a scenario about measurement, what the kernel really takes.

Each point has choices (a, b, c, ...) and room for a free-text answer. The free text of all points
is graded together against the scenario's rubric (``coach.exercises.rubric``); a choice is one point.
An exercise file (``exercise.toml`` in the scenario's folder, or
``coach/exercises/data/scenarios/<scenario-id>.toml``) may add decision points and map rubric lines
to bank concepts::

    [[rubric]]                      # a rubric line, by its first words, and the bank concepts it means
    line = "Checks sectors per request"
    concepts = ["sectors-per-request", "ncu-access-pattern"]

    fix_distractors = ["...", "..."]  # wrong fixes to offer instead of the scenario's wrong_fix

    [[decision]]
    prompt = "Nsight Compute reports 32 sectors per request. What would 4 mean?"
    choices = ["a fully coalesced warp of 4-byte loads", "a bank conflict", "4 warps per SM"]
    correct = "a"
    explain = "32 lanes x 4 B = 128 B = four 32-byte sectors."
    signals = ["warp-request-128b"]
    red_flags = ["rf-conflicts-in-global"]

An answer is text; "b: because ..." (or "b) ...", "b. ...", or just "b") picks a choice and adds text.
"""

from __future__ import annotations

import math
import random
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from coach.analyze.findings import Bottleneck
from coach.errors import CoachError, InputError
from coach.exercises.bank import RED_FLAG_PREFIX, Bank, load_bank
from coach.exercises.bottlenecks import contrary_claims
from coach.exercises.grading import Concept, Grade, grade
from coach.exercises.rubric import RubricLine, resolve, starts_with
from coach.exercises.topics import BOTTLENECK_TOPICS
from coach.scenarios import Scenario, all_scenarios, fill

EXERCISE_FILE = "exercise.toml"
EXERCISE_KEYS = frozenset({"rubric", "decision", "fix_distractors"})
OWN_EXERCISES = Path(__file__).resolve().parent / "data" / "scenarios"
LETTERS = "abcdefgh"
#: Speed-up buckets for the gain question (upper bounds): coach.analyze.gain.BANDS, the bands the
#: gain models are judged in (wide enough that a model and a measurement of the same fix land in the
#: same one, narrow enough that a wrong factor of 2-3 does not).
GAIN_BUCKETS = ((1.2, "no real gain (under 1.2x)"), (2.0, "1.2x to 2x"), (5.0, "2x to 5x"), (20.0, "5x to 20x"),
                (math.inf, "more than 20x"))
#: The speed-up between a scenario's profiles further than this from its timed runs' is named beside it.
PROFILED_DIFFERS = 0.10
#: A typed speed-up within this factor of the model's prediction counts as agreeing with it.
GAIN_AGREEMENT = 1.5

#: Bottleneck classes in words, as a choice reads them.
BOTTLENECK_WORDS: dict[Bottleneck, str] = {
    Bottleneck.DRAM: "DRAM bandwidth: the bytes the work must move",
    Bottleneck.MEMORY_ACCESS: "the memory access pattern: far more bytes or sectors moved than the work needs",
    Bottleneck.CACHE: "L1/L2 bandwidth",
    Bottleneck.SHARED_MEMORY: "shared memory: bank conflicts or its pipe",
    Bottleneck.LOCAL_MEMORY: "local memory: register spills or indexed per-thread arrays",
    Bottleneck.FMA: "the FP32 FMA pipe",
    Bottleneck.TENSOR: "the tensor cores (busy, or idle when they should not be)",
    Bottleneck.SFU: "the special-function unit (exp, sin, rsqrt)",
    Bottleneck.FP64: "FP64 arithmetic",
    Bottleneck.DIVERGENCE: "warp divergence",
    Bottleneck.ATOMICS: "contention on atomics",
    Bottleneck.LATENCY: "latency: too little parallelism or too few bytes in flight",
    Bottleneck.OCCUPANCY: "occupancy limited by registers, shared memory or block size",
    Bottleneck.TAIL: "the tail effect: a last, nearly empty wave",
    Bottleneck.LAUNCH: "launch overhead: kernels shorter than their launch",
    Bottleneck.IDLE: "an idle GPU waiting on the CPU",
    Bottleneck.HOST_SYNC: "host synchronisation points",
    Bottleneck.PAGEABLE: "copies from pageable host memory",
    Bottleneck.NO_OVERLAP: "copies and compute that do not overlap",
    Bottleneck.TRANSFER: "transfer bandwidth over the host link",
    Bottleneck.ALLOCATOR: "allocator churn: malloc and free in the loop",
    Bottleneck.HOST_BOUND: "the host: CPU work sets the pace",
    Bottleneck.MEASUREMENT: "a measurement artefact",
    Bottleneck.OTHER: "something else",
}
_KERNEL_CLASSES = tuple(list(Bottleneck)[: list(Bottleneck).index(Bottleneck.LAUNCH) + 1])
_TIMELINE_CLASSES = tuple(b for b in Bottleneck if b not in _KERNEL_CLASSES and b is not Bottleneck.OTHER)

_LOOK_NCU = "Profile the slow kernel with Nsight Compute and start from Speed of Light, then the section for the unit it points to"
_LOOK_NSYS = ("Take a timeline of the run (Nsight Systems, or the PyTorch profiler) and see what the GPU and the CPU do "
              "over time: gaps, copies, syncs")
_LOOK_WRONG = ("Check nvidia-smi: if GPU utilisation is high, the code is already efficient",
               "Try other block sizes and launch configurations until it gets faster, then profile")
_FIX_DISTRACTORS = ("Raise occupancy: larger blocks and more threads per SM",
                    "Switch the arithmetic to fast-math intrinsics",
                    "Move to a GPU with a higher FLOP rate")


@dataclass(frozen=True)
class DecisionPoint:
    key: str
    prompt: str
    choices: tuple[str, ...]
    correct: int  # index into choices
    explain: str  # why the right choice is right
    signals: tuple[Concept, ...] = ()  # this point's own concepts (exercise files)
    red_flags: tuple[Concept, ...] = ()
    expected_speedup: float | None = None  # the gain point: typed speed-ups are compared with it


@dataclass(frozen=True)
class Exercise:
    scenario_id: str
    title: str
    topic: str
    intro: str  # the symptom, with recorded and modelled values filled in
    points: tuple[DecisionPoint, ...]
    rubric_strong: tuple[RubricLine, ...]
    rubric_flags: tuple[RubricLine, ...]
    hints: tuple[str, ...] = ()
    #: Claims of a bottleneck class that is not the recorded one (``coach.exercises.bottlenecks``).
    class_flags: tuple[Concept, ...] = ()

    @property
    def signals(self) -> tuple[Concept, ...]:
        return tuple(r.concept for r in self.rubric_strong if r.concept is not None)

    @property
    def red_flags(self) -> tuple[Concept, ...]:
        return tuple(r.concept for r in self.rubric_flags if r.concept is not None) + self.class_flags

    @property
    def reference(self) -> str:
        """What the exercise holds as right: the symptom, each point's best choice and why, and the
        rubric's strong lines; a number an answer states is held against these (``grading.grade``)."""
        parts = [self.intro] + [f"{p.choices[p.correct]}. {p.explain}" for p in self.points]
        return "\n\n".join(parts + [r.text for r in self.rubric_strong])


@dataclass(frozen=True)
class PointResult:
    point: DecisionPoint
    choice: int | None
    text: str
    grade: Grade | None  # the point's own concepts, if it has any
    feedback: tuple[str, ...]

    @property
    def choice_correct(self) -> bool:
        return self.choice == self.point.correct


@dataclass(frozen=True)
class ExerciseResult:
    exercise: Exercise
    points: tuple[PointResult, ...]
    rubric: Grade  # all free text against the scenario's rubric
    feedback: tuple[str, ...] = field(default=())

    @property
    def score(self) -> int:
        return (sum(p.choice_correct for p in self.points) + self.rubric.score
                + sum(p.grade.score for p in self.points if p.grade is not None))

    @property
    def max_score(self) -> int:
        return (len(self.points) + self.rubric.max_score
                + sum(p.grade.max_score for p in self.points if p.grade is not None))


# --------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------


def scenarios() -> list[Scenario]:
    """Every scenario the project has: each one has an exercise."""
    return all_scenarios()


def build(scenario: Scenario, *, values: Mapping[str, Any] | None = None, others: Sequence[Scenario] = (),
          bank: Bank | None = None, extras: Mapping[str, Any] | None = None) -> Exercise:
    """The exercise for ``scenario``.

    ``values`` fill the scenario's placeholders (from its recording; modelled values otherwise);
    ``others`` are the other scenarios, whose fixes serve as distractors; ``extras`` is the parsed
    exercise file (found next to the scenario, or in the package, when None).
    """
    bank = bank or load_bank()
    values = recorded_values(scenario) if values is None else dict(values)
    extras = _extras(scenario) if extras is None else extras
    rng = random.Random(scenario.number)  # the same letters every time for a scenario
    mapped, why = _mapping(scenario, extras, bank)
    default_why = (f"The evidence points to {BOTTLENECK_WORDS[scenario.bottleneck]}; this does not act on it, so "
                   "it would not remove the time the profile shows.")
    strong = resolve(tuple(fill(t, values) for t in scenario.rubric.strong), bank, red_flags=False,
                     mapped=mapped, prefix=scenario.id, why=why)
    flags = resolve(tuple(fill(t, values) for t in scenario.rubric.red_flags), bank, red_flags=True,
                    mapped=mapped, prefix=scenario.id, why=why, default_why=default_why)
    points = [_look_first(scenario, rng), _meaning(scenario, values, rng),
              _fix(scenario, values, others, rng, extras.get("fix_distractors", ())), _gain(scenario, values, rng)]
    points += [_extra(scenario, i, raw, bank) for i, raw in enumerate(extras.get("decision", []))]
    return Exercise(scenario_id=scenario.id, title=scenario.title, topic=BOTTLENECK_TOPICS[scenario.bottleneck],
                    intro=fill(scenario.symptom, values), points=tuple(points),
                    rubric_strong=tuple(strong), rubric_flags=tuple(flags),
                    hints=tuple(fill(h, values) for h in scenario.hints),
                    class_flags=contrary_claims(scenario.bottleneck, BOTTLENECK_WORDS[scenario.bottleneck],
                                                prefix=scenario.id) + _tempting_flags(scenario))


def recorded_values(scenario: Scenario) -> dict[str, Any]:
    """The values a scenario's text names: from its recording in traces/ where there is one, else the
    modelled ones only (sizes, floors); recording-only values stay unfilled."""
    from coach.recordings import open_recording, placeholder_values

    try:
        values = open_recording(scenario).values()
    except CoachError:
        values = placeholder_values(scenario, {})
    return {k: v for k, v in values.items() if v not in (None, "")}


def _shuffle(correct: str, wrong: Sequence[str], rng: random.Random) -> tuple[tuple[str, ...], int]:
    items = [correct, *dict.fromkeys(w for w in wrong if w and w != correct)]
    order = list(range(len(items)))
    rng.shuffle(order)
    return tuple(items[i] for i in order), order.index(0)


def _look_first(scenario: Scenario, rng: random.Random) -> DecisionPoint:
    kernel = scenario.tool == "ncu"
    right, other = (_LOOK_NCU, _LOOK_NSYS) if kernel else (_LOOK_NSYS, _LOOK_NCU)
    choices, correct = _shuffle(right, [other, *_LOOK_WRONG], rng)
    why = ("The symptom is one slow kernel: Nsight Compute's counters say which unit limits it and why; a timeline "
           "would only confirm that the kernel is long." if kernel else
           "The symptom is the whole step, not one kernel: a timeline shows where the time goes between the CPU, copies "
           "and kernels, and what the GPU waits for, before any kernel is worth a counter-level profile.")
    return DecisionPoint("look-first", f"{scenario.question}\nWhere do you look first?", choices, correct, why)


def _meaning(scenario: Scenario, values: Mapping[str, Any], rng: random.Random) -> DecisionPoint:
    from coach.recordings import fmt_evidence  # noqa: PLC0415 - the evidence as coach run prints it

    lines, moves = [], []
    for e in scenario.evidence:
        recorded = values.get(f"slow_{e.name}")
        if isinstance(recorded, (int, float)):
            seen = f"{fmt_evidence(recorded, e.unit)} in the slow version (recorded)"
        elif e.slow_range:
            low, high = (fmt_evidence(x, e.unit) for x in e.slow_range)
            seen = f"expected between {low} and {high} in the slow version"
        else:
            seen = "measured on the slow version"
        lines.append(f"- {e.label}: {seen}")
        # Which way each number moves after the fix is part of the answer: shown after it, never in the prompt.
        moves.append(f"{e.label} {_MOVES[e.direction]}")
    pool = _KERNEL_CLASSES if scenario.bottleneck in _KERNEL_CLASSES else _TIMELINE_CLASSES
    near = [b for b in _NEAR.get(scenario.bottleneck, ()) if b in pool and b is not scenario.bottleneck]
    rest = [b for b in pool if b is not scenario.bottleneck and b not in near]
    wrong = (near + rng.sample(rest, len(rest)))[:3]
    choices, correct = _shuffle(BOTTLENECK_WORDS[scenario.bottleneck], [BOTTLENECK_WORDS[b] for b in wrong], rng)
    prompt = "The profile of the slow version shows:\n" + "\n".join(lines) + "\nWhat do these numbers point to, and what do they mean?"
    why = (f"The evidence points to {BOTTLENECK_WORDS[scenario.bottleneck]} ({scenario.bottleneck.value}); the rule that "
           f"should rank first is {scenario.first_rule}.")
    if moves:
        why += " After the fix: " + "; ".join(moves) + "."
    return DecisionPoint("meaning", prompt, choices, correct, why)


_MOVES = {"down": "falls", "up": "rises", "same": "stays about the same"}


def _fix(scenario: Scenario, values: Mapping[str, Any], others: Sequence[Scenario], rng: random.Random,
         distractors: Sequence[str] = ()) -> DecisionPoint:
    """Which fix: against wrong fixes a half-right candidate would pick for *this* problem: the exercise
    file's, the scenario's own tempting wrong fix, the fixes of scenarios whose bottleneck is a near
    miss of this one (same topic, or a neighbouring class), then the generic tempting fixes of the class."""
    def filled(text: str) -> str:
        return fill(text, values)

    wrong_fix = filled(scenario.fix.wrong_fix) if scenario.fix.wrong_fix else ""
    wrong = list(distractors) or ([_proposal(wrong_fix)] if wrong_fix else [])
    topic = BOTTLENECK_TOPICS[scenario.bottleneck]
    near = set(_NEAR.get(scenario.bottleneck, ()))
    related = [o for o in others if o.id != scenario.id and o.bottleneck is not scenario.bottleneck
               and (BOTTLENECK_TOPICS[o.bottleneck] == topic or o.bottleneck in near)]
    wrong += list(_TEMPTING.get(scenario.bottleneck, ()))
    wrong += [fill(o.fix.summary, {}) for o in sorted(related, key=lambda o: o.number)]
    wrong += list(_FIX_DISTRACTORS)
    choices, correct = _shuffle(filled(scenario.fix.summary), wrong[:3], rng)
    why = filled(scenario.fix.details).strip()
    if wrong_fix:
        why += f"\nWhy not the tempting alternative: {wrong_fix.strip()}"
    return DecisionPoint("fix", "Which fix do you make?", choices, correct, why)


#: Bottleneck classes a half-right reading of the same evidence lands on (for choices and fixes).
_NEAR: dict[Bottleneck, tuple[Bottleneck, ...]] = {
    Bottleneck.DRAM: (Bottleneck.MEMORY_ACCESS, Bottleneck.LATENCY, Bottleneck.CACHE),
    Bottleneck.MEMORY_ACCESS: (Bottleneck.DRAM, Bottleneck.CACHE, Bottleneck.LATENCY),
    Bottleneck.CACHE: (Bottleneck.DRAM, Bottleneck.MEMORY_ACCESS, Bottleneck.SHARED_MEMORY),
    Bottleneck.SHARED_MEMORY: (Bottleneck.CACHE, Bottleneck.MEMORY_ACCESS, Bottleneck.OCCUPANCY),
    Bottleneck.LOCAL_MEMORY: (Bottleneck.OCCUPANCY, Bottleneck.CACHE, Bottleneck.MEMORY_ACCESS),
    Bottleneck.FMA: (Bottleneck.TENSOR, Bottleneck.SFU, Bottleneck.FP64),
    Bottleneck.TENSOR: (Bottleneck.FMA, Bottleneck.DRAM, Bottleneck.OCCUPANCY),
    Bottleneck.SFU: (Bottleneck.FMA, Bottleneck.DIVERGENCE, Bottleneck.LATENCY),
    Bottleneck.FP64: (Bottleneck.FMA, Bottleneck.TENSOR, Bottleneck.SFU),
    Bottleneck.DIVERGENCE: (Bottleneck.SFU, Bottleneck.OCCUPANCY, Bottleneck.LATENCY),
    Bottleneck.ATOMICS: (Bottleneck.DRAM, Bottleneck.MEMORY_ACCESS, Bottleneck.LATENCY),
    Bottleneck.LATENCY: (Bottleneck.OCCUPANCY, Bottleneck.DRAM, Bottleneck.MEMORY_ACCESS),
    Bottleneck.OCCUPANCY: (Bottleneck.LATENCY, Bottleneck.DRAM, Bottleneck.TAIL),
    Bottleneck.TAIL: (Bottleneck.OCCUPANCY, Bottleneck.LATENCY, Bottleneck.LAUNCH),
    Bottleneck.LAUNCH: (Bottleneck.TAIL, Bottleneck.LATENCY, Bottleneck.OCCUPANCY),
    Bottleneck.IDLE: (Bottleneck.HOST_SYNC, Bottleneck.HOST_BOUND, Bottleneck.TRANSFER),
    Bottleneck.HOST_SYNC: (Bottleneck.IDLE, Bottleneck.HOST_BOUND, Bottleneck.TRANSFER),
    Bottleneck.PAGEABLE: (Bottleneck.TRANSFER, Bottleneck.NO_OVERLAP, Bottleneck.HOST_SYNC),
    Bottleneck.NO_OVERLAP: (Bottleneck.PAGEABLE, Bottleneck.TRANSFER, Bottleneck.HOST_SYNC),
    Bottleneck.TRANSFER: (Bottleneck.PAGEABLE, Bottleneck.NO_OVERLAP, Bottleneck.IDLE),
    Bottleneck.ALLOCATOR: (Bottleneck.HOST_SYNC, Bottleneck.IDLE, Bottleneck.HOST_BOUND),
    Bottleneck.HOST_BOUND: (Bottleneck.IDLE, Bottleneck.HOST_SYNC, Bottleneck.TRANSFER),
    Bottleneck.MEASUREMENT: (Bottleneck.HOST_SYNC, Bottleneck.IDLE, Bottleneck.HOST_BOUND),
}
#: Fixes that a half-right candidate proposes for each class: they act on the right neighbourhood
#: but not on what limits the kernel.
_TEMPTING: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.MEMORY_ACCESS: ("Stage the data through shared memory first, then compute from there",
                               "Use wider (16-byte) loads of the same layout"),
    Bottleneck.DRAM: ("Tile the kernel through shared memory", "Raise occupancy so more loads are in flight"),
    Bottleneck.SHARED_MEMORY: ("Read and write global memory directly and drop the shared-memory tile",
                               "Unroll the loops so more shared-memory loads are in flight"),
    Bottleneck.LOCAL_MEMORY: ("Lower -maxrregcount so more warps fit", "Add __launch_bounds__ to stop the spills"),
    Bottleneck.DIVERGENCE: ("Compute every branch for every element, branch-free", "Make the most expensive branch cheaper"),
    Bottleneck.ATOMICS: ("Use wider loads so each thread reads more per instruction",
                         "Replace atomicAdd with a plain read-modify-write"),
    Bottleneck.LATENCY: ("Use larger blocks with the same work per thread", "Move the data to shared memory first"),
    Bottleneck.OCCUPANCY: ("Make blocks smaller so more of them fit", "Unroll the inner loop"),
    Bottleneck.TAIL: ("Make the arithmetic of each block cheaper", "Launch the last block's work as a separate kernel"),
    Bottleneck.LAUNCH: ("Vectorise each kernel's loads", "Raise each kernel's occupancy"),
    Bottleneck.TENSOR: ("Hand-tune an FP32 tiled SGEMM", "Cast everything to FP16 without checking range"),
    Bottleneck.HOST_SYNC: ("Replace .item() with print(loss)", "Raise the batch size"),
    Bottleneck.PAGEABLE: ("Pass non_blocking=True and keep ordinary host memory", "Use a bigger batch"),
    Bottleneck.NO_OVERLAP: ("Pin the host memory", "Synchronise after each chunk to keep buffers safe"),
    Bottleneck.ALLOCATOR: ("Call torch.cuda.empty_cache() every iteration", "Use cudaMallocAsync with default settings"),
    Bottleneck.HOST_BOUND: ("Raise the batch size", "Add threads in the training process for the NumPy work"),
    Bottleneck.MEASUREMENT: ("Add torch.cuda.synchronize() after the call and keep the same timed region",
                             "Tune the kernel's block size on the reported number"),
}


def _tempting_flags(scenario: Scenario) -> tuple[Concept, ...]:
    """The fixes a half-right candidate proposes for the scenario's class (``_TEMPTING``), as red flags:
    each acts near the problem but not on what limits the work."""
    why = (f"The recorded diagnosis is {BOTTLENECK_WORDS[scenario.bottleneck]} ({scenario.bottleneck.value}); this "
           "fix acts near it but not on what limits the work, so the time the profile shows stays.")
    flags = [Concept(f"rf-{scenario.id}-tempting-{i}", fix, why, paraphrases=(fix,), example=fix, loose_label=False)
             for i, fix in enumerate(_TEMPTING.get(scenario.bottleneck, ()), 1)]
    # one the scenario's own account states in its words (its set-up, its fix, why the wrong fix fails)
    # is part of the story, not a proposal: it is not graded
    own = "\n\n".join(fill(t, {}) for t in (scenario.symptom, scenario.fix.details, scenario.fix.wrong_fix) if t)
    return tuple(c for c in flags if not grade(own, (), (c,), classic=False).flags)


def predicted_speedup(scenario: Scenario) -> tuple[float, str]:
    """The speed-up the planted fix's gain model predicts (``coach.analyze.gain``: waves for a tail,
    active lanes for divergence, pipe peaks for tensor cores, launch cost for a launch-bound loop...),
    and how it was worked out, from the scenario's recorded profiles: the same number ``coach diff
    --talk`` gives on them. Without a recording (or where the model lacks an input), the bytes/FLOPs
    model of the scenario's sizes."""
    estimate = _gain_estimate(scenario)
    if estimate is not None and estimate.speedup is not None:
        bound = ", an upper bound" if estimate.upper_bound else ""
        return estimate.speedup, f"the fix's gain model ({estimate.model}{bound}): {estimate.how}"
    return _sizes_model(scenario)


def _sizes_model(scenario: Scenario) -> tuple[float, str]:
    """The bytes/FLOPs model of the scenario's sizes: each variant's moved bytes (or useful bytes)
    over the bandwidth ceiling, against its FLOPs over the arithmetic ceiling."""
    m = scenario.model
    moved = m.moved_bytes
    flops_s = m.flops_s() or 0.0
    if "slow" in moved and "fixed" in moved and m.value(moved["slow"]) != m.value(moved["fixed"]):
        slow_b, fixed_b = m.value(moved["slow"]), m.value(moved["fixed"])
        slow_s, fixed_s = max(slow_b / m.bytes_per_s, flops_s), max(fixed_b / m.bytes_per_s, flops_s)
        how = (f"the slow version moves {slow_b / 1e9:.3g} GB, the fixed one {fixed_b / 1e9:.3g} GB; at "
               f"{m.bytes_per_s / 1e9:.4g} GB/s ({m.ceiling_source}) that is {slow_s * 1e3:.3g} ms against "
               f"{fixed_s * 1e3:.3g} ms")
        return slow_s / fixed_s, how
    bytes_s = m.bytes_s("slow")
    if flops_s and bytes_s:
        how = (f"the same bytes move in both versions; in series the step costs bytes {bytes_s * 1e3:.3g} ms + compute "
               f"{flops_s * 1e3:.3g} ms, overlapped the larger of the two ({m.ceiling_source})")
        return (bytes_s + flops_s) / max(bytes_s, flops_s), how
    return scenario.min_speedup, "the model gives no separate prediction; this is the speed-up the recording must reach"


_ESTIMATES: dict[tuple[str, str], Any] = {}


def _gain_estimate(scenario: Scenario) -> Any:
    """The planted fix's gain estimate on the scenario's recording (``coach.analyze.gain.estimate``),
    or None without a recording of both variants; worked out once per scenario folder."""
    return _worked_out(scenario)[0]


def _profiled_speedup(scenario: Scenario) -> float | None:
    """The speed-up between the scenario's two recorded profiles (``coach diff``'s headline, what the
    gain model works from), or None without them."""
    return _worked_out(scenario)[1]


def _worked_out(scenario: Scenario) -> tuple[Any, float | None]:
    key = (scenario.id, str(scenario.folder))
    if key not in _ESTIMATES:
        _ESTIMATES[key] = _work_out_gain(scenario)
    return _ESTIMATES[key]


def _work_out_gain(scenario: Scenario) -> tuple[Any, float | None]:
    from coach.analyze import gain  # noqa: PLC0415 - polars-heavy, only for the gain question
    from coach.analyze.diff import diff  # noqa: PLC0415
    from coach.recordings import open_recording  # noqa: PLC0415

    try:
        rec = open_recording(scenario)
    except CoachError:
        return None, None
    before, after = rec.profile("slow", scenario.tool), rec.profile("fixed", scenario.tool)
    if before is None or after is None:
        return None, None
    params = {k: scenario.model.value(v) for k, v in scenario.fix.gain_params.items()}
    d = diff(before, after, fix=scenario.fix.id)
    return gain.estimate(d, before, after, scenario.fix.id, params), d.headline.get("speedup")


def gain_key(scenario: Scenario, values: Mapping[str, Any]) -> tuple[int, float, str]:
    """The gain question's answer: the band (an index of ``GAIN_BUCKETS``) that holds the recorded
    speed-up (the model's where nothing is recorded), the speed-up a typed estimate is compared
    with, and the explanation: what was measured, what the fix's gain model predicts and how, and,
    where the model lands in another band, why the simple model misses."""
    from coach.analyze import gain  # noqa: PLC0415

    expected, how = predicted_speedup(scenario)
    measured = values.get("speedup")
    if not isinstance(measured, (int, float)):
        return gain.band(expected), expected, f"From first principles, {how} (not recorded yet: the key is the model's band)."
    key = gain.band(measured)
    why = (f"The recording measured {measured:.2f}x ({GAIN_BUCKETS[key][1]}). From first principles, {how}. "
           + ("The model lands in the same band." if gain.band(expected) == key
              else f"The model says {GAIN_BUCKETS[gain.band(expected)][1]}."))
    if gain.band(expected) != key:
        why += " " + _why_the_model_misses(scenario, expected, measured)
    # a timeline's diff is end to end, as the timed runs are; a kernel diff is one launch against one
    # (scenario 12's batched call is one launch for 128 requests), not the scenario's unit
    profiled = _profiled_speedup(scenario) if scenario.tool == "nsys" else None
    if profiled is not None and abs(profiled / measured - 1) > PROFILED_DIFFERS:
        # coach diff --talk quotes this one beside the same model: say why the two measured speed-ups differ
        why += (f" (Between the two profiles, which the model works from and `coach diff` compares, the fix "
                f"measured {profiled:.2f}x: the profiled windows are not the timed runs.)")
    return key, measured, why


def _why_the_model_misses(scenario: Scenario, expected: float, measured: float) -> str:
    """Why the fix's simple gain model lands in another band than the recording: the scenario's own
    lesson ([gain] misses), and, for a model that is an upper bound and a measurement below it, what
    the fixed version's profile shows of the model's assumption."""
    estimate = _gain_estimate(scenario)
    check = estimate.check if estimate is not None else ""
    parts = []
    if estimate is not None and estimate.upper_bound and measured < expected:
        parts.append("The model is an upper bound" + (f": {check}." if check else "."))
        check = ""
    if scenario.fix.gain_misses:
        parts.append(" ".join(scenario.fix.gain_misses.split()))
    if check:
        parts.append(f"What the fixed version shows: {check}.")
    return "Why the simple model misses: " + " ".join(parts) if parts else ""


#: The measurement question's bands: the kernel's time as a fraction of what the naive benchmark reports.
MEASUREMENT_BANDS = ((2.0, "about what the benchmark reports (within 2x)"), (10.0, "between a half and a tenth of it"),
                     (100.0, "between a tenth and a hundredth of it"), (math.inf, "less than a hundredth of it"))


def _measurement(scenario: Scenario, values: Mapping[str, Any]) -> DecisionPoint:
    """For a scenario about measurement, the gain question asks what the kernel really takes: the
    naive number over the careful one, as the recording measured them (the careful benchmark's median
    against the kernel's floor)."""
    slow, fixed, floor = values.get("slow_ms"), values.get("fixed_ms"), values.get("floor_ms")
    recorded = isinstance(slow, (int, float)) and isinstance(fixed, (int, float)) and fixed > 0
    ratio = slow / fixed if recorded else scenario.min_speedup
    correct = next(i for i, (upper, _) in enumerate(MEASUREMENT_BANDS) if ratio < upper)
    said = f"{slow:.4g} ms" if recorded else "its number"
    prompt = (f"The naive benchmark reports {said} per call. How long does one call of the kernel take, measured "
              "the way you would trust (warmed up, CUDA events around back-to-back calls)?")
    if recorded:
        why = (f"The careful benchmark measured {fixed:.4g} ms per call, {ratio:.3g}x less than the naive "
               f"{slow:.4g} ms: the naive timer counted the compilation and module loading of the first call and "
               "stopped while the kernels were still queued.")
        if isinstance(floor, (int, float)) and floor > 0:
            why += (f" The kernel's floor is {floor:.4g} ms (its bytes at the measured DRAM ceiling): the careful number "
                    f"is {100 * floor / fixed:.0f}% of the floor's speed, where a streaming kernel should be.")
    else:
        why = "Not recorded yet: the careful benchmark's number is the kernel's time; the naive one includes the compile."
    return DecisionPoint("gain", prompt, tuple(label for _, label in MEASUREMENT_BANDS), correct, why)


def _gain(scenario: Scenario, values: Mapping[str, Any], rng: random.Random) -> DecisionPoint:
    if scenario.bottleneck is Bottleneck.MEASUREMENT:
        return _measurement(scenario, values)
    correct, expected, why = gain_key(scenario, values)
    return DecisionPoint("gain", "What speed-up do you expect from the fix, and why?",
                         tuple(label for _, label in GAIN_BUCKETS), correct, why, expected_speedup=expected)


def _proposal(text: str) -> str:
    """The wrong fix as a proposal: its first clause, before the explanation of why it fails."""
    first = re.split(r"(?<=[.!?])\s", " ".join(text.split()), maxsplit=1)[0]
    return re.split(r":\s|;\s|,?\s+but\s", first, maxsplit=1)[0].rstrip(".")


def _extra(scenario: Scenario, i: int, raw: Mapping[str, Any], bank: Bank) -> DecisionPoint:
    where = f"{scenario.id} exercise decision {i + 1}"
    try:
        choices = tuple(raw["choices"])
        correct = raw["correct"]
        correct = LETTERS.index(correct) if isinstance(correct, str) else int(correct)
        if not 0 <= correct < len(choices):
            raise ValueError("correct is not one of the choices")

        def concepts(key: str, flag: bool) -> tuple[Concept, ...]:
            ids = raw.get(key, [])
            bad = [c for c in ids if c not in bank.concepts or c.startswith(RED_FLAG_PREFIX) != flag]
            if bad:
                raise ValueError(f"{key} names {bad[0]!r}, not a {'red-flag' if flag else 'signal'} concept of the bank")
            return tuple(bank.concept(c) for c in ids)

        return DecisionPoint(f"extra-{i + 1}", raw["prompt"], choices, correct, raw.get("explain", ""),
                             concepts("signals", False), concepts("red_flags", True))
    except (KeyError, ValueError, TypeError) as err:
        raise CoachError(f"{where}: {err}") from None


def _mapping(scenario: Any, extras: Mapping[str, Any], bank: Bank) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The exercise file's rubric mapping, checked: each entry names a line that exists, with bank
    concepts of the line's kind (signals for strong lines, red flags for red-flag lines) and/or a
    ``why`` (the reason feedback gives for the line). Returns (line start -> concepts, line start -> why)."""
    out, why = {}, {}
    for i, entry in enumerate(extras.get("rubric", [])):
        where = f"{scenario.id} exercise rubric entry {i + 1}"
        if (not isinstance(entry, dict) or not isinstance(entry.get("line"), str)
                or not (entry.get("concepts") or entry.get("why"))):
            raise CoachError(f"{where}: needs line = \"<first words of a rubric line>\" and concepts = [...] or why = \"...\"")
        if unknown := sorted(set(entry) - {"line", "concepts", "why"}):
            raise CoachError(f"{where}: unknown key '{unknown[0]}' (known: concepts, line, why)")
        strong = [t for t in scenario.rubric.strong if starts_with(t, entry["line"])]
        flag = [t for t in scenario.rubric.red_flags if starts_with(t, entry["line"])]
        if not strong and not flag:
            raise CoachError(f"{where}: no rubric line of {scenario.id} starts with '{entry['line']}'")
        for cid in entry.get("concepts", []):
            if cid not in bank.concepts:
                raise CoachError(f"{where}: unknown concept '{cid}'")
            if cid.startswith(RED_FLAG_PREFIX) != bool(flag):
                raise CoachError(f"{where}: '{cid}' is a {'red flag' if cid.startswith(RED_FLAG_PREFIX) else 'signal'}, "
                                 f"but the line is a {'red flag' if flag else 'strong signal'}")
        if entry.get("concepts"):
            out[entry["line"]] = list(entry["concepts"])
        if isinstance(entry.get("why"), str) and entry["why"].strip():
            why[entry["line"]] = entry["why"].strip()
    return out, why


def _extras(scenario: Scenario) -> dict[str, Any]:
    """The exercise file for ``scenario``: in its folder, else in the package; {} when neither exists."""
    for path in (scenario.folder / EXERCISE_FILE, OWN_EXERCISES / f"{scenario.id}.toml"):
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
                raise InputError(path, f"is not valid TOML ({err})") from None
            if unknown := sorted(set(data) - EXERCISE_KEYS):
                raise InputError(path, f"unknown key '{unknown[0]}' (known: {', '.join(sorted(EXERCISE_KEYS))})")
            return data
    return {}


# --------------------------------------------------------------------------------------------
# Playing
# --------------------------------------------------------------------------------------------

#: "b: ...", "b) ...", "(b) ...", "b. ...", "b - ...", "b, ...", a lone "b", or "b because ..." (any letter but
#: "a", which also starts ordinary sentences: "a fused kernel ...").
_CHOICE = re.compile(r"^\s*\(?([a-h])\)?\s*(?:[:.),-]|$)|^\s*([b-h])\s", re.IGNORECASE)


def split_answer(text: str, n_choices: int) -> tuple[int | None, str]:
    """'b: because ...' -> (1, 'because ...'); 'because ...' -> (None, 'because ...')."""
    m = _CHOICE.match(text)
    if m:
        index = LETTERS.index((m.group(1) or m.group(2)).lower())
        if index < n_choices:
            return index, text[m.end():].strip()
    return None, text.strip()


def play(exercise: Exercise, ask: Callable[..., str], show: Callable[[str], None] = lambda line: None) -> ExerciseResult:
    """Ask every decision point through ``ask(prompt)``, grade, and return the result.

    ``show`` receives the text a player sees as it goes (the prompt, choices, and feedback per point).
    """
    show(exercise.intro)
    results: list[PointResult] = []
    for n, point in enumerate(exercise.points, 1):
        show(f"\n[{n}/{len(exercise.points)}] {point.prompt}")
        for letter, choice in zip(LETTERS, point.choices):
            show(f"  {letter}) {choice}")
        choice, text = split_answer(ask(f"Your answer to {n} (a letter, then your reasoning):"), len(point.choices))
        result = _grade_point(point, choice, text)
        for line in result.feedback:
            show(line)
        results.append(result)
    texts = "\n\n".join(r.text for r in results if r.text)
    rubric = grade(texts, exercise.signals, exercise.red_flags, reference=exercise.reference)
    feedback = [f"The scenario: {exercise.title}.", "Against the scenario's rubric:"] + rubric.feedback()[:-1]
    scored = ExerciseResult(exercise, tuple(results), rubric)
    feedback.append(f"score {scored.score}/{scored.max_score}: {sum(r.choice_correct for r in results)}/{len(results)} "
                    f"choices right, rubric {rubric.score}/{rubric.max_score} ({rubric.verdict})")
    for line in feedback:
        show(line)
    return replace(scored, feedback=tuple(feedback))


def _grade_point(point: DecisionPoint, choice: int | None, text: str) -> PointResult:
    lines = []
    right = point.choices[point.correct]
    right = right.rstrip(".")
    if choice is None:
        lines.append(f"no choice made: the best one is ({LETTERS[point.correct]}) {right}.")
    elif choice == point.correct:
        lines.append(f"right: ({LETTERS[choice]}) {right}.")
    else:
        lines.append(f"not the best choice: you picked ({LETTERS[choice]}) {point.choices[choice].rstrip('.')}; "
                     f"the best is ({LETTERS[point.correct]}) {right}.")
    lines.append(f"why: {point.explain}")
    if point.expected_speedup is not None and text:
        lines.append(_gain_note(text, point.expected_speedup))
    g = grade(text, point.signals, point.red_flags) if (point.signals or point.red_flags) else None
    if g is not None:
        lines += g.feedback()[:-1]
    return PointResult(point, choice, text, g, tuple(lines))


def _gain_note(text: str, expected: float) -> str:
    """The typed speed-up against the expected one (the recording's, where there is one): a first-principles
    estimate within ``GAIN_AGREEMENT`` of it agrees."""
    m = re.search(r"(\d+(?:\.\d+)?)\s*(?:x|×|times)(?![a-z0-9])", text.lower())
    if m is None:
        return f"(say the speed-up as a number, 'about 2x', to compare your estimate with the measured {expected:.3g}x)"
    said = float(m.group(1))
    ok = said > 0 and 1 / GAIN_AGREEMENT <= said / expected <= GAIN_AGREEMENT
    return (f"your {said:g}x {'agrees with' if ok else 'is far from'} the measured {expected:.3g}x"
            f"{'' if ok else f' (more than {GAIN_AGREEMENT:g}x apart)'}.")
