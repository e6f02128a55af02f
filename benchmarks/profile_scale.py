"""Where ``coach load`` spends its CPU time on the two many-small-steps cases of bench_scale.py: a
folder of per-rank reports read cold, and a large PyTorch-profiler trace. Phase by phase, in one
process, CPU seconds (process time, every thread) and wall seconds; printed as a Markdown table.
Used for benchmarks/results/profile_scale.md:

    python benchmarks/profile_scale.py ranks /tmp/scale/ranks64
    python benchmarks/profile_scale.py kineto /tmp/scale/launch_bound_x.json

(the inputs that ``bench_scale.py --work /tmp/scale`` builds). ``ranks`` runs each report's steps
(read, save into the cache, its side-by-side row) one report after another on one Polars thread, as
one worker process does, and times a process pool's start (until every worker has imported the
readers and answered once; its CPU time is the workers', not counted in this process's):
the ranks case divides the per-report steps among the cores and adds the start, the imports and the
side-by-side table. CPU time is the column to compare on a shared machine; a phase under 0.005 s is
left out.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class Phases:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []

    def add(self, name: str, cpu: float, wall: float) -> None:
        for i, (n, c, w) in enumerate(self.rows):  # a phase run many times adds up
            if n == name:
                self.rows[i] = (n, c + cpu, w + wall)
                return
        self.rows.append((name, cpu, wall))

    def run(self, name, fn):
        cpu, wall = time.process_time(), time.perf_counter()
        result = fn()
        self.add(name, time.process_time() - cpu, time.perf_counter() - wall)
        return result

    def table(self, title: str) -> str:
        lines = [f"{title}", "", "| phase | CPU, s | wall, s |", "|---|---|---|"]
        lines += [f"| {n} | {c:.3f} | {w:.3f} |" for n, c, w in self.rows if c >= 0.005 or w >= 0.005]
        lines.append(f"| total | {sum(c for _, c, _ in self.rows):.3f} | {sum(w for _, _, w in self.rows):.3f} |")
        return "\n".join(lines)


def _answer() -> int:
    return os.getpid()


def ranks(folder: Path) -> str:
    os.environ.setdefault("POLARS_MAX_THREADS", "1")  # as in a worker: one Polars thread
    p = Phases()
    p.run("imports (coach.analyze.multi, coach.ingest)", lambda: __import__("coach.analyze.multi"))
    from coach.analyze import multi, parallel  # noqa: PLC0415
    from coach.ingest import load  # noqa: PLC0415
    from coach.model import save  # noqa: PLC0415

    paths = sorted(folder.glob("*.sqlite"))
    p.run("import of the nsys reader (first report)", lambda: __import__("coach.ingest.nsys_sqlite"))
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(paths):
            profile = p.run(f"read {len(paths)} reports", lambda: load(path))
            p.run(f"save {len(paths)} reports into the cache", lambda: save(profile, Path(tmp) / str(i),
                                                                           compression_level=multi.CACHE_COMPRESSION_LEVEL))
            p.run(f"side-by-side row of {len(paths)} reports", lambda: multi._row_of(profile))
    cores = parallel.cores()
    os.environ.pop(parallel.SERIAL_ENV, None)
    p.run(f"process pool start ({cores} workers, until each has the readers imported and answered)",
          lambda: parallel.map_reports(_wait_answer, range(cores * 4)))
    return p.table(f"ranks: {len(paths)} reports of {folder}")


def _wait_answer(_: int) -> int:
    import coach.analyze.multi  # noqa: F401, PLC0415 - what a worker needs for its first report
    import coach.ingest.nsys_sqlite  # noqa: F401, PLC0415

    time.sleep(0.05)  # long enough that every worker gets one
    return os.getpid()


def kineto(path: Path) -> str:
    p = Phases()
    p.run("imports (coach.ingest.kineto)", lambda: __import__("coach.ingest.kineto"))
    import polars as pl  # noqa: PLC0415

    from coach.ingest import kineto as k  # noqa: PLC0415
    from coach.model import make_timeline  # noqa: PLC0415

    k.fields()
    raw = p.run("read the file", lambda: k._read_bytes(path))
    if hasattr(k, "_read_pieces"):  # pieces classified on the threads that read them
        doc, parts = p.run("JSON parse and classes, arguments (pieces on every core)",
                           lambda: k._read_pieces(raw, each=k._classified_piece))
        t0 = min(t for _, t in parts if t is not None)
        ev = p.run("ns times", lambda: k._timed(pl.concat([part for part, _ in parts]), t0))
        del parts
    else:  # before: the pieces parsed on every core, their events classified after, on one
        doc, events = p.run("JSON parse (events with the fields read)", lambda: k._parse(raw, path))
        t0 = events["ts"].min()
        ev = p.run("canonical events (classes, ns times, arguments)", lambda: k._canonical_events(events, t0))
        del events
    del raw
    corr = k._launching_thread(ev)
    timeline = p.run("tables (kernels, copies, API calls, ranges)", lambda: make_timeline(
        k._source(path, doc, t0), kernels=k._kernels(ev, corr), memcpy=k._memcpy(ev, corr), memset=k._memset(ev, corr),
        api=k._api(ev), sync=k._sync(ev, corr), nvtx=k._nvtx(ev), devices=k._devices(doc)))
    del ev
    p.run("imports (analysis)", lambda: (__import__("coach.analyze.diagnose"), __import__("coach.analyze.timeline_summary")))
    from coach.analyze.diagnose import diagnose  # noqa: PLC0415
    from coach.analyze.timeline import TimelineAnalysis  # noqa: PLC0415
    from coach.analyze.timeline_summary import summarize_timeline  # noqa: PLC0415

    a = TimelineAnalysis(timeline)
    p.run("summary", lambda: summarize_timeline(timeline, 1 << 62, analysis=a))
    p.run("diagnosis", lambda: diagnose(timeline, analysis=a))
    return p.table(f"kineto: {path} ({path.stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("ranks", "kineto"):
        raise SystemExit("usage: profile_scale.py ranks FOLDER | kineto FILE")
    print({"ranks": ranks, "kineto": kineto}[sys.argv[1]](Path(sys.argv[2])))
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
