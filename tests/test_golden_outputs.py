"""Golden outputs: ``coach load --json`` and ``coach diagnose --json`` on every recorded timeline.

Each case's output is pinned in tests/data/golden/<case>.json (summary numbers, the full ranked
findings with their evidence, messages and details). The files were written by this module
(``COACH_UPDATE_GOLDEN=1 pytest tests/test_golden_outputs.py``) from the code as it was before the
timeline machinery was rewritten for scale (sorted sweeps instead of interval joins, shared derived
tables, dictionary-coded names), so any change in what a user sees shows up here. Where an output
changes on purpose, regenerate the file and say why in the commit.

Cases: every Nsight Systems export and PyTorch-profiler trace in tests/data, every timeline in
traces/, and synthetic larger ones made from recordings (tests/scale_support.py): the softmax
export laid end to end 400 times, and scenario 16 (copies and kernels) on two GPUs at once, so that
intervals of different devices and threads interleave.

Floats are compared to 1e-9 relative: a sum taken in another order may differ in its last bits.
Everything else (counts, nanoseconds, names, messages) must be identical.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from coach.cli import main as coach_main
from coach.ingest import load
from coach.model import save
from scale_support import replicate

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden"
OUT = Path(os.environ.get("COACH_GOLDEN_DIR") or GOLDEN)  # where to write or read them (to compare two versions)
UPDATE = os.environ.get("COACH_UPDATE_GOLDEN") == "1"

RECORDED = sorted(
    [p for pattern in ("*.sqlite", "*.json.gz", "*kineto*.json") for p in (ROOT / "tests" / "data").rglob(pattern)
     if GOLDEN not in p.parents]
    + [p.parent for p in (ROOT / "traces").rglob("coach-profile.json")
       if json.loads(p.read_text()).get("kind") == "timeline"]
)

SYNTHETIC = {
    # name: (recording, copies, devices)
    "synthetic-softmax-x400": (ROOT / "tests" / "data" / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite", 400, 1),
    "synthetic-scenario-16-two-gpus": (ROOT / "traces" / "h200" / "scenario-16" / "slow" / "nsys", 6, 2),
}


def case_name(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return "-".join(rel.parts).replace(".", "_")


def run_cli(args: list[str], capsys) -> object:
    try:
        coach_main(args)
    except SystemExit as stop:  # a file coach refuses: its one-line error is the output to keep
        return {"exit": stop.code, "error": capsys.readouterr().err.strip()}
    return json.loads(capsys.readouterr().out)


def outputs(path: str, capsys) -> dict:
    return {"load": run_cli(["load", path, "--json"], capsys), "diagnose": run_cli(["diagnose", path, "--json"], capsys)}


def check(name: str, got: dict) -> None:
    file = OUT / f"{name}.json"
    if UPDATE:
        OUT.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return
    assert file.is_file(), f"no golden output for {name}: run with COACH_UPDATE_GOLDEN=1"
    want = json.loads(file.read_text())
    differences = list(diff(want, got, name))
    assert not differences, "\n".join(differences[:20])


def diff(want, got, where: str):
    """Yield one line per difference between ``want`` and ``got``."""
    if isinstance(want, dict) and isinstance(got, dict):
        for k in sorted(set(want) | set(got)):
            if k not in got or k not in want:
                yield f"{where}.{k}: {'missing' if k not in got else 'unexpected'}"
            else:
                yield from diff(want[k], got[k], f"{where}.{k}")
    elif isinstance(want, list) and isinstance(got, list):
        if ".details." in where + "." and _canonical(want) == _canonical(got):
            return  # the same rows: a finding's detail tables list tied rows in no particular order
        if len(want) != len(got):
            yield f"{where}: {len(got)} items, expected {len(want)}"
        for i, (w, g) in enumerate(zip(want, got)):
            yield from diff(w, g, f"{where}[{i}]")
    elif isinstance(want, float) or isinstance(got, float):
        if not (isinstance(want, (int, float)) and isinstance(got, (int, float))
                and math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-9)):
            yield f"{where}: {got!r}, expected {want!r}"
    elif want != got:
        yield f"{where}: {got!r}, expected {want!r}"


def _canonical(rows: list) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


@pytest.fixture(autouse=True)
def from_root(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)  # paths in the output are as given: relative to the repository
    monkeypatch.setenv("COACH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.parametrize("path", RECORDED, ids=case_name)
def test_recorded(path, capsys):
    check(case_name(path), outputs(str(path.relative_to(ROOT)), capsys))


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic(name, tmp_path, capsys, monkeypatch):
    recording, copies, devices = SYNTHETIC[name]
    folder = save(replicate(load(recording), copies, devices), tmp_path / name)
    monkeypatch.chdir(tmp_path)
    check(name, outputs(name, capsys))


def test_side_by_side_of_the_recorded_ranks(capsys):
    check("side-by-side-nsys_ranks", run_cli(["load", "tests/data/nsys_ranks", "--json"], capsys))
