"""``coach run scenario-NN``: work through a debugging scenario: the symptom, your first move, the
evidence and the diagnosis, the fix, and the numbers before and after.

Without a GPU (or without --live) every number comes from the recording in traces/, and the
output says where and when it was recorded. With --live on a GPU machine the scenario is recorded
afresh first (both variants, plain and profiled) and the same walk-through uses those numbers.
"""

from __future__ import annotations

import importlib.util
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from coach.cli.main import app
from coach.cli.output import ask, console, err_console, print_json
from coach.errors import CoachError

_ARROW = {"down": "down", "up": "up", "same": "about the same"}


@app.command("run")
def run_cmd(
    scenario_id: str = typer.Argument(..., metavar="SCENARIO", help="scenario-07, 07 or 7."),
    no_interactive: bool = typer.Option(False, "--no-interactive", help="Do not stop for your answer (for scripts and CI)."),
    live: bool = typer.Option(False, "--live", help="Record the scenario on this machine's GPU now, instead of reading traces/."),
    gpu: str | None = typer.Option(None, "--gpu", help="Which recorded GPU to show (a folder of traces/, e.g. h200)."),
    traces: Path | None = typer.Option(None, "--traces", help="A traces folder other than the project's."),
    as_json: bool = typer.Option(False, "--json", help="Write the walk-through's content as JSON on stdout (no prompt)."),
) -> None:
    """Work through a debugging scenario from its recorded traces (or live, with --live).

    A correctness scenario (21 on) shows what the buggy program printed, compute-sanitizer's report
    on it, the line the diagnosis names against the planted one, the fix, and every run after it.

    Examples:

        coach run scenario-01

        coach run 15 --no-interactive

        coach run 7 --json

    Off a terminal (a pipe, </dev/null) the answer is one line read from stdin, or none.
    """
    from coach import correctness, scenarios

    if importlib.util.find_spec("polars") is None:
        raise CoachError("coach run reads the recorded profiles with polars, which is not installed here "
                         "(pip install coach)")
    if correctness.is_correctness(scenario_id):  # a planted bug, recorded under compute-sanitizer
        from coach.cli.run_correctness import run as run_correctness

        if as_json:
            raise CoachError(f"{scenario_id}: --json is for the performance scenarios (01-20); "
                             "a correctness scenario's recording is its results.json under traces/")
        run_correctness(scenario_id, live=live, interactive=not no_interactive, gpu=gpu, traces=traces)
        return
    scenario = scenarios.find(scenario_id)
    with ExitStack() as stack:
        recording = _record_live(scenario, stack) if live else _recorded(scenario, traces, gpu)
        if as_json:
            print_json(as_document(scenario, recording, live=live))
            return
        _walk_through(scenario, recording, live=live, interactive=not no_interactive)


def as_document(scenario: Any, recording: Any, *, live: bool) -> dict[str, Any]:
    """What the walk-through shows, as data: the same rendered texts, evidence, diagnosis and the
    before/after numbers (``coach.recordings.placeholder_values``, the numbers every page shows)."""
    from coach.cli.profile import analyse

    values = recording.values()
    texts = recording.filled()  # every text with the recording's numbers in it
    results = recording.results
    tool = {"ncu": "ncu", "nsys": "nsys", "kineto": "kineto"}[scenario.tool]
    profile = recording.profile("slow", tool)
    findings = None if profile is None else analyse(profile)["findings"]
    keys = ("ms", "rate", "floor_ms", "pct_of_floor")
    units = {e.name: e.unit for e in scenario.evidence}
    return {
        "scenario": scenario.id, "title": scenario.title, "level": scenario.level, "tool": _TOOL_NAMES[scenario.tool],
        "provenance": _provenance_line(results, live=live), "gpu": results.get("gpu"),
        "recorded_at": results.get("recorded_at"),
        "symptom": _reflow(texts.symptom), "question": _reflow(texts.question),
        "rubric": {"strong": [_reflow(t) for t in texts.rubric.strong],
                   "red_flags": [_reflow(t) for t in texts.rubric.red_flags]},
        # each with the scenario's own unit (a share is a "fraction", printed as a percentage)
        "evidence": [{**item, "unit": units.get(item.get("name"), item.get("unit", ""))}
                     for item in results.get("evidence") or []],
        "expected_first_rule": scenario.first_rule, "bottleneck": scenario.bottleneck.value,
        "diagnosis": findings,
        "fix": {"summary": _reflow(texts.fix.summary), "details": _reflow(texts.fix.details),
                "wrong_fix": _reflow(texts.fix.wrong_fix) if texts.fix.wrong_fix else None},
        "before_after": {v: {k: values.get(f"{v}_{k}") for k in keys} for v in ("slow", "fixed")},
        "rate_unit": scenario.model.rate_unit, "speedup": values.get("speedup"), "min_speedup": scenario.min_speedup,
        "narrative": str(scenario.narrative_path),
    }


