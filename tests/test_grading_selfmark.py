"""Where the grader cannot tell, it says so and asks the person to mark themselves (issue 17).

The verdict ``unsure`` is given to an answer one signal short of a pass that names the missing
points without explaining them; feedback then asks for a self-mark, and the mark is recorded apart
from the automatic score.
"""

from __future__ import annotations

from coach.exercises.grading import Concept, grade, self_mark

SIGNALS = (
    Concept("reduce-first", "reduce within the block first", "One atomic per block instead of one per element.",
            ("reduce within the block first", "block-level reduction first")),
    Concept("contention", "contended atomics serialise", "Updates of one address queue one after another.",
            ("atomics on one address serialise", "contended atomics serialise")),
    Concept("shared-atomics", "shared-memory atomics", "They are native and fast on the SM.",
            ("shared memory atomics",)),
    Concept("warp-aggregation", "warp-aggregated atomics", "One lane updates for the whole warp.",
            ("warp aggregated atomics",)),
)
FLAGS = (Concept("rf-free", "treating atomics as free", "Contended atomics serialise.",
                 ("atomics are free",), example="Atomics are free."),)

BORDERLINE = ("I would reduce within the block first, so each block does a single update at the end, and keep the "
              "rest simple for now, as far as I can tell without measuring it. Shared memory atomics, warp aggregated "
              "atomics.")


def test_a_borderline_answer_is_unsure_and_asks_for_a_self_mark():
    g = grade(BORDERLINE, SIGNALS, FLAGS)
    assert [h.concept.id for h in g.found] == ["reduce-first"] and g.needed == 2
    assert {h.concept.id for h in g.listed} == {"shared-atomics", "warp-aggregation"}
    assert g.verdict == "unsure"
    lines = g.feedback()
    assert any(line.startswith("? The grader cannot tell") and "mark yourself" in line for line in lines)
    assert lines[-1].endswith(": unsure")


def test_clear_answers_are_not_unsure():
    strong = grade("I would reduce within the block first, since atomics on one address serialise.", SIGNALS, FLAGS)
    assert strong.verdict == "pass"
    short = grade("Reduce within the block first.", SIGNALS, FLAGS)  # too short to be worth a second look
    assert short.verdict == "fail"
    wrong = grade(BORDERLINE + " Atomics are free anyway.", SIGNALS, FLAGS)  # a red flag decides
    assert wrong.verdict == "fail"
    assert not any(line.startswith("?") for line in strong.feedback() + short.feedback() + wrong.feedback())


def test_self_mark_reads_the_points_marked_and_can_be_skipped():
    shown: list[str] = []
    assert self_mark(SIGNALS, lambda prompt, multiline=True: "1 3 9", shown.append) == ["reduce-first",
                                                                                        "shared-atomics"]
    assert shown[0].startswith("Mark yourself") and shown[1] == "  1) reduce within the block first"
    assert self_mark(SIGNALS, lambda prompt, multiline=True: "  ", lambda _: None) is None
    assert self_mark((), lambda prompt, multiline=True: "1", lambda _: None) is None


def test_a_self_mark_is_recorded_apart_from_the_automatic_score():
    from coach.cli.quiz import _attempt
    from coach.exercises.bank import Question

    q = Question("atom-x", "atomics", "mid", "?", "model answer", SIGNALS, FLAGS, ())
    g = grade(BORDERLINE, SIGNALS, FLAGS)
    attempt = _attempt(q, BORDERLINE, g, ["reduce-first", "contention"])
    assert (attempt.score, attempt.max_score) == (1, 4)  # the automatic score, untouched by the self-mark
    assert attempt.details["verdict"] == "unsure"
    assert attempt.details["self_marked"] == ["reduce-first", "contention"]
    assert "self_marked" not in _attempt(q, BORDERLINE, g).details
