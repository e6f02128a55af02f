"""Findings grouped by kernel and rule, a page at a time: a report of a thousand launches of one
kernel reads as one card per problem, not a thousand.

A profile that launches a kernel many times gives the same finding once per launch, each with its
own numbers. ``group`` puts the findings of one rule on one kernel together; a group is shown by
the launch where the fix would save the most (its card, with that launch's message and evidence)
and, beside each evidence number, the median and the range over every launch of the group, so a
launch that behaves differently from the others is visible. Groups are ranked by the time the fix
would save over all their launches. Notes on what could not be checked are grouped the same way.

Only renders: the findings are ``coach.analyze.diagnose``'s (through ``coach.app.analysis``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import polars as pl
from dash import html

from coach.analyze.findings import Finding
from coach.app import format as fmt
from coach.app.components import badge, evidence_value, finding_card, plain_table, quantity

#: Groups on one page of findings: enough to see every problem of a typical report at once, few
#: enough that a page stays a few hundred components whatever the report's size.
PAGE_SIZE = 8


@dataclass(frozen=True)
class Group:
    """The findings of one rule on one kernel (or one timeline scope), largest saving first."""

    rule_id: str
    kernel: str  # the kernel's name, or the finding's scope on a timeline
    findings: tuple[Finding, ...]
    evidence_stats: pl.DataFrame  # metric, median, min, max, launches (over the group)

    @property
    def top(self) -> Finding:
        return self.findings[0]

    @property
    def launch_ids(self) -> list[int]:
        return sorted({f.launch_id for f in self.findings if f.launch_id is not None})

    @property
    def saving_ns(self) -> float | None:
        known = [f.estimated_saving_ns for f in self.findings if f.estimated_saving_ns is not None]
        return sum(known) if known else None


def _kernel_of(f: Finding, names: dict[int, str]) -> str:
    if f.launch_id is not None and f.launch_id in names:
        return names[f.launch_id]
    return f.scope or ""


def group(found: Sequence[Finding], names: dict[int, str] | None = None) -> list[Group]:
    """``found`` grouped by (rule, kernel); ``names`` maps a launch id to its kernel's name.

    Within a group the findings keep ``diagnose``'s ranking (largest saving first); groups are
    ordered by their total saving, groups without an estimate after those with one, then as
    ``diagnose`` ranked their first finding.
    """
    names = names or {}
    keyed: dict[tuple[str, str], list[Finding]] = {}
    for f in found:
        keyed.setdefault((f.rule_id, _kernel_of(f, names)), []).append(f)
    rows = [(i, g, k, f.metric, f.value) for i, ((_, k), fs) in enumerate(keyed.items())
            for g in fs for f in g.evidence]
    stats = _evidence_stats(rows)
    groups = []
    for i, ((rule, kernel), fs) in enumerate(keyed.items()):
        ranked = sorted(fs, key=lambda f: (f.estimated_saving_ns is None, -(f.estimated_saving_ns or 0.0)))
        groups.append(Group(rule, kernel, tuple(ranked), stats.filter(pl.col("group") == i).drop("group")))
    order = {id(g): n for n, g in enumerate(groups)}
    return sorted(groups, key=lambda g: (g.saving_ns is None, -(g.saving_ns or 0.0), order[id(g)]))


def _evidence_stats(rows: list[tuple[int, Finding, str, str, float | None]]) -> pl.DataFrame:
    schema = {"group": pl.Int64, "metric": pl.Utf8, "value": pl.Float64}
    frame = pl.DataFrame([(i, m, v) for i, _, _, m, v in rows], schema=schema, orient="row")
    return (frame.drop_nulls("value")
            .group_by("group", "metric", maintain_order=True)
            .agg(pl.col("value").median().alias("median"), pl.col("value").min().alias("min"),
                 pl.col("value").max().alias("max"), pl.len().alias("launches")))


def id_ranges(ids: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 7, 9, 10]`` -> ``"0–3, 7, 9–10"``."""
    out: list[str] = []
    s = sorted(ids)
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else f"{s[i]}–{s[j]}")
        i = j + 1
    return ", ".join(out)


def group_card(g: Group, top: bool = False, extra: Any = None) -> html.Div:
    """One card for a group: the launch with the largest saving in full, the group's spread beside it."""
    if len(g.findings) == 1:
        item = finding_card(g.top, top=top)
        return item if extra is None else html.Div([item, extra], className="finding-source")
    n = len(g.findings)
    launches = g.launch_ids
    head = [badge(f"{n:,} launches" if launches else f"{n:,} times", "warn")]
    if g.saving_ns is not None:
        head.append(badge(f"saves up to {fmt.duration_ns(g.saving_ns)} over all of them", "good"))
    lead = html.P([
        html.Strong(g.kernel or "this profile"), f": the same finding in {n:,} launches"
        + (f" (IDs {id_ranges(launches)})" if launches else "") + ". Shown in full for launch "
        + (f"{g.top.launch_id}, " if g.top.launch_id is not None else "")
        + "where the fix saves the most; the table gives the median and the range over all of them."],
        className="small group-lead")
    spread = _spread_table(g)
    item = finding_card(g.top, top=top, evidence=False, before=[html.Div(head, className="badges"), lead],
                        after=[spread] if spread is not None else [])
    return item if extra is None else html.Div([item, extra], className="finding-source")


