"""``coach progress`` (attempts and scores per topic and scenario, weak topics) and ``coach plan``
(a day-by-day study plan weighted by the weak topics). ``save`` is how the practice commands
(quiz, drill, exercise) record an attempt."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from coach.cli.main import app
from coach.cli.output import console, err_console, print_json

if TYPE_CHECKING:
    from coach.exercises.progress import Attempt

def save(attempts: list[Attempt]) -> None:
    """Record attempts, each in its own transaction. A repaired database is one warning line on
    stderr; a database that stays locked is a one-line error (the answers wait in a pending file)."""
    from coach.exercises.progress import save as save_attempts

    notice = save_attempts(attempts)
    if notice:
        _warn(notice)


def _warn(notice: str) -> None:
    err_console.print(f"coach: warning: {notice}", highlight=False, soft_wrap=True, markup=False)


@app.command("progress")
def progress_cmd(
    as_json: bool = typer.Option(False, "--json", help="Write the summary as JSON on stdout."),
) -> None:
    """Your attempts and scores: per quiz topic, per drill kind and per scenario, with weak topics.

    Scores are the share of the rubric an answer met (signals found minus red flags, over the signals),
    or right/wrong for a drill. Stored in $COACH_HOME or $XDG_DATA_HOME/coach/progress.sqlite.

    Examples:

        coach progress

        coach progress --json
    """
    import polars as pl

    from coach.exercises.bank import load_bank
    from coach.exercises.progress import WEAK_FRACTION, ProgressStore, summary, topic_strength

    with ProgressStore() as store:
        if store.notice:
            _warn(store.notice)
        attempts = store.attempts()
        path = store.path
    topics = list(load_bank().topics)
    strength = topic_strength(attempts, topics)
    by_topic = summary(attempts, "topic")
    by_item = summary(attempts.filter(kind="exercise"), "item")
    weak = strength.filter("weak").sort("recent")["topic"].to_list()
    if as_json:
        print_json({"database": str(path), "attempts": attempts.height, "topics": strength.to_dicts(),
                    "by_topic": by_topic.to_dicts(), "scenarios": by_item.to_dicts(), "weak_topics": weak})
        return
    if attempts.is_empty():
        console.print(f"No attempts yet ({path}). Start with `coach quiz`, `coach drill` or `coach exercise --list`.")
        return
    from rich.table import Table

    table = Table(title=f"Progress ({attempts.height} attempts)", title_justify="left")
    for col in ("kind", "topic", "attempts", "best", "last", "recent mean"):
        table.add_column(col, justify="right" if col not in ("kind", "topic") else "left")
    for r in by_topic.iter_rows(named=True):
        table.add_row(r["kind"], r["topic"], str(r["attempts"]), _pct(r["best"]), _pct(r["last"]), _pct(r["recent"]))
    console.print(table)
    if not by_item.is_empty():
        t2 = Table(title="Scenarios", title_justify="left")
        for col in ("scenario", "attempts", "best", "last"):
            t2.add_column(col, justify="left" if col == "scenario" else "right")
        for r in by_item.iter_rows(named=True):
            t2.add_row(r["item"], str(r["attempts"]), _pct(r["best"]), _pct(r["last"]))
        console.print(t2)
    untried = strength.filter(pl.col("attempts") == 0)["topic"].to_list()
    console.print(f"Weak topics (recent mean below {_pct(WEAK_FRACTION)}): {', '.join(weak) or 'none'}")
    if untried:
        console.print(f"Not tried yet: {', '.join(untried)}")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


@app.command("plan")
def plan_cmd(
    days: int = typer.Option(7, "--days", help="Length of the plan: 3, 7, 14, 28 or 56 days are curated; any length "
                                               "from 1 to 365 is fitted from the next longer one."),
    as_json: bool = typer.Option(False, "--json", help="Write the plan as JSON on stdout."),
) -> None:
    """A day-by-day preparation plan over scenarios, ladders, reading, drills and questions.

    The curated plans (3, 7, 14, 28 and 56 days) run themed phases in a sensible order, from the
    execution model to distributed training and a mock interview. Within each phase your weakest
    topics (by your recent scores, and topics never tried) get more questions and drills and their
    scenarios come first; one question and one drill a day come from all topics, weakest first.

    Examples:

        coach plan --days 7

        coach plan --days 28

        coach plan --days 56 --json
    """
    from coach.exercises.planner import make_plan
    from coach.exercises.progress import ProgressStore

    with ProgressStore() as store:
        if store.notice:
            _warn(store.notice)
        attempts = store.attempts()
    plan = make_plan(days, attempts)
    if as_json:
        print_json(plan.to_dict())
        return
    _line(f"{plan.title}: {days} day{'s' if days > 1 else ''}", "bold")
    _line(f"Weakest first: {', '.join(plan.focus) or 'no attempts yet, all topics'}")
    for note in plan.notes:
        _line(f"Note: {note}", "dim")
    phase = None
    for day in plan.days:
        if day.phase != phase:
            phase = day.phase
            console.print()
            _line(day.theme, "bold")
        _line(f"Day {day.number}  ({day.minutes} min)", "bold")
        for task in day.tasks:
            _line(f"- {task.title}", indent=2)
            _line(f"{task.command}  ({task.why})", "cyan", indent=4)


def _line(text: str, style: str = "", indent: int = 0) -> None:
    """Plain text wrapped within 80 columns, continuation lines indented two more."""
    import textwrap

    width = min(max(40, console.width), 80)
    for line in textwrap.wrap(text, width=width, initial_indent=" " * indent, subsequent_indent=" " * (indent + 2),
                              break_long_words=False, break_on_hyphens=False) or [""]:
        console.print(line, style=style or None, markup=False, highlight=False, soft_wrap=True)
