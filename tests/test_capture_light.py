"""The capture side and the CLI package import on a machine without polars, plotly, dash or
ncu_report (the GPU machine), and `python -m coach.capture` runs there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = "import sys\nfor name in ('polars', 'plotly', 'dash', 'ncu_report'):\n    sys.modules[name] = None\n"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_blocking_works():
    done = _run("import polars")
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr


def test_capture_and_cli_import_without_polars():
    done = _run("import coach.cli, coach.capture.__main__, coach.capture.record, coach.capture.profile, "
                "coach.capture.doctor, coach.capture.harness, coach.scenarios\n"
                "import coach.cli as c\n"
                "assert 'polars' not in {m for m in sys.modules if sys.modules[m] is not None}\n"
                "print(len(c.COMMAND_MODULES))")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 5


def test_capture_doctor_runs_without_polars():
    done = _run("import runpy\nsys.argv = ['coach.capture', 'doctor', '--json', '--quick']\n"
                "runpy.run_module('coach.capture', run_name='__main__')")
    assert done.returncode == 0, done.stderr
    checks = {c["name"]: c["status"] for c in json.loads(done.stdout)["checks"]}
    assert checks["polars"] == "missing"
