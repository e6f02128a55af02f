"""Scale benchmark: what a user runs, on inputs far larger than the recordings, side by side with
what they would run instead. One command, one results file (benchmarks/results/scale.md).

Cases (``--cases``, comma-separated; all by default):

``nsys-1m``, ``nsys-10m``
    An Nsight Systems export of 1,000,000 (10,000,000) kernels and as many CUDA API calls, replicated
    from the real H200 export tests/data/nsys_torch_softmax (bench_ingest_nsys.build: copy k shifted by
    k recording spans and k times the largest correlation id). Sides, alternating, ``--repeat``
    times: ``coach load FILE --json`` and ``coach diagnose FILE --json`` (the CLI a user runs, each in
    its own process) against ``nsys stats --report gpukernsum,cudaapisum --format csv`` (nsys 2022.4's
    names for the kernel and API summaries that ``coach load`` prints too, with the same columns:
    count, total, mean, median, min, max, stddev). Before any time is reported, coach's printed
    summaries are checked against nsys stats' rows.
``nsys-5m``
    The same at 5,000,000 kernels and API calls: where 10M cannot be run on the machine at hand in
    the time there is, its verdict compares 5M with 1M and says what doubling the 5M run predicts
    for 10M (labelled as a prediction, not a measurement).
``ranks-64``
    64 per-rank reports (the 8 recorded ranks of tests/data/nsys_ranks, each copied 8 times under its
    own name) read cold: ``coach load FOLDER --json`` with an empty cache.
``kineto-200mb``
    A PyTorch-profiler trace of about 200 MB, replicated from the real H200 trace
    tests/data/kineto_timeline_cases/launch_bound.json.gz (events shifted by k trace spans, ids by k
    times the largest id, one event per line), against Python's ``json.load`` of the same file (what
    a script would start with): ``coach load FILE --json``.

Each run is one process, timed from spawn to exit; CPU time and peak resident memory come from
``os.wait4``: of the process, the children it waited for, and (on Linux, where the benchmark makes
itself their reaper) the processes it left behind, such as the fork server whose children read a
folder's reports and that exits just after it; so the CPU time is the whole run's. The machine may be
shared: the load average is recorded before every run, next to its time.

``--baseline DIR`` adds, in the cases that run ``coach load``, a side that runs the same command from
another checkout of coach (``git archive COMMIT | tar -x -C DIR``, the commit written into ``DIR/COMMIT``),
alternating with this one: the same inputs, machine and moment, before and after a change.

    python benchmarks/bench_scale.py                          # everything (10M needs ~2 GB of disk)
    python benchmarks/bench_scale.py --cases nsys-1m --repeat 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import io
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_ingest_nsys  # noqa: E402  the scaled export's builder

RESULTS = ROOT / "benchmarks" / "results" / "scale.md"
RANKS = ROOT / "tests" / "data" / "nsys_ranks"
KINETO_SEED = ROOT / "tests" / "data" / "kineto_timeline_cases" / "launch_bound.json.gz"
CASES = ("nsys-1m", "nsys-5m", "nsys-10m", "ranks-64", "kineto-200mb")

# Acceptance of issue 19.
GOALS = {
    "nsys-1m": "coach load at most 0.5x the wall time of nsys stats, peak memory under 1 GB",
    "nsys-10m": "coach load within 12x of its 1M time, peak memory under 6 GB",
    "nsys-5m": "(the 10M goal at half the size) coach load within 6x of its 1M time, peak memory under 3 GB",
    "ranks-64": "under 3 s",
    "kineto-200mb": "under 2.5 s",
}


@dataclass
class Run:
    side: str
    wall_s: float
    cpu_s: float
    peak_bytes: int
    load_before: float
    stdout: str = field(repr=False, default="")


#: A run whose resident memory passes this is stopped (the machine is shared, and a run that needs more
#: than the goal allows has failed it anyway); ``--memory-limit-gb`` changes it.
MEMORY_LIMIT_BYTES = 8 * 10**9


class OverLimit(Exception):
    pass


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


#: Seconds the processes a run leaves behind (a fork server, which exits when its parent has) are
#: given to exit before they are stopped.
LEFT_BEHIND_S = 30.0

_reaper = False


def _become_reaper() -> None:
    """Make this process the reaper of its descendants (Linux's PR_SET_CHILD_SUBREAPER), so that a
    process a run leaves behind is waited for here and its CPU time counted."""
    global _reaper
    if _reaper or not sys.platform.startswith("linux"):
        return
    import ctypes  # noqa: PLC0415

    try:
        _reaper = ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _reaper = False


def _left_behind(group: int) -> tuple[float, int]:
    """CPU seconds and peak resident bytes of the processes a run left behind, once they have exited."""
    cpu, peak, deadline = 0.0, 0, time.monotonic() + LEFT_BEHIND_S
    while _reaper:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            if time.monotonic() > deadline:
                os.killpg(group, 9)
                deadline = float("inf")
            time.sleep(0.01)
            continue
        cpu += usage.ru_utime + usage.ru_stime
        peak = max(peak, usage.ru_maxrss * 1024)
    return cpu, peak


def measure(side: str, command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Run:
    _become_reaper()
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+b") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd, start_new_session=True)
        while True:  # poll, stopping the run (its whole process group) if it outgrows the limit
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if _rss(proc.pid) > MEMORY_LIMIT_BYTES:
                os.killpg(proc.pid, 9)
                os.wait4(proc.pid, 0)
                _left_behind(proc.pid)
                raise OverLimit(f"{side} passed {MEMORY_LIMIT_BYTES / 1e9:g} GB of memory after "
                                f"{time.perf_counter() - started:.0f} s and was stopped")
            time.sleep(0.05)
        wall = time.perf_counter() - started
        more_cpu, more_peak = _left_behind(proc.pid)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{shlex.join(command)} failed: {stderr.strip()[-2000:]}")
        out.seek(0)
        text = out.read()
    run = Run(side, wall, usage.ru_utime + usage.ru_stime + more_cpu, max(usage.ru_maxrss * 1024, more_peak), load, text)
    print(f"  {side}: {run.wall_s:.2f} s wall, {run.cpu_s:.2f} s CPU, {run.peak_bytes / 2**20:.0f} MiB "
          f"(load {load:.2f})", file=sys.stderr)
    return run


def coach(*args: str) -> list[str]:
    return [sys.executable, "-m", "coach", *args]


@dataclass(frozen=True)
class Checkout:
    """A checkout of coach a side runs: ``python -m coach`` from its root (which comes first on
    ``sys.path``), with it first on ``PYTHONPATH`` too."""

    label: str
    root: Path

    def env(self, env: dict[str, str]) -> dict[str, str]:
        rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
        return {**env, "PYTHONPATH": os.pathsep.join([str(self.root), *rest])}


def checkouts(baseline: Checkout | None) -> list[Checkout]:
    return [Checkout("", ROOT), *([baseline] if baseline else [])]


def side_name(name: str, checkout: Checkout) -> str:
    return f"{name} ({checkout.label})" if checkout.label else name


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def nsys_export(work: Path, rows: int) -> Path:
    path = work / f"softmax_x{rows}.sqlite"
    if not (path.is_file() and bench_ingest_nsys.counts(path) == (rows, rows)):
        print(f"building {path} ...", file=sys.stderr)
        bench_ingest_nsys.build(path, rows)
    return path


def ranks_folder(work: Path, copies: int = 8) -> Path:
    folder = work / f"ranks{8 * copies}"
    if not folder.is_dir():
        tmp = work / (folder.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for i, export in enumerate(sorted(RANKS.glob("rank*.sqlite"))):
            for k in range(copies):
                shutil.copyfile(export, tmp / f"rank{k * 8 + i}.sqlite")
        tmp.replace(folder)
    return folder


def kineto_trace(work: Path, target_bytes: int = 200_000_000) -> Path:
    path = work / "launch_bound_x.json"
    if path.is_file():
        return path
    doc = json.loads(gzip.decompress(KINETO_SEED.read_bytes()))
    events = doc.pop("traceEvents")
    timed = [e for e in events if "ts" in e]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 1.0
    id_keys = ("correlation", "External id")
    top_id = max([e["args"][k] for e in events for k in id_keys if isinstance(e.get("args", {}).get(k), int)]
                 + [e["id"] for e in events if isinstance(e.get("id"), int)]) + 1
    lines = [json.dumps(e) for e in events]
    copies = max(1, target_bytes // sum(len(line) + 2 for line in lines))
    tmp = path.with_name(path.name + ".partial")
    with tmp.open("w") as fh:
        head = json.dumps(doc)[:-1]
        fh.write(head + ', "traceEvents": [\n')
        first = True
        for k in range(copies):
            for e in events:
                if k:
                    e = dict(e)
                    if "ts" in e and e.get("ph") != "M":
                        e["ts"] = e["ts"] + k * span
                    if isinstance(e.get("id"), int):
                        e["id"] += k * top_id
                    if "args" in e and any(key in e["args"] for key in id_keys):
                        e["args"] = {key: (v + k * top_id if key in id_keys and isinstance(v, int) else v)
                                     for key, v in e["args"].items()}
                fh.write(("" if first else ",\n") + json.dumps(e))
                first = False
        fh.write("\n]}\n")
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------------------------
# Checks: both sides computed the same summaries
# --------------------------------------------------------------------------------------------


def nsys_tables(stdout: str):
    import polars as pl

    tables = {}
    for block in (b for b in stdout.split("\n\n") if "Total Time (ns)" in b):
        t = pl.read_csv(io.StringIO(block[block.index("Time (%)"):])).filter(pl.col("Name").is_not_null())
        tables["kernels" if "Instances" in t.columns else "api"] = t
    return tables


def check_same_summaries(coach_json: str, nsys_stdout: str) -> str:
    """coach load's top kernels and API calls against nsys stats' rows of the same names."""
    import polars as pl

    doc = json.loads(coach_json)["summary"]
    theirs = nsys_tables(nsys_stdout)
    checked = 0
    for ours, table, key, count in ((doc["top_kernels"], theirs["kernels"], "demangled_name", "Instances"),
                                    (doc["top_api"], theirs["api"], "name", "Num Calls")):
        if key == "name":
            table = table.with_columns(Name=pl.col("Name").str.replace(r"_v\d+$", ""))
        single = table.group_by("Name").agg(n=pl.len()).filter(pl.col("n") == 1)["Name"].to_list()
        rows = {r["Name"]: r for r in table.iter_rows(named=True) if r["Name"] in single}
        for r in ours:
            nv = rows.get(r[key])
            if nv is None:
                continue
            pairs = [(r["count"], nv[count]), (r["total_ns"], nv["Total Time (ns)"]), (r["min_ns"], nv["Min (ns)"]),
                     (r["max_ns"], nv["Max (ns)"]), (r["median_ns"], nv["Med (ns)"])]
            close = [(r["avg_ns"], nv["Avg (ns)"]), (r["stddev_ns"] or 0.0, nv["StdDev (ns)"])]
            if any(a != b for a, b in pairs) or any(abs(a - b) > 0.05 + 1e-9 * abs(a) for a, b in close):
                raise SystemExit(f"coach and nsys stats disagree on {r[key][:60]}: {r} vs {nv}")
            checked += 1
    if not checked:
        raise SystemExit("no summary row to compare between coach and nsys stats")
    return f"{checked} summary rows (kernels and API calls) agree in count, total, mean, median, min, max, stddev"


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


def case_nsys(path: Path, repeat: int, nsys: str, env: dict,
              baseline: Checkout | None = None) -> tuple[dict[str, list[Run]], str]:
    sides = checkouts(baseline)
    runs: dict[str, list[Run]] = {"coach load": [], "coach diagnose": [], "nsys stats": [],
                                  **{side_name("coach load", c): [] for c in sides[1:]}}
    command = [nsys, "stats", "--report", "gpukernsum,cudaapisum", "--format", "csv", "--output", "-", str(path)]
    for i in range(repeat):
        for c in sides if i % 2 == 0 else sides[::-1]:  # alternating which checkout goes first
            name = side_name("coach load", c)
            runs[name].append(measure(name, coach("load", str(path), "--json"), c.env(env), cwd=c.root))
        runs["nsys stats"].append(measure("nsys stats", command))
        runs["coach diagnose"].append(measure("coach diagnose", coach("diagnose", str(path), "--json"), env))
    note = check_same_summaries(runs["coach load"][0].stdout, runs["nsys stats"][0].stdout)
    docs = [json.loads(runs[side_name("coach load", c)][0].stdout) for c in sides]
    if any(d != docs[0] for d in docs[1:]):
        raise SystemExit("coach load printed different summaries from the two checkouts")
    return runs, note + (" (both checkouts print the same JSON)" if len(docs) > 1 else "")


def case_ranks(folder: Path, repeat: int, env: dict, work: Path,
               baseline: Checkout | None = None) -> tuple[dict[str, list[Run]], str]:
    sides = checkouts(baseline)
    runs: dict[str, list[Run]] = {side_name("coach load (cold cache)", c): [] for c in sides}
    for i in range(repeat):
        for c in sides if i % 2 == 0 else sides[::-1]:  # alternating which goes first
            cache = work / f"cache-{time.time_ns()}"
            name = side_name("coach load (cold cache)", c)
            runs[name].append(measure(name, coach("load", str(folder), "--json"),
                                      {**c.env(env), "COACH_CACHE": str(cache)}, cwd=c.root))
            shutil.rmtree(cache, ignore_errors=True)
    docs = [json.loads(rs[0].stdout) for rs in runs.values()]
    if any(d != docs[0] for d in docs[1:]):
        raise SystemExit("coach load printed different side-by-side tables from the two checkouts")
    same = " (both checkouts print the same JSON)" if len(docs) > 1 else ""
    return runs, f"{len(docs[0]['reports'])} reports side by side; slowest named: {docs[0]['slowest']}{same}"


def case_kineto(path: Path, repeat: int, env: dict, baseline: Checkout | None = None) -> tuple[dict[str, list[Run]], str]:
    sides = checkouts(baseline)
    runs: dict[str, list[Run]] = {**{side_name("coach load", c): [] for c in sides}, "python json.load": []}
    for i in range(repeat):
        for c in sides if i % 2 == 0 else sides[::-1]:
            name = side_name("coach load", c)
            runs[name].append(measure(name, coach("load", str(path), "--json"), c.env(env), cwd=c.root))
        runs["python json.load"].append(measure("python json.load", [
            sys.executable, "-c", "import json, sys; d = json.load(open(sys.argv[1])); print(len(d['traceEvents']))",
            str(path)]))
    docs = [json.loads(runs[side_name("coach load", c)][0].stdout) for c in sides]
    if any(_without_path(d) != _without_path(docs[0]) for d in docs[1:]):
        raise SystemExit("coach load printed different summaries from the two checkouts")
    doc = docs[0]
    return runs, (f"{path.stat().st_size / 1e6:.0f} MB, {runs['python json.load'][0].stdout.strip()} events; coach read "
                  f"{doc['summary']['counts']['kernels']:,} kernels, {doc['summary']['counts']['api']:,} API calls")


def _without_path(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "path"}


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def med(runs: list[Run], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in runs)


def cell(runs: list[Run], attr: str, scale: float, fmt: str) -> str:
    values = [getattr(r, attr) / scale for r in runs]
    return f"{fmt.format(statistics.median(values))} ({', '.join(fmt.format(v) for v in values)})"


def verdict(case: str, runs: dict[str, list[Run]], results: dict) -> str:
    if case == "nsys-1m":
        ratio = med(runs["coach load"], "wall_s") / med(runs["nsys stats"], "wall_s")
        ok = ratio <= 0.5 and med(runs["coach load"], "peak_bytes") < 1e9
        return (f"coach load / nsys stats = {ratio:.2f}x wall: **{'met' if ok else 'NOT met'}**"
                + _against_baseline(runs, "coach load"))
    if case == "nsys-10m":
        ten = med(runs["coach load"], "wall_s")
        one = results.get("nsys-1m", {}).get("coach load")
        ratio = f"{ten / med(one, 'wall_s'):.1f}x its 1M time" if one else "no 1M run to compare"
        ok = bool(one) and ten <= 12 * med(one, "wall_s") and med(runs["coach load"], "peak_bytes") < 6e9
        return f"{ratio}: **{'met' if ok else 'NOT met'}**"
    if case == "nsys-5m":
        five, peak = med(runs["coach load"], "wall_s"), med(runs["coach load"], "peak_bytes")
        one = results.get("nsys-1m", {}).get("coach load")
        if not one:
            return "no 1M run to compare: **not checked**"
        ratio = five / med(one, "wall_s")
        ok = ratio <= 6 and peak < 3e9
        # a prediction: 10M as twice the 5M run (linear from 5M on)
        pred_time = 2 * five / med(one, "wall_s")
        pred_peak = 2 * peak
        return (f"{ratio:.1f}x its 1M time, {peak / 1e9:.2f} GB: **{'met' if ok else 'NOT met'}**; predicted for 10M "
                f"(not measured: twice the 5M run, too low if the cost grows faster than the rows) {pred_time:.0f}x the 1M time and {pred_peak / 1e9:.1f} GB")
    side = next(iter(runs))
    limit = {"ranks-64": 3.0, "kineto-200mb": 2.5}[case]
    verdict = f"{med(runs[side], 'wall_s'):.2f} s: **{'met' if med(runs[side], 'wall_s') < limit else 'NOT met'}**"
    return verdict + _against_baseline(runs, side)


def _against_baseline(runs: dict[str, list[Run]], side: str) -> str:
    """``side`` against the same command of the baseline checkout, where the run has one."""
    before = next((s for s in runs if s != side and s.startswith(side.split(" (")[0] + " (")), None)
    if not before:
        return ""
    return (f"; against {before.rsplit('(', 1)[-1].rstrip(')').removeprefix('at ')} in the same run: "
            f"{med(runs[side], 'wall_s') / med(runs[before], 'wall_s'):.2f}x its wall time, "
            f"{med(runs[side], 'cpu_s') / med(runs[before], 'cpu_s'):.2f}x its CPU time, "
            f"{med(runs[side], 'peak_bytes') / med(runs[before], 'peak_bytes'):.2f}x its peak memory (medians)")


def ratios(case: str, runs: dict[str, list[Run]]) -> str:
    """Each side's medians against the side it is compared with (nsys stats, json.load): wall and CPU
    time. On a shared machine the CPU ratio moves less with the load than the wall ratio does."""
    base = {"nsys-1m": "nsys stats", "nsys-5m": "nsys stats", "nsys-10m": "nsys stats", "kineto-200mb": "python json.load"}.get(case)
    if base not in runs:
        return ""
    parts = [f"{side}: {med(rs, 'wall_s') / med(runs[base], 'wall_s'):.2f}x wall, "
             f"{med(rs, 'cpu_s') / med(runs[base], 'cpu_s'):.2f}x CPU" for side, rs in runs.items() if side != base]
    return f"Ratios to {base} (medians): " + "; ".join(parts) + "."


def _commit(root: Path) -> str | None:
    """The short commit of a checkout: git's, or the one ``git archive`` wrote into a tarball's header
    (not kept by tar), else the name of a file ``COMMIT`` at its root."""
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if out.returncode == 0 and Path(root, ".git").exists():
        return out.stdout.strip()
    marker = Path(root, "COMMIT")
    return marker.read_text().strip() if marker.is_file() else None


def provenance(nsys: str) -> dict[str, str]:
    import polars as pl

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    version = subprocess.run([nsys, "--version"], capture_output=True, text=True).stdout.strip() if shutil.which(nsys) else "-"
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu,
            "cores": str(os.cpu_count()),
            "memory": f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 1024**3:.0f} GiB",
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "polars": pl.__version__, "nsys": version, "coach commit": commit or "-",
            "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "bytecode": ("not written (PYTHONDONTWRITEBYTECODE is set: each run compiles the modules it imports)"
                         if os.environ.get("PYTHONDONTWRITEBYTECODE") else "cached (.pyc)")}


def render(results: dict, notes: dict, prov: dict, command: str, repeat: int) -> str:
    lines = ["# Scale benchmark", "",
             f"Written by `benchmarks/bench_scale.py`; median of {repeat} alternating runs per side (all runs in "
             "parentheses), each a separate process timed from spawn to exit. The load average before each run is "
             "listed: the machine is shared, and a run next to other work is slower.", ""]
    for case, runs in results.items():
        lines += [f"## {case}", "", f"{notes[case]}.", "", f"Goal: {GOALS[case]}. Result: {verdict(case, runs, results)}.",
                  *(["", ratios(case, runs)] if ratios(case, runs) else []),
                  "", "| | wall time, s | CPU time, s | peak memory, MiB | load average before |", "|---|---|---|---|---|"]
        for side, rs in runs.items():
            lines.append(f"| {side} | {cell(rs, 'wall_s', 1, '{:.2f}')} | {cell(rs, 'cpu_s', 1, '{:.2f}')} | "
                         f"{cell(rs, 'peak_bytes', 2**20, '{:.0f}')} | {', '.join(f'{r.load_before:.2f}' for r in rs)} |")
        lines.append("")
    lines += ["## Provenance", "", "| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in prov.items()],
              f"| command | `{command}` |", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    global MEMORY_LIMIT_BYTES
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side (default 3)")
    parser.add_argument("--nsys", default=shutil.which("nsys") or "nsys")
    parser.add_argument("--work", type=Path, help="folder for the built inputs (kept and reused)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another checkout of coach, run as a side of its own (coach load) in every case")
    parser.add_argument("--memory-limit-gb", type=float, default=MEMORY_LIMIT_BYTES / 1e9,
                        help="stop a run whose resident memory passes this (default 8)")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases: {', '.join(sorted(unknown))}")
    work = args.work or Path(tempfile.mkdtemp(prefix="coach-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "COACH_CACHE": str(work / "cache"), "COLUMNS": "80"}
    prov = provenance(args.nsys)
    baseline = None
    if args.baseline is not None:
        label = _commit(args.baseline) or args.baseline.name
        baseline = Checkout(f"at {label}", args.baseline.resolve())
        prov["baseline"] = f"{args.baseline} ({label})"
    results, notes = {}, {}
    MEMORY_LIMIT_BYTES = int(args.memory_limit_gb * 1e9)
    stopped = {}
    for case in cases:
        print(case, file=sys.stderr)
        try:
            if case.startswith("nsys-"):
                rows = {"nsys-1m": 1_000_000, "nsys-5m": 5_000_000}.get(case, 10_000_000)
                results[case], notes[case] = case_nsys(nsys_export(work, rows), args.repeat, args.nsys, env, baseline)
                notes[case] = f"{rows:,} kernels + {rows:,} API calls; " + notes[case]
            elif case == "ranks-64":
                results[case], notes[case] = case_ranks(ranks_folder(work), args.repeat, env, work, baseline)
            else:
                results[case], notes[case] = case_kineto(kineto_trace(work), args.repeat, env, baseline)
        except OverLimit as over:
            stopped[case] = str(over)
    command = shlex.join(["python", "benchmarks/bench_scale.py", *(argv if argv is not None else sys.argv[1:])])
    text = render(results, notes, prov, command, args.repeat)
    for case, why in stopped.items():
        text += f"\n## {case}\n\nGoal: {GOALS[case]}. Result: **NOT met**: {why}.\n"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_name(args.output.name + ".partial")
    tmp.write_text(text)
    tmp.replace(args.output)
    print(text)
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
