"""A regular (non-editable) install works outside the checkout: the wheel carries the data folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    pytest.importorskip("hatchling")
    build = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(build), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(build.glob("coach-*.whl"))
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=600)
    return site


def run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("COACH_DATA", None)
    return subprocess.run([sys.executable, "-m", "coach", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_installed_package_finds_its_data_outside_the_checkout(installed, tmp_path):
    code = "import coach, coach.paths as p; print(coach.__file__); print(p.data_root())"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(installed)},
                       capture_output=True, text=True)
    module, data = r.stdout.split()
    assert module.startswith(str(installed)) and data == str(installed / "coach" / "_data")
    for folder in ("scenarios", "kernels", "hardware", "traces"):
        assert (installed / "coach" / "_data" / folder).is_dir(), folder


def test_installed_coach_loads_a_shipped_trace_and_runs_a_scenario(installed, tmp_path):
    trace = installed / "coach" / "_data" / "traces" / "h200" / "scenario-01" / "slow" / "ncu"
    r = run(installed, tmp_path, "load", str(trace))
    assert r.returncode == 0, r.stderr
    assert "drift_x_aos" in r.stdout and "NVIDIA H200" in r.stdout
    r = run(installed, tmp_path, "run", "scenario-01", "--no-interactive")
    assert r.returncode == 0, r.stderr
    assert "expected first finding: uncoalesced-global-access: matches" in r.stdout
