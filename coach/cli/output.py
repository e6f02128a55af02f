"""Where the CLI writes: results on stdout (rich tables or --json), progress and diagnostics on stderr."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

# Piped or captured output has no terminal width to follow: use a width that fits a kernel table
# rather than Rich's 80 columns. A terminal, or $COLUMNS, still decides where there is one.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
console = Console(width=_WIDTH)
err_console = Console(stderr=True)


def print_json(data: Any) -> None:
    """Write ``data`` as JSON on stdout (numbers as numbers, NaN as null)."""
    sys.stdout.write(json.dumps(_clean(data), indent=2, default=str) + "\n")


def _clean(x: Any) -> Any:
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def ask(question: str) -> str:
    """The user's answer to ``question``: a prompt on a terminal; otherwise one line read from
    stdin (a script may pipe its answer in), and at the end of input (``</dev/null``) no answer."""
    if sys.stdin is not None and sys.stdin.isatty():
        import typer  # noqa: PLC0415

        try:
            return typer.prompt(question, default="", show_default=False)
        except EOFError:
            return ""
    line = sys.stdin.readline() if sys.stdin is not None else ""
    err_console.print(f"{question}: {line.strip() or '(none: stdin is not a terminal and gave no answer)'}",
                      highlight=False)
    return line.strip()


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Any]:
    """A progress bar on stderr that appears only if the work takes over a second."""
    bar = Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}" if total else ""),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1, **kw: bar.update(task, advance=n, **kw)
