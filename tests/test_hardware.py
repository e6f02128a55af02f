"""The GPU tables: integrity of the data files, name matching, the fallback, ceilings."""

from __future__ import annotations

import csv
import shutil
import tomllib
from pathlib import Path

import pytest

from coach import best_rates, paths
from coach.analyze import hardware as hw
from coach.errors import InputError

REPO = Path(__file__).resolve().parents[1]
RAW_CSV = Path(__file__).parent / "data" / "ncu_strided_copy" / "nvidia" / "raw_base_units.csv"

EXPECTED_IDS = {"v100-sxm2-16gb", "v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "a10", "l4", "l40s",
                "rtx-4090", "h100-sxm", "h100-pcie", "h200", "b200", "gb200", "b300", "mi300x"}

# Sane ranges for every GPU from V100 to B200: a value outside them is a unit slip (GB for bytes,
# TFLOP/s for FLOP/s, MHz for Hz), not a new GPU.
RANGES = {
    "sm_count": (40, 400),
    "boost_clock_hz": (1e9, 3e9),
    "dram_bytes": (8e9, 300e9),
    "dram_bandwidth_bytes_per_s": (1e11, 1e13),
    "l2_bytes": (4 * 2**20, 256 * 2**20),
    "l2_bandwidth_bytes_per_s": (1e12, 1e14),
    "shared_bandwidth_bytes_per_s": (1e12, 1e14),
    "shared_mem_per_sm_bytes": (48 * 1024, 256 * 1024),
    "registers_per_sm": (65536, 131072),
    "max_warps_per_sm": (32, 64),
    "max_blocks_per_sm": (16, 32),
    "max_threads_per_block": (1024, 1024),
    "pcie_generation": (3, 5),
    "pcie_bytes_per_s_per_direction": (1e10, 1e11),
    "peer_link_bytes_per_s_bidirectional": (1e11, 1e13),
    "peer_link_count": (4, 18),
    "nvlink_domain_gpus": (2, 576),
}
FLOP_RANGE = (1e11, 3e16)


def test_every_gpu_of_the_brief_is_in_the_tables():
    assert set(hw.gpus()) == EXPECTED_IDS


@pytest.mark.parametrize("gpu_id", sorted(EXPECTED_IDS))
def test_every_field_has_a_value_with_a_source_or_a_reason(gpu_id):
    gpu = hw.get(gpu_id)
    known_sources = hw.catalog().sources
    for name in hw.FIELDS:
        s = gpu.source(name)
        if s.origin == "missing":
            assert gpu.value(name) is None and s.note, name
            continue
        assert gpu.value(name) is not None, name
        assert s.source in known_sources, (name, s.source)
        assert s.at, name
        if s.origin == "derived":
            assert s.formula, name


@pytest.mark.parametrize("gpu_id", sorted(EXPECTED_IDS))
def test_units_are_sane(gpu_id):
    gpu = hw.get(gpu_id)
    for name, (low, high) in RANGES.items():
        v = gpu.value(name)
        if v is not None:
            assert low <= v <= high, (name, v)
    for name in hw.PRECISION_FIELDS.values():
        v = gpu.value(name)
        if v is not None:
            assert FLOP_RANGE[0] <= v <= FLOP_RANGE[1], (name, v)


@pytest.mark.parametrize("gpu_id", sorted(EXPECTED_IDS))
def test_dense_peaks_are_ordered_as_the_hardware_is(gpu_id):
    """Invariants that hold on every GPU here: tensor BF16 at least twice FP32 SIMT (exactly twice on the
    GeForce RTX 4090 with FP32 accumulation), FP8 twice BF16 where both
    exist, and a ridge point above 1 FLOP/byte (no GPU feeds its FP32 units from DRAM)."""
    g = hw.get(gpu_id)
    if g.peak_bf16_tensor_flop_per_s:
        assert g.peak_bf16_tensor_flop_per_s >= 2 * g.peak_fp32_flop_per_s
    if g.peak_fp8_tensor_flop_per_s and g.peak_bf16_tensor_flop_per_s:
        assert g.peak_fp8_tensor_flop_per_s == pytest.approx(2 * g.peak_bf16_tensor_flop_per_s, rel=0.02)
    if g.peak_fp4_tensor_flop_per_s and g.peak_fp8_tensor_flop_per_s:
        assert g.peak_fp4_tensor_flop_per_s == pytest.approx(2 * g.peak_fp8_tensor_flop_per_s, rel=0.02)
    if g.peak_fp32_flop_per_s:  # the B300's sources give no FP32 peak
        assert g.peak_fp32_flop_per_s / g.dram_bandwidth_bytes_per_s > 1


