"""``coach record``, the GPU half: run each scenario's programs, plain and under the profilers, and
write the raw reports with their provenance.

For each scenario and each variant (slow, fixed), in this order:

1. a plain run: the program checks its result and prints its timings (``harness.emit``);
2. under Nsight Systems, if the scenario asks (``.nsys-rep`` plus its ``.sqlite`` export);
3. under Nsight Compute, if the scenario asks, filtered to its kernels (``-k regex:... -c N``);
4. under the PyTorch profiler, if the scenario asks (a Chrome-trace JSON).

Everything for one scenario lands in ``OUT/<scenario-id>/`` with a ``manifest.json`` naming each
file, or, if any step fails, nothing does. ``coach record --import`` (on any machine with coach
installed) turns these raw folders into the compact ``traces/`` form.

Only the standard library is used: this runs on the GPU machine, where polars is not installed.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import coach
from coach import scenarios
from coach.capture import harness, probe, tools
from coach.capture.doctor import NSYS_ENV_FIX
from coach.capture.profile import (NCU_FIXED_FLAGS, NSYS_PROFILE_FLAGS, NSYS_TIMED_ONLY_FLAGS, NcuOptions,
                                  ncu_capture, nsys_capture)
from coach.capture.staging import staged_folder
from coach.errors import CoachError, ToolError
from coach.paths import kernels_dir
from coach.scenarios import VARIANTS, Program, Scenario

MANIFEST = "manifest.json"
RAW_FORMAT = 1
#: The folder that holds the ``coach`` package: scenario programs import ``coach.capture.harness``.
PACKAGE_ROOT = Path(coach.__file__).resolve().parent.parent


@dataclass(frozen=True)
class Outcome:
    scenario: str
    status: str  # "recorded", "skipped", "failed", "not started"
    message: str = ""
    seconds: float = 0.0


Log = Callable[[str], None]


def stderr_log(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def select(ids: Sequence[str], *, all_: bool, only: str | None) -> list[Scenario]:
    """The scenarios named by ids, ``--only`` and ``--all`` (in id order, each once)."""
    if all_ and (ids or only):
        raise CoachError("--all records every scenario: give no ids or --only with it")
    for ident in ids:
        if (kernels_dir() / ident).is_dir():
            raise CoachError(f"'{ident}' is a version ladder (kernels/{ident}): coach record does not record "
                             "ladders yet, only scenarios")
    wanted = [scenarios.normalise_id(i) for i in ids] + (scenarios.parse_only(only) if only else [])
    if all_:
        found = scenarios.all_scenarios()
        if not found:
            raise CoachError(f"no scenarios found under {scenarios.scenarios_dir()}")
        return found
    if not wanted:
        raise CoachError("name the scenarios to record (e.g. scenario-01 01,15 with --only), or pass --all")
    return [scenarios.find(sid) for sid in sorted(set(wanted))]


def record(chosen: Sequence[Scenario], out: Path, *, nsys: bool = True, ncu: bool = True,
           kineto: bool = True, skip_existing: bool = False, time_budget_s: float | None = None,
           variants: Sequence[str] = VARIANTS, log: Log = stderr_log) -> list[Outcome]:
    """Record ``chosen`` into ``out``; one ``Outcome`` per scenario, in order.

    ``nsys``/``ncu``/``kineto`` set to False skip that profiler even where a scenario asks for it.
    ``time_budget_s`` stops before starting a scenario once that much time has passed, so that a
    long list can be split over calls of bounded length (rerun with ``skip_existing``).
    """
    out = Path(out)
    todo = [s for s in chosen if not (skip_existing and (out / s.id / MANIFEST).is_file())]
    todo_ids = {s.id for s in todo}
    want = {"nsys": nsys and any(s.profile.nsys for s in todo), "ncu": ncu and any(s.profile.ncu for s in todo)}
    paths = {name: tools.require(name) for name, wanted in want.items() if wanted}
    if "nsys" in paths:
        problem = probe.bundled_nsys_problem(paths["nsys"])
        if problem:
            raise ToolError(f"the nsys at {paths['nsys']} cannot import its captures ({problem}): {NSYS_ENV_FIX}")
    machine = probe.machine(command=["coach", "record", *[s.id for s in chosen]])
    if machine["gpu"] is None:
        raise ToolError(f"no NVIDIA GPU here ({machine['gpu_problem']}): coach record runs the programs on a GPU "
                        "machine; without one, coach run reads the recorded traces")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    outcomes = []
    for i, scenario in enumerate(chosen, 1):
        tag = f"[{i}/{len(chosen)} {scenario.id}]"
        if scenario.id not in todo_ids:
            log(f"{tag} already recorded in {out / scenario.id}: skipped")
            outcomes.append(Outcome(scenario.id, "skipped"))
            continue
        if time_budget_s is not None and time.monotonic() - started >= time_budget_s:
            outcomes.append(Outcome(scenario.id, "not started", "time budget spent"))
            continue
        t0 = time.monotonic()
        try:
            _record_one(scenario, out / scenario.id, machine, paths, variants=variants,
                        use={"nsys": nsys, "ncu": ncu, "kineto": kineto}, log=lambda m, tag=tag: log(f"{tag} {m}"))
        except CoachError as err:
            log(f"{tag} FAILED: {err}")
            outcomes.append(Outcome(scenario.id, "failed", str(err), time.monotonic() - t0))
            continue
        seconds = time.monotonic() - t0
        log(f"{tag} recorded in {seconds:.1f} s -> {out / scenario.id}")
        outcomes.append(Outcome(scenario.id, "recorded", "", seconds))
    left = [o.scenario for o in outcomes if o.status == "not started"]
    if left:
        log(f"time budget of {time_budget_s:g} s spent; not started: {', '.join(left)} "
            "(run again with --skip-existing)")
    return outcomes


def raise_for_failures(outcomes: Sequence[Outcome]) -> None:
    """One error line naming every scenario that failed, if any did."""
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        raise CoachError(f"{len(failed)} of {len(outcomes)} scenarios failed: "
                         + "; ".join(f"{o.scenario}: {o.message}" for o in failed))


def _record_one(scenario: Scenario, final: Path, machine: dict[str, Any], paths: dict[str, str], *,
                variants: Sequence[str], use: dict[str, bool], log: Log) -> None:
    spec = scenario.profile
    steps: list[dict[str, Any]] = []
    files: dict[str, dict[str, str]] = {}
    with staged_folder(final, replace=True) as stage:
        for variant in variants:
            files[variant] = _record_variant(scenario, scenario.programs[variant], stage, paths, use, steps, log)
        manifest = {
            "coach_raw_format": RAW_FORMAT,
            "scenario": scenario.id,
            "title": scenario.title,
            "gpu": probe.gpu_slug(machine["gpu"]["name"]),
            "provenance": machine,
            "commands": {v: ["python", scenario.programs[v].script.name, *scenario.programs[v].args] for v in variants},
            "profile": {"nsys_flags": " ".join(NSYS_PROFILE_FLAGS + _nsys_extra_flags(spec)) if spec.nsys else None,
                        "ncu": {"set": spec.ncu_set, "kernel": spec.ncu_kernel, "launch_count": spec.ncu_launch_count,
                                "flags": list(NCU_FIXED_FLAGS)} if spec.ncu else None},
            "variants": files,
            "steps": steps,
        }
        (stage / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def _record_variant(scenario: Scenario, program: Program, stage: Path, paths: dict[str, str], use: dict[str, bool],
                    steps: list[dict[str, Any]], log: Log) -> dict[str, str]:
    """Run one variant plain and under each profiler the scenario asks for; move what each step
    wrote into ``stage``, append the steps to ``steps``, and return the manifest's file names."""
    spec, variant = scenario.profile, program.variant
    with tempfile.TemporaryDirectory(prefix="coach-record-") as tmp:
        scratch = Path(tmp)
        env = tools.minimal_env(home=scratch, extra={"PYTHONPATH": str(PACKAGE_ROOT)})
        argv = program.argv(sys.executable)
        # (step, files it names in the manifest, the work)
        jobs: list[tuple[str, dict[str, str], Callable[[], list[Path]]]] = [
            ("plain run", {"plain": f"{variant}.plain.json"}, partial(_plain, scenario, program, argv, scratch, env, log))]
        if spec.nsys and use["nsys"]:
            nsys_env = {**env, harness.TIMED_CAPTURE_ENV: "1"} if spec.nsys_timed_only else env
            jobs.append(("nsys", {"nsys": f"{variant}.sqlite", "nsys_rep": f"{variant}.nsys-rep"},
                         partial(nsys_capture, paths["nsys"], argv, scratch, variant, timeout=spec.timeout_s,
                                 env=nsys_env, extra_flags=_nsys_extra_flags(spec))))
        if spec.ncu and use["ncu"]:
            options = NcuOptions(set=spec.ncu_set, kernel=spec.ncu_kernel, launch_count=spec.launch_count(variant))
            jobs.append(("ncu", {"ncu": f"{variant}.ncu-rep"},
                         partial(ncu_capture, paths["ncu"], argv, scratch, variant, options, timeout=spec.timeout_s,
                                 env=env)))
        if spec.kineto and use["kineto"]:
            jobs.append(("kineto", {"kineto": f"{variant}.kineto.json"},
                         partial(_kineto, scenario, program, argv, scratch, env)))
        named: dict[str, str] = {}
        for name, names, work in jobs:
            log(f"{variant}: {name} ...")
            t0 = time.monotonic()
            made = work()
            for f in made:
                shutil.move(str(f), stage / f.name)
            seconds = time.monotonic() - t0
            steps.append({"variant": variant, "step": name, "seconds": round(seconds, 2),
                          "files": [f.name for f in made]})
            named.update(names)
            log(f"{variant}: {name} done in {seconds:.1f} s")
    return named


