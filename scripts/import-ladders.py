#!/usr/bin/env python3
"""Import a ladder run (the folder `python -m coach.capture.ladder run ... --out RUN_DIR` wrote) into
traces/<gpu>/ladders/: every `results*.json` as it is, and each ladder's Nsight Compute report as the
compact Parquet profile the CLI and the dashboard read (the `.ncu-rep` itself stays out of the repo).

    scripts/import-ladders.py RUN_DIR [--gpu h200] [--dest traces] [--profiles-only]

A ladder is any folder under RUN_DIR holding a results.json (nested names: RUN_DIR/matmul/fp32/).
The Parquet folder is written beside its final name and renamed into place, so an interrupted import
leaves no half-written profile; a ladder whose results.json does not read is refused with one line.

--profiles-only re-reads the reports (after the report reader learned something new) and leaves the
recorded results*.json alone: they may have been corrected by hand since the import (a provenance
note says so), and the profile's provenance is taken from them. The run's results.json must be the
same recording (same ladder, same date), else the ladder is refused.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coach.errors import CoachError, InputError  # noqa: E402
from coach.ingest import load  # noqa: E402
from coach.ladders import RESULTS_FILE, load_results  # noqa: E402
from coach.model import save  # noqa: E402


def import_ladder(run_ladder: Path, dest_ladder: Path, profiles_only: bool = False) -> str:
    """Copy one ladder's results files (unless ``profiles_only``) and save its Nsight Compute report as
    Parquet; say what was done."""
    doc = _results(run_ladder / RESULTS_FILE)
    if profiles_only:
        recorded = _results(dest_ladder / RESULTS_FILE)
        if (recorded["ladder"], _date(recorded)) != (doc["ladder"], _date(doc)):
            raise InputError(dest_ladder / RESULTS_FILE, f"records {recorded['ladder']} of {_date(recorded)}, not the run's "
                                                         f"{doc['ladder']} of {_date(doc)}: not the same recording")
    else:
        dest_ladder.mkdir(parents=True, exist_ok=True)
        for path in sorted(run_ladder.glob("results*.json")):
            shutil.copyfile(path, dest_ladder / path.name)
        recorded = doc
    report = (doc.get("ncu") or {}).get("report")
    if not report or not (run_ladder / report).is_file():
        return f"{doc['ladder']}: " + ("no Nsight Compute report" if profiles_only else "results only (no Nsight Compute report)")
    profile = load(run_ladder / report)
    provenance = recorded.get("provenance", {})
    profile.source = replace(profile.source, meta={
        **dict(profile.source.meta),
        "command": doc["ncu"].get("command", ""),
        "date": provenance.get("date"),
        "driver": provenance.get("driver"),
        "git_commit": provenance.get("git_commit"),
        "gpu": recorded.get("gpu"),
        "recorded_by": "python3 -m coach.capture.ladder run ... --ncu",
    })
    with tempfile.TemporaryDirectory(dir=dest_ladder) as tmp:
        save(profile, Path(tmp) / "ncu")
        final = dest_ladder / "ncu"
        if final.exists():
            shutil.rmtree(final)
        (Path(tmp) / "ncu").rename(final)
    what = "profile" if profiles_only else "results and"
    return f"{doc['ladder']}: {what} {profile.launches.height} profiled launches"


def _results(path: Path) -> dict[str, Any]:
    """A results.json as a dict, once the ladder readers accept it."""
    load_results(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc.get("only"):
        raise SystemExit(f"{path}: a trial of {', '.join(doc['only'])} alone (ladder run --only); "
                         "record the whole ladder to import it")
    return doc


def _date(doc: dict[str, Any]) -> str | None:
    return (doc.get("provenance") or {}).get("date")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--gpu", default="h200", help="the folder under traces/ (default h200)")
    parser.add_argument("--dest", type=Path, default=ROOT / "traces", help="the traces folder")
    parser.add_argument("--profiles-only", action="store_true",
                        help="re-import the Nsight Compute reports only, keeping the recorded results*.json")
    args = parser.parse_args(argv)
    found = sorted(p.parent for p in args.run_dir.glob(f"**/{RESULTS_FILE}"))
    if not found:
        print(f"{args.run_dir}: no {RESULTS_FILE} under it: not a ladder run", file=sys.stderr)
        return 2
    try:
        for run_ladder in found:
            name = run_ladder.relative_to(args.run_dir).as_posix()
            print(import_ladder(run_ladder, args.dest / args.gpu / "ladders" / name, args.profiles_only))
        from coach import recorded_rates  # noqa: PLC0415 - after the import: the best rates read it

        print(f"best recorded rates: {recorded_rates.write(args.gpu, args.dest)}")
    except (CoachError, InputError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
