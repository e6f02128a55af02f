"""Rules meeting missing metrics, on every Nsight Compute report kept in tests/data (collected with the
basic, metrics-only, speed-of-light-chart, tables and full section sets, and the scenario reports):
each finding decides from metrics the report has, or is a note that says what it needs; no number in a
finding stands for a metric the report lacks (no 0, nan or None where the value is missing)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.analyze.kernel_metrics import with_derived
from coach.ingest import load

DATA = Path(__file__).resolve().parent / "data"
REPORTS = sorted(DATA.glob("**/*.ncu-rep"))
SHOWN_MISSING = re.compile(r"\b(nan|NaN|None|inf)\b")


def test_the_reports_span_the_section_sets():
    names = {p.name for p in REPORTS}
    assert {"memory_patterns.basic.ncu-rep", "memory_patterns.metrics.ncu-rep", "memory_patterns.sol_chart.ncu-rep",
            "memory_patterns.tables.ncu-rep", "healthy_gemm.full.ncu-rep"} <= names


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_every_finding_decides_from_what_the_report_has_or_says_what_it_needs(path):
    profile = load(path)
    wide = with_derived(profile.launches, profile.devices, None)
    findings = diagnose(profile)
    assert findings
    for f in findings:
        text = f"{f.title} {f.message}"
        assert not SHOWN_MISSING.search(text), (f.rule_id, f.scope, text)
        if f.estimated_gain_pct is not None:
            assert 0 <= f.estimated_gain_pct <= 100 and not math.isnan(f.estimated_gain_pct), (f.rule_id, f.scope)
        if is_not_checked(f):
            assert "not in this report" in f.message or "needs " in f.message or "could not" in f.message.lower(), f.message
            continue
        row = wide.filter(pl.col("launch_id") == f.launch_id) if f.launch_id is not None else None
        for e in f.evidence:
            assert e.value is not None and not (isinstance(e.value, float) and math.isnan(e.value)), (f.rule_id, e)
            if row is not None and row.height and e.metric in row.columns and row[e.metric][0] is None:
                # a value the report lacks under this name: only where the rule counted it from another
                # metric, and says which (the L2 sectors for coalescing)
                assert e.source.startswith("ncu, at "), f"{path.name} {f.scope} {f.rule_id}: {e.metric} = {e.value} is missing"


def test_a_metric_removed_from_a_report_turns_its_findings_into_notes(copy_to_tmp):
    """The tables set's uncoalesced finding on the strided copy, with its L1 and L2 sector counts removed
    from the launches (as a collection without them would have it): a note naming what it needs, not a
    finding with a 0 in it."""
    import dataclasses

    profile = load(DATA / "wild_ncu" / "memory_patterns.tables.ncu-rep")
    sectors = [c for c in profile.launches.columns if "sectors" in c and "global" in c or c.startswith("l1_to_l2")]
    assert sectors
    stripped = dataclasses.replace(profile, launches=profile.launches.with_columns(
        pl.lit(None, pl.Float64).alias(c) for c in sectors))
    got = [f for f in diagnose(stripped) if f.scope == "copy_strided"]
    assert "uncoalesced-global-access" not in {f.rule_id for f in got}
    [note] = [f for f in got if f.rule_id == "not-checked:uncoalesced-global-access"]
    assert "needs" in note.message
