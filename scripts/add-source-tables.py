"""Add the source-counter tables to recorded scenario traces from the full reports they keep.

    python scripts/add-source-tables.py [TRACES]      # default: the project's traces/

For each ``TRACES/<gpu>/<scenario>/<variant>/report.ncu-rep`` (kept where a scenario's
``keep_ncu_rep`` asks for it), read the report, match its source lines to the scenario's files
(``coach.recordings.with_scenario_sources``) and write the ``sass``, ``stall_samples`` and
``source_files`` tables into ``<variant>/ncu/`` beside the tables already saved from the same
report, adding their names to the folder's header. The other tables are left as they are. A
recording imported after these tables existed has them already; this is for the ones before.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coach import scenarios
from coach.ingest import load
from coach.model import SAVED_MARKER
from coach.paths import traces_dir
from coach.recordings import KEPT_NCU_REP, with_scenario_sources

TABLES = ("sass", "stall_samples", "source_files")


def main(argv: list[str]) -> int:
    base = Path(argv[0]) if argv else traces_dir()
    done = 0
    for report in sorted(base.glob(f"*/*/*/{KEPT_NCU_REP}")):
        folder = report.parent / "ncu"
        header_path = folder / SAVED_MARKER
        if not header_path.is_file():
            print(f"{report}: no saved ncu profile beside it; skipped", file=sys.stderr)
            continue
        scenario = scenarios.find(report.parent.parent.name)
        profile = with_scenario_sources(load(report), scenario)
        for name in TABLES:
            tmp = folder / f".{name}.parquet.tmp"
            getattr(profile, name).write_parquet(tmp, compression="zstd", compression_level=19, statistics=False)
            tmp.replace(folder / f"{name}.parquet")
        header = json.loads(header_path.read_text())
        header["tables"] = sorted(set(header["tables"]) | set(TABLES))
        tmp = folder / f".{SAVED_MARKER}.tmp"
        tmp.write_text(json.dumps(header, indent=2, sort_keys=True, default=str) + "\n")
        tmp.replace(header_path)
        print(f"{folder}: sass {profile.sass.height} rows, stall_samples {profile.stall_samples.height}, "
              f"source_files {profile.source_files.height}")
        done += 1
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
