"""`coach doctor`: on a faked GPU machine, on a machine whose bundled nsys is not set up, and on this
machine as it is (no GPU)."""

from __future__ import annotations

import json
import os
import shutil

from test_capture_support import FAKE_NSYS, fake_bin, run_cli, set_mode, write_tool  # noqa: F401, F811  (fixtures)

from coach.capture import doctor


def _by_name(checks):
    return {c.name: c for c in checks}


def test_gpu_machine_with_working_tools(fake_bin):
    checks = _by_name(doctor.run_checks())
    assert (checks["GPU"].status, checks["GPU"].detail) == ("ok", "NVIDIA H200, 143771 MiB, compute capability 9.0")
    assert (checks["driver"].status, checks["driver"].detail) == ("ok", "580.95.05")
    assert (checks["CUDA"].status, checks["CUDA"].detail) == ("ok", "13.0 (the driver's)")
    assert checks["nsys"].status == "ok"
    assert checks["nsys"].detail.startswith("NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0 (")
    assert checks["nsys"].detail.endswith("profiled and imported a test run")
    assert checks["ncu"].status == "ok" and "Version 2025.3.1.0" in checks["ncu"].detail
    assert checks["nvcc"].status == "missing"  # not on the fake PATH


def test_bundled_nsys_before_nsys_env_is_sourced(fake_bin, tmp_path, monkeypatch):
    """The situation on our H200 machine: nsys only inside the Nsight Compute bundle, without the
    host-linux-x64 folder its importer is looked for in."""
    (fake_bin / "nsys").unlink()
    root = tmp_path / "nsight-compute" / "2025.3.1"
    target = root / "host" / "target-linux-x64"
    target.mkdir(parents=True)
    (root / "host" / "linux-desktop-glibc_2_11_3-x64").mkdir()
    write_tool(target, "nsys", FAKE_NSYS)
    set_mode(target, "nsys", "no-import")
    monkeypatch.setenv("COACH_NCU_ROOT", str(root))
    nsys = _by_name(doctor.run_checks())["nsys"]
    assert nsys.status == "broken"
    assert f"{target}/nsys, from Nsight Compute bundle" in nsys.detail
    assert f"{root}/host/host-linux-x64 is missing" in nsys.detail
    assert nsys.fix.startswith("source scripts/nsys-env.sh DEBS_DIR")
    # once the link exists (what nsys-env.sh does), the test capture decides
    os.symlink(root / "host" / "linux-desktop-glibc_2_11_3-x64", root / "host" / "host-linux-x64")
    nsys = _by_name(doctor.run_checks())["nsys"]
    assert nsys.status == "broken" and "cannot import its captures (Importer error status" in nsys.detail
    set_mode(target, "nsys", "ok")
    assert _by_name(doctor.run_checks())["nsys"].status == "ok"


def test_no_gpu(fake_bin, capsys):
    set_mode(fake_bin, "nvidia-smi", "fail")
    (fake_bin / "ncu").unlink()
    code, out, _ = run_cli(["doctor", "--json", "--quick"], capsys)
    assert code == 0
    report = json.loads(out)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["GPU"]["status"] == "missing"
    assert checks["GPU"]["detail"].startswith("nvidia-smi: NVIDIA-SMI has failed")
    assert "coach reads recorded traces without a GPU" in checks["GPU"]["fix"]
    assert checks["ncu"] == {"name": "ncu", "status": "missing", "detail": "not found",
                             "fix": "install Nsight Compute, or set COACH_NCU to its ncu"}
    caps = {c["what"]: c for c in report["capabilities"]}
    record = caps["record the scenarios (coach record)"]
    assert record["ok"] is False and {"GPU", "ncu"} <= set(record["needs"])


def test_this_machine(capsys):
    """Whatever this machine has, every check has a status, and everything not ok says what to do."""
    code, out, _ = run_cli(["doctor", "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    names = [c["name"] for c in report["checks"]]
    assert names == ["GPU", "driver", "CUDA", "nvcc", "ncu", "nsys", "torch", "triton", "cupy", "cuda.core", "polars",
                     "ncu_report"]
    for c in report["checks"]:
        assert c["status"] in {"ok", "missing", "broken", "limited"}
        if c["status"] in {"missing", "broken"} and c["name"] not in {"driver", "CUDA"}:
            assert c["fix"], c
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["polars"]["status"] == "ok"  # the test environment reads profiles
    if shutil.which("nvcc"):
        assert checks["nvcc"]["status"] == "ok" and "release" in checks["nvcc"]["detail"]


def test_text_report(fake_bin, capsys):
    code, out, _ = run_cli(["doctor", "--quick"], capsys)
    assert code == 0
    assert "NVIDIA H200" in out and "What works here" in out
    assert "record the scenarios (coach record)" in out
