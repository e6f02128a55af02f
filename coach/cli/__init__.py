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


def main(argv: list[str] | None = None) -> None:
    usage_errors, exits, aborts = _click_exceptions()
    try:
        code = app(args=argv, prog_name="coach", standalone_mode=False)
        if isinstance(code, int) and code:  # typer.Exit(code) comes back as a return value here
            sys.exit(code)
    except CoachError as err:
        typer.echo(f"coach: error: {err}", err=True)
        sys.exit(err.exit_code)
    except aborts:
        typer.echo("coach: aborted", err=True)
        sys.exit(130)
    except usage_errors as err:
        err.show()
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
