"""coach from Python, for notebooks and scripts: the same readers, summaries and rules as the
command line, with every table a Polars frame.

    import coach

    profile = coach.load("run.sqlite")                 # a Timeline, KernelProfile or SanitizerReport
    profile.kernels                                    # the canonical tables (coach.model), as Polars
    coach.summary(profile)["top_kernels"]              # the frames `coach load` prints
    findings = coach.diagnose(profile)                 # ranked findings; findings.frame is one row each
    d = coach.diff("slow.ncu-rep", "fixed.ncu-rep", fix="coalesce")
    d.movements                                        # what moved, before and after

In Jupyter a profile, a finding, the findings and a diff display as HTML tables
(``_repr_html_``); elsewhere they print as their dataclasses do.

``load`` takes ``kernel=``, ``nvtx=``, ``start_ms=``, ``end_ms=`` as ``coach load`` takes
``--kernel``, ``--nvtx``, ``--start``, ``--end`` (``coach.analyze.select``). Errors are
``coach.errors.CoachError``: one line naming the file and what is wrong.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import polars as pl

from coach.analyze.findings import Finding, saving_is_upper_bound
from coach.model import Profile

__all__ = ["Findings", "diagnose", "diff", "load", "summary"]


def load(path: str | Path, *, kernel: str | None = None, nvtx: str | None = None,
         start_ms: float | None = None, end_ms: float | None = None) -> Profile:
    """Read a profile (.ncu-rep, ncu CSV, nsys .sqlite/.nsys-rep, PyTorch JSON, compute-sanitizer
    output, a saved profile folder), or the part of it selected."""
    from coach.analyze.select import select
    from coach.ingest import load as read

    return select(read(path), kernel=kernel, nvtx=nvtx, start_ms=start_ms, end_ms=end_ms)


def _profile(p: Profile | str | Path) -> Profile:
    return load(p) if isinstance(p, (str, Path)) else p


def summary(profile: Profile | str | Path, top: int = 10) -> dict[str, Any]:
    """What ``coach load`` prints, as data: for a timeline ``top_kernels``, ``top_api``, ``memcpy``,
    ``nvtx``, ``devices`` (frames) and ``window_ns``; for a kernel profile ``kernels`` and ``device``.
    Kernel frames carry ``display_name``: short names told apart by their template arguments."""
    from coach.cli.load import summarize

    return summarize(_profile(profile), top)["summary"]


class Findings(list):
    """The ranked findings of a profile (a list of ``Finding``), with ``frame``: one row each."""

    @property
    def frame(self) -> pl.DataFrame:
        rows = [{"rule_id": f.rule_id, "category": str(f.category), "scope": f.scope, "launch_id": f.launch_id,
                 "title": f.title, "estimated_saving_ns": f.estimated_saving_ns,
                 "estimated_gain_pct": f.estimated_gain_pct, "message": f.message, "next_step": f.next_step}
                for f in self]
        schema = {"rule_id": pl.Utf8, "category": pl.Utf8, "scope": pl.Utf8, "launch_id": pl.Int64, "title": pl.Utf8,
                  "estimated_saving_ns": pl.Float64, "estimated_gain_pct": pl.Float64, "message": pl.Utf8,
                  "next_step": pl.Utf8}
        return pl.DataFrame(rows, schema=schema)

    def _repr_html_(self) -> str:
        return findings_html(self)


def diagnose(profile: Profile | str | Path, *, kernel: str | None = None) -> Findings:
    """Ranked findings (``coach diagnose``): bottleneck, evidence, estimated gain, next step; notes
    on what could not be checked last."""
    from coach.analyze.diagnose import diagnose as run

    p = _profile(profile)
    if kernel is not None:
        p = _select(p, kernel)
    return Findings(run(p))


def _select(p: Profile, kernel: str) -> Profile:
    from coach.analyze.select import select

    return select(p, kernel=kernel)


def diff(before: Profile | str | Path, after: Profile | str | Path, *, fix: str | None = None) -> Any:
    """Compare two profiles of one program (``coach diff``): a ``coach.analyze.diff.Diff`` whose
    frames (``movements``, ``pairs``, ``checks``, ``kernels``, ...) are Polars."""
    from coach.analyze.diff import diff as run

    return run(_profile(before), _profile(after), fix=fix)


# --------------------------------------------------------------------------------------------
# HTML for Jupyter
# --------------------------------------------------------------------------------------------


def _frame(df: pl.DataFrame) -> str:
    """A frame's HTML with whole kernel names (Polars cuts strings at 30 characters)."""
    with pl.Config(fmt_str_lengths=400, tbl_rows=50):
        return df._repr_html_()


