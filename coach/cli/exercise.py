"""``coach exercise``: play a scenario as a sequence of decisions, graded against its rubric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from coach.cli.main import app
from coach.cli.output import console, err_console, print_json
from coach.errors import CoachError


@app.command("exercise")
def exercise_cmd(
    scenario: Optional[str] = typer.Argument(None, help="Scenario id: scenario-07, 07 or 7."),
    list_all: bool = typer.Option(False, "--list", help="List the scenarios that have exercises."),
    answer: Optional[list[str]] = typer.Option(None, "--answer", help="Answer to one decision point, e.g. 'b: because ...'; repeat in order."),
    answers_file: Optional[Path] = typer.Option(None, "--answers", help="Answers from a JSON or TOML file."),
    no_save: bool = typer.Option(False, "--no-save", help="Do not record the attempt in your progress."),
    as_json: bool = typer.Option(False, "--json", help="Write the result as JSON on stdout."),
) -> None:
    """What would you do next? A scenario played as decisions: where to look, what the numbers mean,
    which fix, what gain to expect.

    Each decision has choices (answer with the letter) and room for your reasoning after it
    ("b: because the loads touch 32 sectors per request"). Your reasoning is graded against the
    scenario's rubric, by the concepts it names; each right choice is a point. Type "hint" for a hint.

    Examples:

        coach exercise --list

        coach exercise scenario-01

        coach exercise 15 --answer "c: the timeline" --answer "d" --answer "b" --answer "b: about 1.6x" --json
    """
    from coach import correctness
    from coach.exercises.player import build, scenarios

    everything = scenarios()
    if list_all or scenario is None:
        if not list_all:
            raise CoachError("name a scenario (e.g. `coach exercise scenario-01`), or list them with --list")
        rows = [{"id": s.id, "title": s.title, "level": s.level, "tool": s.tool}
                for s in [*everything, *correctness.all_scenarios()]]
        if as_json:
            print_json(rows)
        else:
            for r in rows:
                console.print(f"{r['id']}  {r['level']:12} {r['tool']:9} {r['title']}", markup=False, highlight=False)
        return
    if correctness.is_correctness(scenario):  # a bug hunt: coach.exercises.correctness
        from coach.exercises.correctness import build as build_hunt

        bugs = correctness.all_scenarios()
        exercise = build_hunt(correctness.find(scenario), others=bugs)
    else:
        from coach.scenarios import find

        exercise = build(find(scenario), others=everything)
    ask = _with_hints(exercise.hints, _source(answer, answers_file), err_console if as_json else console)
    show = (lambda line: None) if as_json else (lambda line: console.print(line, highlight=False, soft_wrap=True,
                                                                          markup=False))
    if not as_json:  # the title names the answer: it comes with the feedback, after the last answer
        console.print(exercise.scenario_id, style="bold", markup=False, highlight=False)
    from coach.exercises.player import play

    result = play(exercise, ask, show)
    marked = None
    if result.rubric.verdict == "unsure" and not as_json and not (answer or answers_file):
        from coach.exercises.grading import self_mark

        marked = self_mark(exercise.signals, ask, show)
    if not no_save:
        from coach.cli.progress import save

        save([_attempt(result, marked)])
    if as_json:
        print_json(_as_dict(result))


def _source(answer, answers_file):
    from coach.exercises.answers import source

    return source(answer, answers_file)


def _with_hints(hints: tuple[str, ...], ask, out):
    """Answering 'hint' shows the next hint (on ``out``) and asks again."""
    given = iter(hints)

    def asking(prompt: str, **kw) -> str:
        while True:
            text = ask(prompt, **kw)
            if text.strip().lower() not in ("hint", "?"):
                return text
            out.print(f"hint: {next(given, 'no more hints')}", highlight=False, soft_wrap=True, markup=False)

    return asking


def _as_dict(result) -> dict:
    from coach.exercises.player import LETTERS

    ex = result.exercise
    return {
        "scenario": ex.scenario_id, "title": ex.title, "topic": ex.topic, "score": result.score,
        "max_score": result.max_score,
        "points": [{"key": p.point.key, "prompt": p.point.prompt, "choices": list(p.point.choices),
                    "correct": LETTERS[p.point.correct], "chosen": None if p.choice is None else LETTERS[p.choice],
                    "choice_correct": p.choice_correct, "text": p.text, "feedback": list(p.feedback)}
                   for p in result.points],
        "rubric": {"score": result.rubric.score, "max_score": result.rubric.max_score, "verdict": result.rubric.verdict,
                   "found": [{"line": h.concept.label, "quote": h.quote} for h in result.rubric.found],
                   "missed": [c.label for c in result.rubric.missed],
                   "red_flags": [{"line": h.concept.label, "quote": h.quote} for h in result.rubric.flags],
                   "contradicted": [{"line": h.concept.label, "quote": h.quote} for h in result.rubric.contradicted]},
        "feedback": list(result.feedback),
    }


def _attempt(result, self_marked=None):
    from coach.exercises.player import LETTERS
    from coach.exercises.progress import Attempt

    answers = [(LETTERS[p.choice] + ": " if p.choice is not None else "") + p.text for p in result.points]
    return Attempt(kind="exercise", item=result.exercise.scenario_id, topic=result.exercise.topic,
                   score=result.score, max_score=result.max_score, answer=json.dumps(answers),
                   details={"choices_right": sum(p.choice_correct for p in result.points),
                            "rubric_found": [h.concept.label for h in result.rubric.found],
                            "rubric_missed": [c.label for c in result.rubric.missed],
                            "red_flags": [h.concept.label for h in result.rubric.flags],
                            "verdict": result.rubric.verdict,
                            **({"self_marked": self_marked} if self_marked is not None else {})})
