"""Every kernel rule against every real Nsight Compute report here, with its inputs taken away one at a
time (labelled synthetic variants, tests/ncu_variants.py): what a report of another section set, a
--metrics list or an older version would lack.

For each canonical column a rule reads (its declaration, and the measured columns behind the derived
ones it reads), the variant drops every Nsight Compute metric the column can be read from; for the
reports of tests/data, also each such metric alone, so that the mapping's fallbacks are taken. Then:

* a rule that found something on the full report still finds it, from a fallback, or says it could
  not check and what it needs: never silent;
* no confident finding appears that the full report does not support, except from the subtrees
  the root leaves out, where the variant took away what the root reads (the root then names no
  bound, and every subtree is looked into, as documented in kernel_rules/__init__.py); such a
  finding never leads;
* each launch's top finding is one the full report also makes for that launch.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.analyze.kernel_metrics import inputs_of
from coach.analyze.kernel_rules import PROFILE_RULES, ROOT, RULES, TREE
from coach.ingest import load
from coach.ingest.ncu_common import DEVICE_ATTRS, LAUNCH_CONFIG, PEAK_DRAM, mappings
from ncu_variants import without_metrics

ROOT_DIR = Path(__file__).resolve().parent.parent
TEST_REPORTS = sorted((ROOT_DIR / "tests" / "data").glob("**/*.ncu-rep"))
TRACE_REPORTS = sorted((ROOT_DIR / "traces").glob("**/*.ncu-rep*"))
ALL_RULES = {**RULES, **PROFILE_RULES}
ROOT_ID = RULES[ROOT].SPEC.id
#: rule id -> the subtree it sits in (the root and the profile rules in none)
SUBTREE = {RULES[name].SPEC.id: sub for sub, names in TREE.items() for name in names}


def _declared(module) -> set[str]:
    spec = module.SPEC
    return {*spec.requires, *spec.optional, *(c for group in spec.requires_one_of for c in group)}


@lru_cache(maxsize=1)
def rule_inputs() -> dict[str, set[str]]:
    """rule id -> the measured launch columns it reads, derived columns traced to theirs."""
    return {m.SPEC.id: set().union(*(inputs_of(c) for c in _declared(m))) for m in ALL_RULES.values()}


@lru_cache(maxsize=1)
def column_metrics() -> dict[str, tuple[tuple[str, ...], ...]]:
    """canonical column -> its alternatives' Nsight Compute metrics, in the mapping's order."""
    out = {m.column: tuple(tuple(x for t in alt for x in t.metrics) for alt in m.alternatives) for m in mappings()}
    out.update({col: ((metric,),) for col, metric in LAUNCH_CONFIG.items()})
    out.update({f"device_{col}": ((metric,),) for col, (metric, _) in DEVICE_ATTRS.items()})
    out["device_memory_bandwidth_bytes_per_s"] = (PEAK_DRAM,)
    return out


def removals(profile, one_metric_at_a_time: bool) -> list[tuple[str, frozenset[str], set[str]]]:
    """(label, metrics to remove, rules that read them) for every input of every rule the report has."""
    present = set(profile.metrics["metric"].unique())
    by_metrics: dict[frozenset[str], set[str]] = {}
    for rule, columns in rule_inputs().items():
        for col in columns:
            alternatives = column_metrics().get(col, ())
            every = frozenset(x for alt in alternatives for x in alt) & present
            if every:
                by_metrics.setdefault(every, set()).add(rule)
            if one_metric_at_a_time:
                for x in every:
                    by_metrics.setdefault(frozenset({x}), set()).add(rule)
    return [("+".join(sorted(ms)), ms, rules) for ms, rules in sorted(by_metrics.items(), key=lambda kv: sorted(kv[0]))]


def _rule(f) -> str:
    return f.rule_id.removeprefix("not-checked:")


def reading(findings):
    """(confident (launch, rule) -> findings, noted (launch, rule) set, launch -> top confident rule)."""
    confident, noted, top = {}, set(), {}
    for f in findings:
        key = (f.launch_id, _rule(f))
        if is_not_checked(f):
            noted.add(key)
            continue
        confident.setdefault(key, []).append(f)
        if f.launch_id is not None:
            top.setdefault(f.launch_id, f.rule_id)
    return confident, noted, top


def check(path: Path, one_metric_at_a_time: bool) -> list[str]:
    full = load(path)
    base = reading(diagnose(without_metrics(full, label="synthetic-variant-unchanged")))
    confident0, _, top0 = base
    problems = []
    for label, names, rules in removals(full, one_metric_at_a_time):
        variant = without_metrics(full, names, label=f"synthetic-variant-without-{label[:60]}")
        confident, noted, top = reading(diagnose(variant))
        rootless = {lid for (lid, rule) in noted if rule == ROOT_ID} - {lid for (lid, rule) in confident if rule == ROOT_ID}
        for key in confident0:
            if key[1] in rules and key not in confident and key not in noted:
                problems.append(f"without {label}: {key[1]} on launch {key[0]} fell silent")
        for key in confident.keys() - confident0.keys():
            lid, rule = key
            if lid in rootless and SUBTREE.get(rule) in TREE and SUBTREE[rule] != "launch" and top.get(lid) != rule:
                continue  # a subtree the root would have left out, looked into without the root; not leading
            problems.append(f"without {label}: new confident {rule} on launch {lid}: {confident[key][0].title}")
        for lid, rule in top.items():
            if (lid, rule) not in confident0:
                problems.append(f"without {label}: launch {lid} led by {rule}, which the full report does not find")
    return problems


@pytest.mark.parametrize("path", TEST_REPORTS, ids=lambda p: p.name)
def test_each_rule_input_removed_from_a_test_report(path):
    assert check(path, one_metric_at_a_time=True) == []


@pytest.mark.slow
@pytest.mark.parametrize("path", TRACE_REPORTS, ids=lambda p: str(p.parent.relative_to(ROOT_DIR / "traces")))
def test_each_rule_input_removed_from_a_recorded_scenario(path):
    assert check(path, one_metric_at_a_time=False) == []


def test_the_reports_are_there_and_the_removals_reach_every_rule():
    assert len(TEST_REPORTS) >= 9 and len(TRACE_REPORTS) >= 24
    reached = set().union(*(rules for _, _, rules in removals(load(TEST_REPORTS[0]), False)))
    assert reached == set(rule_inputs()), set(rule_inputs()) - reached


# the columns a rule's code reads: launch["x"], launch.get("x"), and f-strings over the two ops
_READS = re.compile(r'launch(?:\.get\(|\[)\s*(f?)"([a-z0-9_{}]+)"')


@pytest.mark.parametrize("name", sorted(ALL_RULES))
def test_every_column_a_rule_reads_is_declared(name):
    """The removals above follow the declarations: a column read but not declared would never be taken
    away, and its absence never tried."""
    module = ALL_RULES[name]
    source = Path(module.__file__).read_text()
    read = set()
    for is_f, col in _READS.findall(source):
        read |= {col.replace("{op}", op) for op in ("load", "store")} if is_f else {col}
    declared = set().union(*(inputs_of(c) for c in _declared(module)))
    undeclared = {c for c in read if not inputs_of(c) <= declared}
    assert not undeclared, f"{name} reads {sorted(undeclared)} without declaring them (or what they derive from)"


def test_a_variant_says_it_is_synthetic():
    full = load(TEST_REPORTS[0])
    assert without_metrics(full, ["gpu__time_duration.sum"]).source.path.startswith("synthetic-variant")