def _spread_table(g: Group) -> html.Table | None:
    if not g.top.evidence:
        return None
    stats = {r["metric"]: r for r in g.evidence_stats.iter_rows(named=True)}
    rows = []
    for e in g.top.evidence:
        s = stats.get(e.metric)
        rows.append([html.Code(e.metric), evidence_value(e),
                     quantity(s["median"], e.unit) if s else fmt.MISSING,
                     (("the same in all" if s["min"] == s["max"] else
                       f"{quantity(s['min'], e.unit)} – {quantity(s['max'], e.unit)}") if s else fmt.MISSING),
                     e.healthy or fmt.MISSING])
    launch = f"launch {g.top.launch_id}" if g.top.launch_id is not None else "shown"
    return plain_table(["metric", launch, f"median of {len(g.findings):,}", "range", "healthy"], rows,
                       numeric=[False, True, True, True, False])


def page_of(groups: Sequence[Group], page: int) -> tuple[list[Group], int, int]:
    """The groups on ``page`` (0-based, clamped), the page shown and the number of pages."""
    pages = max(1, -(-len(groups) // PAGE_SIZE))
    page = min(max(int(page or 0), 0), pages - 1)
    return list(groups[page * PAGE_SIZE:(page + 1) * PAGE_SIZE]), page, pages


def notes_list(notes: Sequence[Finding], names: dict[int, str] | None = None) -> html.Details:
    """The checks that could not run, one line per check and kernel (not per launch)."""
    groups = group(notes, names)
    items = []
    for g in groups:
        where = f" ({len(g.findings):,} launches of {g.kernel})" if len(g.findings) > 1 and g.kernel else ""
        items.append(html.Li(g.top.message + where))
    return html.Details([html.Summary(f"{len(groups)} checks could not run on this report"), html.Ul(items)],
                        className="more")


def render_groups(groups: Sequence[Group], source: Callable[[Group], Any] | None = None,
                  first: bool = True) -> list[Any]:
    """The cards of ``groups``; ``source(group)`` gives the panel drawn beside one, or None."""
    out = []
    for i, g in enumerate(groups):
        extra = source(g) if source is not None else None
        out.append(group_card(g, top=first and i == 0, extra=extra))
    return out


def rules_summary(rules: pl.DataFrame, launches: pl.DataFrame) -> html.Table:
    """Nsight Compute's own rule results, one row per rule and kernel: how many launches raised it,
    the median and largest estimated speed-up, and the message of the launch with the largest (a
    text report's paragraphs whose rule is not recognised form one row per kernel)."""
    named = rules.join(launches.select("launch_id", "kernel_name"), on="launch_id", how="left")
    grouped = (named.sort("speedup_pct", descending=True, nulls_last=True)
               .group_by("kernel_name", "rule_id", maintain_order=True)
               .agg(pl.len().alias("n"), pl.col("launch_id").first(), pl.col("title").first(),
                    pl.col("speedup_pct").median().alias("median"), pl.col("speedup_pct").max().alias("max"),
                    pl.col("message").first()))
    body = [[k or fmt.MISSING, rid or "not recognised", title or fmt.MISSING, f"{n:,}", fmt.pct(med, 2), fmt.pct(mx, 2), lid, msg]
            for k, rid, n, lid, title, med, mx, msg in grouped.select(
                "kernel_name", "rule_id", "n", "launch_id", "title", "median", "max", "message").iter_rows()]
    return plain_table(["kernel", "rule", "title", "launches", "median speed-up", "largest", "in launch", "message"],
                       body, numeric=[False, False, False, True, True, True, True, False])


def summary_line(groups: Sequence[Group], findings: int) -> str:
    kernels = {g.kernel for g in groups if g.kernel}
    n = len(kernels)
    return (f"{findings:,} findings in {len(groups):,} groups"
            + (f" on {n:,} kernel{'' if n == 1 else 's'}" if n else "") + ", the largest total saving first.")


def launches_named(launches: pl.DataFrame) -> dict[int, str]:
    """Launch id -> kernel name, for grouping."""
    if "launch_id" not in launches.columns or launches.is_empty():
        return {}
    return dict(launches.select("launch_id", pl.col("kernel_name").fill_null("")).iter_rows())