def test_pinned_datasheet_values():
    h100, h200, a100 = hw.get("h100-sxm"), hw.get("h200"), hw.get("a100-sxm4-80gb")
    assert h100.dram_bandwidth_bytes_per_s == 3.35e12
    assert h100.peak_bf16_tensor_flop_per_s == 989.4e12  # whitepaper Table 3, dense
    assert h200.peak_bf16_tensor_flop_per_s == 1979e12 / 2  # datasheet figure is with sparsity
    assert h200.source("peak_bf16_tensor_flop_per_s").formula == "1979e12 / 2"
    assert h200.dram_bandwidth_bytes_per_s == 4.8e12
    assert h200.sm_count == 132 and h200.source("sm_count").origin == "recorded"
    assert a100.dram_bandwidth_bytes_per_s == 2039e9
    assert a100.shared_mem_per_sm_bytes == 164 * 1024  # from the compute-capability table
    assert a100.source("shared_mem_per_sm_bytes").source == "cuda-guide"
    # A100 L2 read bandwidth, whitepaper: 5120 bytes/clk at 1410 MHz
    assert a100.l2_bandwidth_bytes_per_s == pytest.approx(5120 * 1.41e9, rel=1e-3)
    assert hw.get("mi300x").sm_count == 304 and hw.get("mi300x").compute_capability is None


def test_blackwell_low_precision_and_nvlink_fields():
    b200, gb200, b300 = hw.get("b200"), hw.get("gb200"), hw.get("b300")
    # datasheet p. 8: HGX B200 FP4 18 PFLOPS and FP8/FP6 9 PFLOPS with sparsity; GB200 NVL72 20 and 10
    assert b200.peak_fp4_tensor_flop_per_s == 9e15 and b200.peak_fp6_tensor_flop_per_s == 4.5e15
    assert gb200.peak_fp4_tensor_flop_per_s == 10e15 and gb200.peak_bf16_tensor_flop_per_s == 2.5e15
    assert b200.peer_link_count == gb200.peer_link_count == 18
    assert (b200.nvlink_domain_gpus, gb200.nvlink_domain_gpus) == (8, 72)
    # 72 GPUs x 1.8 TB/s = the datasheet's 130 TB/s of total NVLink bandwidth, to its rounding
    assert gb200.nvlink_domain_gpus * gb200.peer_link_bytes_per_s_bidirectional == pytest.approx(130e12, rel=0.01)
    assert b300.peak_fp4_tensor_flop_per_s == 15e15 and b300.dram_bytes == 288e9
    assert b300.peak_bf16_tensor_flop_per_s is None and b300.source("peak_bf16_tensor_flop_per_s").origin == "missing"
    assert hw.get("h200").peak_fp4_tensor_flop_per_s is None  # Hopper has no FP4 tensor path
    assert hw.match("NVIDIA GB200").id == "gb200" and hw.match("NVIDIA B300").id == "b300"


def test_derived_values_agree_with_their_formulas():
    for gpu in hw.gpus().values():
        names = {k: gpu.value(k) for k in hw.FIELDS if gpu.value(k) is not None}
        for k in hw.FIELDS:
            s = gpu.source(k)
            if s.origin == "derived":
                assert hw.evaluate(s.formula, names) == pytest.approx(s.value, rel=hw.DERIVED_TOLERANCE), (gpu.id, k)


def test_aliases_and_case():
    assert hw.get("H200-SXM").id == "h200"
    with pytest.raises(hw.UnknownGPUError, match="known ids: a10, a100-sxm4-40gb"):
        hw.get("h900")


