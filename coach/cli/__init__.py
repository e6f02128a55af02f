"""Command-line interface. ``main`` runs the Typer app and turns ``CoachError`` into one line on
stderr and a non-zero exit code, without a traceback.

Command modules must stay import-light (no polars, dash or ncu_report at module level): the CLI is
also imported on GPU machines that have only the standard library and the GPU stack.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer
import typer.main

from coach.cli.main import app
from coach.errors import CoachError

# Each module registers its commands on ``app`` when imported.
COMMAND_MODULES = [
    "coach.cli.load",
    "coach.cli.diagnose",
    "coach.cli.predict",
    "coach.cli.roofline",
    "coach.cli.doctor",
    "coach.cli.profile",
    "coach.cli.record",
    "coach.cli.run",
    "coach.cli.quiz",
    "coach.cli.drill",
    "coach.cli.exercise",
    "coach.cli.progress",
    "coach.cli.ladder",
    "coach.cli.diff",
    "coach.cli.check",
    "coach.cli.calibrate",
    "coach.cli.join",
    "coach.cli.explain",
    "coach.cli.dash",
    "coach.cli.recipe",
    "coach.cli.source",
    "coach.cli.reference",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name)


def _click_exceptions() -> tuple[tuple[type, ...], tuple[type, ...], tuple[type, ...]]:
    """(ClickException, Exit, Abort) classes from click and from the copy of click that newer Typer
    releases carry inside (typer._click), whichever are present."""
    modules = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            modules.append(importlib.import_module(name))
        except ImportError:
            pass
    usage = tuple(m.ClickException for m in modules)
    exits = tuple(getattr(m, "Exit") for m in modules if hasattr(m, "Exit")) + (typer.Exit,)
    aborts = tuple(getattr(m, "Abort") for m in modules if hasattr(m, "Abort")) + (typer.Abort,)
    return usage, exits, aborts


def _reflow(text: str) -> str:
    """A docstring as help: each paragraph's hard line breaks joined (the terminal wraps), indented
    blocks (examples) kept line for line."""
    import inspect  # noqa: PLC0415

    out = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines = para.splitlines()
        out.append(para if any(line.startswith((" ", "\b")) for line in lines) else " ".join(x.strip() for x in lines))
    return "\n\n".join(out)


def _first_sentence(text: str) -> str:
    first = text.split("\n\n")[0]
    end = first.find(". ")
    return first if end < 0 else first[: end + 1]


#: What an option's value is, from the type Typer would print: help names it (N, PATH) instead.
_METAVARS = {"int": "N", "int range": "N", "float": "X", "float range": "X", "str": "TEXT", "Path": "PATH",
             "PosixPath": "PATH", "bool": ""}


def _label(param, ctx) -> str | None:  # noqa: ANN001 - typer's parameter and context classes
    if param.metavar is not None:
        return param.metavar
    if getattr(param, "param_type_name", "") == "argument" or getattr(param, "is_flag", False):
        return None
    shown = _TYPE_LABEL(param, ctx) or ""
    bare = shown.strip("<>").removeprefix("list[").removesuffix("]")
    label = _METAVARS.get(bare, bare if "|" in bare else bare.upper())
    return (label + ("..." if getattr(param, "multiple", False) else "")) or None


def _patch_type_labels() -> None:
    """Typer 0.2x prints each parameter's Python type (<int range>, <list[Path]>, <bool> for a flag);
    name the value instead, as click does. Older Typers (click's own help) are left alone."""
    global _TYPE_LABEL
    core = importlib.import_module("typer.core")
    base = getattr(core, "_TyperParameter", None)
    if base is None or not hasattr(base, "display_type"):
        return
    _TYPE_LABEL = base.display_type
    for cls in (core.TyperArgument, core.TyperOption):
        if "display_type_rich" in vars(cls) or hasattr(cls, "display_type_rich"):
            cls.display_type_rich = _label


_TYPE_LABEL = None
_patch_type_labels()


def _polish(command):  # noqa: ANN001, ANN202 - a click command or group
    """Help rendered from clean docstrings: reflowed paragraphs, a one-sentence summary in the
    command list."""
    if command.help:
        command.help = _reflow(command.help)
        command.short_help = command.short_help or _first_sentence(command.help)
    for sub in getattr(command, "commands", {}).values():
        _polish(sub)
    return command


def main(argv: list[str] | None = None) -> None:
    usage_errors, exits, aborts = _click_exceptions()
    try:
        code = _polish(typer.main.get_command(app)).main(args=argv, prog_name="coach", standalone_mode=False)
        if isinstance(code, int) and code:  # typer.Exit(code) comes back as a return value here
            sys.exit(code)
    except CoachError as err:
        typer.echo(f"coach: error: {err}", err=True)
        sys.exit(err.exit_code)
    except aborts:
        typer.echo("coach: aborted", err=True)
        sys.exit(130)
    except usage_errors as err:  # one line, like every other error, naming where the help is
        ctx = getattr(err, "ctx", None)
        where = f" (see {ctx.command_path} -h)" if ctx is not None and getattr(err, "exit_code", 1) == 2 else ""
        typer.echo(f"coach: error: {err.format_message()}{where}", err=True)
        sys.exit(err.exit_code)
    except exits as err:
        sys.exit(getattr(err, "exit_code", 0))
    except KeyboardInterrupt:
        typer.echo("coach: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as err:  # a bug in coach: say so in one line; COACH_DEBUG=1 shows the traceback
        if os.environ.get("COACH_DEBUG"):
            raise
        typer.echo(f"coach: internal error: {type(err).__name__}: {err} (set COACH_DEBUG=1 for the traceback)", err=True)
        sys.exit(70)
