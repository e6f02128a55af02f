"""The README's table of the twenty performance scenarios is their recording: each speed-up is the
one in traces/h200/<id>/results.json, and the date it gives is the day they were recorded (the table
had kept an earlier recording's speed-ups, 17.37x for scenario 13 where the shipped one has 8.80x)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| (\d\d) \| .+ \| (Nsight Compute|Nsight Systems) \| ([\d.]+)x \|$", re.M)


def _results(number: str) -> dict:
    return json.loads((ROOT / "traces" / "h200" / f"scenario-{number}" / "results.json").read_text())


def test_readme_speedups_are_the_recorded_ones():
    rows = ROW.findall((ROOT / "README.md").read_text())
    assert [n for n, _, _ in rows] == [f"{i:02d}" for i in range(1, 21)]
    for number, tool, said in rows:
        results = _results(number)
        assert said == f"{results['speedup']:.2f}", (number, said, results["speedup"])
        assert tool == ("Nsight Compute" if results["profile_settings"]["ncu"] else "Nsight Systems"), number


def test_readme_says_the_day_they_were_recorded():
    readme = " ".join((ROOT / "README.md").read_text().split())
    said = re.search(r"All were recorded on one NVIDIA H200 \(([^)]*)\) on (\d{4}-\d\d-\d\d);", readme)
    assert said, "the scenarios' sentence is gone from the README"
    days = {_results(f"{i:02d}")["recorded_at"][:10] for i in range(1, 21)}
    assert days == {said.group(2)}
    drivers = {_results(f"{i:02d}")["provenance"]["gpu"]["driver"] for i in range(1, 21)}
    assert drivers == {re.search(r"driver ([\d.]+)", said.group(1)).group(1)}
