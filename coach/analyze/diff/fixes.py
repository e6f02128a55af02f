"""The fix table (``coach/analyze/fixes.toml``) and the rules that judge a movement against a fix.

Each fix lists the movements it must cause and the ones it must not (direction ``same``), as
physics, not as any one recording: coalescing brings the load sectors per request down to the ideal
of the access width; wider loads cut the requests while the bytes per request rise and the bytes stay
the same; raising occupancy raises the theoretical occupancy (the limit itself changed), not only the
achieved one. ``judge`` turns the before and after values into one ``met`` per expectation, and
``verdicts`` into one verdict per fix.

Without a named fix, ``credit`` ranks the fixes whose movements all happened, so that the first is
the one the evidence supports best: on a timeline, the one whose own time component (``saves``: the
copy time for pinned memory, the time in synchronising calls for removing syncs) accounts for the
largest share of the time saved; between kernel fixes, and between timeline fixes that explain the
saving alike, the one whose own movements are the largest (its signature: atomics cut a thousandfold
say more than requests cut by a quarter).
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from coach.analyze.diff.metrics import KERNEL_TOTALS, NOISE, OUTCOMES, SAME, TIMELINE_METRICS
from coach.analyze.kernel_metrics import DERIVED
from coach.errors import CoachError, InputError
from coach.model import LAUNCHES

FIXES_FILE = Path(__file__).resolve().parent.parent / "fixes.toml"

#: A movement counts for the ranking up to a factor of 1000 (a count that falls to 0 or rises from
#: 0 moved by "a thousandfold": beyond that, sizes of movements are not worth comparing).
SIGNATURE_CAP = math.log(1000.0)
#: Shares of the saved time closer than this rank alike (then the signature decides): the time
#: components overlap (a copy that got faster is also a gap that got shorter), so a few percent
#: between two shares says nothing.
SHARE_STEP = 0.1


@dataclass(frozen=True)
class Expect:
    """One movement a fix should cause (or, with direction ``same``, should leave alone)."""

    metric: str
    direction: str  # "down", "up", "same"
    target: float | str | None = None  # a number, or another metric of the after profile
    within: float | None = None
    why: str = ""
    optional: bool = False  # unmeasured, it does not keep the fix from matching
    before_at_least: float | None = None  # the before value must be at least this to be this fix's movement
    before_at_most: float | None = None


@dataclass(frozen=True)
class Fix:
    id: str
    name: str
    kind: str  # "kernel" or "timeline"
    rules: tuple[str, ...]
    ncu_rules: tuple[str, ...]
    expect: tuple[Expect, ...]
    scope: str = "kernel"  # kernel fixes: "kernel" (each matched launch pair) or "profile" (totals)
    saves: str | None = None  # the time component the fix removes (timeline fixes), for the ranking
    saves_direction: str = "down"
    gain: str | None = None  # the gain model for this fix (coach.analyze.gain.MODELS)

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
        expects = [_expect(path, fix_id, e, metrics, scope if kind == "kernel" else kind) for e in entry.get("expect", [])]
        if not expects:
            raise InputError(path, f"[{fix_id}]: no expected movements")
        saves = entry.get("saves")
        saves_metric, saves_direction = (saves.get("metric"), saves.get("direction", "down")) if isinstance(saves, dict) \
            else (saves, "down")
        if saves_metric is not None and saves_metric not in metrics:
            raise InputError(path, f"[{fix_id}]: saves names {saves_metric!r}, not a {kind} metric")
        if saves_direction not in ("down", "up"):
            raise InputError(path, f"[{fix_id}]: saves direction must be down or up")
        out[fix_id] = Fix(fix_id, entry.get("name", fix_id), kind, tuple(entry.get("rules", ())),
                          tuple(entry.get("ncu_rules", ())), tuple(expects), scope, saves_metric, saves_direction,
                          entry.get("gain"))
    return out


def _expect(path: Path, fix_id: str, e: dict, metrics: set[str], what: str) -> Expect:
    if e.get("metric") not in metrics:
        raise InputError(path, f"[{fix_id}]: {e.get('metric')!r} is not a {what} metric")
    if e.get("direction") not in ("down", "up", "same"):
        raise InputError(path, f"[{fix_id}] {e['metric']}: direction must be down, up or same")
    target = e.get("target")
    if isinstance(target, str) and target not in metrics:
        raise InputError(path, f"[{fix_id}] {e['metric']}: target {target!r} is not a {what} metric")
    if target is not None and e.get("within") is None:
        raise InputError(path, f"[{fix_id}] {e['metric']}: a target needs 'within' (its tolerance)")
    unknown = set(e) - {"metric", "direction", "target", "within", "why", "optional", "before_at_least", "before_at_most"}
    if unknown:
        raise InputError(path, f"[{fix_id}] {e['metric']}: unknown keys {sorted(unknown)}")
    return Expect(e["metric"], e["direction"], target, e.get("within"), e.get("why", ""), bool(e.get("optional", False)),
                  e.get("before_at_least"), e.get("before_at_most"))


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


def expect_frame(fix_list: list[Fix]) -> pl.DataFrame:
    rows = [{"fix": f.id, "order": i, "metric": e.metric, "direction": e.direction,
             "target_value": float(e.target) if isinstance(e.target, (int, float)) else None,
             "target_metric": e.target if isinstance(e.target, str) else None,
             "within": e.within, "why": e.why, "optional": e.optional,
             "before_at_least": None if e.before_at_least is None else float(e.before_at_least),
             "before_at_most": None if e.before_at_most is None else float(e.before_at_most)}
            for f in fix_list for i, e in enumerate(f.expect)]
    return pl.DataFrame(rows, schema={"fix": pl.Utf8, "order": pl.Int64, "metric": pl.Utf8, "direction": pl.Utf8,
                                      "target_value": pl.Float64, "target_metric": pl.Utf8, "within": pl.Float64,
                                      "why": pl.Utf8, "optional": pl.Boolean, "before_at_least": pl.Float64,
                                      "before_at_most": pl.Float64})


# --------------------------------------------------------------------------------------------
# Movement and expectation, as expressions
# --------------------------------------------------------------------------------------------


def direction(before: pl.Expr, after: pl.Expr) -> pl.Expr:
    return (pl.when(before.is_null() | after.is_null()).then(pl.lit("n/a"))
            .when((after - before).abs() <= NOISE * before.abs()).then(pl.lit("same"))
            .when(after < before).then(pl.lit("down"))
            .otherwise(pl.lit("up")))


def change_pct(before: pl.Expr, after: pl.Expr) -> pl.Expr:
    return pl.when(before != 0).then((after - before) / before.abs() * 100.0)


def moved(long: pl.DataFrame) -> pl.DataFrame:
    """``long`` (metric, before, after, ...) with ``change_pct`` and ``direction``."""
    b, a = pl.col("before"), pl.col("after")
    return long.with_columns(change_pct=change_pct(b, a), direction=direction(b, a))


def labelled(long: pl.DataFrame, labels: dict[str, tuple[str, str]]) -> pl.DataFrame:
    names = pl.DataFrame({"metric": list(labels), "label": [v[0] for v in labels.values()],
                          "unit": [v[1] for v in labels.values()]})
    return long.join(names, on="metric", how="left", maintain_order="left").with_columns(
        label=pl.coalesce("label", "metric"), unit=pl.col("unit").fill_null(""))


def _checked(values: pl.DataFrame, expect: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Each expectation against the values (``keys``, metric, before, after): ``met`` is null where
    the metric was not measured, else whether the direction, the target (where it is known: a target
    metric the profiles lack leaves the direction alone to judge) and the before value's range hold."""
    targets = values.select(*keys, target_metric="metric", target_after="after")
    joined = expect.join(values, on="metric", how="inner").join(targets, on=[*keys, "target_metric"], how="left",
                                                                 maintain_order="left")
    b, a = pl.col("before"), pl.col("after")
    target = pl.coalesce("target_value", "target_after")
    direction_ok = (pl.when(pl.col("direction") == "down").then(a < b * (1 - NOISE))
                    .when(pl.col("direction") == "up").then(a > b * (1 + NOISE))
                    .otherwise((a - b).abs() <= SAME * b.abs()))
    target_ok = (pl.when(target.is_null()).then(pl.lit(True))
                 .when(target == 0).then(a.abs() <= pl.col("within") * b.abs())
                 .otherwise((a - target).abs() <= pl.col("within") * target.abs()))
    range_ok = ((pl.col("before_at_least").is_null() | (b >= pl.col("before_at_least")))
                & (pl.col("before_at_most").is_null() | (b <= pl.col("before_at_most"))))
    # a target read from a metric the profiles lack (the ideal sectors per request needs the access
    # width): the movement itself is measured, so its direction is judged, the target is not
    unmeasured = b.is_null() | a.is_null()
    return joined.with_columns(target=target, met=pl.when(unmeasured).then(None)
                               .otherwise(direction_ok & target_ok & range_ok))


