"""Every CUDA source of a scenario compiles for sm_90 with nvcc (no GPU needed), as plain C++17
with no headers, which is also what NVRTC accepts."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from coach.paths import scenarios_dir

SOURCES = sorted(scenarios_dir().glob("scenario-*/*.cu"))


def test_pilot_sources_exist():
    assert [p.name for p in SOURCES][:1] == ["particles.cu"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_compiles_for_sm90(source, tmp_path):
    done = subprocess.run(["nvcc", "-arch=sm_90", "--std=c++17", "-lineinfo", "-Xptxas", "-v", "-c", str(source),
                           "-o", str(tmp_path / "kernel.o")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kernel.o").stat().st_size > 0
    # no register spills: a planted problem must be the one the scenario is about
    assert "bytes spill stores" in done.stderr
    assert all(" 0 bytes spill stores" in line for line in done.stderr.splitlines() if "spill stores" in line)
