"""Two Nsight Compute profiles: launches matched across them, the metrics of each pair, the fix
table judged on the pair that saved the most time (fixes that merge kernels on the totals), and
Nsight Compute's estimates beside the saving realised.

Launches are matched by kernel name and launch configuration (grid, block), then by name alone
(the fix changed the configuration), then by configuration alone (the fix renamed the kernel),
each in the order they ran; if one launch is left on each side, those two.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import polars as pl

from coach.analyze.diff.fixes import (
    Fix, credit, expect_frame, fixes, in_credit_order, judge, labelled, moved, verdict_of, verdicts,
)
from coach.analyze.diff.metrics import CLOCK_TOLERANCE, KERNEL_METRICS, KERNEL_TOTALS, PROFILE_PAIR
from coach.analyze.diff.result import (
    Diff, aspect, aspect_frame, blocked, device_aspects, scenario_checks, scenario_verdict, tool, value_map,
)
from coach.analyze.kernel_metrics import with_derived
from coach.analyze.kernel_rules._common import fmt_bytes
from coach.errors import CoachError
from coach.model import KernelProfile
from coach.scenarios import Scenario

CONFIG = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
#: Matching passes, strongest first: (how, keys). Within a key, launches pair in the order they ran.
MATCH_STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("name and launch configuration", ("kernel_name", *CONFIG)),
    ("name (launch configuration changed)", ("kernel_name",)),
    ("launch configuration (kernel renamed)", CONFIG),
)
ONLY_ONE_LEFT = "the one kernel left on each side"


def match_launches(before: pl.DataFrame, after: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Pair launches across two ``launches`` tables (see module doc): (``launch_id_before``,
    ``launch_id_after``, ``match``), and the unmatched launch ids of each side."""
    cols = ["launch_id", "kernel_name", *CONFIG]
    b, a = before.select(cols).sort("launch_id"), after.select(cols).sort("launch_id")
    found = []
    for how, keys in MATCH_STEPS:
        nth = pl.int_range(pl.len()).over(list(keys)).alias("_nth")
        joined = b.with_columns(nth).join(a.with_columns(nth), on=[*keys, "_nth"], suffix="_after")
        pairs = joined.select(launch_id_before="launch_id", launch_id_after="launch_id_after", match=pl.lit(how))
        found.append(pairs)
        b = b.filter(~pl.col("launch_id").is_in(pairs["launch_id_before"].implode()))
        a = a.filter(~pl.col("launch_id").is_in(pairs["launch_id_after"].implode()))
    if b.height == 1 and a.height == 1:
        found.append(pl.DataFrame({"launch_id_before": b["launch_id"], "launch_id_after": a["launch_id"],
                                   "match": [ONLY_ONE_LEFT]}))
        b, a = b.clear(), a.clear()
    matched = (pl.concat(found).sort("launch_id_before").with_row_index("pair")
               .with_columns(pl.col("pair").cast(pl.Int64)))
    return matched, b.select("launch_id"), a.select("launch_id")


def only_kernels(profile: KernelProfile, pattern: str) -> KernelProfile:
    """The launches of ``profile`` whose kernel name (short or demangled) matches the regular
    expression ``pattern``, with their metrics and rule results: one side of a diff, when the before
    and the after kernel were profiled in one report."""
    try:
        launches = profile.launches.filter(pl.col("kernel_name").fill_null("").str.contains(pattern)
                                           | pl.col("demangled_name").fill_null("").str.contains(pattern))
    except pl.exceptions.ComputeError as err:
        raise CoachError(f"{pattern!r} is not a regular expression ({err})") from None
    if launches.is_empty():
        raise CoachError(f"no kernel in {profile.source.path} matches {pattern!r}")
    ids = launches["launch_id"].implode()
    return replace(profile, launches=launches, metrics=profile.metrics.filter(pl.col("launch_id").is_in(ids)),
                   rules=profile.rules.filter(pl.col("launch_id").is_in(ids)))


