"""Kernel diagnosis from Nsight Compute data: small rules in a tree under a speed-of-light root.

Each rule is a module with ``SPEC`` (a ``RuleSpec``) and ``apply(launch, ctx) -> list[Finding]``,
where ``launch`` is one row of ``launches`` with the quantities of ``coach.analyze.kernel_metrics``
added, and ``ctx`` a ``KernelContext`` (the root's verdict, Nsight Compute's own rule results for the
launch, the hardware entry). As in Nsight Compute's rule set, the root runs first and decides which
subtrees are looked into (``TREE``); a rule whose required columns are null for a launch does not
run, and the diagnosis says which evidence was missing instead. A rule may define
``apply_partial(launch, ctx, missing)`` for what it can still say without them (the root: the
bound named by a unit the report measures at its roof), returned beside that note.

Where a rule's own counters are not in the report (a pasted ``--page details``), a rule that defines
``from_ncu(launch, ctx, notes)`` takes Nsight Compute's own warning of its kind instead, held to the
rule's threshold, and its finding says so; where the counters are there, they decide, and the launch's
top finding says where Nsight Compute's rule of that kind warns all the same (``_ncu_fallback``).

    from coach.analyze.kernel_rules import run_all
    findings = run_all(profile)            # ranked: largest estimated saving first

Rules over several launches (``PROFILE_RULES``: an unfused chain of kernels) run after the per-launch
rules and are ranked with them.

Ranking: by estimated time saved. The root's saving is the gap to the roof: what the launch gains
with its busiest unit at peak. Causes whose fix keeps the bytes and instructions (occupancy,
latency hiding) are capped at that gap; they explain it. On a tie the root leads while a unit runs
near its roof (60% of peak or more: the bound is the story, the cause a refinement worth at most
the rest of the gap), and follows the tied causes in the latency regime, where Nsight Compute's
SOLBottleneck rule itself says only "latency issue": there the cause names what the root cannot.
Causes whose fix removes work (excess sectors, spills, FP64) can exceed the gap and rank above the root.

A finding that names a limit set by the launch configuration alone (the resource that caps
theoretical occupancy, a partial last wave, a grid of fewer blocks than SMs) is ranked with the gap, ahead of the root and of the
causes tied with it, where that limit is what keeps the kernel from its roof: in the latency regime,
and, for a partial wave or a small grid, on a launch that is not memory-bound (its idle SMs are compute lost; a
memory-bound launch's last wave takes the bandwidth the idle SMs leave, so near its roof the bound
stays the story). Such a limit caps every other latency remedy: more bytes in flight or fewer stalls
per warp cannot make up for warps the SM may not hold, or for SMs the grid leaves idle. Its own
estimate (Nsight Compute's models: time x (1 - theoretical occupancy), the partial wave's idle share)
is almost always below the gap, because the busiest unit of a kernel held to a fraction of its warps
or SMs runs below that fraction; by estimate alone, the measurements of the symptom (stall shares,
bytes in flight: the gap itself) would rank above the setting to change. The estimate is kept;
``details[RANKED_BY]`` records the gap it is ranked with. A kernel as short as a few launches (under
``launch_bound.SHORT_KERNEL_NS``) in the latency regime is ranked so too: its throughputs are low
because it is short, the root's gap there is an upper bound only, and the number of launches is what
to change (Nsight Compute's rules lead with the launch configuration on such kernels).

Below the roof the root names a regime; the cause is the cause rules' to name (``CAUSES``). Where none
of those of the subtrees it opened could check (a report of the speed-of-light section alone), the
root's finding says the cause is not checked, its gap an upper bound, and a note names the sections
that would decide (``speed_of_light.cause_not_checked``).
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from types import ModuleType
from typing import Any, Iterable

import polars as pl

from coach.analyze.findings import Finding, RuleSpec, rank
from coach.analyze.kernel_metrics import with_derived
from coach.analyze.kernel_rules import speed_of_light
from coach.analyze.kernel_rules._common import (LAUNCH_LIMIT, PARTIAL_WAVE, SHORT_KERNEL, SMALL_GRID, KernelContext,
                                               Verdict, fmt_time, missing)
from coach.analyze.kernel_rules._ncu_fallback import FROM_NCU_RULE, neighbours_said
from coach.model import KernelProfile

ROOT = "speed_of_light"
#: rule_id prefix of a note (``coach.analyze.diagnose.not_checked``), which a rule may return from apply.
NOT_CHECKED_PREFIX = "not-checked:"
#: details key of a launch-configuration finding ranked with the root's gap: that gap, in ns.
RANKED_BY = "ranked_by_saving_ns"

#: subtree -> rule modules, in the order they run (and break ties in the ranking).
TREE: dict[str, tuple[str, ...]] = {
    "memory": ("uncoalesced", "bank_conflicts", "local_memory", "atomics"),
    "compute": ("fp64", "tensor_cores", "divergence"),
    "latency": ("bytes_in_flight", "occupancy", "warp_stalls"),
    speed_of_light.SUBTREES_ALWAYS: ("tail_effect", "launch_bound"),
}

#: subtree -> the rules whose counts can name what holds a launch below its roof: not occupancy (the
#: Occupancy section, in every set, says how many warps the SMs may hold, not what the warps wait on),
#: nor the launch subtree's. Where the root opens subtrees and none of their cause rules could check
#: (a report of the speed-of-light section alone), the root states the regime and says what it needs
#: to name a cause (``speed_of_light.cause_not_checked``).
CAUSES: dict[str, tuple[str, ...]] = {"memory": TREE["memory"], "compute": TREE["compute"],
                                      "latency": ("bytes_in_flight", "warp_stalls")}

RULES: dict[str, ModuleType] = {
    name: importlib.import_module(f"{__name__}.{name}") for name in (ROOT, *(n for sub in TREE.values() for n in sub))
}

#: Rules over the whole profile rather than one launch: ``apply_profile(wide) -> list[Finding]``,
#: where ``wide`` is every launch with its derived columns. Their findings are ranked with the rest.
PROFILE_RULES: dict[str, ModuleType] = {name: importlib.import_module(f"{__name__}.{name}") for name in ("fusion",)}


def specs() -> list[RuleSpec]:
    """Every kernel rule's declaration, root first, then the rules over the whole profile."""
    return [m.SPEC for m in (*RULES.values(), *PROFILE_RULES.values())]


