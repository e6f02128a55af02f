"""The CLI's error contract: usage errors and CoachErrors are one short message and a non-zero exit."""

import subprocess
import sys

import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "coach", *args], capture_output=True, text=True)


@pytest.mark.parametrize("args", [("diagnose",), ("load",), ("nonsense",)])
def test_usage_errors_exit_2_without_traceback(args):
    r = run(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_missing_file_is_one_line(tmp_path):
    r = run("load", str(tmp_path / "nope.ncu-rep"))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("coach ")
