"""Shared test helpers. Recorded traces live in tests/data/<situation>/ with a PROVENANCE.md each."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# Without a GPU, Triton kernels run in Triton's CPU interpreter. Triton decides at import time whether
# its own jit functions (tl.max, ...) are interpreted, so this must be set before any test imports it.
def _has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout


if not _has_gpu():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where a GPU and torch are present."""
    try:
        import torch  # noqa: F401

        have_gpu = torch.cuda.is_available()
    except Exception:
        have_gpu = False
    if have_gpu:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with torch")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_runtest_setup(item):
    """A test marked ``nsys`` needs Nsight Systems' nsys (``path=``: that one): skipped where it is
    missing, but in CI (``CI`` set) .ci/run installs Debian's nsight-systems, so there it fails."""
    mark = item.get_closest_marker("nsys")
    if mark is None:
        return
    path = mark.kwargs.get("path")
    found = Path(path).is_file() if path else shutil.which("nsys") is not None
    if found:
        return
    what = f"Nsight Systems' nsys ({path or 'on PATH'})"
    if os.environ.get("CI"):
        pytest.fail(f"needs {what}: .ci/run installs Debian's nsight-systems (non-free); it is missing", pytrace=False)
    pytest.skip(f"needs {what} (Debian: apt-get install nsight-systems, from non-free)")


@pytest.fixture(autouse=True)
def _no_user_calibrations(tmp_path_factory, monkeypatch):
    """Tests never see the calibrations of whoever runs them: ceilings come from hardware/ alone."""
    monkeypatch.setenv("COACH_HOME", str(tmp_path_factory.mktemp("coach_home")))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def strided_ncu_rep() -> Path:
    return DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"


@pytest.fixture(scope="session")
def softmax_nsys_sqlite() -> Path:
    return DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"


@pytest.fixture(scope="session")
def softmax_nsys_rep() -> Path:
    return DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.nsys-rep"


@pytest.fixture(scope="session")
def softmax_kineto_json() -> Path:
    return DATA / "kineto_torch_softmax" / "torch_softmax_kineto.json"


@pytest.fixture
def copy_to_tmp(tmp_path):
    """Copy a data file into tmp_path (for tests that damage it)."""

    def _copy(src: Path, name: str | None = None) -> Path:
        dst = tmp_path / (name or src.name)
        shutil.copyfile(src, dst)
        return dst

    return _copy