def _nsys_extra_flags(spec: scenarios.ProfileSpec) -> tuple[str, ...]:
    """Nsight Systems flags beyond the standard ones: the capture range of a scenario that records
    only its timed repetitions."""
    return NSYS_TIMED_ONLY_FLAGS if spec.nsys_timed_only else ()


def _plain(scenario: Scenario, program: Program, argv: list[str], scratch: Path, env: dict[str, str],
           log: Log) -> list[Path]:
    """Run the program without a profiler: its correctness check and its timings."""
    what = f"{scenario.id} {program.variant}"
    done = tools.run(argv, what=what, timeout=scenario.profile.timeout_s, cwd=scratch, env=env, check=False)
    log_file = scratch / f"{program.variant}.plain.log"
    log_file.write_text(f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    result = harness.parse_result(done.stdout)
    if result is not None and not result.get("ok"):
        raise CoachError(f"{what}: result check failed (relative error {result.get('rel_error')} > tolerance "
                         f"{result.get('tolerance')})")
    if done.returncode != 0:
        tools.show_tail(done.stderr or done.stdout)
        raise ToolError(f"{what} failed (exit {done.returncode}): {tools.last_line(done.stderr or done.stdout)}")
    if result is None:
        raise CoachError(f"{what}: the program printed no result line (harness.emit)")
    result["wall_s"] = round(done.seconds, 2)
    if isinstance(result.get("median_ms"), (int, float)):
        log(f"{program.variant}: median {result['median_ms']:.4g} ms per {result.get('unit')}, check ok "
            f"(relative error {result.get('rel_error') or 0:.2g})")
    path = scratch / f"{program.variant}.plain.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return [path, log_file]


def _kineto(scenario: Scenario, program: Program, argv: list[str], scratch: Path, env: dict[str, str]) -> list[Path]:
    target = scratch / f"{program.variant}.kineto.json"
    tools.run(argv, what=f"{scenario.id} {program.variant} under the PyTorch profiler", timeout=scenario.profile.timeout_s,
              cwd=scratch, env={**env, harness.KINETO_ENV: target.name})
    if not target.is_file():
        raise ToolError(f"{scenario.id} {program.variant}: the program wrote no PyTorch-profiler trace "
                        "(wrap its timed part in harness.kineto())")
    return [target]
