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
  down, duration down). Without a named fix, every fix whose movements all happened is suggested.
  A scenario's own evidence (``scenario.toml``, each metric with the direction its fix moves it)
  can be checked the same way.
- **Whether the two runs can be compared** (``comparability``): same GPU, SM count, clocks,
  launch configuration, tool versions, persisting-L2 set-aside.
- **Nsight Compute's estimate against the outcome** (``ncu``): the speed-ups its rules estimated
  in the before report, beside the share of the kernel's time the change saved.

Everything is a Polars frame; ``Diff.to_dict`` gives the JSON form and ``verdict`` the sentences
that ``coach diff`` prints first.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import polars as pl

from coach.analyze.kernel_metrics import DERIVED, with_derived
from coach.analyze.kernel_rules._common import fmt_bytes, fmt_count, fmt_rate, fmt_time
from coach.analyze.timeline import TimelineAnalysis, interval_join
from coach.analyze.timeline_rules.allocator_churn import ALLOC_CALLS
from coach.analyze.timeline_rules.host_sync import SYNC_CALLS
from coach.analyze.timeline_rules.layout_copies import copies as layout_copies
from coach.analyze.timeline_rules._shared import base_api_name
from coach.analyze.timeline_rules.warmup import LOADING_CALLS
from coach.errors import CoachError, InputError
from coach.model import LAUNCHES, KernelProfile, Profile, Timeline
from coach.recordings import SAME_TOLERANCE, measure
from coach.scenarios import Scenario

FIXES_FILE = Path(__file__).with_name("fixes.toml")

# A metric moved when it changed by more than 5%. Counts of sectors, requests and instructions are
# exact and repeat to the unit; durations and clocks of the same kernel on the same GPU repeat to
# within a few percent (clock boost and DRAM refresh vary between runs; the scenario harness sees the
# median of 20 runs stable to about a percent). A smaller change cannot be told from that noise.
NOISE = 0.05
# Two runs' clocks (SM, DRAM) differing by more than the noise make the durations incomparable on
# their own: a compute-bound kernel's time scales with its SM clock.
CLOCK_TOLERANCE = NOISE
# A metric a fix should leave alone ("same") may drift by the tolerance the scenario evidence allows
# (coach.recordings.SAME_TOLERANCE, 25%): "same" means not moved by a multiple.
SAME = SAME_TOLERANCE

CONFIG = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
#: Matching passes, strongest first: (how, keys). Within a key, launches pair in the order they ran.
MATCH_STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("name and launch configuration", ("kernel_name", *CONFIG)),
    ("name (launch configuration changed)", ("kernel_name",)),
    ("launch configuration (kernel renamed)", CONFIG),
)
ONLY_ONE_LEFT = "the one kernel left on each side"

#: Kernel metrics whose movement a diff reports: column -> (label, unit).
KERNEL_METRICS: dict[str, tuple[str, str]] = {
    "duration_ns": ("duration", "ns"),
    "dram_bytes": ("DRAM bytes", "byte"),
    "dram_read_bytes": ("DRAM bytes read", "byte"),
    "dram_write_bytes": ("DRAM bytes written", "byte"),
    "l2_bytes": ("L2 bytes", "byte"),
    "dram_bandwidth_bytes_per_s": ("DRAM bandwidth", "byte/s"),
    "dram_throughput_pct": ("DRAM throughput", "%"),
    "memory_throughput_pct": ("memory throughput", "%"),
    "sm_throughput_pct": ("SM throughput", "%"),
    "l2_throughput_pct": ("L2 throughput", "%"),
    "l1_throughput_pct": ("L1 throughput", "%"),
    "l2_hit_rate_pct": ("L2 hit rate", "%"),
    "load_sectors_per_request": ("global load sectors per request", "sector/request"),
    "store_sectors_per_request": ("global store sectors per request", "sector/request"),
    "ideal_load_sectors_per_request": ("ideal load sectors per request", "sector/request"),
    "excess_load_sectors": ("excess load sectors", "sector"),
    "excess_store_sectors": ("excess store sectors", "sector"),
    "global_load_requests": ("global load requests", "request"),
    "global_store_requests": ("global store requests", "request"),
    "global_load_sectors": ("global load sectors", "sector"),
    "global_store_sectors": ("global store sectors", "sector"),
    "shared_bank_conflicts": ("shared-memory bank conflicts", "conflict"),
    "wavefronts_per_shared_request": ("wavefronts per shared request", "wavefront/request"),
    "local_sectors": ("local-memory sectors", "sector"),
    "achieved_occupancy_pct": ("achieved occupancy", "%"),
    "theoretical_occupancy_pct": ("theoretical occupancy", "%"),
    "registers_per_thread": ("registers per thread", "register"),
    "warp_inst_executed": ("warp instructions", "inst"),
    "issue_active_pct": ("issue slots used", "%"),
    "thread_inst_per_warp_inst": ("active threads per instruction", "thread"),
    "branch_divergent_targets": ("divergent branch targets", "branch"),
    "fp64_inst": ("FP64 instructions", "inst"),
    "fp32_inst": ("FP32 instructions", "inst"),
    "flop": ("floating-point operations", "flop"),
    "tensor_pipe_active_pct": ("tensor pipe active", "%"),
    "global_atomic_requests": ("global atomic requests", "request"),
    "waves_per_sm": ("waves per SM", "wave"),
    "tail_idle_fraction": ("SM time idle in the last wave", "fraction"),
    "stall_long_scoreboard": ("long-scoreboard stalls per instruction", "cycle"),
    "warp_cycles_per_issued_inst": ("warp cycles per issued instruction", "cycle"),
    "arithmetic_intensity_flop_per_byte": ("arithmetic intensity", "flop/byte"),
}

