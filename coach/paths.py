"""Where the project's data folders are: in a source checkout, or inside an installed wheel.

The folders ``scenarios/``, ``kernels/``, ``hardware/`` and ``traces/`` sit at the top of the
repository. A wheel carries them under ``coach/_data/`` (see ``pyproject.toml``). Set
``COACH_DATA`` to a folder holding them to use another copy (a fresh recording, say).

What coach writes for its user (``coach calibrate``'s measurements) goes to the user's data folder:
``$XDG_DATA_HOME/coach`` (``~/.local/share/coach`` when unset), or ``$COACH_HOME`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
DATA_FOLDERS = ("scenarios", "kernels", "hardware", "traces")


def data_root() -> Path:
    """The folder that holds scenarios/, kernels/, hardware/ and traces/."""
    override = os.environ.get("COACH_DATA")
    if override:
        return Path(override).expanduser().resolve()
    installed = _PACKAGE / "_data"
    if (installed / "hardware").is_dir():
        return installed
    return _PACKAGE.parent


def scenarios_dir() -> Path:
    return data_root() / "scenarios"


def kernels_dir() -> Path:
    return data_root() / "kernels"


def hardware_dir() -> Path:
    return data_root() / "hardware"


def traces_dir() -> Path:
    return data_root() / "traces"


def user_data_dir() -> Path:
    """The user's coach folder: ``$COACH_HOME``, else ``$XDG_DATA_HOME/coach``, else ``~/.local/share/coach``."""
    home = os.environ.get("COACH_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share") / "coach"


def calibration_dir() -> Path:
    """Where ``coach calibrate`` stores the ceilings measured on the user's GPUs."""
    return user_data_dir() / "calibration"
