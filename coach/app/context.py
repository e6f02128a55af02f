"""What every page of one app instance shares: its settings, the open reports, the upload folder."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from coach import paths
from coach.app.reports import Reports
from coach.app.server import allowed_hosts
from coach.app.uploads import DEFAULT_LIMIT_BYTES
from coach.app.walkthrough import Walkthrough, scenario_walkthroughs


@dataclass(frozen=True)
class Settings:
    traces_dir: Path = field(default_factory=paths.traces_dir)
    kernels_dir: Path = field(default_factory=paths.kernels_dir)
    upload_limit_bytes: int = DEFAULT_LIMIT_BYTES
    #: The user's exercise progress database; None for the default one (coach.exercises.progress).
    progress_path: Path | None = None
    #: Where the scenario walkthroughs come from (called once, on first use): the project's
    #: scenarios/ and their recordings in traces/ unless a test or another catalogue says otherwise.
    walkthroughs: Callable[[], Sequence[Walkthrough]] | None = None
    #: Host names the server answers to (``coach.app.server``); None for any. Loopback by default.
    hosts: frozenset[str] | None = field(default_factory=lambda: allowed_hosts(None))


class Context:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.reports = Reports()
        self.upload_dir = Path(tempfile.mkdtemp(prefix="coach-dash-uploads-"))
        atexit.register(shutil.rmtree, self.upload_dir, True)
        self._views: dict[tuple[str, ...], Any] = {}
        self.walkthrough_problems: list[str] = []  # scenarios that could not be read, one line each
        self._lock = threading.Lock()

    def view(self, key: tuple[str, ...], build: Callable[[], Any]) -> Any:
        """Something built once per app from the shipped data (a walkthrough's roofline, say)."""
        with self._lock:
            if key in self._views:
                return self._views[key]
        value = build()
        with self._lock:
            return self._views.setdefault(key, value)

    @functools.cached_property
    def _walkthroughs(self) -> dict[str, Walkthrough]:
        make = self.settings.walkthroughs or (
            lambda: scenario_walkthroughs(traces=self.settings.traces_dir, problems=self.walkthrough_problems))
        return {w.id: w for w in make()}

    def walkthroughs(self) -> list[Walkthrough]:
        """Every walkthrough, as listed (profiles not read)."""
        return list(self._walkthroughs.values())

    def walkthrough(self, wid: str) -> Walkthrough | None:
        """One walkthrough with its profiles read (once)."""
        listed = self._walkthroughs.get(wid)
        return None if listed is None else self.view(("walkthrough", wid), listed.complete)
