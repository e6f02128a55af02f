"""``coach ladder NAME``: a version ladder's rungs with their recorded (or live) measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from coach.cli.main import app
from coach.errors import CoachError, InputError


@app.command("ladder")
def ladder_cmd(
    name: str = typer.Argument(..., help="The ladder: a folder under kernels/ (reduction, scan, transpose, softmax, "
                                         "layernorm, gemv, matmul/fp32, ...), or a folder of ladders (matmul) for each of them."),
    gpu: str = typer.Option("h200", "--gpu", help="Whose recorded results to show: traces/<GPU>/ladders/NAME/results.json."),
    size: str | None = typer.Option(None, "--size", help="Show the results of this size of the problem (default: the "
                                                         "ladder's main size, results.json)."),
    results: Path | None = typer.Option(None, "--results", help="Show this results.json instead of the recorded one."),
    live: bool = typer.Option(False, "--live", help="Measure now on this machine's GPU (needs torch, triton and cupy), then show."),
    out: Path | None = typer.Option(None, "--out", help="With --live: where the runner writes NAME/results.json (default: a temporary folder)."),
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
    brief: bool = typer.Option(False, "--brief", help="The rung table and the goal only (no peers, predictions or provenance)."),
) -> None:
    """Show each rung of a version ladder: its change, median time, achieved rate (GB/s, or TFLOP/s
    for a compute-bound ladder), % of the measured ceiling, speed-up over the previous rung and over
    rung 00, and the ratio to the baseline library; then the peers timed in the same run, whether
    the goal is met, and each rung's prediction beside what was measured.

    Examples:

        coach ladder reduction

        coach ladder matmul

        coach ladder matmul/fp32 --size h200_8192

        coach ladder softmax --json

        coach ladder matmul --brief

        coach ladder transpose --live --out /tmp/ladders
    """
    from coach.ladders import ladder_names, ladders_under

    names = [name] if name in ladder_names() else ladders_under(name)
    if not names:
        from coach.ladders import load_definition

        load_definition(name)  # raises the error that names the known ladders
    if len(names) > 1 and results is not None:
        raise InputError("--results", f"{name!r} holds {len(names)} ladders; name one of them with --results")
    tables, missing = [], []
    for n in names:
        try:
            tables.append(_load(n, gpu, size, results, live, out))
        except InputError as err:
            if names == [name]:
                raise
            missing.append(f"{n}: {err}")  # a family shows the ladders it can; the others say why not
    if not tables:
        raise InputError(name, "none of its ladders has results to show: " + "; ".join(missing))
    if as_json:
        from coach.cli.output import print_json

        docs = [_as_json(*table) for table in tables]
        print_json(docs[0] if names == [name] else {"ladders": docs, "not_shown": missing})
    else:
        from coach.cli.output import console

        for table in tables:
            _print_table(*table, brief=brief)
        for line in missing:
            console.print(f"[yellow]not shown: {line}[/]")


def _load(name: str, gpu: str, size: str | None, results: Path | None, live: bool, out: Path | None) -> tuple:
    """A ladder's definition, its results (recorded, given or measured now) and its rung table."""
    from coach.ladders import load_definition, load_results, results_path, rung_table

    defn = load_definition(name)
    if live:
        if results is not None:
            raise InputError("--results", "--live measures anew; leave out --results")
        path = _measure_live(name, out, size)
    else:
        path = results or results_path(name, gpu, main=defn.main_size)
        if not path.is_file():
            raise InputError(path, f"no recorded results for ladder {name!r} on {gpu}; run `coach ladder {name} --live` "
                                   "on a GPU machine, or pass --results FILE")
    res = load_results(path, size)
    if res.ladder != defn.name:
        raise InputError(path, f"holds results of ladder {res.ladder!r}, not {defn.name!r}")
    return defn, res, rung_table(defn, res)


