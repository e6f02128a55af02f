"""``coach run scenario-NN`` for a correctness scenario: the symptom (what the buggy program printed),
your move, the evidence (compute-sanitizer's report on the buggy build), the diagnosis and the line
it names, the fix, and every run before and after.

Without --live every line comes from the recording in traces/ (``coach.correctness_recordings``);
a scenario not recorded yet says so in one line.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from coach.cli.output import ask, console, err_console
from coach.errors import CoachError

#: Lines of the buggy report shown as evidence: its first record and the summary.
EXCERPT_LINES = 14


def run(ident: str, *, live: bool, interactive: bool, gpu: str | None, traces: Path | None) -> None:
    from coach import correctness, correctness_recordings

    scenario = correctness.find(ident)
    if live:
        with tempfile.TemporaryDirectory(prefix="coach-live-") as tmp:
            recording = _record_live(scenario, Path(tmp))
            walk_through(scenario, recording, live=True, interactive=interactive)
        return
    recording = correctness_recordings.open_recording(scenario, traces, gpu)
    walk_through(scenario, recording, live=False, interactive=interactive)


def _record_live(scenario: Any, tmp: Path) -> Any:
    from coach import correctness_recordings, recordings
    from coach.capture import probe, sanitize

    found, why = probe.gpus()
    if not found:
        raise CoachError(f"--live needs an NVIDIA GPU ({why}); without --live, coach run shows the recording in traces/")
    err_console.print(f"recording {scenario.id} on {found[0].name}: buggy and fixed, plain and under {scenario.tool}")
    outcome = sanitize.record([scenario], tmp / "raw")[0]
    if outcome.status != "recorded":
        raise CoachError(f"{scenario.id} could not be recorded: {outcome.message}")
    recordings.import_raw(tmp / "raw", tmp / "traces")
    return correctness_recordings.open_recording(scenario, tmp / "traces")


def _reflow(text: str) -> str:
    """Join the lines of each paragraph (the TOML text is wrapped by hand); the terminal wraps."""
    return "\n\n".join(" ".join(p.split()) for p in text.strip().split("\n\n"))


def _section(title: str) -> None:
    console.print()
    console.rule(f"[bold]{title}[/]", align="left")


def _provenance(results: dict[str, Any], *, live: bool) -> str:
    prov = results.get("provenance") or {}
    gpu = results.get("gpu") or "an unknown GPU"
    parts = [x for x in ((prov.get("gpu") or {}).get("driver") and f"driver {(prov.get('gpu') or {}).get('driver')}",
                         prov.get("cuda_driver_version") and f"CUDA {prov.get('cuda_driver_version')}",
                         prov.get("compute_sanitizer") and f"compute-sanitizer {_version(prov['compute_sanitizer'])}")
             if x]
    tools = ", ".join(parts)
    if live:
        return f"Measured just now on this machine's {gpu} ({tools})."
    stamp = str(results.get("recorded_at") or "")
    when = f"{stamp[:10]} {stamp[11:16]} UTC" if len(stamp) >= 16 else (stamp or "an unrecorded date")
    return f"Recorded on an {gpu} ({tools}) on {when}: this output comes from that recording, not from this machine."


def _version(line: str) -> str:
    from coach.correctness_recordings import _version as version

    return version(line) or line


def _run_line(name: str, r: dict[str, Any]) -> str:
    if r.get("timed_out"):
        return f"{name}: timed out (a hang) after {r.get('seconds')} s"
    result = r.get("result") or {}
    check = "" if not result else ("check passed" if result.get("ok") else "check FAILED")
    err = r.get("cuda_error") or {}
    stopped = (f"stopped with {err.get('error')} reported by {err.get('call')} (line {err.get('line')})"
               if err else "")
    return f"{name}: exit {r.get('exit')}" + "".join(f", {x}" for x in (check, stopped) if x)


def excerpt(text: str, limit: int = EXCERPT_LINES) -> list[str]:
    """The report's first record (from its headline to the blank line after it) and its summary lines."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    tool = [ln for ln in lines if ln.startswith("===")]
    body = [ln for ln in tool if ln.strip("= ").strip() and "COMPUTE-SANITIZER" not in ln]
    summary = [ln for ln in body if "SUMMARY:" in ln]
    first: list[str] = []
    started = False
    for ln in tool:
        content = ln.lstrip("=").strip()
        if not started:
            if content and "COMPUTE-SANITIZER" not in content and "SUMMARY:" not in content:
                started = True
                first.append(ln)
            continue
        if not content or "SUMMARY:" in content:
            break
        first.append(ln)
    if len(first) > limit:
        first = first[:limit] + ["=========     ..."]
    return first + summary