def verdicts(checks: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """One verdict per fix (and ``keys``): "matches" (every required movement measured and as
    expected, the optional ones as expected where measured), "matches where measured", "partly",
    "does not match" (none of the fix's own movements, whatever the time did: a faster run for
    another reason is not this fix), "not measured"."""
    own = ~pl.col("metric").is_in(list(OUTCOMES))
    required = ~pl.col("optional").fill_null(False)
    return checks.group_by(*keys, "fix").agg(
        expected=required.sum(), measured=pl.col("met").is_not_null().sum(),
        required_measured=(pl.col("met").is_not_null() & required).sum(), met=pl.col("met").fill_null(False).sum(),
        own_measured=(pl.col("met").is_not_null() & own).sum(), own_met=(pl.col("met").fill_null(False) & own).sum(),
    ).with_columns(verdict=pl.when(pl.col("own_measured") == 0).then(pl.lit("not measured"))
                   .when(pl.col("own_met") == 0).then(pl.lit("does not match"))
                   .when((pl.col("met") == pl.col("measured")) & (pl.col("required_measured") == pl.col("expected")))
                   .then(pl.lit("matches"))
                   .when(pl.col("met") == pl.col("measured")).then(pl.lit("matches where measured"))
                   .otherwise(pl.lit("partly")))


def judge(values: pl.DataFrame, expect: pl.DataFrame, keys: list[str], key_rows: pl.DataFrame) -> pl.DataFrame:
    """Every expectation judged on the values, with a row (met null) for each expectation whose
    metric the profiles lack."""
    checked = _checked(values, expect, keys)
    grid = key_rows.join(expect, how="cross") if keys else expect
    return grid.join(checked.select(*keys, "fix", "order", "before", "after", "target", "met"),
                     on=[*keys, "fix", "order"], how="left", maintain_order="left").sort(*keys, "fix", "order")


def verdict_of(table: pl.DataFrame, fx: Fix | None) -> str | None:
    """The named fix's verdict (``table`` holds one row per fix, where it is judged)."""
    if fx is None:
        return None
    rows = table.filter(pl.col("fix") == fx.id)
    return rows["verdict"][0] if rows.height else "not measured"


# --------------------------------------------------------------------------------------------
# Credit: which of the matching fixes the evidence supports first
# --------------------------------------------------------------------------------------------


def signature(checks: pl.DataFrame) -> pl.DataFrame:
    """Per fix, the largest of its own movements (up or down, outcomes left out) as a log factor:
    ``ln(larger / smaller)``, with a count that reaches or leaves 0 capped at ``SIGNATURE_CAP``."""
    b, a = pl.col("before").abs(), pl.col("after").abs()
    hi, lo = pl.max_horizontal(a, b), pl.min_horizontal(a, b)
    tiny = hi * math.exp(-SIGNATURE_CAP)
    factor = ((hi + tiny) / (lo + tiny)).log().clip(upper_bound=SIGNATURE_CAP)
    own = checks.filter(pl.col("direction").is_in(["up", "down"]) & ~pl.col("metric").is_in(list(OUTCOMES))
                        & pl.col("met").fill_null(False))
    return own.group_by("fix").agg(signature=pl.when(hi > 0).then(factor).otherwise(0.0).max())


def explained_share(fx: Fix, values: dict[str, tuple[float | None, float | None]], saved: float | None) -> float | None:
    """The share of the time saved that the fix's own time component (``saves``) accounts for,
    between 0 and 1; None where the fix names none or the time did not fall."""
    if fx.saves is None or not saved or saved <= 0 or fx.saves not in values:
        return None
    before, after = values[fx.saves]
    if before is None or after is None:
        return None
    gained = (before - after) if fx.saves_direction == "down" else (after - before)
    return min(max(gained / saved, 0.0), 1.0)


def credit(table: pl.DataFrame, checks: pl.DataFrame, candidates: list[Fix], *,
           values: dict[str, tuple[float | None, float | None]] | None = None,
           saved: float | None = None) -> tuple[str, ...]:
    """The fixes whose movements all happened (verdict "matches"), the best supported first (see the
    module doc)."""
    matching = set(table.filter(pl.col("verdict") == "matches")["fix"].to_list())
    if not matching:
        return ()
    strength = dict(signature(checks.filter(pl.col("fix").is_in(list(matching)))).iter_rows())
    scored = []
    for f in candidates:
        if f.id not in matching:
            continue
        share = explained_share(f, values or {}, saved)
        step = 0.0 if share is None else math.floor(share / SHARE_STEP + 1e-9) * SHARE_STEP
        scored.append((-step, -(strength.get(f.id) or 0.0), -len(f.expect), f.id))
    return tuple(s[-1] for s in sorted(scored))


def in_credit_order(checks: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """``checks`` of the fixes in ``order`` (the named fix, or the credited ones best first), in that
    order, each fix's expectations in the table's order."""
    rank = pl.DataFrame({"fix": order, "_rank": list(range(len(order)))}, schema={"fix": pl.Utf8, "_rank": pl.Int64})
    return checks.join(rank, on="fix", how="inner").sort("_rank", "order").drop("_rank")
