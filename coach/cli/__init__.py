"""Command-line interface. ``main`` runs the Typer app and turns ``CoachError`` into one line on
stderr and a non-zero exit code, without a traceback."""

from __future__ import annotations

import importlib
import os
import sys

import click

from coach.cli.main import app
from coach.errors import CoachError

# Each module registers its commands on ``app`` when imported.
COMMAND_MODULES = [
    "coach.cli.load",
    "coach.cli.predict",
    "coach.cli.dash",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name)


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, prog_name="coach", standalone_mode=False)
    except CoachError as err:
        click.echo(f"coach: error: {err}", err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("coach: aborted", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        click.echo("coach: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as err:  # a bug in coach: say so in one line; COACH_DEBUG=1 shows the traceback
        if os.environ.get("COACH_DEBUG"):
            raise
        click.echo(f"coach: internal error: {type(err).__name__}: {err} (set COACH_DEBUG=1 for the traceback)", err=True)
        sys.exit(70)