#: The whole kernel profile, every launch on each side: ``pair`` -1 in the frames. Fixes that merge or
#: split kernels (fusion) are judged here, on totals, since their kernels do not pair one to one.
PROFILE_PAIR = -1
KERNEL_TOTALS: dict[str, tuple[str, str]] = {
    "total_launches": ("kernel launches (whole profile)", "kernel"),
    "total_duration_ns": ("kernel time (whole profile)", "ns"),
    "total_dram_bytes": ("DRAM bytes (whole profile)", "byte"),
}

#: Timeline quantities a diff compares (``timeline_metrics``): name -> (label, unit).
TIMELINE_METRICS: dict[str, tuple[str, str]] = {
    "window_ns": ("end to end (first to last CUDA activity)", "ns"),
    "gpu_busy_pct": ("GPU busy", "%"),
    "gpu_idle_ns": ("GPU idle in the window", "ns"),
    "kernel_count": ("kernels", "kernel"),
    "kernel_ns": ("kernel time", "ns"),
    "memcpy_count": ("copies", "copy"),
    "memcpy_ns": ("copy time", "ns"),
    "memcpy_bytes": ("bytes copied", "byte"),
    "memcpy_bytes_per_s": ("copy bandwidth", "byte/s"),
    "pageable_memcpy_count": ("copies through pageable memory", "copy"),
    "copy_compute_overlap_pct": ("host-device copy time overlapped by kernels", "%"),
    "sync_calls": ("synchronising calls", "call"),
    "sync_ns": ("time in synchronising calls", "ns"),
    "launch_calls": ("kernel launch calls", "call"),
    "launch_ns": ("time in launch calls", "ns"),
    "alloc_calls": ("allocation calls", "call"),
    "module_load_calls": ("module loads", "call"),
    "layout_copy_ns": ("copy-only kernels and device-to-device copies", "ns"),
    "event_record_calls": ("CUDA events recorded", "call"),
    "timed_module_load_calls": ("module loads inside the timed regions (NVTX 'timed')", "call"),
    "timed_gpu_share_pct": ("GPU work's share of the time the timer measured", "%"),
}

#: The NVTX range a program puts around each timed region: the name coach's harness gives it
#: (coach.capture.harness.time_cuda) and its scenario programs use. Where a timeline has such ranges,
#: a diff can check the measurement itself (``timed_regions``): what falls inside the timer, and
#: which clock it reads.
TIMED_RANGE = "timed"
EVENT_RECORD_CALLS = r"^cu(da)?EventRecord"

#: The outcome a fix is for (the time), as opposed to the movements that show it was this fix.
OUTCOMES = ("duration_ns", "total_duration_ns", "window_ns")
VERDICTS = ("matches", "matches where measured", "partly", "does not match", "not measured")


# --------------------------------------------------------------------------------------------
# The fix table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """One movement a fix should cause."""

    metric: str
    direction: str  # "down", "up", "same"
    target: float | str | None = None  # a number, or another metric of the after profile
    within: float | None = None
    why: str = ""


@dataclass(frozen=True)
class Fix:
    id: str
    name: str
    kind: str  # "kernel" or "timeline"
    rules: tuple[str, ...]
    ncu_rules: tuple[str, ...]
    expect: tuple[Expect, ...]
    scope: str = "kernel"  # kernel fixes: "kernel" (each matched launch pair) or "profile" (totals)

    @property
    def profile_kind(self) -> str:
        return "kernel-profile" if self.kind == "kernel" else "timeline"


@functools.cache
def fixes() -> dict[str, Fix]:
    """Every fix in ``fixes.toml``, validated once."""
    path = FIXES_FILE
    with path.open("rb") as fh:
        raw = tomllib.load(fh)
    known = {"kernel": set(LAUNCHES) | set(DERIVED), "profile": set(KERNEL_TOTALS), "timeline": set(TIMELINE_METRICS)}
    out = {}
    for fix_id, entry in raw.items():
        kind, scope = entry.get("kind"), entry.get("scope", "kernel")
        if kind not in ("kernel", "timeline"):
            raise InputError(path, f"[{fix_id}]: kind must be 'kernel' or 'timeline', not {kind!r}")
        if scope not in ("kernel", "profile") or (scope == "profile" and kind != "kernel"):
            raise InputError(path, f"[{fix_id}]: scope must be 'kernel' or 'profile' (kernel fixes only)")
        metrics = known["profile" if scope == "profile" else kind]
        expects = []
        for e in entry.get("expect", []):
            if e.get("metric") not in metrics:
                raise InputError(path, f"[{fix_id}]: {e.get('metric')!r} is not a {scope if kind == 'kernel' else kind} "
                                       "metric")
            if e.get("direction") not in ("down", "up", "same"):
                raise InputError(path, f"[{fix_id}] {e['metric']}: direction must be down, up or same")
            target = e.get("target")
            if isinstance(target, str) and target not in metrics:
                raise InputError(path, f"[{fix_id}] {e['metric']}: target {target!r} is not a {kind} metric")
            if target is not None and e.get("within") is None:
                raise InputError(path, f"[{fix_id}] {e['metric']}: a target needs 'within' (its tolerance)")
            expects.append(Expect(e["metric"], e["direction"], target, e.get("within"), e.get("why", "")))
        if not expects:
            raise InputError(path, f"[{fix_id}]: no expected movements")
        out[fix_id] = Fix(fix_id, entry.get("name", fix_id), kind, tuple(entry.get("rules", ())),
                          tuple(entry.get("ncu_rules", ())), tuple(expects), scope)
    return out


