"""A diff in words: what ``coach diff`` says first. Across GPUs it leads with "Not comparable" and
credits no fix; otherwise what got faster and by how much, whether the movement matches the fix
(named, or credited from the movements), what Nsight Compute had estimated, and whether the runs
compare in everything else."""

from __future__ import annotations

from typing import Any, Mapping

import polars as pl

from coach.analyze.diff.fixes import fixes
from coach.analyze.diff.kernels import PROFILE_PAIR
from coach.analyze.diff.metrics import NOISE
from coach.analyze.diff.result import Diff
from coach.analyze.kernel_rules._common import fmt_bytes, fmt_count, fmt_pct, fmt_rate, fmt_time
from coach.analyze.quantities import fmt_share, fmt_waves


#: Units counted in whole things, with their plural.
COUNTED = {"sector": "sectors", "request": "requests", "inst": "inst", "flop": "flop", "conflict": "conflicts",
           "branch": "branches", "kernel": "kernels", "call": "calls", "copy": "copies"}


#: Other spellings of fmt_value's units (a finding's evidence says "B" or "bytes").
UNIT_ALIASES = {"B": "byte", "bytes": "byte", "B/s": "byte/s"}

#: How a value the profile lacks reads, everywhere a diff prints one.
NOT_IN_REPORT = "not in report"


def fmt_value(value: float | None, unit: str) -> str:
    """A value with its unit, readable: 1.18 ms, 4.29 GB, 4.21 TB/s, 65,536 kernels, 58.72M sectors, 32 sector/request;
    "not in report" for a value the profile lacks (never 0). The one format of a measured value in
    ``coach diff``, ``coach diagnose``'s evidence and ``coach explain``'s numbers."""
    if value is None:
        return NOT_IN_REPORT
    unit = UNIT_ALIASES.get(unit, unit)
    if unit == "wave":
        return f"{fmt_waves(value)} wave{'' if value == 1 else 's'}"
    if unit == "fraction":
        return fmt_share(value)
    if unit == "ns":
        return fmt_time(value)
    if unit == "byte":
        return fmt_bytes(value)
    if unit == "byte/s":
        return fmt_rate(value)
    if unit == "%":
        return fmt_pct(value)
    if unit in COUNTED:
        return f"{fmt_count(value)} {unit if value == 1 else COUNTED[unit]}"
    if float(value).is_integer() or abs(value) >= 1e4:  # a count in another unit: 1,377 calls, 65,536 kernels, 3.10M FLOP/byte
        return f"{fmt_count(value)} {unit}".strip()
    return f"{value:.3g} {unit}".strip()


def _arrow(row: Mapping[str, Any]) -> str:
    text = f"{row['label']} {fmt_value(row['before'], row['unit'])} -> {fmt_value(row['after'], row['unit'])}"
    if row.get("target") is not None and row.get("target_metric"):
        text += f" (target {fmt_value(row['target'], row['unit'])})"
    return text


def verdict(d: Diff) -> list[str]:
    """What ``coach diff`` says first: across GPUs, that the runs are not comparable (and no fix is
    credited); otherwise what got faster and by how much, whether the movement matches the fix, what
    Nsight Compute had estimated, and whether the runs compare."""
    h = d.headline
    lines = []
    blocking = d.not_comparable
    if blocking:
        lines.append("Not comparable: " + "; ".join(
            f"the {r['aspect']} differs ({r['before']} vs {r['after']})" for r in blocking)
            + ". A time measured on one says nothing about a fix measured on the other: no fix is credited. "
              "Profile both versions on the same GPU.")
    if d.kind == "kernel-profile":
        names = (h["kernel_before"] if h["kernel_before"] == h["kernel_after"]
                 else f"{h['kernel_before']} -> {h['kernel_after']}")
        lines.append(f"{names}: {fmt_time(h['before_ns'])} -> {fmt_time(h['after_ns'])}{_faster(h, blocking)}.")
        several = h["launches_before"] > 1 or h["launches_after"] > 1
        if several and h["pair"] != PROFILE_PAIR:
            total = {"before_ns": h["total_before_ns"], "after_ns": h["total_after_ns"],
                     "speedup": h["total_before_ns"] / h["total_after_ns"] if h["total_after_ns"] else None,
                     "saved_ns": h["total_before_ns"] - h["total_after_ns"]}
            lines.append(f"Whole profile: {h['launches_before']} -> {h['launches_after']} launches, "
                         f"{fmt_time(total['before_ns'])} -> {fmt_time(total['after_ns'])}{_faster(total, blocking)}.")
    else:
        lines.append(f"End to end: {fmt_time(h['before_ns'])} -> {fmt_time(h['after_ns'])}{_faster(h, blocking)}; "
                     f"kernel time {fmt_time(h['kernel_before_ns'])} -> {fmt_time(h['kernel_after_ns'])}; GPU busy "
                     f"{fmt_value(h['busy_before_pct'], '%')} -> {fmt_value(h['busy_after_pct'], '%')}.")
    if blocking:
        if d.fix is not None:
            lines.append(f"The fix '{d.fix.id}' is not judged across GPUs.")
    else:
        lines += _fix_lines(d)
        lines += _ncu_lines(d)
    lines.append(_comparability_line(d))
    return lines


