"""``coach ladder NAME``: a version ladder's rungs with their recorded (or live) measurements."""

from __future__ import annotations

from pathlib import Path

import typer

from coach.cli.main import app
from coach.errors import CoachError, InputError


@app.command("ladder")
def ladder_cmd(
    name: str = typer.Argument(..., help="The ladder: a folder under kernels/ (reduction, scan, transpose, softmax, layernorm, gemv)."),
    gpu: str = typer.Option("h200", "--gpu", help="Whose recorded results to show: traces/<GPU>/ladders/NAME/results.json."),
    results: Path | None = typer.Option(None, "--results", help="Show this results.json instead of the recorded one."),
    live: bool = typer.Option(False, "--live", help="Measure now on this machine's GPU (needs torch, triton and cupy), then show."),
    out: Path | None = typer.Option(None, "--out", help="With --live: where the runner writes NAME/results.json (default: a temporary folder)."),
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
) -> None:
    """Show each rung of a version ladder: its change, median time, GB/s, % of the measured DRAM
    ceiling, speed-up over the previous rung and over rung 00, and the ratio to PyTorch; then the
    peers timed in the same run, and each rung's prediction beside what was measured.

    Examples:

        coach ladder reduction

        coach ladder softmax --json

        coach ladder transpose --live --out /tmp/ladders
    """
    from coach.ladders import load_definition, load_results, results_path, rung_table

    defn = load_definition(name)
    if live:
        if results is not None:
            raise InputError("--results", "--live measures anew; leave out --results")
        path = _measure_live(name, out)
    else:
        path = results or results_path(name, gpu)
        if not path.is_file():
            raise InputError(path, f"no recorded results for ladder {name!r} on {gpu}; run `coach ladder {name} --live` "
                                   "on a GPU machine, or pass --results FILE")
    res = load_results(path)
    if res.ladder != defn.name:
        raise InputError(path, f"holds results of ladder {res.ladder!r}, not {defn.name!r}")
    rows = rung_table(defn, res)
    if as_json:
        _print_json(defn, res, rows)
    else:
        _print_table(defn, res, rows)


def _measure_live(name: str, out: Path | None) -> Path:
    import tempfile

    from coach.capture import ladder as runner

    folder = out or Path(tempfile.mkdtemp(prefix="coach-ladder-"))
    try:
        rc = runner.main(["run", name, "--out", str(folder)])
    except ImportError as err:
        raise CoachError(f"--live needs torch, triton and cupy on a machine with a GPU ({err}); "
                         "pip install 'coach[gpu]'") from None
    path = folder / name / "results.json"
    if rc != 0 or not path.is_file():
        raise CoachError(f"measuring ladder {name!r} failed (see the messages above); partial results in {folder}")
    return path


def _print_json(defn, res, rows) -> None:
    from coach.cli.output import print_json

    print_json({
        "ladder": defn.name, "title": defn.title, "gpu": res.gpu, "synthetic": res.synthetic,
        "ceiling": {"name": res.ceiling_name, "bytes_per_s": res.ceiling_bytes_per_s},
        "baseline": res.baseline, "goal": defn.goal, "goal_bytes_per_s": defn.goal_bytes_per_s,
        "provenance": dict(res.provenance),
        "rungs": [{
            "rung": row.rung.key, "title": row.rung.title, "change": row.rung.change, "reason": row.rung.reason,
            "prediction": row.rung.prediction, "measured": row.rung.measured, "why": row.rung.why,
            "status": row.result.status if row.result else "not run",
            "error": row.result.error if row.result else "",
            "time_s": row.result.time_s if row.result else None,
            "bytes_per_s": row.result.bytes_per_s if row.result else None,
            "pct_of_ceiling": row.pct_of_ceiling, "vs_previous": row.vs_previous, "vs_first": row.vs_first,
            "vs_baseline": row.vs_baseline,
        } for row in rows],
        "peers": [{"peer": p.key, "status": p.status, "time_s": p.time_s, "bytes_per_s": p.bytes_per_s,
                   "error": p.error} for p in res.peers],
    })


