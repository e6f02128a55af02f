"""Where the project's data folders are: in a source checkout, or inside an installed wheel.

The folders ``scenarios/``, ``kernels/``, ``hardware/`` and ``traces/`` sit at the top of the
repository. A wheel carries them under ``coach/_data/`` (see ``pyproject.toml``). Set
``COACH_DATA`` to a folder holding them to use another copy (a fresh recording, say).
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