def find_fix(name: str) -> Fix:
    """The fix with this id, or the fix for this rule id (``coach diagnose``'s); a CoachError listing
    the known fixes otherwise."""
    table = fixes()
    if name in table:
        return table[name]
    by_rule = [f for f in table.values() if name in f.rules]
    if by_rule:
        return by_rule[0]
    raise CoachError(f"unknown fix {name!r}; known fixes: {', '.join(table)} (or a rule id such as "
                     "uncoalesced-global-access)")


def fix_for_rule(rule_id: str, kind: str) -> Fix | None:
    """The fix that answers a finding of ``rule_id`` on a profile of ``kind`` ("kernel-profile" or
    "timeline"), if the table has one."""
    return next((f for f in fixes().values() if rule_id in f.rules and f.profile_kind == kind), None)


def _expect_frame(fix_list: list[Fix]) -> pl.DataFrame:
    rows = [{"fix": f.id, "order": i, "metric": e.metric, "direction": e.direction,
             "target_value": float(e.target) if isinstance(e.target, (int, float)) else None,
             "target_metric": e.target if isinstance(e.target, str) else None,
             "within": e.within, "why": e.why}
            for f in fix_list for i, e in enumerate(f.expect)]
    return pl.DataFrame(rows, schema={"fix": pl.Utf8, "order": pl.Int64, "metric": pl.Utf8, "direction": pl.Utf8,
                                      "target_value": pl.Float64, "target_metric": pl.Utf8, "within": pl.Float64,
                                      "why": pl.Utf8})


# --------------------------------------------------------------------------------------------
# Movement and expectation, as expressions
# --------------------------------------------------------------------------------------------


def _direction(before: pl.Expr, after: pl.Expr) -> pl.Expr:
    return (pl.when(before.is_null() | after.is_null()).then(pl.lit("n/a"))
            .when((after - before).abs() <= NOISE * before.abs()).then(pl.lit("same"))
            .when(after < before).then(pl.lit("down"))
            .otherwise(pl.lit("up")))


def _change_pct(before: pl.Expr, after: pl.Expr) -> pl.Expr:
    return pl.when(before != 0).then((after - before) / before.abs() * 100.0)


def _labelled(long: pl.DataFrame, labels: Mapping[str, tuple[str, str]]) -> pl.DataFrame:
    names = pl.DataFrame({"metric": list(labels), "label": [v[0] for v in labels.values()],
                          "unit": [v[1] for v in labels.values()]})
    return long.join(names, on="metric", how="left", maintain_order="left").with_columns(
        label=pl.coalesce("label", "metric"), unit=pl.col("unit").fill_null(""))


def _moved(long: pl.DataFrame) -> pl.DataFrame:
    """``long`` (metric, before, after, ...) with ``change_pct`` and ``direction``."""
    b, a = pl.col("before"), pl.col("after")
    return long.with_columns(change_pct=_change_pct(b, a), direction=_direction(b, a))


