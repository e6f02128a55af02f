"""What the scenario walkthrough shows, as one plain value: ``Walkthrough``.

The stepper page renders a ``Walkthrough`` and nothing else, so it does not care where one comes
from: ``from_scenario`` builds it from a scenario folder (``coach.scenarios``) and its recorded
traces, and ``kernel_pair`` from two launches of Nsight Compute reports (a slow kernel and its
fix). Numbers are read from the profiles; the words come from the scenario's files.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import polars as pl

from coach.app.variant_code import CodeChange, changes as code_changes, cuda_function
from coach.model import KernelProfile, Timeline

STEPS = ("Symptom", "Your first check", "Evidence", "Bottleneck", "Fix", "Result")
#: The step at which the user must commit an answer before seeing more.
ANSWER_STEP = 1


@dataclass(frozen=True)
class EvidenceRow:
    """One measured number, slow and fixed; ``key`` marks the numbers that prove the bottleneck."""

    label: str
    metric: str  # canonical column
    slow: float | None
    fixed: float | None
    unit: str = ""
    healthy: str = ""  # what a healthy value looks like, in words
    key: bool = False


@dataclass(frozen=True)
class Walkthrough:
    id: str
    title: str
    level: str
    symptom: str  # as the user first meets it, with the measured numbers filled in
    question: str
    bottleneck: str  # a coach.analyze.findings.Bottleneck value
    fix_summary: str
    fix_details: str = ""
    wrong_fix: str = ""
    hints: tuple[str, ...] = ()
    strong: tuple[str, ...] = ()  # what a strong answer names (the rubric)
    red_flags: tuple[str, ...] = ()
    evidence: tuple[EvidenceRow, ...] = ()
    slow_source: str = ""
    fixed_source: str = ""
    source_label: str = ""  # e.g. "copy kernel (CUDA C++)"
    #: Every difference between the variants' code (kernels, then programs); where empty, the one
    #: pair above is the change.
    changes: tuple[CodeChange, ...] = ()
    before: KernelProfile | None = field(default=None, compare=False)
    after: KernelProfile | None = field(default=None, compare=False)
    slow_timeline: Timeline | None = field(default=None, compare=False)
    fixed_timeline: Timeline | None = field(default=None, compare=False)
    slow_time_ns: float | None = None
    fixed_time_ns: float | None = None
    slow_rate: float | None = None  # the rate that fits the bound, in ``rate_unit``: see ``rate_label``
    fixed_rate: float | None = None
    rate_label: str = "DRAM rate"  # what the rate counts: "DRAM rate", "useful bytes/s", "FLOP/s", "sines/s"
    rate_unit: str = "B/s"  # for an SI prefix: "B/s", "FLOP/s", "sine/s"
    slow_floor_ns: float | None = None  # each variant's floor (coach.recordings.placeholder_values)
    fixed_floor_ns: float | None = None
    recorded: bool = True  # False for a scenario whose traces are not recorded yet
    scenario: bool = False  # one of the project's scenarios (so it has an exercise: `coach exercise ID`)
    #: Reads the profiles behind a walkthrough listed without them (the gallery lists scenarios
    #: without reading every trace); None when the walkthrough is already complete.
    loader: Callable[[], "Walkthrough"] | None = field(default=None, compare=False, repr=False)

    def complete(self) -> "Walkthrough":
        return self if self.loader is None else self.loader()

    @property
    def code(self) -> tuple[CodeChange, ...]:
        """The changes to show on the Fix step."""
        if self.changes:
            return self.changes
        if self.slow_source or self.fixed_source:
            return (CodeChange(self.source_label, self.slow_source, self.fixed_source),)
        return ()

    @property
    def speedup(self) -> float | None:
        if not self.slow_time_ns or not self.fixed_time_ns:
            return None
        return self.slow_time_ns / self.fixed_time_ns

    @property
    def one_line(self) -> str:
        """The symptom's first sentence, for the gallery."""
        text = " ".join(self.symptom.split())
        end = text.find(". ")
        return text if end < 0 else text[: end + 1]


def launch(profile: KernelProfile, launch_id: int) -> KernelProfile:
    """The part of a kernel profile that belongs to one launch (every table filtered to it)."""
    keep = pl.col("launch_id") == launch_id
    if profile.launches.filter(keep).is_empty():
        raise KeyError(f"no launch {launch_id} in {profile.source.path}")
    device = profile.launches.filter(keep)["device_id"].first()
    return KernelProfile(
        source=profile.source,
        launches=profile.launches.filter(keep),
        metrics=profile.metrics.filter(keep),
        rules=profile.rules.filter(keep),
        devices=profile.devices.filter(pl.col("device_id") == device) if device is not None else profile.devices,
        sass=profile.sass.filter(keep),
        stall_samples=profile.stall_samples.filter(keep),
        source_files=profile.source_files,
    )


