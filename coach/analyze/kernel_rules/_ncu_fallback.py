"""Where a rule's own counters cannot decide, the report's own Nsight Compute rule result of the same kind.

Many reports lack the counters a rule decides from but carry Nsight Compute's rule results: the
details page of ``--set full`` (text or CSV) prints the sections' metrics and the rules' OPT/WRN
paragraphs, not the raw L1 sector or bank-conflict counts. Nsight Compute's UncoalescedGlobalAccess
counts excess sectors as coach's rule does (from the source counters' ideal sectors), and
SharedMemoryConflicts the bank conflicts of shared loads and stores; their messages carry those numbers.
Rules of a neighbouring kind are not taken: MemoryCacheAccessPattern's unused bytes per sector are low
for any small access, UncoalescedSharedAccess's excess wavefronts count shared atomics too (the
recorded scenarios where coach's counts and those rules disagree are named in the rule modules).

A rule that can take this evidence lists the Nsight Compute rules of its kind (``Claim``: the rule id,
the sentence of its message that states the problem, and the counts in it: excess of total) and the
share from which its own check would fire. A result backs a finding only when it is a warning (never
an INF-only result), its message states the problem in those words, its numbers pass the rule's own
threshold, and the report has none of the rule's own counts (``NCU_ONLY_WITHOUT``): a message that
says otherwise, or a wording not known here, is not evidence. Where the counts are in the report, the
rule's own check decides; where it finds nothing and Nsight Compute's rule warns, the launch's top
finding says so (``kernel_rules.diagnose_launch``).

The estimated saving is Nsight Compute's estimated speed-up of the kernel's time, bounded like the
rule's own estimate: by the share of the time the fix acts on (the memory or L1 share of peak) times
the excess share the message's numbers give, coach's model on Nsight Compute's numbers; a latency
cause (warp stalls) is capped at the gap to the roof besides, as the rule's own estimate is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_pct, fmt_time

#: Nsight Compute's message types that state a problem (an INF result only informs).
WARNINGS = ("warning", "error")
#: details key of a finding backed by a Nsight Compute rule result: that rule's id.
FROM_NCU_RULE = "from_ncu_rule"


def count(text: str) -> float:
    """A count as Nsight Compute prints it in a rule message ("58720256", "65,315,200")."""
    return float(text.replace(",", ""))


@dataclass(frozen=True)
class Claim:
    """How one Nsight Compute rule states the problem a coach rule is about."""

    rule_id: str
    #: the sentence of the rule's message that states the problem, with its numbers as groups
    pattern: re.Pattern[str]
    #: (excess, total) that the matched numbers count: excess sectors of all sectors, conflicts of wavefronts
    counts: Callable[[re.Match[str]], tuple[float, float]]
    #: what the share is a share of, in words ("of the global sectors are excess")
    says: str
    #: what the share is called in the evidence
    measure: str = "excess share"
    #: the words quoted from the match (default: all of it)
    quote: Callable[[re.Match[str]], str] | None = None


@dataclass(frozen=True)
class Backing:
    """A Nsight Compute rule's warnings for a launch that state the problem (one per operation where the
    rule reports loads and stores apart), with the share their numbers give together."""

    claim: Claim
    results: tuple[dict[str, Any], ...]
    excess: float
    total: float
    sentences: tuple[str, ...]

    @property
    def rule_id(self) -> str:
        return self.claim.rule_id

    @property
    def share(self) -> float:
        return self.excess / self.total

    @property
    def speedup_pct(self) -> float | None:
        """Nsight Compute's estimates for the operations, added (each is a share of the kernel's time)."""
        pcts = [r["speedup_pct"] for r in self.results if r.get("speedup_pct") is not None]
        return sum(pcts) if pcts else None


def backing(ctx: KernelContext, claims: Iterable[Claim], fires: Callable[[float], bool]) -> list[Backing]:
    """The launch's Nsight Compute warnings among ``claims`` (in the claims' order) whose message
    states the problem with numbers for which the rule's own threshold ``fires``."""
    out = []
    for claim in claims:
        results, excess, total, sentences = [], 0.0, 0.0, []
        for r in ctx.ncu_rules:
            if r.get("rule_id") != claim.rule_id or r.get("severity") not in WARNINGS:
                continue
            m = claim.pattern.search(r.get("message") or "")
            if m is None:
                continue
            try:
                e, t = claim.counts(m)
            except ValueError:
                continue
            results.append(r)
            excess, total = excess + e, total + t
            sentences.append(" ".join((claim.quote(m) if claim.quote else m.group(0)).split()))
        if results and total > 0 and fires(excess / total):
            out.append(Backing(claim, tuple(results), excess, total, tuple(sentences)))
    return out


