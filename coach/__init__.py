"""coach: a GPU performance-debugging coach.

Data flows one way: ``coach.ingest`` reads a profiler's output into the canonical tables of
``coach.model``; ``coach.analyze`` turns those tables into findings, rooflines and predictions;
the presenters (``coach.cli``, ``coach.app``, ``coach.exercises``) show them. ``coach.capture``
runs programs under the profilers on a GPU machine and needs only the standard library there.
"""

__version__ = "0.1.0"

#: The Python API (``coach.api``): ``coach.load``, ``coach.diagnose``, ``coach.diff``,
#: ``coach.summary``. Imported on first use, so ``import coach`` stays light for the CLI.
_API = ("load", "diagnose", "diff", "summary", "Findings")


def __getattr__(name: str):
    if name in _API:
        from coach import api

        return getattr(api, name)
    raise AttributeError(f"module 'coach' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