def kernel_diff(before: KernelProfile, after: KernelProfile, fx: Fix | None, scenario: Scenario | None) -> Diff:
    wb, wa = with_derived(before.launches, before.devices), with_derived(after.launches, after.devices)
    matched, only_b, only_a = match_launches(before.launches, after.launches)
    kernel_fixes = [f for f in fixes().values() if f.kind == "kernel"]
    metrics = [m for m in KERNEL_METRICS if m in wb.columns]
    expected = {e.metric for f in kernel_fixes if f.scope == "kernel" for e in f.expect} | {
        e.target for f in kernel_fixes for e in f.expect if isinstance(e.target, str)}
    value_cols = [*metrics, *sorted(expected - set(metrics))]
    keep = ["launch_id", "kernel_name", *CONFIG, *value_cols]
    pairs = (matched
             .join(wb.select(keep).rename(lambda c: f"{c}_before"), on="launch_id_before")
             .join(wa.select(keep).rename(lambda c: f"{c}_after"), on="launch_id_after")
             .with_columns(
                 speedup=pl.col("duration_ns_before") / pl.col("duration_ns_after"),
                 saved_ns=pl.col("duration_ns_before") - pl.col("duration_ns_after"),
             )
             .with_columns(saved_pct=pl.col("saved_ns") / pl.col("duration_ns_before") * 100.0)
             .sort("pair"))
    totals = _totals(wb, wa)
    values = pl.concat([*(pairs.select("pair", metric=pl.lit(m), before=pl.col(f"{m}_before").cast(pl.Float64),
                                       after=pl.col(f"{m}_after").cast(pl.Float64)) for m in value_cols), totals])
    labels = {**KERNEL_METRICS, **KERNEL_TOTALS}
    movements = labelled(moved(values.filter(pl.col("metric").is_in([*metrics, *KERNEL_TOTALS]))), labels)
    keys = pl.concat([pairs.select("pair"), pl.DataFrame({"pair": [PROFILE_PAIR]})])
    all_checks = judge(values, expect_frame(kernel_fixes), ["pair"], keys)
    top = _headline_pair(pairs, totals)
    # each fix is judged where it acts: kernel fixes on the headline pair, profile fixes on the totals
    judged_at = pl.DataFrame({"fix": [f.id for f in kernel_fixes],
                              "pair": [PROFILE_PAIR if f.scope == "profile" else top["pair"] for f in kernel_fixes]})
    table = verdicts(all_checks, ["pair"]).join(judged_at, on=["fix", "pair"])
    judged = all_checks.join(judged_at, on=["fix", "pair"])
    comparability = _comparability(before, after, wb, wa, pairs)
    cross = blocked(comparability)
    suggested = () if cross else credit(table, judged, kernel_fixes)
    shown = [fx.id] if fx else list(suggested)
    checks = labelled(in_credit_order(judged, shown), labels)
    if scenario is not None:
        checks = pl.concat([checks, scenario_checks(scenario, before, after, "pair", top["pair"])], how="diagonal_relaxed")
    headline = {
        **top,
        "pairs": pairs.height,
        "launches_before": before.launches.height, "launches_after": after.launches.height,
        "total_before_ns": wb["duration_ns"].sum(), "total_after_ns": wa["duration_ns"].sum(),
        "fix_verdict": "not comparable" if (cross and fx is not None) else verdict_of(table, fx),
        "scenario_verdict": scenario_verdict(checks) if scenario is not None else None,
    }
    unmatched = pl.concat([
        ids.join(p.launches, on="launch_id").select("launch_id", "kernel_name", "duration_ns", side=pl.lit(side))
        for ids, p, side in ((only_b, before, "before"), (only_a, after, "after"))
    ])
    return Diff(
        kind="kernel-profile", before_path=str(before.source.path), after_path=str(after.source.path), fix=fx,
        scenario=scenario.id if scenario else None, headline=headline,
        pairs=pairs.select("pair", "match", "launch_id_before", "launch_id_after", "kernel_name_before",
                           "kernel_name_after", *(f"{c}_{s}" for s in ("before", "after") for c in CONFIG),
                           "duration_ns_before", "duration_ns_after", "speedup", "saved_ns", "saved_pct"),
        movements=movements.sort("pair", pl.col("change_pct").abs(), descending=[False, True], nulls_last=True),
        checks=checks, suggested=suggested, comparability=comparability,
        ncu=_ncu_estimates(before, pairs, fx or (fixes()[suggested[0]] if suggested else None)),
        unmatched=unmatched, values=value_map(values.filter(pl.col("pair").is_in([top["pair"], PROFILE_PAIR]))),
    )


def _totals(wb: pl.DataFrame, wa: pl.DataFrame) -> pl.DataFrame:
    """``KERNEL_TOTALS`` of each side's every launch, as values of the whole-profile pair."""
    def side(w: pl.DataFrame) -> list[float | None]:
        dram = w["dram_bytes"].sum() if w["dram_bytes"].null_count() < w.height else None
        return [float(w.height), float(w["duration_ns"].sum()), None if dram is None else float(dram)]

    return pl.DataFrame({"pair": [PROFILE_PAIR] * len(KERNEL_TOTALS), "metric": list(KERNEL_TOTALS),
                         "before": side(wb), "after": side(wa)},
                        schema={"pair": pl.Int64, "metric": pl.Utf8, "before": pl.Float64, "after": pl.Float64})