def _recorded(scenario: Any, traces: Path | None, gpu: str | None) -> Any:
    from coach import recordings

    return recordings.open_recording(scenario, traces, gpu)


def _record_live(scenario: Any, stack: ExitStack) -> Any:
    from coach import recordings
    from coach.capture import probe
    from coach.capture.record import record

    found, why = probe.gpus()
    if not found:
        raise CoachError(f"--live needs an NVIDIA GPU ({why}); without --live, coach run shows the recording "
                         "in traces/")
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="coach-live-")))
    err_console.print(f"recording {scenario.id} on {found[0].name}: slow and fixed, plain and profiled")
    outcome = record([scenario], tmp / "raw")[0]
    if outcome.status != "recorded":
        raise CoachError(f"{scenario.id} could not be recorded: {outcome.message}")
    recordings.import_raw(tmp / "raw", tmp / "traces")
    return recordings.open_recording(scenario, tmp / "traces")


def _walk_through(scenario: Any, recording: Any, *, live: bool, interactive: bool) -> None:
    values = recording.values()
    texts = recording.filled()  # every text with the recording's numbers in it
    results = recording.results
    where = _provenance_line(results, live=live)
    console.print(f"[bold]{scenario.id}: {escape(scenario.title)}[/]  [dim]({scenario.level}; {_TOOL_NAMES[scenario.tool]})[/]")
    console.print(f"[yellow]{escape(where)}[/]")

    _section("Symptom")
    console.print(escape(_reflow(texts.symptom)))

    _section("Your move")
    console.print(escape(_reflow(texts.question)))
    if interactive:
        answer = ask("your answer")
        if answer.strip():
            console.print("[dim]Compare your answer with what a strong one covers:[/]")
            for line in texts.rubric.strong:
                console.print(f"  + {escape(_reflow(line))}")
            console.print("[dim]and what would worry an interviewer:[/]")
            for line in texts.rubric.red_flags:
                console.print(f"  - {escape(_reflow(line))}")

    _section("Evidence (slow -> fixed, from the profiles)")
    _evidence_table(scenario, results.get("evidence") or [])

    _section("Diagnosis of the slow version")
    _diagnosis(scenario, recording)

    _section("The fix")
    console.print(f"[bold]{escape(_reflow(texts.fix.summary))}[/]")
    console.print(escape(_reflow(texts.fix.details)))
    if texts.fix.wrong_fix:
        console.print(f"[dim]What does not help:[/] {escape(_reflow(texts.fix.wrong_fix))}")

    _section("Before and after")
    _before_after(scenario, results, values)
    console.print(f"[yellow]{escape(where)}[/]")
    console.print(f"[dim]The whole story: {scenario.narrative_path}[/]")


_TOOL_NAMES = {"ncu": "Nsight Compute", "nsys": "Nsight Systems", "kineto": "PyTorch profiler"}


def _reflow(text: str) -> str:
    """Join the lines of each paragraph (the TOML text is wrapped by hand); the terminal wraps."""
    return "\n\n".join(" ".join(p.split()) for p in text.strip().split("\n\n"))


def _section(title: str) -> None:
    console.print()
    console.rule(f"[bold]{title}[/]", align="left")


def _provenance_line(results: dict[str, Any], *, live: bool) -> str:
    prov = results.get("provenance") or {}
    gpu = results.get("gpu") or "an unknown GPU"
    driver = (prov.get("gpu") or {}).get("driver")
    cuda = prov.get("cuda_driver_version")
    tools = ", ".join(x for x in (driver and f"driver {driver}", cuda and f"CUDA {cuda}") if x)
    stamp = str(results.get("recorded_at") or "")
    when = f"{stamp[:10]} {stamp[11:16]} UTC" if len(stamp) >= 16 else (stamp or "an unrecorded date")
    if live:
        return f"Measured just now on this machine's {gpu} ({tools})."
    return f"Recorded on an {gpu} ({tools}) on {when}: these numbers come from that recording, not from this machine."


def _fmt(value: Any, unit: str = "") -> str:
    if not isinstance(value, (int, float)):
        return "not recorded"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return f"{text} {unit}".strip()


