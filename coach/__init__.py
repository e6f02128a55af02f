"""coach: a GPU performance-debugging coach.

Data flows one way: ``coach.ingest`` reads a profiler's output into the canonical tables of
``coach.model``; ``coach.analyze`` turns those tables into findings, rooflines and predictions;
the presenters (``coach.cli``, ``coach.app``, ``coach.exercises``) show them. ``coach.capture``
runs programs under the profilers on a GPU machine and needs only the standard library there.
"""

__version__ = "0.1.0"
