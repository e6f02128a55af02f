"""`coach calibrate`: runs coach.capture.calibrate's own main() on the GPU at hand, stores the JSON in
the user's data folder, and hardware.ceilings() then uses it before the shipped calibration.

No GPU here: a stand-in torch module says which device is present, and stand-in measurements (not
measured numbers) replace the timing, exactly where tests/test_hardware_calibrate.py replaces them.
"""

from __future__ import annotations

import json
import sys
import types

import pytest
from test_capture_support import run_cli
from test_hardware_calibrate import fake_describe, fake_measure

from coach.analyze import hardware as hw
from coach.capture import calibrate
from coach.paths import calibration_dir, user_data_dir


def fake_torch(name: str = "NVIDIA H100 80GB HBM3", available: bool = True) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: available, device_count=lambda: 1,
                                       get_device_name=lambda device=0: name)
    return torch


@pytest.fixture
def gpu_here(monkeypatch):
    """A stand-in H100 and stand-in measurements in coach.capture.calibrate's own main()."""
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    monkeypatch.setattr(calibrate, "measure_on_gpu", fake_measure)
    monkeypatch.setattr(calibrate, "describe_gpu", fake_describe)


def test_user_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("COACH_HOME", str(tmp_path / "home"))
    assert calibration_dir() == tmp_path / "home" / "calibration"
    monkeypatch.delenv("COACH_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert user_data_dir() == tmp_path / "xdg" / "coach"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_data_dir() == tmp_path / ".local" / "share" / "coach"


def test_calibrate_stores_and_ceilings_use_it(gpu_here, capsys):
    code, out, _ = run_cli(["calibrate"], capsys)
    assert code == 0
    path = calibration_dir() / "h100-80gb-hbm3.json"
    doc = json.loads(path.read_text())
    assert doc["schema"] == calibrate.SCHEMA and doc["provenance"]["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert doc["provenance"]["command"].endswith(f"-m coach.capture.calibrate {path} --device 0")
    assert "dram_read_bandwidth_bytes_per_s: 3.1 TB/s" in out
    roofs = hw.ceilings("h100-sxm")
    dram = roofs.bandwidth["dram"]
    assert (dram.origin, dram.value, dram.ref) == ("measured", 3.1e12, path.name)  # the better of copy and read
    assert dram.datasheet == hw.get("h100-sxm").dram_bandwidth_bytes_per_s  # kept next to it
    assert roofs.compute["bf16"].value == 700e12
    assert hw.measured(hw.get("h100-sxm")).path == path


def test_user_calibration_comes_before_the_shipped_one(monkeypatch, capsys):
    shipped = hw.ceilings("h200").bandwidth["dram"]
    assert shipped.ref == "h200.json"
    monkeypatch.setitem(sys.modules, "torch", fake_torch("NVIDIA H200"))
    monkeypatch.setattr(calibrate, "measure_on_gpu", fake_measure)
    monkeypatch.setattr(calibrate, "describe_gpu", lambda args: {**fake_describe(args), "gpu_name": "NVIDIA H200"})
    assert run_cli(["calibrate"], capsys)[0] == 0
    mine = hw.ceilings("h200").bandwidth["dram"]
    assert (mine.ref, mine.value) == ("h200.json", 3.1e12)
    assert hw.ceilings("h200", measured=False).bandwidth["dram"].value == 4.8e12


def test_a_gpu_the_tables_lack(monkeypatch, capsys, tmp_path):
    name = "NVIDIA Made-Up GPU"
    monkeypatch.setitem(sys.modules, "torch", fake_torch(name))
    monkeypatch.setattr(calibrate, "measure_on_gpu", fake_measure)
    monkeypatch.setattr(calibrate, "describe_gpu", lambda args: {**fake_describe(args), "gpu_name": name})
    out = tmp_path / "mine.json"
    assert run_cli(["calibrate", "--out", str(out)], capsys)[0] == 0 and out.exists()
    assert not calibration_dir().exists()  # --out writes only there
    calibration_dir().mkdir(parents=True)
    out.replace(calibration_dir() / out.name)
    entry = hw.fallback({"name": name, "sm_count": 100, "sm_clock_hz": 2e9, "cc_major": 9, "cc_minor": 0})
    assert hw.ceilings(entry).bandwidth["dram"].value == 3.1e12


def test_without_a_gpu_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(available=False))
    code, _, err = run_cli(["calibrate"], capsys)
    assert code == 2 and err.count("\n") == 1 and "no CUDA GPU is visible" in err
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    code, _, err = run_cli(["calibrate"], capsys)
    assert code == 2 and "needs PyTorch with CUDA" in err
    assert not calibration_dir().exists()
