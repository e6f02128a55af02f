"""``coach dash``: loopback by default, flags checked, the app built with the chosen upload limit."""

from __future__ import annotations

import pytest
from dash import Dash

from coach.cli import main


@pytest.fixture
def served(monkeypatch):
    calls = []

    def fake_run(self, **kwargs):
        calls.append((self, kwargs))

    monkeypatch.setattr(Dash, "run", fake_run)
    return calls


def test_binds_to_loopback_by_default(served):
    main(["dash"])
    app, kwargs = served[0]
    assert kwargs == {"host": "127.0.0.1", "port": 8050, "debug": False}
    assert app.ctx.settings.upload_limit_bytes == 256 * 2**20


def test_flags_reach_the_server(served, capsys):
    main(["dash", "--host", "0.0.0.0", "--port", "8060", "--debug", "--max-upload-mb", "1"])
    app, kwargs = served[0]
    assert kwargs == {"host": "0.0.0.0", "port": 8060, "debug": True}
    assert app.ctx.settings.upload_limit_bytes == 2**20
    assert "anyone who can reach this machine" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--port", "70000"], "--port 70000: use a port between 1 and 65535"),
    (["--max-upload-mb", "0"], "--max-upload-mb 0.0: give a positive size in MB"),
])
def test_bad_flags_are_one_line(served, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["dash", *args])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == f"coach: error: {message}"
    assert not served
