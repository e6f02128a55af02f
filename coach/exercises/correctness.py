"""Guided exercises for the correctness scenarios: a bug hunt played as the decisions a debugging
engineer makes. Built from the scenario's metadata (``coach.correctness``) and its recording where
one exists, graded like the performance exercises (``coach.exercises.player``):

1. **look-first**: which tool or move first, from the symptom (a compute-sanitizer tool, synchronous
   launches with a check after each, or a float64 reference);
2. **meaning**: what the evidence says: which class of bug;
3. **fix**: which fix, against the scenario's tempting wrong fix and other scenarios' fixes;
4. **verify**: how to show the fix worked.

An exercise file (``coach/exercises/data/scenarios/<scenario-id>.toml``, the same format as the
performance scenarios') maps rubric lines to the bank's concepts and may add decision points.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from coach.analyze.findings import BugClass
from coach.correctness import CorrectnessScenario
from coach.errors import CoachError
from coach.exercises.bank import Bank, load_bank
from coach.exercises.player import DecisionPoint, Exercise, _extra, _extras, _mapping, _shuffle
from coach.exercises.rubric import resolve
from coach.scenarios import fill

TOPIC = "debugging"

#: The first move each way of finding a bug starts with, in words a choice reads.
LOOK = {
    "memcheck": "Run it under compute-sanitizer (memcheck, the default tool), built with -lineinfo, and read the "
                "first invalid access it reports",
    "racecheck": "Run it under compute-sanitizer --tool racecheck, built with -lineinfo: results that change from run "
                 "to run point to threads racing on shared memory",
    "initcheck": "Run it under compute-sanitizer --tool initcheck, which reports reads of device memory that nothing "
                 "wrote",
    "synccheck": "Run it under compute-sanitizer --tool synccheck, which reports barriers that only part of a block "
                 "reaches",
    "launch-checks": "Rerun with CUDA_LAUNCH_BLOCKING=1 and check cudaGetLastError() and cudaDeviceSynchronize() after "
                     "every launch, so the error is reported by the kernel that caused it",
    "float64-reference": "Compare the output element by element with a float64 reference on the same inputs, and see "
                         "how the error grows with the size",
}
LOOK_WRONG = ("Add printf to the kernel until the wrong value shows up, then remove it once the output looks right",
              "Profile the kernel with Nsight Compute and look for the slowest section",
              "Raise the tolerance of the check until the test passes")

#: The correctness classes in words, as a choice reads them.
CLASS_WORDS: dict[BugClass, str] = {
    BugClass.SHARED_RACE: "threads race on shared memory: a read not ordered after the write it needs",
    BugClass.OUT_OF_BOUNDS: "an access outside its buffer: an index past the end (or before the start)",
    BugClass.MISALIGNED: "a misaligned access: a wide load from an address not aligned to it",
    BugClass.UNINITIALIZED: "a read of memory nothing wrote: the result starts from whatever was there",
    BugClass.DIVERGENT_BARRIER: "a barrier that only part of the block reaches",
    BugClass.DEVICE_FAULT: "a hardware fault in the kernel (an illegal instruction, a stack overflow)",
    BugClass.ASYNC_ERROR: "a kernel's error, reported by a later call that has nothing wrong with it",
    BugClass.API_ERROR: "a CUDA call that fails because of its own arguments",
    BugClass.LEAK: "device memory that is never freed",
    BugClass.NUMERICS: "the arithmetic itself: a precision too low for the sum, not a memory or a sync bug",
}
_PLAUSIBLE = (BugClass.SHARED_RACE, BugClass.OUT_OF_BOUNDS, BugClass.UNINITIALIZED, BugClass.DIVERGENT_BARRIER,
              BugClass.ASYNC_ERROR, BugClass.NUMERICS, BugClass.API_ERROR)

VERIFY_RIGHT = ("Run the fixed build under the same tool until it reports no errors, and its check against the "
                "reference over several runs with fresh inputs")
VERIFY_REFERENCE = ("Compare the fixed kernel with the float64 reference over the sizes it will see: the error must stay "
                    "at the rounding of its output type, whatever the length")
VERIFY_WRONG = ("Run it once more: if that run passes, it is fixed",
                "The error message has gone, so the bug is gone",
                "Time it: a correct kernel is at least as fast as the buggy one")


def build(scenario: CorrectnessScenario, *, values: Mapping[str, Any] | None = None,
          others: Sequence[CorrectnessScenario] = (), bank: Bank | None = None,
          extras: Mapping[str, Any] | None = None) -> Exercise:
    """The exercise for ``scenario``: ``values`` fill its text (from its recording when None)."""
    bank = bank or load_bank()
    values = recorded_values(scenario) if values is None else dict(values)
    extras = _extras(scenario) if extras is None else extras
    rng = random.Random(scenario.number)
    mapped, why = _mapping(scenario, extras, bank)
    default_why = f"The bug here is {CLASS_WORDS[scenario.error_class]}; this does not find or fix it."
    strong = resolve(tuple(fill(t, values) for t in scenario.rubric.strong), bank, red_flags=False, mapped=mapped,
                     prefix=scenario.id, why=why)
    flags = resolve(tuple(fill(t, values) for t in scenario.rubric.red_flags), bank, red_flags=True, mapped=mapped,
                    prefix=scenario.id, why=why, default_why=default_why)
    points = [_look_first(scenario, rng), _meaning(scenario, values, rng),
              _fix(scenario, values, others, rng, extras.get("fix_distractors", ())), _verify(scenario, rng)]
    points += [_extra(scenario, i, raw, bank) for i, raw in enumerate(extras.get("decision", []))]
    return Exercise(scenario_id=scenario.id, title=scenario.title, topic=TOPIC,
                    intro=fill(scenario.symptom, values), points=tuple(points),
                    rubric_strong=tuple(strong), rubric_flags=tuple(flags),
                    hints=tuple(fill(h, values) for h in scenario.hints))


def recorded_values(scenario: CorrectnessScenario) -> dict[str, Any]:
    """The recording's values where there is one; else only what the source says (lines, kernel)."""
    from coach import correctness, correctness_recordings

    try:
        values = correctness_recordings.open_recording(scenario).values()
    except CoachError:
        values = correctness.static_values(scenario)
    return {k: v for k, v in values.items() if v not in (None, "")}