def _print_table(defn, res, rows) -> None:
    from rich.table import Table

    from coach.cli.output import console
    from coach.ladders import percent_of

    if res.synthetic:
        console.print("[bold yellow]synthetic results (a test fixture), not a measurement[/]")
    ceiling = f"{res.ceiling_bytes_per_s / 1e12:.2f} TB/s" if res.ceiling_bytes_per_s else "unknown"
    t = Table(title=f"{defn.title} on the {res.gpu}",
              caption=f"% of the measured {_ceiling_words(res.ceiling_name)} ceiling ({ceiling}); x: time ratios, "
                      f"> 1 is faster (x prev: over the previous correct rung; x base: over {res.baseline})")
    for col in ("#", "rung", "time", "GB/s", "% ceil", "x prev", "x v0", "x base"):
        t.add_column(col, justify="left" if col in ("#", "rung") else "right", no_wrap=col != "rung")
    failures = []
    for row in rows:
        m = row.result
        if m is None or m.status != "ok":
            status = "not run" if m is None else m.status
            t.add_row(row.rung.id, row.rung.title, f"[red]{status}[/]", "-", "-", "-", "-", "-")
            if m is not None:
                failures.append(f"{row.rung.key}: {m.status}: {m.error}")
            continue
        t.add_row(row.rung.id, row.rung.title, _time(m.time_s), f"{m.bytes_per_s / 1e9:,.0f}",
                  _num(row.pct_of_ceiling, "{:.1f}"), _num(row.vs_previous, "{:.2f}"), _num(row.vs_first, "{:.1f}"),
                  _num(row.vs_baseline, "{:.2f}"))
    console.print(t)
    for line in failures:
        console.print(f"[red]{line}[/]")
    failures.clear()

    p = Table(title="Peers, same run")
    for col in ("peer", "time", "GB/s", "% ceil"):
        p.add_column(col, justify="left" if col == "peer" else "right")
    for peer in res.peers:
        if peer.status != "ok":
            p.add_row(peer.key, f"[red]{peer.status}[/]", "-", "-")
            failures.append(f"{peer.key}: {peer.status}: {peer.error}")
        else:
            p.add_row(peer.key, _time(peer.time_s), f"{peer.bytes_per_s / 1e9:,.0f}",
                      _num(percent_of(peer.bytes_per_s, res.ceiling_bytes_per_s), "{:.1f}"))
    console.print(p)
    for line in failures:
        console.print(f"[red]{line}[/]")

    last = next((r for r in reversed(rows) if r.result is not None and r.result.status == "ok"), None)
    if last is not None:
        met = last.result.bytes_per_s >= defn.goal_bytes_per_s
        console.print(f"goal: {defn.goal} -> last correct rung {last.rung.key} at "
                      f"{last.result.bytes_per_s / 1e12:.2f} TB/s ({'met' if met else 'not met'})")
    for row in rows:
        console.print(f"[bold]{row.rung.key}[/] predicted: {row.rung.prediction}")
        if row.rung.measured:
            console.print(f"    measured: {row.rung.measured}" + (f" - why: {row.rung.why}" if row.rung.why else ""))
    prov = res.provenance
    console.print(f"[dim]{prov.get('gpu_name', res.gpu)}, driver {prov.get('driver')}, CUDA {prov.get('cuda')}, "
                  f"torch {prov.get('torch')}, triton {prov.get('triton')}, cupy {prov.get('cupy')}, {prov.get('date')}, "
                  f"commit {str(prov.get('git_commit'))[:12]}; {res.path}[/]")


def _ceiling_words(name: str) -> str:
    return {"dram_copy_bandwidth_bytes_per_s": "DRAM copy (read + write)",
            "dram_read_bandwidth_bytes_per_s": "DRAM read"}.get(name, name)


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)
