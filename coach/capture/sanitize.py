"""Record the correctness scenarios on a GPU: build each program, run both variants plain and under
compute-sanitizer, and keep every output with its provenance.

For each scenario (``coach.correctness``), in this order:

1. build: ``nvcc -arch=sm_90 -std=c++17 -O3 -lineinfo -Xcompiler -rdynamic -o PROGRAM SOURCE.cu``;
2. each run the scenario lists: the plain runs (``buggy``, ``fixed``: the program's own check, its
   result line and its stderr, where a CUDA error names the call that reported it), the runs under
   the scenario's tool (``buggy-<tool>``, ``fixed-<tool>``), and its extra runs (the buggy variant
   with ``CUDA_LAUNCH_BLOCKING=1``, say). A run under a tool is::

       compute-sanitizer --tool TOOL [OPTIONS] --log-file RUN.txt --xml --save RUN.xml PROGRAM --variant V ... --repeat 1

   The text report goes to RUN.txt, the program's output stays on stdout; one repetition is
   enough for the tool, which reports every unsynchronised access whether or not it raced this time.
   If that writes no text report (an option this release refuses, say), the run is repeated without
   ``--xml --save`` and the manifest says why.

A run that fails, crashes or times out is an outcome, not an error of the recording: the buggy
variants are meant to. The recording fails only when a program does not build or a tool is missing.
Everything for one scenario lands in ``OUT/<scenario-id>/`` with ``manifest.json`` (the provenance:
GPU, driver, CUDA, nvcc and compute-sanitizer versions, each command, the date), or nothing does.
``coach record --import OUT`` turns it into ``traces/<gpu>/<scenario-id>/`` on any machine.

Only the standard library is used: this runs on the GPU machine, where polars is not installed.

    PYTHONPATH=. python3 -m coach.capture sanitize scenario-21 ... --out RAW     (or --all)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coach import correctness
from coach.capture import harness, probe, tools
from coach.capture.record import MANIFEST, RAW_FORMAT, Log, Outcome, stderr_log
from coach.capture.staging import staged_folder
from coach.correctness import CorrectnessScenario, Run
from coach.errors import CoachError, ToolError

#: ``$COACH_COMPUTE_SANITIZER`` wins; then PATH; then where the CUDA toolkit installs it.
SANITIZER_ENV = "COACH_COMPUTE_SANITIZER"
SANITIZER_DIRS = ("/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer")
BUILD_TIMEOUT_S = 300.0
#: A tool run checks the code, not the luck of one schedule: one repetition is enough.
TOOL_RUN_ARGS = ("--repeat", "1")
#: Output kept per stream; a runaway program's output is cut (the tail is what says why it failed).
MAX_OUTPUT_CHARS = 200_000


def find_sanitizer() -> str:
    """The compute-sanitizer to use, or a ``ToolError`` saying how to get one."""
    override = os.environ.get(SANITIZER_ENV)
    if override:
        found = shutil.which(override)
        if found is None:
            raise ToolError(f"{SANITIZER_ENV}={override} is not an executable file")
        return found
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for d in SANITIZER_DIRS:
        candidate = Path(d) / "compute-sanitizer"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise ToolError("compute-sanitizer not found: it comes with the CUDA toolkit (put its bin folder on PATH, or "
                    f"set {SANITIZER_ENV})")


def select(ids: Sequence[str], *, all_: bool) -> list[CorrectnessScenario]:
    if all_ and ids:
        raise CoachError("--all records every correctness scenario: give no ids with it")
    if all_:
        found = correctness.all_scenarios()
        if not found:
            raise CoachError("no correctness scenarios found")
        return found
    if not ids:
        raise CoachError("name the correctness scenarios to record (e.g. scenario-21 22), or pass --all")
    return [correctness.find(i) for i in sorted(set(ids))]


def record(chosen: Sequence[CorrectnessScenario], out: Path, *, skip_existing: bool = False,
           time_budget_s: float | None = None, log: Log = stderr_log) -> list[Outcome]:
    """Record ``chosen`` into ``out``; one ``Outcome`` per scenario, in order."""
    out = Path(out)
    nvcc = tools.require("nvcc")
    sanitizer = find_sanitizer()
    machine = probe.machine(command=["coach", "capture", "sanitize", *[s.id for s in chosen]])
    if machine["gpu"] is None:
        raise ToolError(f"no NVIDIA GPU here ({machine['gpu_problem']}): the correctness scenarios run on a GPU "
                        "machine; without one, coach run reads the recorded outputs")
    machine["compute_sanitizer"] = tools.version_line(sanitizer)
    machine["compute_sanitizer_path"] = sanitizer
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    outcomes = []
    for i, scenario in enumerate(chosen, 1):
        tag = f"[{i}/{len(chosen)} {scenario.id}]"
        if skip_existing and (out / scenario.id / MANIFEST).is_file():
            log(f"{tag} already recorded in {out / scenario.id}: skipped")
            outcomes.append(Outcome(scenario.id, "skipped"))
            continue
        if time_budget_s is not None and time.monotonic() - started >= time_budget_s:
            outcomes.append(Outcome(scenario.id, "not started", "time budget spent"))
            continue
        t0 = time.monotonic()
        try:
            record_one(scenario, out / scenario.id, machine, nvcc, sanitizer, log=lambda m, tag=tag: log(f"{tag} {m}"))
        except CoachError as err:
            log(f"{tag} FAILED: {err}")
            outcomes.append(Outcome(scenario.id, "failed", str(err), time.monotonic() - t0))
            continue
        seconds = time.monotonic() - t0
        log(f"{tag} recorded in {seconds:.1f} s -> {out / scenario.id}")
        outcomes.append(Outcome(scenario.id, "recorded", "", seconds))
    left = [o.scenario for o in outcomes if o.status == "not started"]
    if left:
        log(f"time budget of {time_budget_s:g} s spent; not started: {', '.join(left)} (run again with --skip-existing)")
    return outcomes


def record_one(scenario: CorrectnessScenario, final: Path, machine: dict[str, Any], nvcc: str, sanitizer: str, *,
               log: Log = stderr_log) -> None:
    """Build and run one scenario; its folder appears complete or not at all."""
    with tempfile.TemporaryDirectory(prefix="coach-sanitize-") as tmp, staged_folder(final, replace=True) as stage:
        scratch = Path(tmp)
        binary = scratch / scenario.binary_name
        build_cmd = scenario.build_command(binary, nvcc=nvcc)
        log(f"build: {' '.join(build_cmd[1:])}")
        built = _execute(build_cmd, cwd=scenario.source.parent, env=tools.minimal_env(home=scratch),
                         timeout=BUILD_TIMEOUT_S)
        (stage / "build.log").write_text(f"$ {' '.join(_portable(build_cmd))}\n{built['stdout']}{built['stderr']}")
        if built["timed_out"] or built["exit"] != 0 or not binary.is_file():
            raise ToolError(f"{scenario.id}: {scenario.source.name} did not build (exit {built['exit']}): "
                            f"{tools.last_line(built['stderr'] or built['stdout'])}")
        runs: dict[str, Any] = {}
        for run in scenario.runs:
            runs[run.name] = _run(scenario, run, binary, scratch, stage, sanitizer, log)
        manifest = {
            "coach_raw_format": RAW_FORMAT,
            "kind": correctness.KIND,
            "scenario": scenario.id,
            "title": scenario.title,
            "gpu": probe.gpu_slug(machine["gpu"]["name"]),
            "provenance": machine,
            "build": {"command": _portable(build_cmd), "seconds": round(built["seconds"], 2), "log": "build.log"},
            "runs": runs,
        }
        (stage / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def _run(scenario: CorrectnessScenario, run: Run, binary: Path, scratch: Path, stage: Path, sanitizer: str,
         log: Log) -> dict[str, Any]:
    program = [str(binary), "--variant", run.variant, *scenario.args, *run.args]
    env = tools.minimal_env(home=scratch, extra=dict(run.env))
    files: dict[str, str] = {}
    xml_note = None
    if run.tool is None:
        argv = program
        done = _execute(argv, cwd=scratch, env=env, timeout=scenario.timeout_s)
    else:
        program += list(TOOL_RUN_ARGS)
        text, xml = scratch / f"{run.name}.txt", scratch / f"{run.name}.xml"
        head = [sanitizer, "--tool", run.tool, *run.tool_options, "--log-file", str(text)]
        argv = [*head, "--xml", "--save", str(xml), *program]
        done = _execute(argv, cwd=scratch, env=env, timeout=scenario.timeout_s)
        if not text.is_file() and not done["timed_out"]:
            # no text report at all: most likely an option this release refuses; try without the XML
            xml_note = f"no report with --xml --save: {tools.last_line(done['stderr'] or done['stdout'])}"
            argv = [*head, *program]
            done = _execute(argv, cwd=scratch, env=env, timeout=scenario.timeout_s)
        if text.is_file():
            shutil.move(str(text), stage / text.name)
            files["report"] = text.name
        if xml.is_file() and xml.stat().st_size:
            shutil.move(str(xml), stage / xml.name)
            files["xml"] = xml.name
    for stream in ("stdout", "stderr"):
        name = f"{run.name}.{stream}.txt"
        (stage / name).write_text(done[stream][-MAX_OUTPUT_CHARS:])
        files[stream] = name
    result = harness.parse_result(done["stdout"])
    status = "timed out" if done["timed_out"] else f"exit {done['exit']}"
    check = "" if result is None else (", check ok" if result.get("ok") else ", check FAILED")
    log(f"{run.name}: {status}{check} in {done['seconds']:.1f} s" + (f" ({xml_note})" if xml_note else ""))
    command = _portable(argv, binary)
    if run.tool is not None:
        command[0] = "compute-sanitizer"  # where it lives is in the provenance (compute_sanitizer_path)
    return {"variant": run.variant, "tool": run.tool, "command": command,
            "env": dict(run.env), "exit": done["exit"], "timed_out": done["timed_out"],
            "seconds": round(done["seconds"], 2), "result": result, "files": files, "xml_note": xml_note}


def _portable(argv: Sequence[str], binary: Path | None = None) -> list[str]:
    """The command as it can be repeated elsewhere: scratch paths shortened to file names."""
    out = []
    for a in argv:
        p = Path(a)
        if binary is not None and a == str(binary):
            out.append(f"./{binary.name}")
        elif p.is_absolute() and ("coach-sanitize-" in a or p.parent == Path(tempfile.gettempdir())):
            out.append(p.name)
        else:
            out.append(a)
    return out


def _execute(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run ``argv`` in its own process group; a timeout ends the whole group and is reported, not raised."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                    start_new_session=True)
        except (FileNotFoundError, PermissionError) as exc:
            raise ToolError(f"{argv[0]} cannot be started ({exc.strerror or exc})") from None
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        out.seek(0)
        err.seek(0)
        return {"exit": None if timed_out else proc.returncode, "timed_out": timed_out,
                "stdout": out.read().decode("utf-8", errors="replace"),
                "stderr": err.read().decode("utf-8", errors="replace"), "seconds": time.monotonic() - start}