def run_all(profile: KernelProfile, hardware: Any = None) -> list[Finding]:
    """Every applicable rule over every launch, ranked; then one note per rule that could not run."""
    wide = with_derived(profile.launches, profile.devices, hardware)
    ncu_rules = ncu_rules_by_launch(profile.rules)
    findings: list[Finding] = []
    notes: list[Finding] = []
    for launch in wide.iter_rows(named=True):
        found, skipped = diagnose_launch(launch, ncu_rules.get(launch["launch_id"], ()), hardware)
        findings += found
        notes += skipped
    for module in PROFILE_RULES.values():
        for f in module.apply_profile(wide):
            (notes if f.rule_id.startswith(NOT_CHECKED_PREFIX) else findings).append(f)
    unmeasured = profile.source.meta.get("unmeasured") or {}
    return _rank_launches(findings) + [_printed_as_nan(n, unmeasured) for n in notes]


def _printed_as_nan(note: Finding, unmeasured: dict[str, list[str]]) -> Finding:
    """A note on metrics the report names but holds as nan says so: Nsight Compute could not measure them
    (a GPU it does not fully support, a failed launch), which no other collection of the same tool fixes
    the way a missing --section does."""
    cols = unmeasured.get(str(note.launch_id)) or []
    nan = [c for c in cols if any(m == c or m.endswith(f"({c})") for m in note.details.get("missing", []))]
    if not nan:
        return note
    missing = note.details.get("missing", [])
    message = note.message
    if len(nan) == len(missing) and (" is not in this report" in message or " are not in this report" in message):
        message = (message.replace(" is not in this report", " is in this report as nan", 1)
                   .replace(" are not in this report", " are in this report as nan", 1)
                   .removesuffix(".") + ": Nsight Compute could not measure "
                   + ("it" if len(nan) == 1 else "them") + " on this GPU or launch.")
    else:
        message += (f" Of these, Nsight Compute printed {', '.join(nan)} as nan: it could not measure "
                    f"{'it' if len(nan) == 1 else 'them'} on this GPU or launch.")
    return replace(note, message=message, details={**note.details, "printed_as_nan": nan})


