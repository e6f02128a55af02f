"""Where ``coach load FILE --json`` spends its CPU time and memory on a timeline, phase by phase.

Runs, in one process, the steps ``coach load`` takes (read the export, the summary's shared tables,
the steady window, each timeline rule on it) and prints a Markdown table: CPU seconds of each phase
(process time, every thread), its wall time and the resident memory after it. Used for
benchmarks/results/profile_nsys_1m.md:

    python benchmarks/profile_phases.py /tmp/scale/softmax_x1000000.sqlite

(the export that ``bench_scale.py --work /tmp/scale`` builds). CPU time is the number to compare,
because the machine it is run on may be shared (the wall time says how much of a phase ran on two
cores at once, or waited for one); a phase under 0.01 s of both is left out.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mib() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith("VmRSS:"))


def main(path: str) -> None:
    rows: list[tuple[str, float, int]] = []

    def phase(name, fn):
        start, wall = time.process_time(), time.perf_counter()
        result = fn()
        rows.append((name, time.process_time() - start, time.perf_counter() - wall, rss_mib()))
        return result

    start, wall = time.process_time(), time.perf_counter()
    from coach.analyze import timeline_rules as rules  # noqa: PLC0415
    from coach.analyze.timeline import TimelineAnalysis  # noqa: PLC0415
    from coach.analyze.timeline_rules import _steady, warmup  # noqa: PLC0415
    from coach.analyze.timeline_rules._shared import timeline_gpu  # noqa: PLC0415
    from coach.analyze.timeline_summary import summarize_timeline  # noqa: PLC0415
    from coach.ingest import load  # noqa: PLC0415

    rows.append(("imports", time.process_time() - start, time.perf_counter() - wall, rss_mib()))
    timeline = phase("ingest (read the export)", lambda: load(path))
    a = TimelineAnalysis(timeline)
    phase("summary: GPU work", lambda: a.work)
    phase("summary: busy intervals, unions, utilisation", lambda: a.utilisation)
    phase("summary: work joined to its calls", lambda: a.issued)
    phase("summary: the rest (kernels, API calls, NVTX)", lambda: summarize_timeline(timeline, 1 << 62, analysis=a))
    once = phase("diagnosis: one-time calls (whole capture)", lambda: warmup.one_time_calls(a))
    steady = phase("diagnosis: steady window", lambda: _steady.find(a, once))
    if steady is not None:
        a.release()
        a = phase("diagnosis: crop to the window", lambda: TimelineAnalysis(_steady.crop(timeline, steady),
                                                                             holes=steady.holes))
    hardware = timeline_gpu(timeline.devices)
    for rule in rules.RULES:
        phase(f"rule {rule.__name__.rsplit('.', 1)[-1]}",
              lambda: rule.apply(a, hardware) if rules.applicable(rule.SPEC, a.timeline) else [])
    total, total_wall = time.process_time() - start, time.perf_counter() - wall
    print("| phase | CPU, s | wall, s | resident memory after, MiB |\n|---|---|---|---|")
    for name, cpu, elapsed, rss in rows:
        if cpu >= 0.01 or elapsed >= 0.01:
            print(f"| {name} | {cpu:.2f} | {elapsed:.2f} | {rss} |")
    print(f"| total | {total:.2f} | {total_wall:.2f} | |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python benchmarks/profile_phases.py EXPORT")
    main(sys.argv[1])
