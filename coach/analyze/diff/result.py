"""What a diff returns (``Diff``), and the pieces the kernel and timeline diffs share: whether the
two runs compare, and the scenario's own evidence checked on both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import polars as pl

from coach.analyze.diff.fixes import Fix, verdicts
from coach.analyze.diff.metrics import SAME
from coach.model import Profile
from coach.recordings import measure
from coach.scenarios import Scenario

#: Aspects that make two profiles not comparable at all: a time on one GPU says nothing about a fix
#: measured on another (other SMs, clocks, memory, compiler targets; another vendor's hardware), so a
#: diff across them credits no fix. Other differences (clocks, tool versions) are warnings.
BLOCKING_ASPECTS = ("GPU", "compute capability", "SM count")


@dataclass
class Diff:
    """The comparison of two profiles (see ``coach.analyze.diff``). Frames:

    ``pairs``          kernels: one row per matched launch pair; timelines: empty
    ``movements``      metric, label, unit, before, after, change_pct, direction (per ``pair`` for kernels)
    ``checks``         the named fix's (or the credited fix's, or the scenario's) expected movements, with ``met``
    ``comparability``  aspect, before, after, same, note
    ``ncu``            Nsight Compute's estimated speed-ups in the before report, beside the realised saving
    ``unmatched``      launches (kernels) found on one side only
    ``kernels``, ``nvtx``, ``memcpy``  timelines: per kernel name, NVTX range and copy kind
    ``values``         metric -> (before, after) where each fix is judged (the headline pair, or the timeline)
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
    values: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def _repr_html_(self) -> str:  # Jupyter (coach.api)
        from coach.api import diff_html

        return diff_html(self)

    @property
    def fix_verdict(self) -> str | None:
        """The named fix's verdict: kernel fixes on the pair that saved the most time, fixes that merge
        kernels on the whole profile, timeline fixes on the timeline; "not comparable" across GPUs."""
        return self.headline.get("fix_verdict")

    @property
    def not_comparable(self) -> list[dict[str, Any]]:
        """The blocking aspects (``BLOCKING_ASPECTS``) in which the two profiles differ."""
        if self.comparability.is_empty():
            return []
        return self.comparability.filter(pl.col("aspect").is_in(list(BLOCKING_ASPECTS))
                                         & (pl.col("same") == False)).to_dicts()  # noqa: E712 - a Polars expression

    @property
    def credited(self) -> str | None:
        """The fix the movement is credited to: the named one, else the best supported match."""
        if self.not_comparable:
            return None
        if self.fix is not None:
            return self.fix.id
        return self.suggested[0] if self.suggested else None

    def headline_checks(self) -> pl.DataFrame:
        """The expected movements of the named (or credited) fix where it is judged, and the scenario's
        evidence."""
        return self.checks

    def to_dict(self) -> dict[str, Any]:
        from coach.analyze.diff.verdict import verdict  # noqa: PLC0415 - the words depend on this class

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
            "comparable": not self.not_comparable,
            "headline": self.headline,
            "credited_fix": self.credited,
            "suggested_fixes": list(self.suggested),
            **{k: v.to_dicts() for k, v in frames.items() if v.width},
        }


def blocked(comparability: pl.DataFrame) -> bool:
    """Whether the profiles differ in a blocking aspect (``BLOCKING_ASPECTS``)."""
    return bool(comparability.filter(pl.col("aspect").is_in(list(BLOCKING_ASPECTS))
                                     & (pl.col("same") == False)).height)  # noqa: E712 - a Polars expression


def aspect(name: str, before: Any, after: Any, *, tolerance: float | None = None, note: str = "",
           fmt: Callable[[Any], str] = str) -> dict[str, Any]:
    if before is None or after is None:
        same = None
    elif tolerance is not None:
        same = abs(float(after) - float(before)) <= tolerance * abs(float(before))
    else:
        same = before == after
    return {"aspect": name, "before": None if before is None else fmt(before),
            "after": None if after is None else fmt(after), "same": same, "note": note}


def aspect_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"aspect": pl.Utf8, "before": pl.Utf8, "after": pl.Utf8, "same": pl.Boolean,
                                      "note": pl.Utf8})


def device_aspects(before: Profile, after: Profile) -> list[dict[str, Any]]:
    """The GPU each profile ran on: its name, compute capability and SM count (the devices that did
    work, where a timeline lists several)."""
    def values(p: Profile, col: str) -> str | None:
        devices = p.devices
        if devices.is_empty() or col not in devices.columns:
            return None
        found = sorted({str(v) for v in devices[col].drop_nulls().to_list()})
        return ", ".join(found) or None

    def cc(p: Profile) -> str | None:
        d = p.devices
        if d.is_empty() or "cc_major" not in d.columns:
            return None
        found = sorted({f"{a}.{b if b is not None else 0}" for a, b in zip(d["cc_major"], d["cc_minor"]) if a is not None})
        return ", ".join(found) or None

    return [
        aspect("GPU", values(before, "name"), values(after, "name"),
               note="a time on one GPU says nothing about a fix measured on another"),
        aspect("compute capability", cc(before), cc(after)),
        aspect("SM count", values(before, "sm_count"), values(after, "sm_count")),
    ]


def tool(p: Profile) -> str:
    version = p.source.tool_version or (p.source.meta or {}).get("reader")
    return f"{p.source.tool} {version}" if version else p.source.tool


def scenario_checks(scenario: Scenario, before: Profile, after: Profile, key: str | None = None,
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


def scenario_verdict(checks: pl.DataFrame) -> str:
    rows = checks.filter(pl.col("why") == "scenario evidence")
    if not rows.height:
        return "not measured"
    return verdicts(rows.with_columns(fix=pl.lit("scenario"), optional=pl.lit(False)), [])["verdict"][0]


def value_map(values: pl.DataFrame) -> dict[str, tuple[float | None, float | None]]:
    """metric -> (before, after) from a long frame of values (one row per metric)."""
    return {r["metric"]: (r["before"], r["after"]) for r in values.select("metric", "before", "after").iter_rows(named=True)}