def diagnose_launch(launch: dict[str, Any], ncu_rules: Iterable[dict[str, Any]] = (),
                    hardware: Any = None) -> tuple[list[Finding], list[Finding]]:
    """Ranked findings for one launch (with derived columns), and notes on the rules that could not run."""
    ctx = KernelContext(verdict=speed_of_light.verdict(launch), ncu_rules=tuple(ncu_rules), hardware=hardware)
    subtrees = ctx.verdict.subtrees if ctx.verdict else TREE.keys()
    modules = [RULES[ROOT], *(RULES[name] for sub in TREE if sub in subtrees for name in TREE[sub])]
    found: list[Finding] = []
    skipped: list[Finding] = []
    disagree: list[str] = []
    checked: set[str] = set()  # the rules that decided: found something, or ran and said nothing
    for module in modules:
        own, notes = _apply(module, launch, ctx)
        backed = getattr(module, "from_ncu", None)
        if backed is not None and not own:
            # the rule's counts said nothing: Nsight Compute's result of its kind decides where the report
            # has none of them, and where they decided, a warning of that kind is a disagreement said
            f = backed(launch, ctx, notes)
            if f is not None and notes and not [c for c in module.NCU_ONLY_WITHOUT if launch.get(c) is not None]:
                own, notes = [f], []
            elif f is not None and not notes:
                disagree.append(_disagreement(module, f))
        if notes and not own and (said := neighbours_said(ctx, getattr(module, "NCU_NEIGHBOURS", ()))):
            notes = [replace(notes[0], message=f"{notes[0].message} {said}"), *notes[1:]]
        if own or not notes:
            checked.add(module.__name__.rsplit(".", 1)[-1])
        found += own
        skipped += notes
    found, skipped = _cause_or_note(found, skipped, launch, ctx, checked)
    found = _launch_limits_first(_root_after_tied_causes(rank(found), ctx), ctx.verdict)
    if found:
        found[0] = _compare_with_ncu(found[0], ctx.ncu_rules)
        if disagree:
            said = " ".join(filter(None, (found[0].differs_from_ncu, *disagree)))
            found[0] = replace(found[0], differs_from_ncu=said)
    return found, skipped


def _cause_or_note(found: list[Finding], skipped: list[Finding], launch: dict[str, Any], ctx: KernelContext,
                   checked: set[str]) -> tuple[list[Finding], list[Finding]]:
    """Below the roof, where none of the cause rules of the subtrees the root opened could decide, the
    root's finding states the regime alone, and a note says what would name the cause (``CAUSES``)."""
    v = ctx.verdict
    if v is None or v.regime == "at-roof" or v.measured_by is not None:
        return found, skipped
    at = next((i for i, f in enumerate(found) if f.rule_id == RULES[ROOT].SPEC.id), None)
    causes = [name for sub in TREE if sub in v.subtrees for name in CAUSES.get(sub, ())]
    if at is None or not causes or checked.intersection(causes):
        return found, skipped
    root, note = speed_of_light.cause_not_checked(found[at], launch, v, [RULES[n].SPEC.name for n in causes])
    return [*found[:at], root, *found[at + 1:]], [note, *skipped]