def _value(profile: KernelProfile, column: str) -> float | None:
    v = profile.launches[column].first() if column in profile.launches.columns else None
    return None if v is None else float(v)


def _rate(profile: KernelProfile) -> float | None:
    """The launch's DRAM rate (``coach.analyze.quantities.dram_rate``: bytes over the duration, or
    Nsight Compute's throughput % of its peak); None when the report has neither."""
    from coach.analyze.kernel_metrics import with_derived  # noqa: PLC0415
    from coach.analyze.quantities import dram_rate  # noqa: PLC0415

    if profile.launches.is_empty():
        return None
    v = with_derived(profile.launches.head(1), profile.devices).select(dram_rate()).item()
    return None if v is None else float(v)


def evidence_rows(before: KernelProfile, after: KernelProfile, wanted: Sequence[dict[str, Any]]) -> tuple[EvidenceRow, ...]:
    """Evidence rows for the columns in ``wanted`` (dicts of EvidenceRow fields without the values)."""
    return tuple(EvidenceRow(slow=_value(before, w["metric"]), fixed=_value(after, w["metric"]), **w) for w in wanted)


def kernel_pair(*, before: KernelProfile, after: KernelProfile, evidence: Sequence[dict[str, Any]], **words: Any) -> Walkthrough:
    """A walkthrough of one slow launch and its fixed version (each a one-launch ``KernelProfile``).

    ``evidence`` names the columns to show; ``words`` are the Walkthrough's text fields.
    """
    return Walkthrough(
        **words,
        evidence=evidence_rows(before, after, evidence),
        before=before,
        after=after,
        slow_time_ns=_value(before, "duration_ns"),
        fixed_time_ns=_value(after, "duration_ns"),
        slow_rate=_rate(before),
        fixed_rate=_rate(after),
    )


@dataclass(frozen=True)
class DiffLine:
    text: str
    change: str  # "", "del" (only in the slow version) or "add" (only in the fixed one)


def side_by_side(slow: str, fixed: str) -> tuple[list[DiffLine], list[DiffLine]]:
    """The two sources aligned line by line, with the lines the fix changed marked."""
    a, b = slow.splitlines(), fixed.splitlines()
    left: list[DiffLine] = []
    right: list[DiffLine] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            left += [DiffLine(t, "") for t in a[i1:i2]]
            right += [DiffLine(t, "") for t in b[j1:j2]]
            continue
        old = [DiffLine(t, "del") for t in a[i1:i2]]
        new = [DiffLine(t, "add") for t in b[j1:j2]]
        pad = max(len(old), len(new))
        left += old + [DiffLine("", "")] * (pad - len(old))
        right += new + [DiffLine("", "")] * (pad - len(new))
    return left, right


# --------------------------------------------------------------------------------------------
# From a scenario folder and its recording
# --------------------------------------------------------------------------------------------

#: Shown for a number the text names that is not recorded yet.
UNKNOWN = "…"


def _healthy(direction: str) -> str:
    return {"down": "lower once fixed", "up": "higher once fixed", "same": "about the same once fixed"}.get(direction, "")