def _checked(values: pl.DataFrame, expect: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Each expectation against the values (``keys``, metric, before, after): ``met`` is null where
    the metric (or its target) was not measured, else whether the direction and target hold."""
    targets = values.select(*keys, target_metric="metric", target_after="after")
    joined = expect.join(values, on="metric", how="inner").join(targets, on=[*keys, "target_metric"], how="left", maintain_order="left")
    b, a = pl.col("before"), pl.col("after")
    target = pl.coalesce("target_value", "target_after")
    direction_ok = (pl.when(pl.col("direction") == "down").then(a < b * (1 - NOISE))
                    .when(pl.col("direction") == "up").then(a > b * (1 + NOISE))
                    .otherwise((a - b).abs() <= SAME * b.abs()))
    target_ok = (pl.when(target.is_null()).then(pl.lit(True))
                 .when(target == 0).then(a.abs() <= pl.col("within") * b.abs())
                 .otherwise((a - target).abs() <= pl.col("within") * target.abs()))
    unmeasured = b.is_null() | a.is_null() | (pl.col("target_metric").is_not_null() & pl.col("target_after").is_null())
    return joined.with_columns(target=target, met=pl.when(unmeasured).then(None).otherwise(direction_ok & target_ok))


def _verdicts(checks: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """One verdict per fix (and ``keys``): "matches" (every movement as expected), "matches where
    measured", "partly", "does not match" (none of the fix's own movements, whatever the time did:
    a faster run for another reason is not this fix), "not measured"."""
    own = ~pl.col("metric").is_in(list(OUTCOMES))
    return checks.group_by(*keys, "fix").agg(
        expected=pl.len(), measured=pl.col("met").is_not_null().sum(), met=pl.col("met").fill_null(False).sum(),
        own_measured=(pl.col("met").is_not_null() & own).sum(), own_met=(pl.col("met").fill_null(False) & own).sum(),
    ).with_columns(verdict=pl.when(pl.col("own_measured") == 0).then(pl.lit("not measured"))
                   .when(pl.col("own_met") == 0).then(pl.lit("does not match"))
                   .when((pl.col("met") == pl.col("measured")) & (pl.col("measured") == pl.col("expected")))
                   .then(pl.lit("matches"))
                   .when(pl.col("met") == pl.col("measured")).then(pl.lit("matches where measured"))
                   .otherwise(pl.lit("partly")))


def _complete(values: pl.DataFrame, expect: pl.DataFrame, keys: list[str], key_rows: pl.DataFrame) -> pl.DataFrame:
    """``_checked`` plus a row (met null) for each expectation whose metric the profiles lack."""
    checked = _checked(values, expect, keys)
    grid = key_rows.join(expect, how="cross") if keys else expect
    return grid.join(checked.select(*keys, "fix", "order", "before", "after", "target", "met"),
                     on=[*keys, "fix", "order"], how="left", maintain_order="left").sort(*keys, "fix", "order")


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass
class Diff:
    """The comparison of two profiles (see module doc). Frames:

    ``pairs``          kernels: one row per matched launch pair; timelines: empty
    ``movements``      metric, label, unit, before, after, change_pct, direction (per ``pair`` for kernels)
    ``checks``         the named fix's (or the scenario's) expected movements, with ``met``
    ``comparability``  aspect, before, after, same, note
    ``ncu``            Nsight Compute's estimated speed-ups in the before report, beside the realised saving
    ``unmatched``      launches (kernels) found on one side only
    ``kernels``, ``nvtx``, ``memcpy``  timelines: per kernel name, NVTX range and copy kind
    """

    kind: str
    before_path: str
    after_path: str
    fix: Fix | None
    scenario: str | None
    headline: dict[str, Any]
    pairs: pl.DataFrame
    movements: pl.DataFrame
    checks: pl.DataFrame
    suggested: tuple[str, ...]
    comparability: pl.DataFrame
    ncu: pl.DataFrame = field(default_factory=pl.DataFrame)
    unmatched: pl.DataFrame = field(default_factory=pl.DataFrame)
    kernels: pl.DataFrame = field(default_factory=pl.DataFrame)
    nvtx: pl.DataFrame = field(default_factory=pl.DataFrame)
    memcpy: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def fix_verdict(self) -> str | None:
        """The named fix's verdict: kernel fixes on the pair that saved the most time, fixes that merge
        kernels on the whole profile, timeline fixes on the timeline."""
        return self.headline.get("fix_verdict")

    def headline_checks(self) -> pl.DataFrame:
        """The expected movements of the named (or suggested) fix where it is judged, and the scenario's
        evidence."""
        return self.checks

    def to_dict(self) -> dict[str, Any]:
        frames = {"pairs": self.pairs, "movements": self.movements, "checks": self.checks,
                  "comparability": self.comparability, "ncu": self.ncu, "unmatched": self.unmatched,
                  "kernels": self.kernels, "nvtx": self.nvtx, "memcpy": self.memcpy}
        return {
            "kind": self.kind,
            "before": self.before_path,
            "after": self.after_path,
            "fix": None if self.fix is None else {"id": self.fix.id, "name": self.fix.name},
            "scenario": self.scenario,
            "verdict": verdict(self),
            "headline": self.headline,
            "suggested_fixes": list(self.suggested),
            **{k: v.to_dicts() for k, v in frames.items() if v.width},
        }


def diff(before: Profile, after: Profile, *, fix: Fix | str | None = None, scenario: Scenario | None = None) -> Diff:
    """Compare two profiles of the same kind (see module doc)."""
    if before.kind != after.kind:
        raise CoachError(f"{before.source.path} is a {before.kind} and {after.source.path} a {after.kind}: "
                         "compare two Nsight Compute profiles, or two timelines")
    fx = find_fix(fix) if isinstance(fix, str) else fix
    if fx is not None and fx.profile_kind != before.kind:
        raise CoachError(f"fix {fx.id!r} is checked on {fx.profile_kind}s, but these are {before.kind}s")
    if before.kind == "kernel-profile":
        return _kernel_diff(before, after, fx, scenario)  # type: ignore[arg-type]
    return _timeline_diff(before, after, fx, scenario)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Kernel profiles
# --------------------------------------------------------------------------------------------


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


def _kernel_diff(before: KernelProfile, after: KernelProfile, fx: Fix | None, scenario: Scenario | None) -> Diff:
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
    movements = _labelled(_moved(values.filter(pl.col("metric").is_in([*metrics, *KERNEL_TOTALS]))), labels)
    keys = pl.concat([pairs.select("pair"), pl.DataFrame({"pair": [PROFILE_PAIR]})])
    all_checks = _complete(values, _expect_frame(kernel_fixes), ["pair"], keys)
    top = _headline_pair(pairs, totals)
    # each fix is judged where it acts: kernel fixes on the headline pair, profile fixes on the totals
    judged_at = pl.DataFrame({"fix": [f.id for f in kernel_fixes],
                              "pair": [PROFILE_PAIR if f.scope == "profile" else top["pair"] for f in kernel_fixes]})
    verdicts = _verdicts(all_checks, ["pair"]).join(judged_at, on=["fix", "pair"])
    suggested = _suggested(verdicts, kernel_fixes)
    shown = [fx.id] if fx else list(suggested)
    checks = _labelled(all_checks.join(judged_at, on=["fix", "pair"]).filter(pl.col("fix").is_in(shown)), labels)
    if scenario is not None:
        evidence = _scenario_checks(scenario, before, after, "pair", top["pair"])
        checks = pl.concat([checks, evidence], how="diagonal_relaxed")
    headline = {
        **top,
        "pairs": pairs.height,
        "launches_before": before.launches.height, "launches_after": after.launches.height,
        "total_before_ns": wb["duration_ns"].sum(), "total_after_ns": wa["duration_ns"].sum(),
        "fix_verdict": _verdict_of(verdicts, fx),
        "scenario_verdict": _scenario_verdict(checks) if scenario is not None else None,
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
        checks=checks, suggested=suggested,
        comparability=_kernel_comparability(before, after, wb, wa, pairs), ncu=_ncu_estimates(before, pairs, fx),
        unmatched=unmatched,
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


def _suggested(verdicts: pl.DataFrame, candidates: list[Fix]) -> tuple[str, ...]:
    """Fixes whose movements all happened, the most specific (most movements) first."""
    sizes = pl.DataFrame({"fix": [f.id for f in candidates], "n": [len(f.expect) for f in candidates]})
    return tuple(verdicts.filter(pl.col("verdict") == "matches").join(sizes, on="fix")
                 .sort("n", "fix", descending=[True, False])["fix"].to_list())


def _verdict_of(verdicts: pl.DataFrame, fx: Fix | None) -> str | None:
    """The named fix's verdict (``verdicts`` holds one row per fix, where it is judged)."""
    if fx is None:
        return None
    rows = verdicts.filter(pl.col("fix") == fx.id)
    return rows["verdict"][0] if rows.height else "not measured"