def _apply(module: ModuleType, launch: dict[str, Any], ctx: KernelContext) -> tuple[list[Finding], list[Finding]]:
    """One rule on one launch: (its findings, its notes on what it could not check)."""
    gone = missing(launch, module.SPEC.requires)
    if gone:
        # what the rule can still say without them
        partial = module.apply_partial(launch, ctx, gone) if hasattr(module, "apply_partial") else []
        return partial, [_not_checked(module.SPEC, launch, gone)]
    none_of = [group for group in module.SPEC.requires_one_of if len(missing(launch, group)) == len(group)]
    if none_of:
        return [], [_not_checked(module.SPEC, launch, [], needs=none_of)]
    out = module.apply(launch, ctx)  # a rule may also say it could not decide
    return ([f for f in out if not f.rule_id.startswith(NOT_CHECKED_PREFIX)],
            [f for f in out if f.rule_id.startswith(NOT_CHECKED_PREFIX)])


def _disagreement(module: ModuleType, backed: Finding) -> str:
    """Where a rule's own counts find nothing and Nsight Compute's rule of its kind warns: said, not picked."""
    rule = backed.details.get(FROM_NCU_RULE)
    share = backed.details.get("excess_share")
    pct = backed.ncu_speedup_pct
    est = f", est. speedup {pct:.0f}%" if pct is not None else ""
    return (f"Nsight Compute's rule {rule} reports {module.SPEC.name.lower()} ({100 * share:.0f}% "
            f"{backed.details.get('ncu_says')}{est}), but coach's own counts in this report find none past its "
            "threshold; the counters decide here.")


def _root_after_tied_causes(found: list[Finding], ctx: KernelContext) -> list[Finding]:
    """In the latency regime, move the root behind the causes whose saving equals its gap (a capped
    saving is the gap itself, so the tie is exact); elsewhere the ranking stands."""
    if not found or found[0].rule_id != RULES[ROOT].SPEC.id or not ctx.verdict or ctx.verdict.regime != "latency":
        return found
    ties = 0
    while ties + 1 < len(found) and found[ties + 1].estimated_saving_ns == found[0].estimated_saving_ns is not None:
        ties += 1
    return [*found[1:ties + 1], found[0], *found[ties + 1:]]


def _launch_limits_first(found: list[Finding], v: Verdict | None) -> list[Finding]:
    """Rank the launch-configuration limits that keep the kernel from its roof with the root's gap,
    ahead of the root and of the causes tied with it (see the module docstring)."""
    root = next((f for f in found if f.rule_id == RULES[ROOT].SPEC.id), None)
    gap = root.estimated_saving_ns if root else None
    if v is None or gap is None:
        return found
    limits = [i for i, f in enumerate(found) if _holds_back(f, v) and (f.estimated_saving_ns or 0.0) <= gap]
    if not limits:
        return found
    rest = [f for i, f in enumerate(found) if i not in limits]
    at = next(i for i, f in enumerate(rest) if f.estimated_saving_ns is None or f.estimated_saving_ns <= gap)
    promoted = [replace(found[i], details={**found[i].details, RANKED_BY: gap}) for i in limits]
    return rest[:at] + promoted + rest[at:]


def _holds_back(f: Finding, v: Verdict) -> bool:
    """Whether launch-limit finding ``f`` is what keeps a launch with verdict ``v`` from its roof."""
    kind = f.details.get(LAUNCH_LIMIT)
    if kind is None or v.regime == "at-roof":
        return False
    if kind == SHORT_KERNEL:  # a short kernel with a unit near its roof is bound by that unit while it runs
        return v.regime == "latency"
    return v.regime == "latency" or (kind in (PARTIAL_WAVE, SMALL_GRID) and v.side != "memory")


def _rank_launches(findings: list[Finding]) -> list[Finding]:
    """Every launch's findings in one ranking: by saving, a promoted launch limit by the gap it was
    ranked with; the sort is stable, so each launch keeps its own order on a tie."""

    def saving(f: Finding) -> float | None:
        return f.details.get(RANKED_BY, f.estimated_saving_ns)

    return sorted(findings, key=lambda f: (saving(f) is None, -(saving(f) or 0.0)))