def _h(text: Any) -> str:
    return html.escape(str(text))


def _ns(ns: float | None) -> str:
    from coach.cli.load import _time

    return _time(ns)


def profile_html(profile: Profile) -> str:
    """A profile as Jupyter shows it: what it is, then the table ``coach load`` leads with."""
    src = profile.source
    head = (f"<p><b>{_h(src.path)}</b> &mdash; {_h(profile.kind)}, {_h(src.tool)}"
            f"{' ' + _h(src.tool_version) if src.tool_version else ''}</p>")
    try:
        s = summary(profile)
    except Exception as err:  # noqa: BLE001 - the display must not raise; say why it is short
        return head + f"<p>no summary: {_h(err)}</p>"
    if profile.kind == "kernel-profile":
        k = s["kernels"].select("display_name", "launches", "total_ns", "time_pct", "dram_bytes_per_s",
                                "dram_pct_of_peak", "sm_throughput_pct", "achieved_occupancy_pct")
        return head + f"<p>{profile.launches.height} launches profiled</p>" + _frame(k)
    if profile.kind == "timeline":
        k = s["top_kernels"].select("display_name", "count", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns",
                                    "stddev_ns", "time_pct")
        window = f"<p>CUDA activity over {_h(_ns(s['window_ns']))}</p>" if s["window_ns"] else ""
        return head + window + _frame(k)
    return head + "".join(f"<p>{_h(name)}: {df.height} rows</p>" for name, df in profile.tables().items())


def finding_html(f: Finding) -> str:
    gain = f" &mdash; saves ~{_h(_ns(f.estimated_saving_ns))}" if f.estimated_saving_ns is not None else ""
    if gain and saving_is_upper_bound(f):
        gain = f" &mdash; at most ~{_h(_ns(f.estimated_saving_ns))} (an upper bound)"
    evidence = "".join(f"<li><code>{_h(e.metric)}</code> = {_h(f'{e.value:.4g}')} {_h(e.unit)}"
                       f"{' (healthy: ' + _h(e.healthy) + ')' if e.healthy else ''}</li>" for e in f.evidence)
    return (f"<div><b>[{_h(f.category)}] {_h(f.title)}</b>{gain}<br><small>{_h(f.scope)}</small>"
            f"<p>{_h(f.message)}</p>{'<ul>' + evidence + '</ul>' if evidence else ''}"
            f"<p><b>next:</b> {_h(f.next_step)}</p></div>")


def findings_html(findings: list[Finding]) -> str:
    if not findings:
        return "<p>no findings</p>"
    return (f"<p>{len(findings)} findings, ranked by the time their fix would save</p>"
            + "".join(finding_html(f) for f in findings))


def diff_html(d: Any) -> str:
    head = f"<p><b>{_h(d.before_path)}</b> &rarr; <b>{_h(d.after_path)}</b> ({_h(d.kind)})</p>"
    verdict = f"<p>fix {_h(d.fix.id)}: {_h(d.fix_verdict)}</p>" if d.fix is not None else ""
    moved = d.movements.select([c for c in ("label", "before", "after", "change_pct", "direction")
                                if c in d.movements.columns])
    return head + verdict + _frame(moved)