def _scenario_checks(scenario: Scenario, before: Profile, after: Profile, key: str | None = None,
                     key_value: int | None = None) -> pl.DataFrame:
    """The scenario's evidence, each measured on both profiles (``coach.recordings.measure``), as
    checks: the direction its ``scenario.toml`` names, no target."""
    rows = []
    for i, ev in enumerate(scenario.evidence):
        if ev.profile_kind != before.kind:
            continue
        b, a = measure(scenario, ev, before), measure(scenario, ev, after)
        rows.append({"fix": scenario.id, "order": i, "metric": ev.name, "label": ev.label, "unit": ev.unit,
                     "direction": ev.direction, "before": b, "after": a, "why": "scenario evidence"})
    schema = {"fix": pl.Utf8, "order": pl.Int64, "metric": pl.Utf8, "label": pl.Utf8, "unit": pl.Utf8,
              "direction": pl.Utf8, "before": pl.Float64, "after": pl.Float64, "why": pl.Utf8}
    frame = pl.DataFrame(rows, schema=schema)
    b, a = pl.col("before"), pl.col("after")
    # the scenario's own rule (coach.recordings.EvidenceValue): any change in the named direction
    met = (pl.when(b.is_null() | a.is_null()).then(None)
           .when(pl.col("direction") == "down").then(a < b)
           .when(pl.col("direction") == "up").then(a > b)
           .otherwise((a - b).abs() <= SAME * b.abs()))
    frame = frame.with_columns(met=met)
    if key is not None:
        frame = frame.with_columns(pl.lit(key_value, pl.Int64).alias(key))
    return frame


def _scenario_verdict(checks: pl.DataFrame) -> str:
    rows = checks.filter(pl.col("why") == "scenario evidence")
    return _verdicts(rows.with_columns(fix=pl.lit("scenario")), [])["verdict"][0] if rows.height else "not measured"


def _kernel_comparability(before: KernelProfile, after: KernelProfile, wb: pl.DataFrame, wa: pl.DataFrame,
                          pairs: pl.DataFrame) -> pl.DataFrame:
    def device(p: KernelProfile, col: str) -> Any:
        return p.devices[col][0] if p.devices.height and col in p.devices.columns else None

    def clock(col: str, side: str) -> float | None:
        v = (wb if side == "before" else wa)[col].mean()
        return None if v is None else float(v)

    rows = [
        _aspect("GPU", device(before, "name"), device(after, "name")),
        _aspect("SM count", device(before, "sm_count"), device(after, "sm_count")),
        _aspect("SM clock", clock("sm_frequency_hz", "before"), clock("sm_frequency_hz", "after"),
                tolerance=CLOCK_TOLERANCE, fmt=_ghz,
                note="a compute-bound kernel's time scales with the SM clock; lock clocks the same way for both runs"),
        _aspect("DRAM clock", clock("dram_frequency_hz", "before"), clock("dram_frequency_hz", "after"),
                tolerance=CLOCK_TOLERANCE, fmt=_ghz),
        _aspect("tool", _tool(before), _tool(after)),
        _aspect("persisting-L2 set-aside", _launch_metric(before, "launch__persisting_l2_cache_size"),
                _launch_metric(after, "launch__persisting_l2_cache_size"), fmt=fmt_bytes,
                note="a different set-aside changes what stays in L2 between launches"),
    ]
    changed = pairs.filter(pl.any_horizontal(*(pl.col(f"{c}_before") != pl.col(f"{c}_after") for c in CONFIG)))
    note = "; ".join(f"{r['kernel_name_after']}: grid {_dims(r, 'grid', 'before')} -> {_dims(r, 'grid', 'after')}, "
                     f"block {_dims(r, 'block', 'before')} -> {_dims(r, 'block', 'after')}"
                     for r in changed.head(3).iter_rows(named=True))
    rows.append({"aspect": "launch configuration", "before": None, "after": None, "same": changed.is_empty(),
                 "note": note or "every matched launch kept its grid and block"})
    return _aspect_frame(rows)


def _dims(row: Mapping[str, Any], what: str, side: str) -> str:
    return "x".join(str(row[f"{what}_{a}_{side}"]) for a in "xyz")


def _launch_metric(p: KernelProfile, metric: str) -> float | None:
    v = p.metrics.filter(pl.col("metric") == metric)["value"].max() if p.metrics.height else None
    return None if v is None else float(v)


def _tool(p: Profile) -> str:
    version = p.source.tool_version or (p.source.meta or {}).get("reader")
    return f"{p.source.tool} {version}" if version else p.source.tool


def _ghz(hz: float) -> str:
    return f"{hz / 1e9:.3g} GHz"


def _aspect(aspect: str, before: Any, after: Any, *, tolerance: float | None = None, note: str = "",
            fmt: Callable[[Any], str] = str) -> dict[str, Any]:
    if before is None or after is None:
        same = None
    elif tolerance is not None:
        same = abs(float(after) - float(before)) <= tolerance * abs(float(before))
    else:
        same = before == after
    return {"aspect": aspect, "before": None if before is None else fmt(before),
            "after": None if after is None else fmt(after), "same": same, "note": note}


def _aspect_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"aspect": pl.Utf8, "before": pl.Utf8, "after": pl.Utf8, "same": pl.Boolean,
                                      "note": pl.Utf8})


