"""``diagnose(profile)``: the findings for any profile, whatever its kind.

Kernel profiles (Nsight Compute) go to the kernel rules, timelines (Nsight Systems, PyTorch
profiler) to the timeline rules, compute-sanitizer reports to the correctness rules. What could not be checked is part of the answer: a rule whose
evidence is missing from the profile yields a note (``rule_id`` starting ``not-checked:``) naming
what was missing, ranked after every finding. A kernel finding carries the source lines that cause
it where the profile has Nsight Compute's source counters (``coach.analyze.source_evidence``).
"""

from __future__ import annotations

import importlib
from typing import Any, Sequence

from coach.analyze.findings import Bottleneck, Finding
from coach.model import Profile

NOT_CHECKED = "not-checked"
TIMELINE_RULES = "coach.analyze.timeline_rules"


def diagnose(profile: Profile, hardware: Any = None, analysis: Any = None) -> list[Finding]:
    """Ranked findings for ``profile``, then notes on what could not be checked. For a timeline,
    ``analysis`` is a ``coach.analyze.timeline.TimelineAnalysis`` of it already built (by a summary of
    the same timeline), whose tables the rules then reuse."""
    if profile.kind == "kernel-profile":
        from coach.analyze.kernel_rules import run_all  # noqa: PLC0415 - kernel_rules imports this module

        from coach.analyze.source_evidence import attach  # noqa: PLC0415

        return attach(run_all(profile, hardware), profile)
    if profile.kind == "timeline":
        try:
            timeline_rules = importlib.import_module(TIMELINE_RULES)
        except ModuleNotFoundError as err:
            if err.name != TIMELINE_RULES:
                raise
            return [not_checked("timeline-rules", "timeline diagnosis", [],
                                reason="the timeline rules are not part of this version of coach", scope="timeline")]
        return timeline_rules.run_all(profile) if analysis is None else timeline_rules.run_all(profile, analysis=analysis)
    if profile.kind == "sanitizer-report":
        from coach.analyze.sanitizer_rules import run_all as run_sanitizer_rules  # noqa: PLC0415

        return run_sanitizer_rules(profile)
    raise ValueError(f"cannot diagnose a profile of kind {profile.kind!r}")


def not_checked(rule_id: str, name: str, missing: Sequence[str], *, reason: str = "", scope: str = "",
                launch_id: int | None = None, needs: Sequence[str] = ()) -> Finding:
    """A note that rule ``rule_id`` could not run (or could not decide), naming the evidence that was
    missing. ``needs`` lists what would let it decide, one alternative each ("metric A", "metric B and
    metric C"): the message ends "needs A or B", and ``details["needs"]`` keeps the list for JSON."""
    name = in_sentence(name)
    what = reason or (", ".join(missing) + (" is" if len(missing) == 1 else " are") + " not in this report")
    if needs:
        what += "; needs " + " or ".join(needs)
    return Finding(
        rule_id=f"{NOT_CHECKED}:{rule_id}",
        category=Bottleneck.OTHER,
        title=f"Could not check {name}",
        message=f"Could not check {name}: {what}.",
        next_step=("Profile again with `ncu --set full` on a recent Nsight Compute; older versions and GPUs do not "
                   "collect every metric.") if missing or needs else "",
        scope=scope,
        launch_id=launch_id,
        details={"missing": list(missing), "needs": list(needs)},
    )


def in_sentence(name: str) -> str:
    """A rule's name inside a sentence: its first letter lower-cased, unless it starts an acronym
    ("FP64 by accident", "L1 ...")."""
    if len(name) > 1 and (name[1].isupper() or name[1].isdigit()):
        return name
    return name[:1].lower() + name[1:]


def is_not_checked(finding: Finding) -> bool:
    return finding.rule_id.startswith(f"{NOT_CHECKED}:")
