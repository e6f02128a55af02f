#!/usr/bin/env python3
"""Merge chosen measurements of a newer calibration run into a stored one, without replacing the rest.

    scripts/merge-calibration.py NEW.json hardware/measured/h200.json NAME [NAME...]

Each named measurement of NEW.json (written by ``python -m coach.capture.calibrate``) is copied into
the stored file with the provenance of the run that made it (``measurements.<name>.provenance``), so
``coach numbers`` names that run for it and the file's own provenance for every other value. The two
runs must be of the same GPU model; a measurement the stored file already has from its own run is not
replaced (the stored ceilings are what every scenario's recorded values were computed with).
Standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    new_path, stored_path, names = Path(argv[0]), Path(argv[1]), argv[2:]
    try:
        new, stored = json.loads(new_path.read_text()), json.loads(stored_path.read_text())
    except (OSError, ValueError) as err:
        print(f"merge-calibration: cannot read the calibrations: {err}", file=sys.stderr)
        return 1
    for path, doc in ((new_path, new), (stored_path, stored)):
        if not isinstance(doc, dict) or doc.get("schema") != "coach-calibration/1":
            print(f"{path}: not a calibration file (schema coach-calibration/1)", file=sys.stderr)
            return 1
    gpu_new, gpu_stored = new["provenance"].get("gpu_name"), stored["provenance"].get("gpu_name")
    if gpu_new != gpu_stored:
        print(f"{new_path}: measured on {gpu_new}, but {stored_path} is for {gpu_stored}", file=sys.stderr)
        return 1
    for name in names:
        entry = new["measurements"].get(name)
        if not isinstance(entry, dict):
            print(f"{new_path}: has no measurement '{name}'", file=sys.stderr)
            return 1
        old = stored["measurements"].get(name)
        if isinstance(old, dict) and "provenance" not in old:
            print(f"{stored_path}: '{name}' is one of its own run's measurements: not replaced", file=sys.stderr)
            return 1
    for name in names:
        stored["measurements"][name] = {**new["measurements"][name], "provenance": new["provenance"]}
        print(f"{name}: {new['measurements'][name]['value']!r} from the run of {new['provenance'].get('date')}")
    tmp = stored_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(stored, indent=2) + "\n")
    tmp.replace(stored_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
