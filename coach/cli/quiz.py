"""``coach quiz``: interview questions, graded by the concepts your answer names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json
from coach.errors import CoachError


@app.command("quiz")
def quiz_cmd(
    topic: Optional[str] = typer.Option(None, "--topic", help="Only this topic (see --topics)."),
    level: Optional[str] = typer.Option(None, "--level", help="Only this level: junior, mid, senior or staff."),
    count: int = typer.Option(3, "--count", min=1, help="How many questions."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Pick the same questions again."),
    question_id: Optional[str] = typer.Option(None, "--id", help="Ask this one question (e.g. perf-01)."),
    answer: Optional[list[str]] = typer.Option(None, "--answer", help="Your answer; repeat once per question."),
    answers_file: Optional[Path] = typer.Option(None, "--answers", help="Answers from a JSON or TOML file."),
    show: bool = typer.Option(False, "--show", help="Show the questions and model answers, without grading."),
    topics: bool = typer.Option(False, "--topics", help="List the topics and how many questions each has."),
    no_save: bool = typer.Option(False, "--no-save", help="Do not record the attempts in your progress."),
    as_json: bool = typer.Option(False, "--json", help="Write the results as JSON on stdout."),
) -> None:
    """Interview questions on GPU performance, graded by the concepts your answer names.

    Each answer is checked for the strong signals a senior engineer would name and for red flags
    (misconceptions); wording, case and plurals do not matter. You get a score, feedback on each
    concept, and the model answer with its sources. Attempts go to your progress (`coach progress`).

    Examples:

        coach quiz --topic coalescing --count 2

        coach quiz --level senior --seed 7

        coach quiz --id perf-01 --answer "Intensity is FLOPs per byte; below the ridge it is memory-bound."

        coach quiz --topics
    """
    from coach.exercises.answers import interactive, source
    from coach.exercises.bank import LEVELS, load_bank

    bank = load_bank()
    if topics:
        counts = {t: sum(q.topic == t for q in bank.questions) for t in bank.topics}
        if as_json:
            print_json([{"topic": t, "title": bank.topics[t].title, "questions": n} for t, n in counts.items()])
        else:
            from rich.table import Table

            table = Table(box=None, show_header=False, pad_edge=False)
            table.add_column(no_wrap=True)
            table.add_column(justify="right")
            table.add_column()
            for t, n in counts.items():
                table.add_row(t, str(n), bank.topics[t].title)
            table.add_row("", "", "")
            table.add_row("all", str(sum(counts.values())), f"questions in {len(counts)} topics")
            console.print(table, markup=False, highlight=False)
        return
    if topic is not None and topic not in bank.topics:
        raise CoachError(f"--topic: unknown topic '{topic}'; use one of {', '.join(bank.topics)}")
    if level is not None and level not in LEVELS:
        raise CoachError(f"--level: unknown level '{level}'; use one of {', '.join(LEVELS)}")
    if question_id is not None:
        try:
            questions = [bank.question(question_id)]
        except KeyError:
            raise CoachError(f"--id: no question '{question_id}' (ids look like perf-01; see --show)") from None
    else:
        import random

        seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
        questions = bank.select(topic=topic, level=level, count=count, seed=seed)
    if not questions:
        raise CoachError("no questions match --topic and --level")
    if show:
        _show(questions, as_json)
        return
    ask = source(answer, answers_file)
    results = []
    for i, q in enumerate(questions, 1):
        if not as_json:
            console.print(f"\nQuestion {i}/{len(questions)}  {q.id} · {q.topic} · {q.level}", style="bold", markup=False,
                          highlight=False)
            _say(q.question)
        text = ask(f"Your answer to {q.id}:")
        grade = q.grade(text)
        marked = None
        if not as_json:
            for line in grade.feedback():
                _say(line, {"+": "green", "-": "yellow", "!": "red", "?": "magenta"}.get(line[0], "bold"))
            if grade.verdict == "unsure" and ask is interactive:
                from coach.exercises.grading import self_mark

                marked = self_mark(q.signals, ask, _say)
        results.append(_result(q, text, grade) | {"self_marked": marked})
        if not no_save:  # each answer is committed as soon as it is graded
            _save(_attempt(q, text, grade, marked))
        if not as_json:
            _say("Model answer:", "bold")
            _say(q.answer)
            _say(f"Sources: {'; '.join(q.sources)}", "dim")
            _follow_ups(q)
    if as_json:
        print_json(results)


def _show(questions, as_json: bool) -> None:
    if as_json:
        print_json([{"id": q.id, "topic": q.topic, "level": q.level, "question": q.question, "answer": q.answer,
                     "signals": [c.label for c in q.signals], "red_flags": [c.label for c in q.red_flags],
                     "sources": list(q.sources), "follow_ups": list(q.follow_ups)} for q in questions])
        return
    for q in questions:
        _say(f"\n{q.id}  {q.topic} · {q.level}", "bold")
        _say(q.question + "\n")
        _say(q.answer)
        _say(f"Strong signals: {'; '.join(c.label for c in q.signals)}", "green")
        _say(f"Red flags: {'; '.join(c.label for c in q.red_flags)}", "red")
        _follow_ups(q)


def _follow_ups(q) -> None:
    """The questions an interviewer asks next, after the answer (design questions have them)."""
    if q.follow_ups:
        _say("Follow-ups an interviewer asks:", "bold")
        for f in q.follow_ups:
            _say(f"  - {f}")


def _say(text: str, style: str = "") -> None:
    """Print text as it is (it holds brackets such as tile[32][33], which are not markup), its
    paragraphs reflowed so that they wrap at word boundaries to the terminal's width."""
    body = text.strip("\n")
    lead, trail = text[: len(text) - len(text.lstrip("\n"))], text[len(text.rstrip("\n")):]
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body)] if "\n" in body else [body]
    console.print(lead + "\n\n".join(paragraphs) + trail, style=style or None, markup=False, highlight=False)


def _result(q, text: str, grade) -> dict:
    return {"id": q.id, "topic": q.topic, "level": q.level, "question": q.question, "your_answer": text,
            "score": grade.score, "max_score": grade.max_score, "verdict": grade.verdict,
            "found": [{"concept": h.concept.id, "label": h.concept.label, "quote": h.quote} for h in grade.found],
            "missed": [{"concept": c.id, "label": c.label} for c in grade.missed],
            "red_flags": [{"concept": h.concept.id, "label": h.concept.label, "quote": h.quote} for h in grade.flags],
            "contradicted": [{"concept": h.concept.id, "label": h.concept.label, "quote": h.quote}
                             for h in grade.contradicted],
            "feedback": grade.feedback(), "model_answer": q.answer, "sources": list(q.sources),
            "follow_ups": list(q.follow_ups)}


def _save(attempt) -> None:
    from coach.cli.progress import save

    save([attempt])


def _attempt(q, text: str, grade, self_marked=None):
    """The attempt as recorded: the automatic score, and apart from it any self-marking."""
    from coach.exercises.progress import Attempt

    details = {"found": [h.concept.id for h in grade.found], "missed": [c.id for c in grade.missed],
               "red_flags": [h.concept.id for h in grade.flags], "level": q.level, "verdict": grade.verdict}
    if self_marked is not None:
        details["self_marked"] = self_marked
    return Attempt(kind="quiz", item=q.id, topic=q.topic, score=grade.score, max_score=grade.max_score, answer=text,
                   details=details)
