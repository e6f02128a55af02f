"""Write a folder completely or not at all: build it under a hidden sibling name, rename it into
place when every step has succeeded, remove it when any step fails (or the user interrupts)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coach.errors import CoachError


@contextmanager
def staged_folder(final: Path, *, replace: bool = False) -> Iterator[Path]:
    """Yield an empty folder beside ``final``; it becomes ``final`` when the block succeeds.

    An existing ``final`` is an error unless it is empty or ``replace`` is set; with ``replace`` it
    is swapped out only after the new folder is complete.
    """
    final = Path(final)
    if final.exists() and not replace and (not final.is_dir() or any(final.iterdir())):
        raise CoachError(f"{final} already exists and is not empty: choose another output folder or remove it")
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = final.parent / f".{final.name}.partial-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir()
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if final.exists():
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        final.rename(old)
        stage.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        stage.rename(final)