def _ncu_estimates(before: KernelProfile, pairs: pl.DataFrame, fx: Fix | None) -> pl.DataFrame:
    """Nsight Compute's estimated speed-ups for each matched before-launch (warnings with an
    estimate; the largest per rule), beside the share of that kernel's time the change saved.
    Nsight Compute's ``global`` estimates are a share of the kernel's time, as the realised saving
    is; ``local`` ones are a share of one unit's work."""
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


# --------------------------------------------------------------------------------------------
# Timelines
# --------------------------------------------------------------------------------------------


def timeline_metrics(tl: Timeline, analysis: TimelineAnalysis | None = None) -> dict[str, float | None]:
    """The quantities of ``TIMELINE_METRICS`` for one timeline."""
    a = analysis or TimelineAnalysis(tl)
    util = a.utilisation
    devices = max(util.height, 1)
    busy_ns = float(util["busy_ns"].sum()) if util.height else 0.0
    api = tl.api.with_columns(base=base_api_name(pl.col("name")))
    memcpy_ns = float(tl.memcpy["dur_ns"].sum()) if tl.memcpy.height else 0.0
    memcpy_bytes = float(tl.memcpy["bytes"].sum()) if tl.memcpy.height else 0.0
    overlap = a.overlap
    copy_ns = float(overlap["memcpy_ns"].sum()) if overlap.height else 0.0
    calls = {name: api.filter(pl.col("base").str.contains(pattern))
             for name, pattern in (("sync", SYNC_CALLS), ("alloc", ALLOC_CALLS), ("load", LOADING_CALLS),
                                   ("event", EVENT_RECORD_CALLS))}
    timed = timed_regions(tl, a)
    measured_ns = float(timed["measured_ns"].sum()) if timed.height else 0.0
    window = float(a.window_ns)
    # one launch call can start many kernels (a CUDA graph replay): count the calls, not the kernels
    launch_calls = a.launches.unique(subset=["pid", "correlation_id"])
    return {
        "window_ns": window,
        "gpu_busy_pct": busy_ns / (window * devices) * 100.0 if window else None,
        "gpu_idle_ns": window * devices - busy_ns,
        "kernel_count": float(tl.kernels.height),
        "kernel_ns": float(tl.kernels["dur_ns"].sum()) if tl.kernels.height else 0.0,
        "memcpy_count": float(tl.memcpy.height),
        "memcpy_ns": memcpy_ns,
        "memcpy_bytes": memcpy_bytes,
        "memcpy_bytes_per_s": memcpy_bytes / (memcpy_ns * 1e-9) if memcpy_ns else None,
        "pageable_memcpy_count": float(tl.memcpy["pageable"].fill_null(False).sum()) if tl.memcpy.height else 0.0,
        "copy_compute_overlap_pct": float(overlap["overlap_ns"].sum()) / copy_ns * 100.0 if copy_ns else None,
        "sync_calls": float(calls["sync"].height),
        "sync_ns": float(calls["sync"]["dur_ns"].sum()) if calls["sync"].height else 0.0,
        "launch_calls": float(launch_calls.height),
        "launch_ns": float(launch_calls["launch_ns"].sum()) if launch_calls.height else 0.0,
        "alloc_calls": float(calls["alloc"].height),
        "module_load_calls": float(calls["load"].height),
        "layout_copy_ns": float(layout_copies(a)["dur_ns"].sum()),
        "event_record_calls": float(calls["event"].height),
        "timed_module_load_calls": float(timed["module_loads"].sum()) if timed.height else None,
        "timed_gpu_share_pct": float(timed["gpu_time_ns"].sum()) / measured_ns * 100.0 if measured_ns else None,
    }


def timed_regions(tl: Timeline, a: TimelineAnalysis | None = None) -> pl.DataFrame:
    """One row per ``TIMED_RANGE`` range: ``module_loads`` (module-loading calls inside it, on its
    thread), ``event_records`` (CUDA events recorded inside it), ``gpu_time_ns`` (the kernels launched
    inside it) and ``measured_ns``, the time its timer measured.

    With events recorded inside the range the timer reads the GPU's clock. An event is reached once
    the stream has finished the work queued before it and its record call has been made, so the
    events span from the later of the first record call and the end of the GPU's work before the
    range's first kernel, to the later of the range's last kernel end and the last record call: back
    to back behind earlier work, about the kernels' own time; on an idle GPU (a synchronisation before
    each timed call), the launch latency as well. Without events the timer is the host's, and it
    measured the range itself (perf_counter() around asynchronous launches)."""
    ranges = tl.nvtx.filter((pl.col("text") == TIMED_RANGE) & pl.col("end_ns").is_not_null()).select(
        "pid", "tid", "start_ns", "end_ns").with_row_index("_range")
    if ranges.is_empty():
        return pl.DataFrame(schema={"module_loads": pl.UInt32, "event_records": pl.UInt32, "gpu_time_ns": pl.Int64,
                                    "measured_ns": pl.Int64})
    a = a or TimelineAnalysis(tl)
    api = tl.api.with_columns(base=base_api_name(pl.col("name"))).select("pid", "tid", "start_ns", "end_ns", "base")
    inside = functools.partial(interval_join, ranges, how="contains", by=["pid", "tid"])
    loads = inside(api.filter(pl.col("base").str.contains(LOADING_CALLS)).drop("base")).group_by("_range").agg(
        module_loads=pl.len())
    events = inside(api.filter(pl.col("base").str.contains(EVENT_RECORD_CALLS)).drop("base")).group_by("_range").agg(
        event_records=pl.len(), first_record_ns=pl.col("right_start_ns").min(), last_record_ns=pl.col("right_start_ns").max())
    kernels = inside(a.launches.select(
        "pid", "tid", start_ns="api_start_ns", end_ns="api_end_ns", k_start_ns="start_ns", k_end_ns="end_ns",
        k_dur_ns="dur_ns", k_free_ns=pl.col("start_ns") - pl.col("idle_before_ns"),
    )).group_by("_range").agg(
        gpu_time_ns=pl.col("k_dur_ns").sum(), free_before_ns=pl.col("k_free_ns").sort_by("k_start_ns").first(),
        last_end_ns=pl.col("k_end_ns").max(),
    )
    timed_by_events = (pl.max_horizontal("last_end_ns", "last_record_ns")
                       - pl.max_horizontal("first_record_ns", "free_before_ns"))
    return (
        ranges.join(loads, on="_range", how="left", maintain_order="left").join(events, on="_range", how="left", maintain_order="left")
        .join(kernels, on="_range", how="left", maintain_order="left")
        .with_columns(pl.col("module_loads", "event_records").fill_null(0), pl.col("gpu_time_ns").fill_null(0))
        .with_columns(measured_ns=pl.when(pl.col("event_records") > 0).then(timed_by_events)
                      .otherwise(pl.col("end_ns") - pl.col("start_ns")))
        .select("module_loads", "event_records", "gpu_time_ns", "measured_ns")
    )