def _evidence_table(scenario: Any, items: list[dict[str, Any]]) -> None:
    if not items:
        console.print("no evidence recorded")
        return
    from coach.cli.output import fit_table
    from coach.recordings import fmt_evidence

    units = {e.name: e.unit for e in scenario.evidence}  # the scenario's own units (a share is a "fraction")

    rows = []
    for item in items:
        moved = item.get("moved_as_expected")
        mark = {True: "[green]yes[/]", False: "[red]no[/]", None: "[dim]n/a[/]"}[moved]
        unit = units.get(item.get("name"), item.get("unit", ""))
        rows.append([item["label"], fmt_evidence(item.get("slow"), unit), fmt_evidence(item.get("fixed"), unit),
                     _ARROW[item["direction"]], mark])
    # names and values wrap at spaces only: a number and its unit may take two lines, never break
    fit_table(None, [("metric", "left"), ("slow", "left"), ("fixed", "left"), ("expected", "left"), ("", "left")],
              rows, names=(0, 1, 2, 3), wrap=True, name_min=1)


def _diagnosis(scenario: Any, recording: Any) -> None:
    from coach.cli.profile import analyse, show_analysis

    tool = {"ncu": "ncu", "nsys": "nsys", "kineto": "kineto"}[scenario.tool]
    profile = recording.profile("slow", tool)
    if profile is None:
        console.print(f"the recording holds no {_TOOL_NAMES[tool]} profile of the slow version")
        return
    show_analysis(analyse(profile), expected_rule=scenario.first_rule)
    console.print(f"[dim]The scenario's bottleneck class: {scenario.bottleneck.value}[/]")


def _before_after(scenario: Any, results: dict[str, Any], values: dict[str, Any]) -> None:
    """Times, the rate that fits the bound (useful bytes/s for DRAM- and link-bound work, FLOP/s or
    the model's own unit for compute-bound work) and % of floor, each variant against its own work's
    floor, all from ``coach.recordings.placeholder_values`` (the numbers every page shows)."""
    m = scenario.model
    variants = results.get("variants") or {}
    unit = (variants.get("slow") or {}).get("unit") or "run"
    from coach.cli.output import fit_table

    rows = [[variant, _fmt(values.get(f"{variant}_ms"), "ms"), _si(values.get(f"{variant}_rate"), m.rate_unit),
             _fmt(values.get(f"{variant}_floor_ms"), "ms"), _fmt(values.get(f"{variant}_pct_of_floor"), "%")]
            for variant in ("slow", "fixed")]
    fit_table(None, [("", "left"), (f"time per {unit} (median)", "right"), (m.rate_label, "right"), ("floor", "right"),
                     ("% of floor", "right")], rows, names=(0, 1, 2, 3, 4), wrap=True, name_min=1)
    speedup = values.get("speedup")
    if isinstance(speedup, (int, float)):
        ok = speedup >= scenario.min_speedup
        verdict = "[green]meets[/]" if ok else "[red]falls short of[/]"
        console.print(f"speed-up [bold]{speedup:.2f}x[/] ({verdict} the scenario's minimum of {scenario.min_speedup:g}x)")
    own = values.get("slow_floor_ms") != values.get("fixed_floor_ms")
    console.print(f"[dim]floor: the least time the work can take per {unit}"
                  + (", each variant's own work (the fix changes the work per unit)" if own else "")
                  + f": {escape(_floor_words(m))}[/]")


def _floor_words(m: Any) -> str:
    """What sets the (slow variant's) floor: the bytes at the bandwidth ceiling or the work at the
    arithmetic one, with the ceiling's source."""
    flops_s = m.flops_s() or 0.0
    if flops_s > m.bytes_s("slow"):
        unit = "FLOP" if m.flop_unit == "FLOP" else f"{m.flop_unit}s"
        return (f"{_si(m.value(m.flops), '').strip()} {unit} at {_si(m.flop_per_s, '').strip()} per second "
                f"({m.flops_source})")
    return f"{_si(m.useful('slow'), 'B')} at {_si(m.bytes_per_s, 'B/s')} ({m.bytes_source})"


def _si(value: Any, unit: str) -> str:
    if not isinstance(value, (int, float)):
        return "not recorded"
    sep = "" if unit in ("", "B", "B/s", "FLOP/s") else " "  # 2.32 T sine/s, 3.32 TB/s
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{sep}{unit}".strip()
    return f"{value:.3g} {unit}".strip()
