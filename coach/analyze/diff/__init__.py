"""Before and after: what a change did to a program, read from two profiles of it.

``diff(before, after, fix=...)`` compares two Nsight Compute profiles, or two timelines (Nsight
Systems, PyTorch profiler), and answers the questions a reviewer asks of an optimisation:

- **What got faster, by how much.** Kernel profiles: launches are matched across the two by kernel
  name and launch configuration (grid, block), then by name alone (the fix changed the
  configuration), then by configuration alone (the fix renamed the kernel), each in the order they
  ran; if one launch is left on each side, those two. Timelines: the end-to-end window, GPU busy
  time, and per kernel name, NVTX range and copy kind.
- **Which metrics moved, and which way** (``movements``): a metric moved when it changed by more
  than ``NOISE``.
- **Whether that is the movement the named fix should cause** (``checks``): ``fixes.toml`` lists,
  per fix, the metrics it must move, the direction and where they should end up (coalescing: load
  sectors per request down to the ideal for the access width, excess sectors near 0, DRAM bytes
  down, duration down), and the ones it must leave alone. Without a named fix, the fixes whose
  movements all happened are suggested, the best supported first (``fixes.credit``: the share of
  the saved time the fix's own time component explains, then the size of its own movements).
  A scenario's own evidence (``scenario.toml``, each metric with the direction its fix moves it)
  can be checked the same way.
- **Whether the two runs can be compared** (``comparability``): same GPU, SM count, clocks,
  launch configuration, tool versions, persisting-L2 set-aside. Profiles from different GPUs (or
  vendors) are not comparable: the verdict says so first and no fix is credited.
- **Nsight Compute's estimate against the outcome** (``ncu``): the speed-ups its rules estimated
  in the before report, beside the share of the kernel's time the change saved.

Everything is a Polars frame; ``Diff.to_dict`` gives the JSON form and ``verdict`` the sentences
that ``coach diff`` prints first. The modules: ``metrics`` (what is compared), ``fixes`` (the fix
table, its judgement and the credit), ``kernels`` and ``timelines`` (the two kinds of diff),
``result`` (the ``Diff`` and comparability), ``verdict`` (the words).
"""

from __future__ import annotations

from coach.analyze.diff.fixes import Expect, Fix, find_fix, fix_for_rule, fixes
from coach.analyze.diff.kernels import CONFIG, MATCH_STEPS, ONLY_ONE_LEFT, kernel_diff, match_launches, only_kernels
from coach.analyze.diff.metrics import (
    CLOCK_TOLERANCE, KERNEL_METRICS, KERNEL_TOTALS, NOISE, OUTCOMES, PROFILE_PAIR, SAME, TIMELINE_METRICS, VERDICTS,
)
from coach.analyze.diff.result import BLOCKING_ASPECTS, Diff
from coach.analyze.diff.timelines import EVENT_RECORD_CALLS, TIMED_RANGE, timed_regions, timeline_diff, timeline_metrics
from coach.analyze.diff.verdict import NOT_IN_REPORT, fmt_value, verdict
from coach.errors import CoachError
from coach.model import Profile
from coach.scenarios import Scenario

__all__ = [
    "BLOCKING_ASPECTS", "CLOCK_TOLERANCE", "CONFIG", "EVENT_RECORD_CALLS", "KERNEL_METRICS", "KERNEL_TOTALS", "MATCH_STEPS",
    "NOISE", "NOT_IN_REPORT", "ONLY_ONE_LEFT", "OUTCOMES", "PROFILE_PAIR", "SAME", "TIMED_RANGE", "TIMELINE_METRICS",
    "VERDICTS", "Diff", "Expect", "Fix", "diff", "find_fix", "fix_for_rule", "fixes", "fmt_value", "match_launches",
    "only_kernels", "timed_regions", "timeline_metrics", "verdict",
]


def diff(before: Profile, after: Profile, *, fix: Fix | str | None = None, scenario: Scenario | None = None) -> Diff:
    """Compare two profiles of the same kind (see module doc)."""
    if before.kind != after.kind:
        raise CoachError(f"{before.source.path} is a {before.kind} and {after.source.path} a {after.kind}: "
                         "compare two Nsight Compute profiles, or two timelines")
    fx = find_fix(fix) if isinstance(fix, str) else fix
    if fx is not None and fx.profile_kind != before.kind:
        raise CoachError(f"fix {fx.id!r} is checked on {fx.profile_kind}s, but these are {before.kind}s")
    if before.kind == "kernel-profile":
        return kernel_diff(before, after, fx, scenario)  # type: ignore[arg-type]
    return timeline_diff(before, after, fx, scenario)  # type: ignore[arg-type]
