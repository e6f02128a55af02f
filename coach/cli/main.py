"""The ``coach`` command: the Typer app that each ``coach/cli/<command>.py`` module adds to."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="coach",
    help="A GPU performance-debugging coach: read a profile, find the bottleneck, learn the fix.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from coach import __version__

        typer.echo(f"coach {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """A GPU performance-debugging coach: read a profile, find the bottleneck, learn the fix."""
