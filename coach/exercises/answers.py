"""Where answers come from: typed at a prompt, or given up front for scripts and tests.

``--answer TEXT`` (repeated) and ``--answers FILE`` give one answer per question or decision point,
in order. A file is JSON (a list) or TOML (``answers = [...]``); an item is text, or for an
exercise decision point a table ``{choice = "b", text = "..."}``, the same as the text "b: ...".
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Callable

from coach.errors import CoachError, InputError


class AnswersExhausted(CoachError):
    """Fewer scripted answers than questions."""


def load_file(path: Path) -> list[str]:
    """The answers in a JSON or TOML file, each as text."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(path, f"cannot be read ({err.strerror or err})") from None
    try:
        data = json.loads(raw) if path.suffix.lower() == ".json" else tomllib.loads(raw).get("answers")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(path, f"is not valid {'JSON' if path.suffix.lower() == '.json' else 'TOML'} ({err})") from None
    if not isinstance(data, list):
        raise InputError(path, "needs a list of answers (JSON: [...]; TOML: answers = [...])")
    return [_as_text(path, i, item) for i, item in enumerate(data)]


def _as_text(path: Path, i: int, item: object) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and set(item) <= {"choice", "text"} and item:
        choice, text = str(item.get("choice", "")).strip(), str(item.get("text", "")).strip()
        return f"{choice}: {text}" if choice and text else choice or text
    raise InputError(path, f"answer {i + 1} must be text or a table with 'choice' and 'text'")


class Scripted:
    """Answers given in advance, handed out in order."""

    def __init__(self, answers: list[str]):
        self._answers = list(answers)
        self._next = 0

    def __call__(self, prompt: str, *, multiline: bool = True) -> str:
        if self._next >= len(self._answers):
            raise AnswersExhausted(f"{len(self._answers)} answer(s) given, but there are more questions; "
                                   "give one --answer per question")
        self._next += 1
        return self._answers[self._next - 1]


def interactive(prompt: str, *, multiline: bool = True) -> str:
    """Ask on the terminal. Multi-line answers end with an empty line (or end of input)."""
    sys.stderr.write(prompt + (" (end with an empty line)\n" if multiline else " "))
    sys.stderr.flush()
    lines = []
    for line in sys.stdin:
        if not line.strip():
            if lines or not multiline:
                break
            continue
        lines.append(line.rstrip("\n"))
        if not multiline:
            break
    return "\n".join(lines)


def source(answers: list[str] | None, answers_file: Path | None) -> Callable[..., str]:
    """Scripted answers if any were given, else the terminal; refuses to wait on a non-terminal."""
    given = list(answers or []) + (load_file(answers_file) if answers_file else [])
    if given:
        return Scripted(given)
    if not sys.stdin.isatty():
        raise CoachError("no answers given and no terminal to ask on: pass --answer TEXT (once per question) "
                         "or --answers FILE")
    return interactive
