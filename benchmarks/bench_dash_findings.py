"""Dashboard benchmark: the explorer's findings for a report of many launches of one kernel.

A training loop profiled with Nsight Compute gives the same kernel hundreds of times, and every
launch raises the same findings. The report here is synthetic, built from a real row: the recorded
``copy_strided`` launch of tests/data/ncu_strided_copy/nvidia/raw.csv (``ncu --csv --page raw`` on
an H200, see its PROVENANCE.md) repeated N times under new IDs. For N = 2, 105 and 1,000 launches,
each ``--repeat`` times with a fresh app, medians reported:

- read: ``coach.ingest.load`` of the CSV (the reader's cost, the same for any page);
- page: the explorer's body for the report and its first page of findings, diagnosis included,
  serialised as Dash sends them (``report_body`` + ``findings_view``);
- beside it, what the page drew before findings were grouped: one card per finding
  (``finding_card`` for each), serialised the same way.

    python benchmarks/bench_dash_findings.py          # writes benchmarks/results/dash_findings.md
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

RAW = ROOT / "tests" / "data" / "ncu_strided_copy" / "nvidia" / "raw.csv"
RESULTS = ROOT / "benchmarks" / "results" / "dash_findings.md"
SIZES = (2, 105, 1000)
REPEAT = 3


def write_report(path: Path, launches: int) -> Path:
    """The recorded launch 0 of raw.csv, ``launches`` times with IDs 0, 1, ... (synthetic)."""
    rows = list(csv.reader(io.StringIO(RAW.read_text())))
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(rows[0])
    w.writerow(rows[1])
    for i in range(launches):
        w.writerow([str(i), *rows[2][1:]])
    path.write_text(out.getvalue())
    return path


def _bytes(component) -> int:
    return len(json.dumps(component.to_plotly_json(), default=lambda o: o.to_plotly_json() if hasattr(o, "to_plotly_json")
                          else str(o)))


def once(path: Path) -> dict[str, float]:
    from coach.app import Settings, analysis, create_app
    from coach.app.components import finding_card
    from coach.app.pages import explore
    from coach.ingest import load

    t0 = time.perf_counter()
    profile = load(path)
    t1 = time.perf_counter()
    app = create_app(Settings(traces_dir=path.parent / "none"))
    report = app.ctx.reports.add(path.name, profile)
    body = explore.report_body(app.ctx, report)
    findings, _, _ = explore.findings_view(report, explore.ALL_KERNELS, 0)
    page_bytes = _bytes(body) + _bytes(findings)
    t2 = time.perf_counter()
    found = analysis.findings(profile)
    cards = [finding_card(f, top=i == 0) for i, f in enumerate(found) if not analysis.is_note(f)]
    card_bytes = sum(_bytes(c) for c in cards)
    t3 = time.perf_counter()
    shown = json.dumps(findings.to_plotly_json(), default=lambda o: o.to_plotly_json() if hasattr(o, "to_plotly_json")
                       else str(o)).count('"card finding')
    return {"read_s": t1 - t0, "page_s": t2 - t1, "page_bytes": page_bytes, "findings": len(cards),
            "cards": shown, "per_finding_s": t3 - t2, "per_finding_bytes": card_bytes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=REPEAT)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-findings-") as tmp:
        once(write_report(Path(tmp) / "warm-up.csv", SIZES[0]))  # imports and first-call costs, not timed
        for n in SIZES:
            path = write_report(Path(tmp) / f"copy_strided_x{n}.csv", n)
            runs = [once(path) for _ in range(args.repeat)]
            results[n] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(n, results[n], file=sys.stderr)
    base = results[SIZES[0]]
    rows = []
    for n, r in results.items():
        rows.append(f"| {n:,} | {r['findings']:,.0f} | {r['cards']:.0f} | {r['read_s']:.2f} s | {r['page_s']:.2f} s "
                    f"(×{r['page_s'] / base['page_s']:.2f}) | {r['page_bytes'] / 1e3:,.0f} kB | "
                    f"{r['per_finding_bytes'] / 1e3:,.0f} kB (×{r['per_finding_bytes'] / r['page_bytes']:.1f} the page) |")
    import dash

    text = "\n".join([
        "# Report explorer: findings of a report of many launches",
        "",
        f"Measured {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by `python benchmarks/bench_dash_findings.py` "
        f"(medians of {args.repeat} runs, a fresh app each run).",
        "",
        "- report: synthetic, the recorded `copy_strided` launch of `tests/data/ncu_strided_copy/nvidia/raw.csv` "
        "(an H200, see its PROVENANCE.md) repeated N times under new IDs; every launch raises the same two findings",
        f"- machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, polars {pl.__version__}, dash "
        f"{dash.__version__}; load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
        "(the machine is shared)",
        "",
        "| launches | findings | cards drawn | read the CSV | build the page (diagnosis included; × the 2-launch page) "
        "| page sent | one card per finding, as before |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Grouped by kernel and rule, the findings of 1,000 launches are as many cards as those of 2; the page's "
        "size still grows with the kernel table (every launch, up to 500) and the roofline's data.",
        "",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