@pytest.mark.parametrize("name, gpu_id", [
    ("NVIDIA H200", "h200"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
    ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA B200", "b200"),
    ("AMD Instinct MI300X", "mi300x"),
    ("  nvidia   h200 ", "h200"),
])
def test_match_device_names_as_tools_print_them(name, gpu_id):
    assert hw.match(name).id == gpu_id


@pytest.mark.parametrize("name", ["NVIDIA A10G", "NVIDIA A100 80GB PCIe", "NVIDIA H200 NVL", "NVIDIA L40",
                                  "NVIDIA GeForce RTX 4090 D", "Tesla T4", "AMD Instinct MI300A"])
def test_other_products_do_not_match_a_near_name(name):
    """A10G, the PCIe A100, the H200 NVL... have other clocks or memory: no silent stand-in."""
    assert hw.match(name) is None


def _h200_device_row(name: str) -> dict:
    """A coach.model.DEVICES row filled from the device attributes in the real H200 ncu export."""
    with open(RAW_CSV, newline="") as f:
        rows = list(csv.reader(f))
    attr = {h: v.replace(",", "") for h, v in zip(rows[0], rows[2]) if h.startswith("device__attribute")}
    a = lambda k: float(attr[f"device__attribute_{k}"])  # noqa: E731
    return {"device_id": 0, "name": name, "cc_major": int(a("compute_capability_major")),
            "cc_minor": int(a("compute_capability_minor")), "sm_count": int(a("multiprocessor_count")),
            "sm_clock_hz": a("clock_rate") * 1e3, "memory_clock_hz": a("memory_clock_rate") * 1e3,
            "memory_bus_width_bits": int(a("global_memory_bus_width")), "memory_bytes": int(a("total_memory")),
            "memory_bandwidth_bytes_per_s": None, "l2_bytes": int(a("l2_cache_size")),
            "shared_mem_per_sm_bytes": int(a("max_shared_memory_per_multiprocessor")),
            "registers_per_sm": int(a("max_registers_per_multiprocessor")),
            "max_warps_per_sm": int(a("max_warps_per_multiprocessor")),
            "max_blocks_per_sm": int(a("max_blocks_per_multiprocessor")),
            "max_threads_per_block": int(a("max_threads_per_block"))}


def test_known_device_row_resolves_to_the_table_entry():
    assert hw.for_device(_h200_device_row("NVIDIA H200")).id == "h200"


def test_unknown_device_falls_back_to_its_own_attributes():
    """The H200's recorded attributes under a name the tables lack: every number derived from them."""
    gpu = hw.for_device(_h200_device_row("NVIDIA Prototype X"))
    assert gpu.approximate and gpu.id == "device-prototype-x" and gpu.architecture == "Hopper"
    assert gpu.sm_count == 132 and gpu.source("sm_count").origin == "device"
    assert gpu.boost_clock_hz == 1.98e9
    # 2 x 3.201 GHz x 6016 bits / 8 = 4.8145 TB/s (DDR, as deviceQuery computes it)
    assert gpu.dram_bandwidth_bytes_per_s == pytest.approx(2 * 3.201e9 * 6016 / 8)
    assert gpu.source("dram_bandwidth_bytes_per_s").formula == "2 * memory_clock_hz * memory_bus_width_bits / 8"
    # FP32: 132 SMs x 128 lanes x 2 x 1.98 GHz = 66.9 TFLOP/s, as the datasheet
    assert gpu.peak_fp32_flop_per_s == pytest.approx(132 * 128 * 2 * 1.98e9)
    assert gpu.peak_fp64_flop_per_s == pytest.approx(132 * 64 * 2 * 1.98e9)
    # tensor: 132 x 4096 FLOP/clk x 1.98 GHz = 1070.5 TFLOP/s, above the 989 of the datasheet,
    # which uses a 1.83 GHz tensor clock: that is why the entry is marked approximate
    assert gpu.peak_bf16_tensor_flop_per_s == pytest.approx(132 * 4096 * 1.98e9)
    assert gpu.peak_tf32_tensor_flop_per_s == pytest.approx(132 * 4096 * 1.98e9 / 2)
    assert gpu.peak_fp8_tensor_flop_per_s == pytest.approx(132 * 4096 * 1.98e9 * 2)
    assert all(gpu.source(k).approximate for k in ("peak_fp32_flop_per_s", "dram_bandwidth_bytes_per_s"))
    assert gpu.l2_bytes == 62914560 and gpu.shared_mem_per_sm_bytes == 233472
    assert gpu.source("l2_bandwidth_bytes_per_s").origin == "missing"


def test_fallback_for_an_older_gpu_leaves_what_it_cannot_know_missing():
    """A Turing-class row (synthetic: a T4's published SM count and clock): SIMT rates derive from
    the cc 7.5 table; its tensor rate is not in the tables, so it stays missing."""
    gpu = hw.fallback({"name": "Tesla T4", "cc_major": 7, "cc_minor": 5, "sm_count": 40, "sm_clock_hz": 1.59e9})
    assert gpu.peak_fp32_flop_per_s == pytest.approx(40 * 64 * 2 * 1.59e9)  # 8.14 TFLOP/s
    assert gpu.max_warps_per_sm == 32
    assert gpu.peak_bf16_tensor_flop_per_s is None and gpu.source("peak_bf16_tensor_flop_per_s").origin == "missing"
    assert gpu.dram_bandwidth_bytes_per_s is None


def test_fallback_for_a_newer_minor_version_uses_the_nearest_below():
    gpu = hw.fallback({"name": "future", "cc_major": 9, "cc_minor": 5, "sm_count": 100, "sm_clock_hz": 2e9})
    assert gpu.peak_fp32_flop_per_s == pytest.approx(100 * 128 * 2 * 2e9)
    assert "standing in for 9.5" in gpu.source("peak_fp32_flop_per_s").note


def test_ceilings_use_measured_values_where_recorded_and_say_so():
    c = hw.ceilings("h200")
    best = best_rates.read("h200")["rates"]

    def measured(*names: str, calibrated: float) -> float:
        return max([calibrated, *(best.get(n, {}).get("value", 0.0) for n in names)])

    # the best of the recorded copy (4.191 TB/s) and read-only (4.195 TB/s) bandwidths
    # (hardware/measured/h200.json), raised to the best rate recorded on the H200 (coach.best_rates):
    # of the copy, of reads, and, the roof being the attainable DRAM bandwidth, of any read/write mix
    dram = measured("dram_copy_bandwidth_bytes_per_s", "dram_read_bandwidth_bytes_per_s", "dram_bandwidth_bytes_per_s",
                    calibrated=4.1948e12)
    assert c.bandwidth["dram"].value == pytest.approx(dram, rel=1e-4) and c.bandwidth["dram"].value >= 4.1948e12
    assert c.bandwidth["dram"].origin == "measured" and c.bandwidth["dram"].datasheet == 4.8e12
    assert ("raised to the best" in c.bandwidth["dram"].source) == (dram > 4.1948e12 * (1 + 1e-4))
    assert c.compute["bf16"].value == pytest.approx(measured("bf16_tensor_matmul_flop_per_s", calibrated=683.0e12), rel=1e-3)
    assert c.compute["fp32"].value == pytest.approx(measured("fp32_simt_matmul_flop_per_s", calibrated=51.12e12), rel=1e-3)
    assert c.compute["tf32"].value == pytest.approx(measured("tf32_tensor_matmul_flop_per_s", calibrated=355.9e12), rel=1e-3)
    # FP8: calibrated with torch._scaled_mm (1,297 TFLOP/s), raised to the FP8 ladder's best rung
    assert c.compute["fp8"].origin == "measured"
    assert c.compute["fp8"].value == pytest.approx(measured("fp8_tensor_matmul_flop_per_s", calibrated=1296.7e12), rel=1e-3)
    assert c.compute["fp8"].value < 1979e12  # under the datasheet's dense peak
    assert c.bandwidth["shared"].value == pytest.approx(132 * 128 * 1.98e9, rel=1e-3)  # 33.45 TB/s
    sheet = hw.ceilings("h200", measured=False)
    assert sheet.bandwidth["dram"].value == 4.8e12 and sheet.bandwidth["dram"].origin == "published"
    assert sheet.ridge_point("bf16") == pytest.approx(989.5e12 / 4.8e12)  # 206 FLOP/byte
    frame = c.frame()
    assert frame.filter(frame["name"] == "dram")["measured"].to_list() == [pytest.approx(dram, rel=1e-4)]
    assert set(frame["kind"]) == {"bandwidth", "compute", "launch"}  # launch latency is measured too


def test_ridge_points():
    h100 = hw.ceilings("h100-sxm", measured=False)
    assert h100.ridge_point("bf16") == pytest.approx(989.4e12 / 3.35e12)  # 295.3 FLOP/B
    assert h100.ridge_point("fp32") == pytest.approx(66.9e12 / 3.35e12)  # 19.97 FLOP/B
    assert h100.ridge_point("bf16", level="shared") == pytest.approx(989.4e12 / (132 * 128 * 1.98e9), rel=1e-3)
    assert h100.ridge_point("bf16", level="l2") is None  # no published L2 bandwidth
    assert hw.ceilings("v100-sxm2-16gb").ridge_point("bf16") is None  # Volta has no BF16


def test_installed_wheel_layout_finds_hardware(tmp_path, monkeypatch):
    """pyproject copies hardware/ to coach/_data/hardware; coach.paths finds it there without COACH_DATA."""
    force = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["hardware"] == "coach/_data/hardware"
    package = tmp_path / "site-packages" / "coach"
    shutil.copytree(REPO / "hardware", package / "_data" / "hardware")
    monkeypatch.delenv("COACH_DATA", raising=False)
    monkeypatch.setattr(paths, "_PACKAGE", package)
    assert paths.hardware_dir() == package / "_data" / "hardware"
    assert hw.catalog().root == package / "_data" / "hardware"
    assert set(hw.gpus()) == EXPECTED_IDS and hw.measured(hw.get("h200")) is not None


def _copy_hardware(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "data"
    shutil.copytree(REPO / "hardware", root / "hardware")
    monkeypatch.setenv("COACH_DATA", str(root))
    return root / "hardware"


def test_a_value_without_a_source_is_refused(tmp_path, monkeypatch):
    hw_dir = _copy_hardware(tmp_path, monkeypatch)
    f = hw_dir / "gpus" / "l4.toml"
    f.write_text(f.read_text().replace('dram_bandwidth_bytes_per_s = { value = 300e9, src = "l4-ds", at = "Specifications, GPU memory bandwidth 300GB/s" }',
                                       "dram_bandwidth_bytes_per_s = { value = 300e9 }"))
    with pytest.raises(InputError, match="dram_bandwidth_bytes_per_s: a value needs a source"):
        hw.catalog()


def test_a_derived_value_that_disagrees_with_its_formula_is_refused(tmp_path, monkeypatch):
    hw_dir = _copy_hardware(tmp_path, monkeypatch)
    f = hw_dir / "gpus" / "h200.toml"
    f.write_text(f.read_text().replace("value = 989.5e12, derived", "value = 1979e12, derived", 1))
    with pytest.raises(InputError, match="disagrees with its formula 1979e12 / 2"):
        hw.catalog()


def test_a_missing_field_is_named(tmp_path, monkeypatch):
    hw_dir = _copy_hardware(tmp_path, monkeypatch)
    f = hw_dir / "gpus" / "a10.toml"
    f.write_text("\n".join(line for line in f.read_text().splitlines() if not line.startswith("l2_bytes")))
    with pytest.raises(InputError, match=r"no value or reason for \['l2_bytes'\]"):
        hw.catalog()


def test_formulas_allow_arithmetic_only():
    assert hw.evaluate("sm_count * 32 * 4 * clk", {"sm_count": 2, "clk": 1e9}) == 256e9
    with pytest.raises(ValueError, match="only numbers"):
        hw.evaluate("__import__('os')", {})