def ncu_rules_by_launch(rules: pl.DataFrame) -> dict[int, list[dict[str, Any]]]:
    """launch id -> Nsight Compute's rule results for it, as the rules' ``KernelContext`` holds them."""
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rules.select("launch_id", "rule_id", "severity", "title", "message", "speedup_pct").to_dicts():
        out.setdefault(r["launch_id"], []).append(r)
    return out


def _not_checked(spec: RuleSpec, launch: dict[str, Any], gone: list[str],
                 needs: list[tuple[str, ...]] = ()) -> Finding:
    from coach.analyze.diagnose import not_checked  # noqa: PLC0415 - diagnose imports this package

    def named(c: str) -> str:
        return f"{n} ({c})" if (n := ncu_metric_names(c)) != c else c

    reason = "none of the metrics it can read this from is in this report" if needs else ""
    return not_checked(spec.id, spec.name, [named(c) for c in gone], reason=reason,
                       scope=launch.get("kernel_name") or "", launch_id=launch.get("launch_id"),
                       needs=[named(c) for group in needs for c in group])


def ncu_metric_names(column: str) -> str:
    """The Nsight Compute metric(s) a canonical column is read from (newest version's names), or the column."""
    from coach.ingest.ncu_common import mappings  # noqa: PLC0415 - only needed when something is missing

    for m in mappings():
        if m.column == column:
            first = m.alternatives[0]
            return " + ".join(" * ".join(t.metrics) for t in first)
    return column


#: Nsight Compute rules that describe how busy the SM is rather than why: idle issue slots, idle
#: pipes, stalled warps, occupancy short of its limit.
SYMPTOM_RULES = {"IssueSlotUtilization", "HighPipeUtilization", "CPIStall", "AchievedOccupancy", "SOLBottleneck"}


def _compare_with_ncu(top: Finding, ncu_rules: tuple[dict[str, Any], ...]) -> Finding:
    """Say where Nsight Compute's own guidance leads elsewhere than our top finding."""
    # (a result whose rule is not known, from a text report, cannot be named or matched)
    warnings = [r for r in ncu_rules if r.get("severity") in ("warning", "error") and r.get("rule_id")]
    if not warnings:
        return top
    first = warnings[0]
    rated = [r for r in warnings if r.get("speedup_pct") is not None]
    biggest = max(rated, key=lambda r: r["speedup_pct"]) if rated else first
    if top.ncu_rule in (first["rule_id"], biggest["rule_id"]):
        return top
    text = f"Nsight Compute leads with {_ncu_label(first)}"
    if biggest is not first:
        text += f" and estimates its largest speed-up for {_ncu_label(biggest)}"
    if {first["rule_id"], biggest["rule_id"]} <= SYMPTOM_RULES:
        text += "; those describe idle issue slots, pipes or warps, which are symptoms here"
    text += ". "
    if RANKED_BY in top.details and top.details.get(LAUNCH_LIMIT) == SHORT_KERNEL:
        why = ("the kernel is as short as a launch's own cost: its low throughputs are what a kernel this short "
               "shows, and fewer, longer launches are what changes them")
    elif RANKED_BY in top.details:
        why = ("it names the launch setting that keeps the kernel below its roof "
               f"({fmt_time(top.details[RANKED_BY])} from it)")
    else:
        why = f"its fix saves the most time ({fmt_time(top.estimated_saving_ns)})"
    if top.ncu_rule:
        own = _ncu_label({"rule_id": top.ncu_rule, "speedup_pct": top.ncu_speedup_pct})
        text += f"Its {own} matches this finding, which we put first because {why}."
    else:
        text += f"We put this finding first because {why}."
    merged = f"{top.differs_from_ncu} {text}" if top.differs_from_ncu else text
    return replace(top, differs_from_ncu=merged)


def _ncu_label(rule: dict[str, Any]) -> str:
    pct = rule.get("speedup_pct")
    return f"{rule['rule_id']} ({pct:.0f}%)" if pct is not None else rule["rule_id"]