def _sides(before: pl.DataFrame, after: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Full outer join of two per-group summaries; value columns suffixed ``_before``/``_after``,
    missing groups as zero."""
    values = [c for c in before.columns if c not in on]
    joined = before.rename({c: f"{c}_before" for c in values}).join(
        after.rename({c: f"{c}_after" for c in values}), on=on, how="full", coalesce=True)
    return joined.with_columns(pl.col(f"{c}_{s}").fill_null(0) for c in values for s in ("before", "after"))


def _kernels_by_name(tl: Timeline) -> pl.DataFrame:
    return tl.kernels.group_by("name").agg(count=pl.len(), total_ns=pl.col("dur_ns").sum())


def _nvtx_by_range(a: TimelineAnalysis) -> pl.DataFrame:
    return a.projection.group_by(pl.col("domain").fill_null(""), "text").agg(
        count=pl.len(), wall_ns=pl.col("dur_ns").sum(), gpu_time_ns=pl.col("gpu_time_ns").sum())


def _memcpy_by_kind(tl: Timeline) -> pl.DataFrame:
    from coach.analyze.timeline_summary import memcpy_by_kind  # noqa: PLC0415 - one definition of the grouping

    return memcpy_by_kind(tl.memcpy).select("kind", "count", "bytes", "total_ns", "pageable")


def _timeline_diff(before: Timeline, after: Timeline, fx: Fix | None, scenario: Scenario | None) -> Diff:
    ab, aa = TimelineAnalysis(before), TimelineAnalysis(after)
    mb, ma = timeline_metrics(before, ab), timeline_metrics(after, aa)
    values = pl.DataFrame({"metric": list(mb), "before": list(mb.values()), "after": [ma[k] for k in mb]},
                          schema={"metric": pl.Utf8, "before": pl.Float64, "after": pl.Float64})
    movements = _labelled(_moved(values), TIMELINE_METRICS)
    timeline_fixes = [f for f in fixes().values() if f.kind == "timeline"]
    all_checks = _complete(values, _expect_frame(timeline_fixes), [], pl.DataFrame())
    verdicts = _verdicts(all_checks, [])
    suggested = _suggested(verdicts, timeline_fixes)
    checks = _labelled(all_checks.filter(pl.col("fix").is_in([fx.id] if fx else list(suggested))), TIMELINE_METRICS)
    if scenario is not None:
        checks = pl.concat([checks, _scenario_checks(scenario, before, after)], how="diagonal_relaxed")
    kernels = _sides(_kernels_by_name(before), _kernels_by_name(after), ["name"]).with_columns(
        change_ns=pl.col("total_ns_after") - pl.col("total_ns_before"),
    ).with_columns(change_pct=_change_pct(pl.col("total_ns_before").cast(pl.Float64),
                                          pl.col("total_ns_after").cast(pl.Float64)))
    nvtx = _sides(_nvtx_by_range(ab), _nvtx_by_range(aa), ["domain", "text"]).with_columns(
        change_ns=pl.col("wall_ns_after") - pl.col("wall_ns_before"))
    window_b, window_a = mb["window_ns"], ma["window_ns"]
    headline = {
        "before_ns": window_b, "after_ns": window_a,
        "speedup": window_b / window_a if window_a else None,
        "saved_ns": window_b - window_a,
        "saved_pct": (window_b - window_a) / window_b * 100.0 if window_b else None,
        "kernel_before_ns": mb["kernel_ns"], "kernel_after_ns": ma["kernel_ns"],
        "busy_before_pct": mb["gpu_busy_pct"], "busy_after_pct": ma["gpu_busy_pct"],
        "fix_verdict": _verdict_of(verdicts, fx),
        "scenario_verdict": _scenario_verdict(checks) if scenario is not None else None,
    }
    return Diff(
        kind="timeline", before_path=str(before.source.path), after_path=str(after.source.path), fix=fx,
        scenario=scenario.id if scenario else None, headline=headline, pairs=pl.DataFrame(),
        movements=movements.sort(pl.col("change_pct").abs(), descending=True, nulls_last=True),
        checks=checks, suggested=suggested, comparability=_timeline_comparability(before, after),
        kernels=kernels.sort(pl.col("change_ns").abs(), "name", descending=[True, False]),
        nvtx=nvtx.sort(pl.col("change_ns").abs(), "text", descending=[True, False]),
        memcpy=_sides(_memcpy_by_kind(before), _memcpy_by_kind(after), ["kind"]).sort("kind"),
    )


def _timeline_comparability(before: Timeline, after: Timeline) -> pl.DataFrame:
    def names(tl: Timeline) -> str | None:
        n = sorted(tl.devices["name"].drop_nulls().unique().to_list()) if tl.devices.height else []
        return ", ".join(n) or None

    kb, ka = set(before.kernels["name"].drop_nulls().to_list()), set(after.kernels["name"].drop_nulls().to_list())
    gone, new = sorted(kb - ka), sorted(ka - kb)
    note = "; ".join(part for part in (f"only before: {', '.join(gone[:5])}" if gone else "",
                                       f"only after: {', '.join(new[:5])}" if new else "") if part)
    copied = [float(tl.memcpy["bytes"].sum()) if tl.memcpy.height else 0.0 for tl in (before, after)]
    return _aspect_frame([
        _aspect("GPU", names(before), names(after)),
        _aspect("devices with work", before.kernels["device_id"].n_unique(), after.kernels["device_id"].n_unique()),
        _aspect("tool", _tool(before), _tool(after)),
        _aspect("bytes copied", *copied, tolerance=NOISE, fmt=fmt_bytes,
                note="different input sizes, or a fix that removed copies"),
        {"aspect": "kernel names", "before": str(len(kb)), "after": str(len(ka)), "same": not gone and not new,
         "note": note or "the same kernels ran in both"},
    ])


# --------------------------------------------------------------------------------------------
# The verdict, in words
# --------------------------------------------------------------------------------------------


#: Units counted in whole things, with their plural.
COUNTED = {"sector": "sectors", "request": "requests", "inst": "inst", "flop": "flop", "conflict": "conflicts",
           "branch": "branches", "kernel": "kernels", "call": "calls", "copy": "copies"}


def fmt_value(value: float | None, unit: str) -> str:
    """A value with its unit, readable: 1.18 ms, 4.29 GB, 4.21 TB/s, 58.72M sectors, 32.0 sector/request."""
    if value is None:
        return "n/a"
    if unit == "ns":
        return fmt_time(value)
    if unit == "byte":
        return fmt_bytes(value)
    if unit == "byte/s":
        return fmt_rate(value)
    if unit == "%":
        return f"{value:.1f}%"
    if unit in COUNTED:
        return f"{fmt_count(value)} {unit if value == 1 else COUNTED[unit]}"
    return f"{value:.3g} {unit}".strip()


def _arrow(row: Mapping[str, Any]) -> str:
    text = f"{row['label']} {fmt_value(row['before'], row['unit'])} -> {fmt_value(row['after'], row['unit'])}"
    if row.get("target") is not None and row.get("target_metric"):
        text += f" (target {fmt_value(row['target'], row['unit'])})"
    return text


def verdict(d: Diff) -> list[str]:
    """What ``coach diff`` says first: what got faster and by how much, whether the movement matches
    the fix, what Nsight Compute had estimated, and whether the runs compare."""
    h = d.headline
    lines = []
    if d.kind == "kernel-profile":
        names = (h["kernel_before"] if h["kernel_before"] == h["kernel_after"]
                 else f"{h['kernel_before']} -> {h['kernel_after']}")
        lines.append(f"{names}: {fmt_time(h['before_ns'])} -> {fmt_time(h['after_ns'])}, {_faster(h)}.")
        several = h["launches_before"] > 1 or h["launches_after"] > 1
        if several and h["pair"] != PROFILE_PAIR:
            total = {"before_ns": h["total_before_ns"], "after_ns": h["total_after_ns"],
                     "speedup": h["total_before_ns"] / h["total_after_ns"] if h["total_after_ns"] else None,
                     "saved_ns": h["total_before_ns"] - h["total_after_ns"]}
            lines.append(f"Whole profile: {h['launches_before']} -> {h['launches_after']} launches, "
                         f"{fmt_time(total['before_ns'])} -> {fmt_time(total['after_ns'])}, {_faster(total)}.")
    else:
        lines.append(f"End to end: {fmt_time(h['before_ns'])} -> {fmt_time(h['after_ns'])}, {_faster(h)}; "
                     f"kernel time {fmt_time(h['kernel_before_ns'])} -> {fmt_time(h['kernel_after_ns'])}; GPU busy "
                     f"{fmt_value(h['busy_before_pct'], '%')} -> {fmt_value(h['busy_after_pct'], '%')}.")
    lines += _fix_lines(d)
    lines += _ncu_lines(d)
    lines.append(_comparability_line(d))
    return lines


def _faster(h: Mapping[str, Any]) -> str:
    s = h.get("speedup")
    if s is None:
        return "no time to compare"
    saved = h["saved_ns"]
    if abs(s - 1) <= NOISE:
        return f"no change beyond noise ({s:.2f}x)"
    if s > 1:
        return f"{s:.2f}x faster (saves {fmt_time(saved)}, {saved / h['before_ns'] * 100:.0f}%)"
    return f"{1 / s:.2f}x slower (costs {fmt_time(-saved)} more)"


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
            lines.append(f"The movement is what the fix '{f.id}' ({f.name}) causes: "
                         + "; ".join(_arrow(r) for r in rows) + "."
                         + (f" Also consistent with: {', '.join(d.suggested[1:])}." if len(d.suggested) > 1 else ""))
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
    if d.fix is not None and rows.filter(pl.col("for_fix")).height:
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
    differ = [r for r in rows if r["same"] is False]
    unknown = [r["aspect"] for r in rows if r["same"] is None]
    if not differ:
        same = [f"{r['aspect']} ({r['before']})" if r["aspect"] == "GPU" else r["aspect"] for r in rows if r["same"]]
        text = "Comparable: same " + ", ".join(same)
    else:
        text = "Check before trusting the numbers: " + "; ".join(
            f"{r['aspect']} differs ({r['before']} vs {r['after']}{': ' + r['note'] if r['note'] else ''})"
            for r in differ)
    if unknown:
        text += f" (not in the profiles: {', '.join(unknown)})"
    return text + "."
