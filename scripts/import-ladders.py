#!/usr/bin/env python3
"""Import a ladder run (the folder `python -m coach.capture.ladder run ... --out RUN_DIR` wrote) into
traces/<gpu>/ladders/: every `results*.json` as it is, and each ladder's Nsight Compute report as the
compact Parquet profile the CLI and the dashboard read (the `.ncu-rep` itself stays out of the repo).

    scripts/import-ladders.py RUN_DIR [--gpu h200] [--dest traces]

A ladder is any folder under RUN_DIR holding a results.json (nested names: RUN_DIR/matmul/fp32/).
The Parquet folder is written beside its final name and renamed into place, so an interrupted import
leaves no half-written profile; a ladder whose results.json does not read is refused with one line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coach.errors import CoachError, InputError  # noqa: E402
from coach.ingest import load  # noqa: E402
from coach.ladders import RESULTS_FILE, load_results  # noqa: E402
from coach.model import save  # noqa: E402


def import_ladder(run_ladder: Path, dest_ladder: Path) -> str:
    """Copy one ladder's results files and save its Nsight Compute report as Parquet; say what was done."""
    doc = json.loads((run_ladder / RESULTS_FILE).read_text(encoding="utf-8"))
    load_results(run_ladder / RESULTS_FILE)  # refuse a file the readers would refuse
    dest_ladder.mkdir(parents=True, exist_ok=True)
    for path in sorted(run_ladder.glob("results*.json")):
        shutil.copyfile(path, dest_ladder / path.name)
    report = (doc.get("ncu") or {}).get("report")
    if not report or not (run_ladder / report).is_file():
        return f"{doc['ladder']}: results only (no Nsight Compute report)"
    profile = load(run_ladder / report)
    profile.source.meta.update({  # type: ignore[union-attr] - meta is a plain dict here
        "command": doc["ncu"].get("command", ""),
        "date": doc.get("provenance", {}).get("date"),
        "driver": doc.get("provenance", {}).get("driver"),
        "git_commit": doc.get("provenance", {}).get("git_commit"),
        "gpu": doc.get("gpu"),
        "recorded_by": "python3 -m coach.capture.ladder run ... --ncu",
    })
    with tempfile.TemporaryDirectory(dir=dest_ladder) as tmp:
        save(profile, Path(tmp) / "ncu")
        final = dest_ladder / "ncu"
        if final.exists():
            shutil.rmtree(final)
        (Path(tmp) / "ncu").rename(final)
    return f"{doc['ladder']}: results and {profile.launches.height} profiled launches"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--gpu", default="h200", help="the folder under traces/ (default h200)")
    parser.add_argument("--dest", type=Path, default=ROOT / "traces", help="the traces folder")
    args = parser.parse_args(argv)
    found = sorted(p.parent for p in args.run_dir.glob(f"**/{RESULTS_FILE}"))
    if not found:
        print(f"{args.run_dir}: no {RESULTS_FILE} under it: not a ladder run", file=sys.stderr)
        return 2
    try:
        for run_ladder in found:
            name = run_ladder.relative_to(args.run_dir).as_posix()
            print(import_ladder(run_ladder, args.dest / args.gpu / "ladders" / name))
    except (CoachError, InputError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