def walk_through(scenario: Any, recording: Any, *, live: bool, interactive: bool) -> None:
    from coach.cli.profile import analyse, show_analysis

    texts = recording.filled()  # every text with the recording's numbers in it
    results = recording.results
    runs = results.get("runs") or {}
    where = _provenance(results, live=live)
    found = {"sanitizer": f"compute-sanitizer {scenario.tool}",
             "launch-checks": f"synchronous launches, then compute-sanitizer {scenario.tool}",
             "float64-reference": "a float64 reference"}[scenario.found_with]
    console.print(f"[bold]{scenario.id}: {escape(scenario.title)}[/]  [dim]({scenario.level}; found with {found})[/]")
    console.print(f"[yellow]{escape(where)}[/]")

    _section("Symptom")
    console.print(escape(_reflow(texts.symptom)))
    for name in ("buggy", "fixed"):
        if name in runs:
            console.print(f"  [dim]{escape(_run_line(name, runs[name]))}[/]")

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

    buggy_tool = f"buggy-{scenario.tool}"
    _section(f"Evidence (compute-sanitizer {scenario.tool} on the buggy build)")
    for extra in scenario.runs[4:]:
        r = runs.get(extra.name) or {}
        env = " ".join(f"{k}={v}" for k, v in extra.env.items())
        console.print(f"[dim]$ {escape(env + ' ' if env else '')}{escape(' '.join(r.get('command') or []))}[/]")
        console.print(escape(_run_line(extra.name, r)))
        for ln in (r.get("stderr_tail") or [])[-3:]:
            console.print(f"  [dim]{escape(ln)}[/]")
    r = runs.get(buggy_tool) or {}
    if r.get("command"):
        console.print(f"[dim]$ {escape(' '.join(r['command']))}[/]")
    text = recording.report_text(buggy_tool)
    if text is None:
        console.print("the recording holds no report of the buggy build")
    else:
        for ln in excerpt(text):
            console.print(escape(ln), highlight=False, overflow="fold")  # wrapped at the width, words kept

    _section("Diagnosis of the buggy build")
    report = recording.report(buggy_tool)
    if report is None:
        console.print("the recording holds no compute-sanitizer report of the buggy build")
    else:
        show_analysis(analyse(report), expected_rule=scenario.first_rule)
        _planted(scenario, results.get("diagnosis") or {})

    _section("The fix")
    console.print(f"[bold]{escape(_reflow(texts.fix.summary))}[/]")
    console.print(escape(_reflow(texts.fix.details)))
    if texts.fix.wrong_fix:
        console.print(f"[dim]What does not help:[/] {escape(_reflow(texts.fix.wrong_fix))}")

    _section("Before and after")
    _runs_table(scenario, runs)
    verdict = _verdict(scenario, results)
    console.print(verdict)
    console.print(f"[yellow]{escape(where)}[/]")
    console.print(f"[dim]The whole story: {scenario.narrative_path}[/]")


def _planted(scenario: Any, diagnosis: dict[str, Any]) -> None:
    planted = ", ".join(str(n) for n in scenario.planted_lines)
    if scenario.first_rule == "sanitizer-clean":
        console.print(f"  the bug is at {scenario.source.name}:{planted}, which {scenario.tool} does not report: "
                      "the float64 reference finds it")
        return
    lines = diagnosis.get("lines") or []
    named = ", ".join(str(n) for n in lines) or "no line"
    ok = bool(set(lines) & set(scenario.planted_lines))
    mark = "[green]names the planted line[/]" if ok else "[red]misses the planted line[/]"
    console.print(f"  the report names {scenario.source.name} line(s) {named}; the bug is on line(s) {planted}: {mark}")


def _runs_table(scenario: Any, runs: dict[str, Any]) -> None:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("run", "exit", "check", f"{scenario.tool} report"):
        table.add_column(col, overflow="fold")
    for run in scenario.runs:
        r = runs.get(run.name) or {}
        result = r.get("result") or {}
        check = "-" if not result else ("[green]passed[/]" if result.get("ok") else "[red]failed[/]")
        if r.get("cuda_error"):
            check = f"[red]{escape(r['cuda_error']['error'])}[/]"
        s = r.get("summary") or {}
        if not s:
            tool = "-"
        elif s.get("hazards_displayed") is not None:
            tool = _count(s["hazards_displayed"], "race")
        else:
            tool = _count(s.get("errors"), "error") if s.get("complete") else "[red]cut short[/]"
        exit_text = "timed out" if r.get("timed_out") else str(r.get("exit"))
        table.add_row(escape(run.name), exit_text, check, tool)
    console.print(table)


def _count(n: int | None, word: str) -> str:
    return f"? {word}s" if n is None else f"{n:,} {word}{'' if n == 1 else 's'}"


def _verdict(scenario: Any, results: dict[str, Any]) -> str:
    clean, ok = results.get("fixed_clean"), results.get("fixed_check_ok")
    if clean and ok:
        return f"[green]fixed: clean under {scenario.tool}, and its check passes[/]"
    parts = []
    if not clean:
        parts.append(f"not clean under {scenario.tool}")
    if not ok:
        parts.append("its check fails")
    return f"[red]fixed: {', '.join(parts)}[/]"