def saving(launch: dict[str, Any], b: Backing, weight: float, weight_name: str) -> tuple[float | None, str]:
    """(saving, gain model): Nsight Compute's estimated speed-up of the kernel's time, at most
    time x ``weight`` x the excess share (the rule's own model on the message's numbers)."""
    duration = launch.get("duration_ns")
    bound_model = f"time x {weight:.2f} ({weight_name}) x {100 * b.share:.0f}% ({b.claim.says})"
    if duration is None:
        return None, f"not estimated: the report has no duration (gpu__time_duration.sum); {bound_model}"
    bound = duration * weight * b.share
    pct = b.speedup_pct
    if pct is None:
        return bound, f"{bound_model}, Nsight Compute giving no estimate; saves {fmt_time(bound)}"
    estimate = duration * min(100.0, max(0.0, pct)) / 100
    if estimate <= bound:
        return estimate, (f"time x {fmt_pct(pct)} (Nsight Compute's estimated speed-up, {b.rule_id}), at most "
                          f"{bound_model}; saves {fmt_time(estimate)}")
    return bound, (f"{bound_model}, below Nsight Compute's estimated speed-up ({fmt_pct(pct)}, {b.rule_id}, "
                   f"{fmt_time(estimate)}); saves {fmt_time(bound)}")


def why_not_own(notes: Iterable[Finding]) -> str:
    """What the rule's own notes said it lacked, in one clause ("the report has no sector counts ...")."""
    reasons = []
    for n in notes:
        text = n.message.split(": ", 1)[1] if ": " in n.message else n.message
        reasons.append(text.rstrip("."))
    return "; ".join(dict.fromkeys(reasons))


def backed_finding(spec: RuleSpec, launch: dict[str, Any], found: list[Backing], notes: Iterable[Finding], *,
                   own: str, title: str, next_step: str, weight: float, weight_name: str,
                   threshold_share: float, healthy: str, category: Bottleneck | None = None,
                   cap: Callable[[float | None], float | None] | None = None) -> Finding:
    """The rule's finding from the first of ``found`` (the others named beside it), where its own
    ``own`` counts could not decide (``notes``)."""
    first = found[0]
    pct = first.speedup_pct
    est = f"; est. speedup {fmt_pct(pct)}" if pct is not None else ""
    quoted = "; ".join(f'"{q}"' for q in first.sentences)
    message = (f"Nsight Compute's rule {first.rule_id}: {quoted}{est}. By its numbers "
               f"{100 * first.share:.0f}% {first.claim.says}, past coach's threshold of {100 * threshold_share:.0f}%. "
               f"Coach's own {own} cannot decide here: {why_not_own(notes)}. This finding rests on Nsight "
               "Compute's reading.")
    others = [b for b in found[1:] if b.rule_id != first.rule_id]
    if others:
        message += " " + " ".join(
            f"Its rule {b.rule_id} agrees: {100 * b.share:.0f}% {b.claim.says}"
            + (f" (est. speedup {fmt_pct(b.speedup_pct)})." if b.speedup_pct is not None else ".") for b in others)
    evidence = [ev(f"{b.rule_id}: {b.claim.measure}", 100 * b.share, "%", healthy, 100 * threshold_share,
                   source=f"Nsight Compute rule {b.rule_id}") for b in found]
    evidence += [ev(f"{b.rule_id}: estimated speed-up", b.speedup_pct, "%", "no warning", None,
                    source=f"Nsight Compute rule {b.rule_id}") for b in found if b.speedup_pct is not None]
    saving_ns, gain_model = saving(launch, first, weight, weight_name)
    if cap is not None and saving_ns is not None and (capped := cap(saving_ns)) != saving_ns:
        saving_ns, gain_model = capped, f"{gain_model.rsplit('; saves ', 1)[0]}, capped at the gap to the roof; " \
                                        f"saves {fmt_time(capped)}"
    return finding(spec, launch, title=f"{title} (Nsight Compute's {first.rule_id})", message=message, category=category,
                   next_step=next_step, evidence=evidence, saving_ns=saving_ns, gain_model=gain_model,
                   ncu={"rule_id": first.rule_id, "speedup_pct": pct},
                   details={FROM_NCU_RULE: first.rule_id, "excess_share": first.share, "ncu_says": first.claim.says,
                            "ncu_rules": [b.rule_id for b in found]})


@dataclass(frozen=True)
class Neighbour:
    """A Nsight Compute rule of a neighbouring kind: named in the rule's note where the rule could not
    check, never taken as its evidence."""

    rule_id: str
    #: what its message must say to be about this rule's subject
    about: re.Pattern[str]
    #: why it is not this rule's evidence
    why_not: str


def neighbours_said(ctx: KernelContext, neighbours: Iterable[Neighbour]) -> str:
    """One sentence a note carries for each neighbouring warning of the launch ("" where there is none)."""
    out = []
    for n in neighbours:
        hits = [r for r in ctx.ncu_rules if r.get("rule_id") == n.rule_id and r.get("severity") in WARNINGS
                and n.about.search(r.get("message") or "")]
        if hits:
            pcts = [r["speedup_pct"] for r in hits if r.get("speedup_pct") is not None]
            est = f" (est. speedup {fmt_pct(max(pcts))})" if pcts else ""
            out.append(f"Nsight Compute's rule {n.rule_id} warns here{est}, not taken as evidence: {n.why_not}.")
    return " ".join(out)