def _headline_pair(pairs: pl.DataFrame, totals: pl.DataFrame) -> dict[str, Any]:
    """The matched pair that saved the most time; the whole profile when no launch pairs up (a fusion,
    a rewrite with other kernels)."""
    if pairs.height:
        top = pairs.sort("saved_ns", descending=True, nulls_last=True).row(0, named=True)
        return {"pair": top["pair"], "kernel_before": top["kernel_name_before"], "kernel_after": top["kernel_name_after"],
                "match": top["match"], "before_ns": top["duration_ns_before"], "after_ns": top["duration_ns_after"],
                "speedup": top["speedup"], "saved_ns": top["saved_ns"], "saved_pct": top["saved_pct"]}
    t = totals.filter(pl.col("metric") == "total_duration_ns").row(0, named=True)
    saved = t["before"] - t["after"]
    return {"pair": PROFILE_PAIR, "kernel_before": "all kernels", "kernel_after": "all kernels",
            "match": "no launch pairs up: the whole profiles", "before_ns": t["before"], "after_ns": t["after"],
            "speedup": t["before"] / t["after"] if t["after"] else None, "saved_ns": saved,
            "saved_pct": saved / t["before"] * 100.0 if t["before"] else None}


def _comparability(before: KernelProfile, after: KernelProfile, wb: pl.DataFrame, wa: pl.DataFrame,
                   pairs: pl.DataFrame) -> pl.DataFrame:
    def clock(col: str, side: str) -> float | None:
        v = (wb if side == "before" else wa)[col].mean()
        return None if v is None else float(v)

    rows = [
        *device_aspects(before, after),
        aspect("SM clock", clock("sm_frequency_hz", "before"), clock("sm_frequency_hz", "after"),
               tolerance=CLOCK_TOLERANCE, fmt=_ghz,
               note="a compute-bound kernel's time scales with the SM clock; lock clocks the same way for both runs"),
        aspect("DRAM clock", clock("dram_frequency_hz", "before"), clock("dram_frequency_hz", "after"),
               tolerance=CLOCK_TOLERANCE, fmt=_ghz),
        aspect("tool", tool(before), tool(after)),
        aspect("persisting-L2 set-aside", _launch_metric(before, "launch__persisting_l2_cache_size"),
               _launch_metric(after, "launch__persisting_l2_cache_size"), fmt=fmt_bytes,
               note="a different set-aside changes what stays in L2 between launches"),
    ]
    changed = pairs.filter(pl.any_horizontal(*(pl.col(f"{c}_before") != pl.col(f"{c}_after") for c in CONFIG)))
    note = "; ".join(f"{r['kernel_name_after']}: grid {_dims(r, 'grid', 'before')} -> {_dims(r, 'grid', 'after')}, "
                     f"block {_dims(r, 'block', 'before')} -> {_dims(r, 'block', 'after')}"
                     for r in changed.head(3).iter_rows(named=True))
    rows.append({"aspect": "launch configuration", "before": None, "after": None, "same": changed.is_empty(),
                 "note": note or "every matched launch kept its grid and block"})
    return aspect_frame(rows)


def _dims(row: Mapping[str, Any], what: str, side: str) -> str:
    return "x".join(str(row[f"{what}_{a}_{side}"]) for a in "xyz")


def _launch_metric(p: KernelProfile, metric: str) -> float | None:
    v = p.metrics.filter(pl.col("metric") == metric)["value"].max() if p.metrics.height else None
    return None if v is None else float(v)


def _ghz(hz: float) -> str:
    return f"{hz / 1e9:.3g} GHz"


def _ncu_estimates(before: KernelProfile, pairs: pl.DataFrame, fx: Fix | None) -> pl.DataFrame:
    """Nsight Compute's estimated speed-ups for each matched before-launch (warnings with an
    estimate; the largest per rule), beside the share of that kernel's time the change saved.
    Nsight Compute's ``global`` estimates are a share of the kernel's time, as the realised saving
    is; ``local`` ones are a share of one unit's work. ``for_fix`` marks the rules of ``fx``: the
    named fix, or without one the fix the movements credit first, so that the estimates quoted
    beside a credited fix are that fix's own."""
    rules = before.rules.filter(pl.col("severity").is_in(["warning", "error"]) & pl.col("speedup_pct").is_not_null())
    return (
        rules.group_by("launch_id", "rule_id")
        .agg(pl.col("speedup_pct").max().alias("estimated_pct"), pl.col("speedup_type").first(),
             pl.col("title").sort_by("speedup_pct").last())
        .join(pairs.select("pair", "saved_pct", launch_id="launch_id_before"), on="launch_id")
        .with_columns(realised_pct=pl.col("saved_pct"),
                      for_fix=pl.col("rule_id").is_in(list(fx.ncu_rules) if fx else []))
        .select("pair", "rule_id", "title", "speedup_type", "estimated_pct", "realised_pct", "for_fix")
        .sort("pair", "for_fix", "estimated_pct", descending=[False, True, True])
    )
