"""Where the CLI writes: results on stdout (rich tables or --json), progress and diagnostics on stderr."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from rich.console import Console

# Piped or captured output has no terminal width to follow: use a width that fits a kernel table
# rather than Rich's 80 columns. A terminal, or $COLUMNS, still decides where there is one. Decided
# at each print, not at import: the same process (a notebook, a test) may change $COLUMNS later.
PIPED_WIDTH = 120


class _Console(Console):
    @property
    def size(self):  # noqa: ANN201 - Rich's ConsoleDimensions
        columns = os.environ.get("COLUMNS", "")
        self._width = int(columns) if columns.isdigit() else (None if self.file.isatty() else PIPED_WIDTH)
        return Console.size.fget(self)

    @size.setter
    def size(self, new_size) -> None:  # noqa: ANN001
        Console.size.fset(self, new_size)


console = _Console()
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
    """A progress bar on stderr that appears only if the work takes over a second, and only on a
    terminal (elsewhere nothing is drawn, and Rich's progress module is not imported)."""
    if not err_console.is_terminal:
        yield lambda n=1, **kw: None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415

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


# --------------------------------------------------------------------------------------------
# Tables that fit the terminal: numbers never break, names are elided, columns give way
# --------------------------------------------------------------------------------------------


def elide(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: its head and tail around an ellipsis (a kernel's
    distinguishing template arguments sit at its end)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    cut = text.find("<")
    if 0 < cut and len(text) - cut + 6 <= width:  # kernel<distinguishing args>: shorten the name, keep the args
        return text[: width - (len(text) - cut) - 1] + "…" + text[cut:]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[len(text) - tail:] if tail else text[: width - 1] + "…"


def fit_table(title: str | None, columns: list[tuple[str, str]], rows: list[list[str]], *,
              names: int | tuple[int, ...] = 1, drop: tuple[str, ...] = (), name_min: int = 20,
              caption: str | None = None, width: int | None = None, wrap: bool = False) -> None:
    """Print a table that fits ``width`` (the console's): the name columns (the first ``names``, or
    those indices) hold plain text, elided to fit (``wrap``: wrapped at spaces instead); the others
    hold numbers and short words, never wrapped or cut. Where the names would get under
    ``name_min`` cells, the columns named in ``drop`` are left out in that order, and a line says
    which (--json has them all)."""
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    width = width or console.width
    text_cols = set(range(names)) if isinstance(names, int) else set(names)
    cells = [[Text.from_markup(c).cell_len if i not in text_cols else len(c) for i, c in enumerate(row)]
             for row in rows]
    natural = [max([len(h)] + [r[i] for r in cells]) for i, (h, _) in enumerate(columns)]
    if wrap:  # a wrapped column needs only its longest word
        floor = {i: max([len(w) for w in columns[i][0].split()] + [len(w) for row in rows for w in row[i].split()])
                 for i in text_cols}
    else:
        floor = {i: 6 for i in text_cols}
    keep = list(range(len(columns)))
    dropped: list[str] = []

    def room() -> int:
        return width - sum(natural[i] for i in keep if i not in text_cols) - (len(keep) - 1)

    def needed() -> int:
        return max(name_min * len(text_cols & set(keep)), sum(floor[i] for i in text_cols if i in keep))

    for header in drop:
        if room() >= needed() or header not in [columns[i][0] for i in keep]:
            continue
        keep.remove(next(i for i in keep if columns[i][0] == header))
        dropped.append(header)
    if wrap and sum(floor[i] for i in text_cols if i in keep) > room():
        # a word (a kernel's mangled name) wider than the table leaves room for: that column's words
        # fold instead, and the other columns keep their words (a number and its unit) whole
        floor = {i: min(floor[i], 1) for i in text_cols}
    avail = max(room(), sum(floor[i] for i in text_cols if i in keep))
    widths = {i: natural[i] for i in text_cols if i in keep}
    while sum(widths.values()) > avail and any(widths[i] > floor[i] for i in widths):  # the widest gives first
        j = max((i for i in widths if widths[i] > floor[i]), key=lambda i: widths[i])
        widths[j] -= 1
    table = Table(title=title, title_justify="left", title_style="bold", header_style="dim", box=None,
                  padding=(0, 1), pad_edge=False, collapse_padding=True, caption=caption,
                  caption_justify="left", caption_style="dim")
    for i in keep:
        header, justify = columns[i]
        w = widths.get(i, natural[i])  # noqa: E501
        table.add_column(header, justify=justify, no_wrap=not (wrap and i in text_cols), overflow="fold",
                         width=w, min_width=w, max_width=w)
    for row in rows:
        table.add_row(*((escape_markup(row[i] if wrap else elide(row[i], widths[i])) if i in text_cols else row[i])
                        for i in keep))
    console.print(table)
    if dropped:
        console.print(f"[dim]not shown at {width} columns: {', '.join(dropped)} (--json has every column)[/]",
                      highlight=False)


def escape_markup(text: str) -> str:
    from rich.markup import escape  # noqa: PLC0415

    return escape(text)


# --------------------------------------------------------------------------------------------
# Input from stdin, tables out to CSV or Parquet
# --------------------------------------------------------------------------------------------

STDIN = "-"


@contextmanager
def stdin_paths(paths: list[Any]) -> Iterator[tuple[list[Any], dict[str, str]]]:
    """The paths with ``-`` replaced by a temporary file holding stdin (a profile piped in: coach
    tells formats apart by content), and a map from that file back to ``-`` for display. The file
    is removed afterwards."""
    import shutil  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    if sum(str(p) == STDIN for p in paths) > 1:
        from coach.errors import CoachError  # noqa: PLC0415

        raise CoachError("stdin (-) can be read once: name it once")
    if STDIN not in map(str, paths):
        yield list(paths), {}
        return
    folder = Path(tempfile.mkdtemp(prefix="coach-stdin-"))
    try:
        target = folder / "stdin"
        with open(target, "wb") as fh:
            shutil.copyfileobj(sys.stdin.buffer, fh)
        if target.stat().st_size == 0:
            from coach.errors import InputError  # noqa: PLC0415

            raise InputError("-", "stdin is empty (pipe a profile in: coach load - < run.sqlite)")
        yield [target if str(p) == STDIN else p for p in paths], {str(target): "- (stdin)"}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_frame(frame: Any, csv: Any = None, parquet: Any = None) -> None:
    """Write a Polars frame to ``csv`` and/or ``parquet``: whole or not at all (a temporary file
    renamed into place). CSV holds nested columns (lists, structs) as JSON text."""
    import polars as pl  # noqa: PLC0415

    from coach.errors import CoachError  # noqa: PLC0415

    for target, kind in ((csv, "csv"), (parquet, "parquet")):
        if target is None:
            continue
        path = os.fspath(target)
        tmp = f"{path}.part-{os.getpid()}"
        try:
            if kind == "csv":
                nested = [c for c, t in frame.schema.items() if t.is_nested() or t == pl.Object]
                flat = frame.with_columns(
                    pl.col(c).map_elements(lambda v: json.dumps(_clean(v.to_list() if hasattr(v, "to_list") else v),
                                                                default=str), return_dtype=pl.Utf8) for c in nested)
                flat.write_csv(tmp)
            else:
                frame.write_parquet(tmp)
            os.replace(tmp, path)
        except OSError as err:
            raise CoachError(f"{path}: cannot be written ({err.strerror or err})") from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        err_console.print(f"wrote {frame.height} rows to {path}", highlight=False)