def from_scenario(scn: Any, traces: Path | None = None) -> Walkthrough:
    """The walkthrough of a ``coach.scenarios.Scenario``, listed without reading its profiles
    (``complete()`` reads them). Numbers the scenario's text names come from its recording under
    ``traces``; a scenario not recorded yet shows its words, with the numbers left out."""
    from coach import recordings, scenarios
    from coach.errors import CoachError

    try:
        rec = recordings.open_recording(scn, traces)
    except CoachError:
        rec = None
    values = rec.values() if rec is not None else recordings.placeholder_values(scn, {})
    known = {k: v for k, v in values.items() if v not in ("", None)}
    texts = scenarios.filled(scn, known, missing=UNKNOWN)  # every text with the recording's numbers in it
    results = rec.results if rec is not None else {}
    measured = {item["name"]: item for item in results.get("evidence") or []}
    evidence = tuple(
        EvidenceRow(label=e.label, metric=e.metric + (f" / {e.per}" if e.per else ""),
                    slow=(measured.get(e.name) or {}).get("slow"), fixed=(measured.get(e.name) or {}).get("fixed"),
                    unit=e.unit, healthy=_healthy(e.direction), key=e.direction != "same")
        for e in scn.evidence) if rec is not None else ()

    def ms_to_ns(key: str) -> float | None:
        v = values.get(key)
        return None if v is None else float(v) * 1e6

    def rate(key: str) -> float | None:
        v = values.get(key)
        return None if v is None else float(v)

    walk = Walkthrough(
        id=scn.id, title=scn.title, level=scn.level, symptom=texts.symptom.strip(), question=texts.question,
        bottleneck=str(scn.bottleneck), fix_summary=texts.fix.summary, fix_details=texts.fix.details,
        wrong_fix=texts.fix.wrong_fix, hints=texts.hints, strong=texts.rubric.strong,
        red_flags=texts.rubric.red_flags, evidence=evidence,
        slow_time_ns=ms_to_ns("slow_ms"), fixed_time_ns=ms_to_ns("fixed_ms"),
        slow_rate=rate("slow_rate"), fixed_rate=rate("fixed_rate"),
        rate_label=scn.model.rate_label, rate_unit=scn.model.rate_unit,
        slow_floor_ns=ms_to_ns("slow_floor_ms"), fixed_floor_ns=ms_to_ns("fixed_floor_ms"),
        recorded=rec is not None, scenario=True,
    )
    if rec is None:
        return walk

    def load() -> Walkthrough:
        def timeline(variant: str) -> Any:
            return rec.profile(variant, "nsys") or rec.profile(variant, "kineto")

        before, after = rec.profile("slow", "ncu"), rec.profile("fixed", "ncu")

        def kernel(profile: Any) -> str | None:
            return None if profile is None or profile.launches.is_empty() else profile.launches["kernel_name"][0]

        programs = {v: (p.script, tuple(p.args)) for v, p in scn.programs.items()}
        found = tuple(code_changes(scn.folder, programs, kernel(before), kernel(after)))
        sources = ({"slow_source": found[0].slow, "fixed_source": found[0].fixed, "source_label": found[0].label}
                   if found else {})
        return replace(walk, before=before, after=after, slow_timeline=timeline("slow"),
                       fixed_timeline=timeline("fixed"), loader=None, changes=found, **sources)

    return replace(walk, loader=load)


def _cuda_kernel(text: str, name: str) -> str | None:
    return cuda_function(text, name)


def _python_function(lines: list[str], start: int) -> str:
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "\n".join(line[indent:] for line in lines[start:end])


_VARIANT_DEF = re.compile(r"^[ \t]*def (\w*?)slow(\w*)\(", re.M)


def variant_sources(folder: Path, slow_kernel: str | None, fixed_kernel: str | None) -> tuple[str, str, str] | None:
    """The slow and fixed code of a scenario, to show side by side, and where it is.

    Kernel scenarios: the two ``__global__`` functions the profiles name, from the folder's ``.cu``
    files. Others: a Python function named for the slow variant (``epoch_slow``) and its twin named
    for the fixed one (``epoch_fixed``). None when neither is found.
    """
    if slow_kernel and fixed_kernel and slow_kernel != fixed_kernel:
        for cu in sorted(folder.glob("*.cu")):
            text = cu.read_text(encoding="utf-8", errors="replace")
            slow, fixed = _cuda_kernel(text, slow_kernel), _cuda_kernel(text, fixed_kernel)
            if slow and fixed:
                return slow, fixed, f"{cu.name}: {slow_kernel} and {fixed_kernel}"
    for py in sorted(folder.glob("*.py")):
        text = py.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        for m in _VARIANT_DEF.finditer(text):
            twin = re.search(rf"^[ \t]*def {m.group(1)}fixed{m.group(2)}\(", text, re.M)
            if twin:
                slow_at, fixed_at = text.count("\n", 0, m.start()), text.count("\n", 0, twin.start())
                slow_name, fixed_name = f"{m.group(1)}slow{m.group(2)}", f"{m.group(1)}fixed{m.group(2)}"
                return (_python_function(lines, slow_at), _python_function(lines, fixed_at),
                        f"{py.name}: {slow_name} and {fixed_name}")
    return None


def scenario_walkthroughs(scenarios_dir: Path | None = None, traces: Path | None = None,
                          problems: list[str] | None = None) -> list[Walkthrough]:
    """Every scenario under ``scenarios_dir`` (the project's by default), as walkthroughs.

    A scenario that cannot be read is left out and its one-line message added to ``problems``
    (raised when no list is given), so one broken folder does not hide the others.
    """
    from coach import scenarios
    from coach.errors import CoachError

    walks = []
    for folder in scenarios.discover(scenarios_dir):
        try:
            walks.append(from_scenario(scenarios.load(folder), traces))
        except CoachError as err:
            if problems is None:
                raise
            problems.append(str(err))
    return walks
