"""The calibration script: imports without a GPU, parses its arguments, writes JSON that the hardware
tables read. The measurement itself runs on a GPU; here a fake stands in for it (no timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coach.analyze import hardware as hw
from coach.capture import calibrate


def fake_measure(args):
    """Stand-in numbers (not measurements): the shape measure_on_gpu returns."""
    return {
        "dram_copy_bandwidth_bytes_per_s": {"value": 3.0e12, "median_s": 1e-3},
        "dram_read_bandwidth_bytes_per_s": {"value": 3.1e12, "median_s": 1e-3},
        "bf16_tensor_matmul_flop_per_s": {"value": 700e12, "n": args.matmul_n},
        "launch_latency_s": {"value": 4e-6},
        "graph_launch_latency_s": {"value": 1e-6},
    }


def fake_describe(args):
    return {"gpu_name": "NVIDIA H100 80GB HBM3", "driver": "580.1", "cuda": "13.0", "torch": "2.11",
            "triton": "3.6", "date": "2026-12-01T00:00:00+00:00"}


def test_imports_without_torch_polars_typer_or_rich():
    code = ("import sys, coach.capture.calibrate; "
            "print(sorted(m for m in ('torch', 'triton', 'polars', 'typer', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "[]"


def test_argument_parsing():
    args = calibrate.parse_args(["out.json", "--matmul-n", "4096"])
    assert str(args.out) == "out.json" and args.matmul_n == 4096 and args.buffer_bytes == 1 << 30
    with pytest.raises(SystemExit):
        calibrate.parse_args([])
    with pytest.raises(SystemExit):
        calibrate.parse_args(["out.json", "--matmul-n", "0"])


def test_writes_json_with_provenance_and_reads_back_as_ceilings(tmp_path):
    out = tmp_path / "sub" / "h100.json"
    assert calibrate.main([str(out), "--matmul-n", "4096"], measure=fake_measure, describe=fake_describe) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == calibrate.SCHEMA
    assert doc["provenance"]["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert doc["provenance"]["command"].endswith("-m coach.capture.calibrate " + f"{out} --matmul-n 4096")
    assert doc["measurements"]["bf16_tensor_matmul_flop_per_s"] == {
        "unit": "flop/s", "detail": calibrate.MEASUREMENTS["bf16_tensor_matmul_flop_per_s"][1], "value": 700e12, "n": 4096}
    assert [p.name for p in out.parent.iterdir()] == ["h100.json"]  # no temporary file left behind

    m = hw.read_measurements(out)
    c = hw.ceilings("h100-sxm", measured=m)
    assert c.bandwidth["dram"].value == 3.1e12 and c.bandwidth["dram"].datasheet == 3.35e12
    assert c.compute["bf16"].value == 700e12 and c.compute["bf16"].origin == "measured"
    assert c.compute["fp32"].origin == "published"  # not in this calibration: datasheet
    assert c.launch["stream"].value == 4e-6 and c.launch["graph"].value == 1e-6
    assert hw.ceilings("h100-sxm", measured=out).compute["bf16"].value == 700e12


def test_unknown_measurement_from_the_measure_function_is_a_bug(tmp_path):
    with pytest.raises(ValueError, match="unknown measurements"):
        calibrate.main([str(tmp_path / "x.json")], measure=lambda a: {"l3_bandwidth": {"value": 1}},
                       describe=fake_describe)
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("content, problem", [
    ("{", "not valid JSON"),
    ('{"schema": "other"}', "not a calibration file"),
    ('{"schema": "coach-calibration/1", "provenance": {}, "measurements": {}}', "provenance with gpu_name"),
    ('{"schema": "coach-calibration/1", "provenance": {"gpu_name": "x"}, "measurements": {"dram_copy_bandwidth_bytes_per_s": {"value": -1}}}',
     "needs a positive value"),
])
def test_bad_calibration_files_are_refused(tmp_path, content, problem):
    f = tmp_path / "c.json"
    f.write_text(content)
    with pytest.raises(hw.InputError, match=problem):
        hw.read_measurements(f)


def test_measured_h200_file_is_the_h200_ceilings():
    m = hw.measured(hw.get("h200"))
    assert m is not None and m.provenance["date"].startswith("2026-11-30") and m.provenance["gpu_name"] == "NVIDIA H200"
    # the calibration run recorded on the H200 (coach.capture.calibrate), within 10% of the earlier
    # measurements on this kind of machine: copy 4.25 TB/s, bf16 679, fp32 51, tf32 386 TFLOP/s
    expected = {"dram_copy_bandwidth_bytes_per_s": 4.191e12, "dram_read_bandwidth_bytes_per_s": 4.195e12,
                "fp32_simt_matmul_flop_per_s": 51.12e12, "tf32_tensor_matmul_flop_per_s": 355.9e12,
                "bf16_tensor_matmul_flop_per_s": 683.0e12}
    for key, value in expected.items():
        assert m.values[key] == pytest.approx(value, rel=1e-3), key
    assert m.values["launch_latency_s"] > m.values["graph_launch_latency_s"] > 0