def _first_move(scenario: CorrectnessScenario) -> str:
    return scenario.tool if scenario.found_with == "sanitizer" else scenario.found_with


def _look_first(scenario: CorrectnessScenario, rng: random.Random) -> DecisionPoint:
    right = _first_move(scenario)
    others = [LOOK[k] for k in LOOK if k != right and k != scenario.tool][:1]
    choices, correct = _shuffle(LOOK[right], [*others, *LOOK_WRONG[:2]], rng)
    why = {
        "sanitizer": f"compute-sanitizer {scenario.tool} checks every access of the class this symptom points to, "
                     "whether or not it went wrong in this run, and names the source line (with -lineinfo).",
        "launch-checks": "The line that reports an execution error is the first call that waited for the GPU, not "
                         "the cause. Synchronous launches and a check after each name the kernel; memcheck then names "
                         "the line.",
        "float64-reference": "Nothing here is out of bounds, racing or uninitialised, so no sanitizer tool reports "
                             "anything. Only a reference in higher precision shows the error, and how it grows with the "
                             "length of the sum shows why.",
    }[scenario.found_with]
    return DecisionPoint("look-first", f"{scenario.question}\nWhat do you do first?", choices, correct, why)


def _meaning(scenario: CorrectnessScenario, values: Mapping[str, Any], rng: random.Random) -> DecisionPoint:
    right = scenario.error_class
    pool = [b for b in _PLAUSIBLE if b is not right]
    wrong = rng.sample(pool, 3)
    choices, correct = _shuffle(CLASS_WORDS[right], [CLASS_WORDS[b] for b in wrong], rng)
    report = values.get("report_lines")
    seen = (f"On the buggy build, compute-sanitizer {scenario.tool} names {scenario.source.name} line(s) {report} "
            f"in {values.get('report_kernel') or scenario.kernel}."
            if report else f"The recording's report is in traces/ once recorded; the bug is in {scenario.kernel}.")
    if scenario.found_with == "float64-reference":
        errors = values.get(f"buggy_{scenario.tool}_errors", "[not recorded]")
        seen = (f"compute-sanitizer {scenario.tool} reports {errors} "
                "errors on the buggy build, yet its output is far from the float64 reference.")
    why = (f"{CLASS_WORDS[right][0].upper()}{CLASS_WORDS[right][1:]} ({right.value}); the rule that ranks first on the "
           f"buggy report is {scenario.first_rule}.")
    return DecisionPoint("meaning", f"{seen}\nWhat kind of bug is it?", choices, correct, why)


def _fix(scenario: CorrectnessScenario, values: Mapping[str, Any], others: Sequence[CorrectnessScenario],
         rng: random.Random, distractors: Sequence[str] = ()) -> DecisionPoint:
    from coach.exercises.player import _proposal

    def filled(text: str) -> str:
        return fill(text, values)

    wrong_fix = filled(scenario.fix.wrong_fix) if scenario.fix.wrong_fix else ""
    wrong = list(distractors) or ([_proposal(wrong_fix)] if wrong_fix else [])
    wrong += [fill(o.fix.summary, {}) for o in sorted(others, key=lambda o: o.number) if o.id != scenario.id][:2]
    choices, correct = _shuffle(filled(scenario.fix.summary), wrong[:3], rng)
    why = filled(scenario.fix.details).strip()
    if wrong_fix:
        why += f"\nWhy not the tempting alternative: {wrong_fix.strip()}"
    return DecisionPoint("fix", "Which fix do you make?", choices, correct, why)


def _verify(scenario: CorrectnessScenario, rng: random.Random) -> DecisionPoint:
    right = VERIFY_REFERENCE if scenario.found_with == "float64-reference" else VERIFY_RIGHT
    wrong = [VERIFY_RIGHT if right is VERIFY_REFERENCE else VERIFY_REFERENCE, *VERIFY_WRONG][:3]
    choices, correct = _shuffle(right, wrong, rng)
    why = (f"A bug like this one can pass by luck: the same tool ({scenario.tool}) on the fixed build, with zero "
           "errors, plus the check against the reference over several runs and fresh inputs, is the evidence.")
    if scenario.found_with == "float64-reference":
        why = ("No tool checks arithmetic: the evidence is the comparison with the float64 reference, over the sizes "
               "the kernel will see (the error of a low-precision sum grows with its length).")
    return DecisionPoint("verify", "How do you show that the fix worked?", choices, correct, why)