def _faster(h: Mapping[str, Any], blocking: list[dict[str, Any]] | None = None) -> str:
    """", 2.30x faster (saves ...)", or nothing across GPUs (the ratio of two GPUs' times is no
    speed-up of a fix)."""
    s = h.get("speedup")
    if blocking:
        return " (on different GPUs: no speed-up to read from these two)"
    if s is None:
        return ", no time to compare"
    saved = h["saved_ns"]
    if abs(s - 1) <= NOISE:
        return f", no change beyond noise ({s:.2f}x)"
    if s > 1:
        return f", {s:.2f}x faster (saves {fmt_time(saved)}, {saved / h['before_ns'] * 100:.0f}%)"
    return f", {1 / s:.2f}x slower (costs {fmt_time(-saved)} more)"


def _fix_lines(d: Diff) -> list[str]:
    lines = []
    if d.fix is not None:
        rows = d.headline_checks().filter(pl.col("fix") == d.fix.id).to_dicts()
        met = [r for r in rows if r["met"]]
        missed = [r for r in rows if r["met"] is False]
        unmeasured = [r for r in rows if r["met"] is None]
        head = {"matches": "matches", "matches where measured": "matches where measured",
                "partly": "partly matches", "does not match": "does not match",
                "not measured": "cannot be checked against"}[d.fix_verdict or "not measured"]
        text = f"The movement {head} the fix '{d.fix.id}' ({d.fix.name})"
        if met:
            text += ": " + "; ".join(_arrow(r) for r in met)
        lines.append(text + ".")
        for r in missed:
            lines.append(f"Not as the fix should: {_arrow(r)}; expected {r['direction']}"
                         f"{' to ' + fmt_value(r['target'], r['unit']) if r.get('target') is not None else ''} "
                         f"({r['why']}).")
        if unmeasured:
            lines.append("Not measured in these profiles: " + ", ".join(r["label"] for r in unmeasured) + ".")
    else:
        if d.suggested:
            f = fixes()[d.suggested[0]]
            rows = d.headline_checks().filter(pl.col("fix") == f.id).to_dicts()
            # only what was measured supports the credit; an optional movement neither profile
            # measured is named as such, not printed as "not in report -> not in report"
            lines.append(f"The movement is what the fix '{f.id}' ({f.name}) causes: "
                         + "; ".join(_arrow(r) for r in rows if r["met"]) + "."
                         + (f" Also consistent with, less supported: {', '.join(d.suggested[1:])}."
                            if len(d.suggested) > 1 else ""))
            unmeasured = [r for r in rows if r["met"] is None]
            if unmeasured:
                lines.append("Not measured in these profiles: " + ", ".join(r["label"] for r in unmeasured) + ".")
        else:
            moved = _top_moves(d)
            lines.append("No fix in the table matches every movement; the largest: " + "; ".join(moved) + "."
                         if moved else "No metric moved beyond noise.")
    if d.scenario is not None:
        rows = d.checks.filter(pl.col("why") == "scenario evidence").to_dicts()
        good = sum(1 for r in rows if r["met"])
        said = {True: "yes", False: "no", None: "n/a"}
        lines.append(f"{d.scenario}'s evidence: {good} of {len(rows)} moved as the scenario says ("
                     + "; ".join(f"{r['label']} {r['direction']}: {said[r['met']]}" for r in rows) + ").")
    return lines


def _top_moves(d: Diff, n: int = 3) -> list[str]:
    moves = d.movements.filter(pl.col("direction").is_in(["up", "down"]) & (pl.col("metric") != "duration_ns")
                               & (pl.col("metric") != "window_ns"))
    if "pair" in moves.columns:
        moves = moves.filter(pl.col("pair") == d.headline["pair"])
    return [_arrow(r) for r in moves.head(n).iter_rows(named=True)]


def _ncu_lines(d: Diff) -> list[str]:
    if d.ncu.is_empty():
        return []
    rows = d.ncu.filter(pl.col("pair") == d.headline["pair"])
    if rows.filter(pl.col("for_fix")).height:  # the named or credited fix's own rules
        rows = rows.filter(pl.col("for_fix"))
    whole_kernel = rows.filter(pl.col("speedup_type") != "local")  # local estimates are one unit's, not the kernel's
    rows = whole_kernel if whole_kernel.height else rows
    top = rows.sort("estimated_pct", descending=True).head(2).to_dicts()
    if not top:
        return []
    est = " and ".join(f"{r['estimated_pct']:.0f}% ({r['rule_id']}{', local' if r['speedup_type'] == 'local' else ''})"
                       for r in top)
    realised = top[0]["realised_pct"]
    return [f"Nsight Compute estimated a saving of {est} in the before report; the change saved "
            f"{realised:.0f}% of the kernel's time."]


def _comparability_line(d: Diff) -> str:
    rows = d.comparability.to_dicts()
    blocking = {r["aspect"] for r in d.not_comparable}
    differ = [r for r in rows if r["same"] is False and r["aspect"] not in blocking]
    unknown = [r["aspect"] for r in rows if r["same"] is None]
    if not differ and not blocking:
        same = [f"{r['aspect']} ({r['before']})" if r["aspect"] == "GPU" else r["aspect"] for r in rows if r["same"]]
        text = "Comparable: same " + ", ".join(same)
    elif not differ:
        text = "Nothing else differs"
    else:
        text = ("Also different: " if blocking else "Check before trusting the numbers: ") + "; ".join(
            _differs(r) for r in differ)
    if unknown:
        text += f" (not in the profiles: {', '.join(unknown)})"
    return text + "."


def _differs(r: Mapping[str, Any]) -> str:
    values = f"{r['before']} vs {r['after']}" if r["before"] is not None and r["after"] is not None else ""
    said = ": ".join(x for x in (values, r["note"]) if x)
    return f"{r['aspect']} differs" + (f" ({said})" if said else "")
