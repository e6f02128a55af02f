"""``coach dash``: the dashboard in the browser, served on this machine."""

from __future__ import annotations

import typer

from coach.cli.main import app
from coach.cli.output import err_console
from coach.errors import CoachError

#: Loopback only by default: the dashboard reads files the user uploads, and nobody else should.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050


class DashUsageError(CoachError):
    """A flag with a value the dashboard cannot use."""


@app.command("dash")
def dash_cmd(
    host: str = typer.Option(DEFAULT_HOST, "--host", help="Address to listen on. 0.0.0.0 exposes the dashboard to your network."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port to listen on."),
    debug: bool = typer.Option(False, "--debug", help="Dash's debug mode: reload on code changes, tracebacks in the page."),
    max_upload_mb: float = typer.Option(256, "--max-upload-mb", help="Largest report that can be uploaded, in MB."),
) -> None:
    """Open the dashboard: scenario walkthroughs, your own reports, ladders and hardware.

    Examples:

        coach dash

        coach dash --port 8060 --max-upload-mb 1024
    """
    if not 0 < port < 65536:
        raise DashUsageError(f"--port {port}: use a port between 1 and 65535")
    if max_upload_mb <= 0:
        raise DashUsageError(f"--max-upload-mb {max_upload_mb}: give a positive size in MB")
    from coach.app import Settings, create_app  # noqa: PLC0415 - Dash loads only for this command
    from coach.app.server import allowed_hosts  # noqa: PLC0415

    dash_app = create_app(Settings(upload_limit_bytes=int(max_upload_mb * 2**20), hosts=allowed_hosts(host)))
    if host not in ("127.0.0.1", "localhost", "::1"):
        err_console.print(f"[yellow]coach dash: listening on {host}: anyone who can reach this machine can open "
                          "the dashboard and upload files to it[/]")
    err_console.print(f"coach dash: open http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/ "
                      "(Ctrl+C to stop)")
    dash_app.run(host=host, port=port, debug=debug)