def _measure_live(name: str, out: Path | None, size: str | None) -> Path:
    import tempfile

    from coach.capture import ladder as runner
    from coach.ladders import load_definition, results_file

    missing = _no_gpu()
    if missing:  # before any folder exists or any child starts: one line, nothing left behind
        raise CoachError(f"--live measures on this machine's GPU: {missing}; "
                         f"without one, `coach ladder {name}` shows the recorded results")
    temporary = out is None
    folder = out or Path(tempfile.mkdtemp(prefix="coach-ladder-"))
    try:
        rc = runner.main(["run", name, "--out", str(folder), *(["--size", size] if size else [])])
    except ImportError as err:
        _remove_if_empty(folder, temporary)
        raise CoachError(f"--live needs torch, triton and cupy on a machine with a GPU ({err}); "
                         "pip install 'coach[gpu]'") from None
    defn = load_definition(name)
    path = folder / name / results_file(size or defn.main_size, defn.main_size)
    if rc != 0 or not path.is_file():
        if _remove_if_empty(folder, temporary):
            raise CoachError(f"measuring ladder {name!r} failed (see the messages above); nothing was measured")
        raise CoachError(f"measuring ladder {name!r} failed (see the messages above); partial results in {folder}")
    return path


def _no_gpu() -> str | None:
    """Why this machine cannot measure a ladder (no torch, no CUDA device), or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'coach[gpu]')"
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is built without CUDA"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device (nvidia-smi lists the GPUs the driver sees)"
    return None


def _remove_if_empty(folder: Path, temporary: bool) -> bool:
    """Remove a temporary results folder that holds no results file; True when removed."""
    import shutil

    if not temporary or any(folder.rglob("results*.json")):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def _as_json(defn, res, rows) -> dict[str, Any]:
    from coach.ladders import goal_verdict

    unit, verdict = defn.unit, goal_verdict(defn, rows, res.size_name)
    return {
        "ladder": defn.name, "title": defn.title, "gpu": res.gpu, "synthetic": res.synthetic, "size": res.size_name,
        "unit": unit,
        "ceiling": {"name": res.ceiling_name, "unit": res.ceiling_unit, "value": res.ceiling_value,
                    "bytes_per_s": res.ceiling_bytes_per_s, "calibrated": res.ceiling_calibrated,
                    "source": "measured", "note": res.ceiling_note},
        "baseline": res.baseline, "goal": defn.goal, "goal_bytes_per_s": defn.goal_bytes_per_s,
        "goal_flop_per_s": defn.goal_flop_per_s, "goal_ratio_to_baseline": defn.goal_ratio_to_baseline,
        "goal_met": {"last": verdict.last and verdict.last.rung.key, "last_met": verdict.last_met,
                     "best": verdict.best and verdict.best.rung.key, "best_met": verdict.best_met},
        "provenance": dict(res.provenance),
        "rungs": [{
            "rung": row.rung.key, "title": row.rung.title, "change": row.rung.change, "reason": row.rung.reason,
            "prediction": row.rung.prediction, "measured": row.rung.measured, "why": row.rung.why,
            "status": row.result.status if row.result else "not run",
            "error": row.result.error if row.result else "",
            "time_s": row.result.time_s if row.result else None,
            "bytes_per_s": row.result.bytes_per_s if row.result else None,
            "flop_per_s": row.result.flop_per_s if row.result else None,
            "rate": row.rate, "pct_of_ceiling": row.pct_of_ceiling, "vs_previous": row.vs_previous,
            "vs_first": row.vs_first, "vs_baseline": row.vs_baseline,
        } for row in rows],
        "peers": [{"peer": p.key, "status": p.status, "time_s": p.time_s, "bytes_per_s": p.bytes_per_s,
                   "flop_per_s": p.flop_per_s, "rate": p.rate(unit), "error": p.error} for p in res.peers],
    }


def _print_table(defn, res, rows, brief: bool = False) -> None:
    from rich.table import Table

    from coach.cli.output import console, fit_table
    from coach.ladders import FLOPS, goal_verdict, percent_of

    compute = defn.unit == FLOPS
    rate_col, show_rate = ("TFLOP/s", lambda r: f"{r / 1e12:,.1f}") if compute else ("GB/s", lambda r: f"{r / 1e9:,.0f}")
    if res.synthetic:
        console.print("[bold yellow]synthetic results (a test fixture), not a measurement[/]")
    ceiling = _rate_text(res.ceiling_value, compute) if res.ceiling_value else "unknown"
    size = "" if res.size_name == defn.main_size else f", size {res.size_name}"
    caption = (f"% of the measured {_ceiling_words(res.ceiling_name)} ceiling ({ceiling}"
               + (f": {res.ceiling_note}" if res.ceiling_note else "") + "); x: time ratios, "
               f"> 1 is faster (x prev: over the previous correct rung; x base: over {res.baseline})")
    table_rows, failures = [], []
    for row in rows:
        m = row.result
        if m is None or m.status != "ok":
            status = "not run" if m is None else m.status
            table_rows.append([row.rung.id, row.rung.title, f"[red]{status}[/]", "-", "-", "-", "-", "-"])
            if m is not None:
                failures.append(f"{row.rung.key}: {m.status}: {m.error}")
            continue
        table_rows.append([row.rung.id, row.rung.title, _time(m.time_s), show_rate(row.rate),
                           _num(row.pct_of_ceiling, "{:.1f}"), _num(row.vs_previous, "{:.2f}"),
                           _num(row.vs_first, "{:.1f}"), _num(row.vs_baseline, "{:.2f}")])
    fit_table(f"{defn.title} on the {res.gpu}{size}",
              [(c, "left" if c in ("#", "rung") else "right") for c in ("#", "rung", "time", rate_col, "% ceil",
                                                                         "x prev", "x v0", "x base")],
              table_rows, names=(1,), wrap=True, name_min=1)
    console.print(f"[dim]{caption}[/]", highlight=False)
    for line in failures:
        console.print(f"[red]{line}[/]")
    failures.clear()

    if brief:
        verdict = goal_verdict(defn, rows, res.size_name)
        console.print(f"goal: {defn.goal} ({'met' if verdict.last_met else 'not met'} by the last correct rung)")
        return
    p = Table(title="Peers, same run")
    for col in ("peer", "time", rate_col, "% ceil"):
        p.add_column(col, justify="left" if col == "peer" else "right")
    for peer in res.peers:
        if peer.status != "ok":
            p.add_row(peer.key, f"[red]{peer.status}[/]", "-", "-")
            failures.append(f"{peer.key}: {peer.status}: {peer.error}")
        else:
            rate = peer.rate(defn.unit)
            p.add_row(peer.key, _time(peer.time_s), show_rate(rate), _num(percent_of(rate, res.ceiling_value), "{:.1f}"))
    console.print(p)
    for line in failures:
        console.print(f"[red]{line}[/]")

    verdict = goal_verdict(defn, rows, res.size_name)
    needs = verdict.needs(lambda rate: _rate_text(rate, compute), res.baseline)
    console.print(f"goal: {defn.goal} (needs {needs})")
    for label, row, met in (("last correct rung", verdict.last, verdict.last_met),
                            ("fastest rung", verdict.best, verdict.best_met)):
        if row is not None:
            ratio = f", x{row.vs_baseline:.2f} of {res.baseline}" if row.vs_baseline is not None else ""
            console.print(f"  {label} {row.rung.key}: {_rate_text(row.rate, compute)}{ratio} "
                          f"({'met' if met else 'not met'})")
    for row in rows:
        console.print(f"[bold]{row.rung.key}[/] predicted: {row.rung.prediction}")
        if row.rung.measured:
            console.print(f"    measured: {row.rung.measured}" + (f" - why: {row.rung.why}" if row.rung.why else ""))
    prov = res.provenance
    console.print(f"[dim]{prov.get('gpu_name', res.gpu)}, driver {prov.get('driver')}, CUDA {prov.get('cuda')}, "
                  f"torch {prov.get('torch')}, triton {prov.get('triton')}, cupy {prov.get('cupy')}, {prov.get('date')}, "
                  f"commit {str(prov.get('git_commit'))[:12]}; {res.path}[/]")


def _rate_text(rate: float | None, compute: bool) -> str:
    if rate is None:
        return "-"
    return f"{rate / 1e12:.1f} TFLOP/s" if compute else f"{rate / 1e12:.2f} TB/s"


def _ceiling_words(name: str) -> str:
    return {"dram_copy_bandwidth_bytes_per_s": "DRAM copy (read + write)",
            "dram_read_bandwidth_bytes_per_s": "DRAM read",
            "fp32_simt_matmul_flop_per_s": "FP32 CUDA-core matmul (cuBLAS, TF32 off)",
            "tf32_tensor_matmul_flop_per_s": "TF32 tensor-core matmul (cuBLAS)",
            "bf16_tensor_matmul_flop_per_s": "BF16 tensor-core matmul (cuBLAS)",
            "fp8_tensor_matmul_flop_per_s": "FP8 tensor-core matmul (cuBLASLt, e4m3)"}.get(name, name)


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)
