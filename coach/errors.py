"""Errors a user can act on.

Every failure that comes from the user's input or environment is raised as a ``CoachError`` whose
message is one line naming the file (or tool) and what is wrong. The CLI prints that line and exits
non-zero; nothing else is printed and no traceback is shown.
"""

from __future__ import annotations

from pathlib import Path


class CoachError(Exception):
    """A problem the user can fix. ``str(err)`` is the whole one-line message."""

    exit_code = 2


class InputError(CoachError):
    """A file that cannot be read as what it claims (or seems) to be."""

    def __init__(self, path: str | Path, problem: str):
        self.path = str(path)
        self.problem = problem.rstrip(".")
        super().__init__(f"{self.path}: {self.problem}")

    def __reduce__(self):  # raised in a worker process (coach.analyze.parallel), re-raised in the caller
        return (type(self), (self.path, self.problem))


class ToolError(CoachError):
    """An external tool (nsys, ncu, nvcc, ...) that is missing, failed, or timed out."""

    exit_code = 3
