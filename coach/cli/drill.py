"""``coach drill``: estimation drills from the hardware tables, graded by tolerance."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from coach.cli.main import app
from coach.cli.output import console, print_json


@app.command("drill")
def drill_cmd(
    kind: Optional[str] = typer.Option(None, "--kind", help="memory-op, gemm, bound, decode-floor, mfu, kv-cache, tensor-parallel, "
                                       "pipeline-bubble, data-parallel, moe-all-to-all, activation-memory, prefill or "
                                       "training-days (default: any; --list says what each asks)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU id, e.g. h100-sxm, h200, l4 (see `coach gpus`; default: any)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Pose the same drills again."),
    count: int = typer.Option(1, "--count", min=1, help="How many drills."),
    answer: Optional[list[str]] = typer.Option(None, "--answer", help="Your answer, e.g. '160 us'; repeat once per drill."),
    answers_file: Optional[Path] = typer.Option(None, "--answers", help="Answers from a JSON or TOML file."),
    show: bool = typer.Option(False, "--show", help="Show the drills with their worked solutions, without asking."),
    no_save: bool = typer.Option(False, "--no-save", help="Do not record the attempts in your progress."),
    as_json: bool = typer.Option(False, "--json", help="Write the results as JSON on stdout."),
    list_kinds: bool = typer.Option(False, "--list", help="List the kinds of drill and what each asks."),
) -> None:
    """Estimation drills: how long should it take, what is the floor, what MFU is that?

    Each drill is generated from the hardware tables (datasheet numbers, each with its source) and
    a template; you answer with a number (units like us, ms, days, tokens/s, %, GB are understood)
    and get the worked solution step by step. Tolerances are stated per kind (±20% for floors).
    Parallelism drills (tensor-parallel, data-parallel, moe-all-to-all) cost communication over the
    GPU's NVLink, so they need a GPU on NVLink switches (h100-sxm, h200, b200, gb200, ...).

    Examples:

        coach drill

        coach drill --kind decode-floor --gpu h200 --seed 3

        coach drill --kind memory-op --gpu h100-sxm --seed 1 --answer "160 us"

        coach drill --kind tensor-parallel --gpu h200 --show
    """
    import random

    from coach.exercises.answers import source
    from coach.exercises.drills import KIND_HELP, KIND_TOPICS, generate

    if list_kinds:
        if as_json:
            print_json([{"kind": k, "topic": KIND_TOPICS[k], "asks": v} for k, v in KIND_HELP.items()])
        else:
            for k, v in KIND_HELP.items():
                _say(f"{k:<18} {v}")
        return

    base = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
    drills = [generate(kind, gpu, base + i) for i in range(count)]
    if show:
        _show(drills, as_json)
        return
    ask = source(answer, answers_file)
    results = []
    for i, d in enumerate(drills, 1):
        if not as_json:
            _say(f"\nDrill {i}/{len(drills)}  {d.kind} · seed {base + i - 1}", "bold")
            _say(d.question)
        text = ask(f"Your answer ({d.unit.name}):", multiline=False)
        result = d.check(text)
        results.append(_as_dict(d, base + i - 1) | {"your_answer": text, "correct": result.correct, "given": result.given,
                                                    "error": result.error, "feedback": list(result.feedback)})
        if not no_save:  # each answer is committed as soon as it is graded
            _save(_attempt(d, base + i - 1, text, result))
        if not as_json:
            for line in result.feedback:
                _say(line, "green" if line.startswith("right") else "red" if line.startswith(("off", "wrong", "say", "could"))
                     else "")
    if as_json:
        print_json(results)


def _as_dict(d, seed: int) -> dict:
    return {"id": d.id, "kind": d.kind, "seed": seed, "topic": d.topic, "gpu": d.gpu, "question": d.question,
            "answer": d.answer, "unit": d.unit.name, "tolerance": d.tolerance, "bound": d.bound,
            "steps": list(d.steps)}


def _show(drills, as_json: bool) -> None:
    if as_json:
        print_json([_as_dict(d, None) for d in drills])
        return
    for d in drills:
        _say(f"\n{d.kind}  {d.question}", "bold")
        for i, step in enumerate(d.steps, 1):
            _say(f"  {i}. {step}")


def _say(text: str, style: str = "") -> None:
    """Print text as it is (no markup, no highlighting), wrapped to the terminal, a step's
    continuation lines indented under its text."""
    import re
    import textwrap

    if text.startswith("\n"):
        console.print()
        text = text.lstrip("\n")
    lead = re.match(r"\s*(\d+\.\s)?", text).group(0)
    lines = textwrap.wrap(text, width=max(40, console.width), subsequent_indent=" " * len(lead),
                          break_long_words=False, break_on_hyphens=False) or [""]
    for line in lines:
        console.print(line, style=style or None, markup=False, highlight=False, soft_wrap=True)


def _save(attempt) -> None:
    from coach.cli.progress import save

    save([attempt])


def _attempt(d, seed: int, text: str, result):
    from coach.exercises.drills import attempt

    return attempt(d, seed, text, result)
