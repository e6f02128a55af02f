"""The hierarchical roofline on the real H200 report (tests/data/ncu_strided_copy), checked against
Nsight Compute's own numbers for the same report (its `ncu --csv` exports in nvidia/)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.roofline import (
    LEVEL_ORDER,
    explain_ridges,
    headline,
    missing_levels,
    pair,
    precision_label,
    roofline,
    with_hardware,
)
from coach.ingest import load
from coach.model import KernelProfile, make_kernel_profile

NVIDIA = Path(__file__).parent / "data" / "ncu_strided_copy" / "nvidia"
REL = 1e-9  # our arithmetic on the same doubles Nsight Compute stores
TOL = 1e-6  # "achieved <= peak" slack for the rounding of per-cycle products


@pytest.fixture(scope="module")
def prof(strided_ncu_rep) -> KernelProfile:
    return load(strided_ncu_rep)


@pytest.fixture(scope="module")
def rl(prof):
    return roofline(prof)


def row(rl, launch_id: int, level: str, precision: str = "fp32") -> dict:
    t = rl.table.filter((pl.col("launch_id") == launch_id) & (pl.col("level") == level) & (pl.col("precision") == precision))
    assert t.height == 1
    return t.row(0, named=True)


def nvidia_raw(metric: str) -> list[float]:
    """One metric per launch from NVIDIA's `ncu --import --csv --page raw --print-units base` export."""
    with (NVIDIA / "raw_base_units.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index(metric)
    return [float(r[col].replace(",", "")) for r in rows[2:]]


def nvidia_details(section: str, name: str) -> list[float]:
    with (NVIDIA / "details_base_units.csv").open(newline="") as fh:
        return [float(r["Metric Value"].replace(",", "")) for r in csv.DictReader(fh)
                if r["Section Name"] == section and r["Metric Name"] == name]


def with_metrics(profile: KernelProfile, values: dict[str, float] | None = None, drop: str | None = None) -> KernelProfile:
    """The real profile with some metric values replaced or some metrics removed: a synthetic
    variant for checking arithmetic and gaps, never presented as a measurement."""
    m = profile.metrics
    if drop is not None:
        m = m.filter(~pl.col("metric").str.contains(drop))
    if values:
        m = m.with_columns(pl.col("metric").replace_strict(values, default=None, return_dtype=pl.Float64).fill_null(pl.col("value")).alias("value"))
    return make_kernel_profile(profile.source, launches=profile.launches, metrics=m, rules=profile.rules, devices=profile.devices)


# --------------------------------------------------------------------------------------------
# Numbers pinned from the recording
# --------------------------------------------------------------------------------------------

def test_strided_copy_dram(rl, prof):
    r = row(rl, 0, "DRAM")
    assert (r["kernel_name"], r["gpu"], r["duration_ns"]) == ("copy_strided", "NVIDIA H200", 1_179_872.0)
    # the 1.18 ms gather moves 4.56 GB through DRAM: 4.29 GB of reads (16x the 0.27 GB it needs) and 0.27 GB of writes
    assert r["bytes"] == pytest.approx(4_564_235_520, rel=REL)
    reads = prof.launches.filter(pl.col("launch_id") == 0)["dram_read_bytes"].item()
    assert reads == 4_294_982_144.0
    assert reads / (r["duration_ns"] * 1e-9) == pytest.approx(3.640e12, rel=1e-3)  # 4.29 GB / 1.18 ms of reads
    assert r["bytes_per_s"] == pytest.approx(3.868415828e12, rel=REL)
    assert r["peak_bytes_per_s"] == pytest.approx(4.811928e12, rel=1e-6)  # 1504 byte/cycle x 3.199 GHz
    # no floating-point work at all: intensity 0, memory-bound, 80% of the DRAM roof
    assert (r["flop"], r["intensity_flop_per_byte"], r["bound"]) == (0.0, 0.0, "memory")
    assert r["pct_of_roof"] == pytest.approx(80.392, abs=1e-3)
    assert r["ridge_flop_per_byte"] == pytest.approx(13.913, abs=1e-3)


def test_coalesced_copy_dram(rl):
    r = row(rl, 1, "DRAM")
    assert (r["kernel_name"], r["duration_ns"]) == ("copy_coalesced", 198_080.0)
    assert r["bytes"] == pytest.approx(517_732_096, rel=REL)  # 2^28 read + 0.25 GB written back before the end
    assert r["bytes_per_s"] == pytest.approx(2.613752504e12, rel=REL)
    # 8.8x fewer DRAM bytes than the strided gather, yet only 54% of the DRAM roof: Nsight
    # Compute's own SOLBottleneck rule calls it latency-limited ("below 60.0% of peak")
    assert r["pct_of_roof"] == pytest.approx(54.319, abs=1e-3)
    assert row(rl, 0, "DRAM")["bytes"] / r["bytes"] == pytest.approx(8.816, abs=1e-3)
    assert r["bound"] == "memory"


def test_hierarchy_levels(rl):
    pinned = {  # (launch, level): (bytes, % of that level's peak bandwidth)
        (0, "L2"): (2_148_058_016, 17.701),
        (0, "L1"): (3_691_149_696, 9.346),
        (1, "L2"): (268_965_920, 13.208),
        (1, "L1"): (536_870_912, 8.124),
    }
    for (launch, level), (nbytes, pct) in pinned.items():
        r = row(rl, launch, level)
        assert r["bytes"] == pytest.approx(nbytes, rel=REL)
        assert r["bandwidth_pct"] == pytest.approx(pct, abs=1e-3)
    assert rl.table["level"].unique(maintain_order=True).to_list() == list(LEVEL_ORDER)
    assert rl.missing.height == 0 and missing_levels(rl) == []


def test_ceilings_of_the_h200(rl):
    c = {(r["kind"], r["name"]): r["peak_per_s"] for r in rl.ceilings.iter_rows(named=True)}
    assert set(rl.ceilings["gpu"]) == {"NVIDIA H200"} and set(rl.ceilings["source"]) == {"Nsight Compute"}
    assert c[("bandwidth", "DRAM")] == pytest.approx(4.812e12, rel=1e-3)
    assert c[("bandwidth", "L2")] == pytest.approx(1.0285e13, rel=1e-3)
    assert c[("bandwidth", "L1")] == pytest.approx(3.3475e13, rel=1e-3)
    assert c[("compute", "fp64")] == pytest.approx(3.3475e13, rel=1e-3)
    assert c[("compute", "fp32")] == pytest.approx(6.695e13, rel=1e-3)  # 16896 FFMA/cycle x 2 x 1.98 GHz
    assert c[("compute", "fp16")] == pytest.approx(1.339e14, rel=1e-3)
    # tensor roofs are dense: bf16 540672 op/cycle (hgmma, sparsity off), not the 2x sparse sum
    assert c[("compute", "tensor_bf16")] == pytest.approx(1.0712e15, rel=1e-3)
    assert c[("compute", "tensor_tf32")] == pytest.approx(5.356e14, rel=1e-3)
    assert c[("compute", "tensor_fp8")] == pytest.approx(2.1424e15, rel=1e-3)
    assert c[("compute", "tensor_int8")] == pytest.approx(2.1424e15, rel=1e-3)


# --------------------------------------------------------------------------------------------
# Agreement with Nsight Compute's own numbers for the same report
# --------------------------------------------------------------------------------------------

def test_traffic_agrees_with_nsight_compute(rl):
    ours = {lvl: [row(rl, i, lvl)["bytes_per_s"] for i in (0, 1)] for lvl in LEVEL_ORDER}
    assert ours["DRAM"] == pytest.approx(nvidia_raw("dram__bytes.sum.per_second"), rel=1e-9)
    # the sections' own derived metrics: lts2xbar cycles x 32 and L1 writeback cycles x 128
    assert ours["L2"] == pytest.approx(nvidia_raw("derived__lts__lts2xbar_bytes.sum.per_second"), rel=1e-9)
    assert ours["L1"] == pytest.approx(nvidia_raw("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second"), rel=1e-9)


def test_peaks_agree_with_nsight_compute(rl):
    def peaks(kind_col: str, level: str, precision: str) -> list[float]:
        return [row(rl, i, level, precision)[kind_col] for i in (0, 1)]

    lts_hz, l1_hz, sm_hz = (nvidia_raw(m) for m in ("lts__cycles_elapsed.avg.per_second", "l1tex__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second"))
    expect = {
        ("peak_bytes_per_s", "L2", "fp32"): "derived__lts__lts2xbar_bytes.sum.peak_sustained",
        ("peak_bytes_per_s", "L1", "fp32"): "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
        ("peak_flop_per_s", "DRAM", "fp32"): "derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2",
        ("peak_flop_per_s", "DRAM", "fp64"): "derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2",
        ("peak_flop_per_s", "DRAM", "fp16"): "derived__sm__sass_thread_inst_executed_op_hfma_pred_on_x4",
    }
    clock = {"L2": lts_hz, "L1": l1_hz, "DRAM": sm_hz}
    for (col, level, precision), per_cycle in expect.items():
        theirs = [v * hz for v, hz in zip(nvidia_raw(per_cycle), clock[level])]
        assert peaks(col, level, precision) == pytest.approx(theirs, rel=1e-9), per_cycle
    # tensor: Nsight Compute's own per-second peak of the dense bf16 hgmma path
    theirs = nvidia_raw("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second")
    assert peaks("peak_flop_per_s", "DRAM", "tensor_bf16") == pytest.approx(theirs, rel=1e-6)


def test_dram_roof_distance_is_nsight_computes_dram_throughput(rl):
    theirs = nvidia_details("GPU Speed Of Light Throughput", "DRAM Throughput")  # printed with 2 decimals
    assert [row(rl, i, "DRAM")["pct_of_roof"] for i in (0, 1)] == pytest.approx(theirs, abs=0.005)


def test_fp32_to_fp64_ratio_is_the_one_nsight_compute_states(rl, prof):
    msg = prof.rules.filter((pl.col("launch_id") == 0) & (pl.col("rule_id") == "SOLFPRoofline"))["message"].item()
    a, b = map(int, re.search(r"performance on this device is (\d+):(\d+)", msg).groups())
    c = {r["name"]: r["peak_per_s"] for r in rl.ceilings.filter(pl.col("kind") == "compute").iter_rows(named=True)}
    assert c["fp32"] / c["fp64"] == pytest.approx(a / b, rel=1e-9)
    assert "achieved 0% of this device's FP32 peak" in msg
    assert rl.table.filter(pl.col("precision") == "fp32")["compute_pct"].to_list() == [0.0] * 6


# --------------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------------

def check_invariants(table: pl.DataFrame) -> None:
    t = table
    assert t.height > 0
    assert (t["flop_per_s"] <= t["peak_flop_per_s"] * (1 + TOL)).all()
    assert (t["bytes_per_s"] <= t["peak_bytes_per_s"] * (1 + TOL)).all()
    assert (t["flop_per_s"] <= t["roof_flop_per_s"] * (1 + TOL)).all()
    assert t["pct_of_roof"].is_between(0, 100 * (1 + TOL)).all()
    worked = t.filter(pl.col("flop") > 0)
    assert (worked["intensity_flop_per_byte"] > 0).all()
    assert worked["flop_per_s"].to_list() == pytest.approx((worked["intensity_flop_per_byte"] * worked["bytes_per_s"]).to_list(), rel=1e-12)
    assert t["ridge_flop_per_byte"].to_list() == pytest.approx((t["peak_flop_per_s"] / t["peak_bytes_per_s"]).to_list(), rel=1e-12)
    assert t["bytes"].to_list() == pytest.approx((t["bytes_per_s"] * t["duration_ns"] * 1e-9).to_list(), rel=1e-12)
    # the bound is the side of the ridge the point is on
    bound = t.filter(pl.col("bound").is_not_null())
    side = pl.when(pl.col("intensity_flop_per_byte") >= pl.col("ridge_flop_per_byte")).then(pl.lit("compute")).otherwise(pl.lit("memory"))
    assert bound.select((pl.col("bound") == side).all()).item()


def test_invariants_on_the_recording(rl):
    check_invariants(rl.table)
    # every launch x level x precision once
    assert rl.table.select(pl.struct("launch_id", "level", "precision").is_unique().all()).item()


# --------------------------------------------------------------------------------------------
# Counting FLOPs the way Nsight Compute does (synthetic rates on the real report)
# --------------------------------------------------------------------------------------------

SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
HGMMA_BF16 = "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_{}.sum.per_cycle_elapsed"
HMMA_BF16 = "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.per_cycle_elapsed"
SUM_BF16 = "sm__ops_path_tensor_src_bf16_dst_fp32.sum.per_cycle_elapsed"


@pytest.fixture(scope="module")
def synthetic(prof):
    """Synthetic per-cycle instruction rates on the real report (not a measurement): FP32 1000 FFMA,
    100 FADD, 10 FMUL; FP16 50 HFMA, 5 HADD, 1 HMUL; FP64 7 DFMA; BF16 tensor 20000 ops on hgmma
    and 5000 on hmma, and the per-input-type sum Nsight Compute would report with them."""
    rates = {
        SASS.format("ffma"): 1000.0, SASS.format("fadd"): 100.0, SASS.format("fmul"): 10.0,
        SASS.format("hfma"): 50.0, SASS.format("hadd"): 5.0, SASS.format("hmul"): 1.0,
        SASS.format("dfma"): 7.0,
        HGMMA_BF16.format("off"): 20000.0, HMMA_BF16: 5000.0, SUM_BF16: 25000.0,
    }
    return with_metrics(prof, rates)


def test_flops_count_an_fma_as_two(synthetic, prof):
    rl = roofline(synthetic)
    smsp_hz = prof.metrics.filter((pl.col("metric") == "smsp__cycles_elapsed.avg.per_second"))["value"].to_list()
    sm_hz = prof.metrics.filter((pl.col("metric") == "sm__cycles_elapsed.avg.per_second"))["value"].to_list()
    for i in (0, 1):
        assert row(rl, i, "DRAM", "fp32")["flop_per_s"] == pytest.approx((100 + 10 + 2 * 1000) * smsp_hz[i], rel=REL)
        # half precision: a packed pair per instruction, so HADD/HMUL count 2 and HFMA 4
        assert row(rl, i, "DRAM", "fp16")["flop_per_s"] == pytest.approx((2 * 5 + 2 * 1 + 4 * 50) * smsp_hz[i], rel=REL)
        assert row(rl, i, "DRAM", "fp64")["flop_per_s"] == pytest.approx(2 * 7 * smsp_hz[i], rel=REL)
        # tensor: per-instruction paths summed once (the per-input-type sum is not added again)
        t = row(rl, i, "DRAM", "tensor_bf16")
        assert t["flop_per_s"] == pytest.approx(25000 * sm_hz[i], rel=REL)
        assert t["peak_flop_per_s"] == pytest.approx(540672 * sm_hz[i], rel=REL)  # dense hgmma roof
    check_invariants(rl.table)
    worked = rl.table.filter(pl.col("precision") == "fp32")
    assert (worked["intensity_flop_per_byte"] > 0).all() and (worked["flop"] > 0).all()


def test_sparse_work_raises_the_tensor_roof(prof):
    rl = roofline(with_metrics(prof, {HGMMA_BF16.format("on"): 1000.0}))
    t = row(rl, 0, "DRAM", "tensor_bf16")
    sm_hz = prof.metrics.filter((pl.col("launch_id") == 0) & (pl.col("metric") == "sm__cycles_elapsed.avg.per_second"))["value"].item()
    assert t["flop_per_s"] == pytest.approx(1000 * sm_hz, rel=REL)
    assert t["peak_flop_per_s"] == pytest.approx(1_081_344 * sm_hz, rel=REL)  # hgmma bf16, sparsity on


def test_headline_picks_the_precision_in_use(synthetic, rl):
    h = headline(roofline(synthetic).table)
    assert h.height == 6 and set(h["precision"]) == {"fp32"}  # 2110 FLOP/cycle of 33792 beats 25000 of 540672
    assert headline(rl.table)["precision"].to_list() == ["fp32"] * 6  # no work: FP32, as Nsight Compute shows


# --------------------------------------------------------------------------------------------
# Reports without the hierarchical metrics, kernel filter, before/after, words
# --------------------------------------------------------------------------------------------

def test_report_without_cache_levels_keeps_dram_and_names_the_gaps(prof, rl):
    # without the metrics only the hierarchical sections collect (L2-to-SM and L1 writeback cycles)
    # and without tensor-path metrics, as in a report recorded with fewer sections or an older ncu
    thin = roofline(with_metrics(prof, drop=r"^(lts__lts2xbar|l1tex__lsu_writeback|sm__ops_path_tensor)"))
    assert thin.table["level"].unique().to_list() == ["DRAM"]
    assert missing_levels(thin) == ["L2", "L1"]
    gaps = thin.missing.filter(pl.col("launch_id") == 0)
    assert gaps.select("part", "name").rows() == [("level", "L2"), ("level", "L1"), ("precision", "tensor")]
    assert "lts__lts2xbar_cycles_active.sum.per_second" in gaps.filter(pl.col("name") == "L2")["needs"].item()
    assert "l1tex__lsu_writeback_active_mem_lgds.sum.per_second" in gaps.filter(pl.col("name") == "L1")["needs"].item()
    full = rl.table.filter((pl.col("level") == "DRAM") & ~pl.col("precision").str.starts_with("tensor_"))
    assert thin.table.drop("roof_flop_per_s").equals(full.drop("roof_flop_per_s"))
    check_invariants(thin.table)


def test_older_l1_counter_names_are_used(prof, rl):
    """Ampere/Ada reports count L1 writeback as mem_lg (no distributed shared memory): same numbers."""
    renamed = prof.metrics.with_columns(pl.col("metric").str.replace("_mem_lgds.", "_mem_lg.", literal=True))
    older = roofline(make_kernel_profile(prof.source, launches=prof.launches, metrics=renamed, devices=prof.devices))
    assert row(older, 0, "L1")["bytes_per_s"] == row(rl, 0, "L1")["bytes_per_s"]


def test_kernel_filter(prof):
    rl = roofline(prof, kernel="coalesced")
    assert rl.table["kernel_name"].unique().to_list() == ["copy_coalesced"]
    assert roofline(prof, kernel=r"copy_strided\(const float").table["launch_id"].unique().to_list() == [0]  # demangled
    assert roofline(prof, kernel="^gemm").table.height == 0


def test_pair_before_and_after(prof, rl):
    same = pair(rl, rl)
    assert same.height == rl.table.height and (same["speedup"] == 1.0).all()
    # a kernel rewritten under a new name: one launch each side pairs the two
    p = pair(roofline(prof, "strided"), roofline(prof, "coalesced")).filter((pl.col("level") == "DRAM") & (pl.col("precision") == "fp32"))
    r = p.row(0, named=True)
    assert (r["kernel_name_before"], r["kernel_name_after"]) == ("copy_strided", "copy_coalesced")
    assert r["speedup"] == pytest.approx(1_179_872 / 198_080, rel=1e-12)
    assert r["bytes_before"] / r["bytes_after"] == pytest.approx(8.816, abs=1e-3)


def test_ridges_in_words(rl):
    text = explain_ridges(rl)
    assert text[0].startswith("On the NVIDIA H200, a kernel doing fewer than ~14 FP32 FLOPs per DRAM byte is memory-bound")
    assert "DRAM bandwidth (4.81 TB/s)" in text[0] and "(67 TFLOP/s)" in text[0]
    assert "the ridges are at ~6.5 and ~2 FLOPs per byte" in text[0]
    assert "~220 BF16 tensor FLOPs per DRAM byte" in text[1]
    assert explain_ridges(rl, ["fp64"]) == [
        "On the NVIDIA H200, a kernel doing fewer than ~7 FP64 FLOPs per DRAM byte is memory-bound: below that, DRAM "
        "bandwidth (4.81 TB/s) caps it before the FP64 peak (33.5 TFLOP/s) does. Counting L2 and L1 traffic instead, "
        "the ridges are at ~3.3 and ~1 FLOPs per byte."
    ]


def test_precision_labels():
    assert [precision_label(p) for p in ("fp64", "fp16", "tensor_bf16", "tensor_fp16_bf16_tf32")] == [
        "FP64", "FP16/BF16 (non-tensor)", "BF16 tensor", "FP16/BF16/TF32 tensor"]


def test_datasheet_and_measured_ceilings_join_the_reports(rl):
    from coach.analyze import hardware

    h200 = hardware.match("NVIDIA H200")
    sheet, best = hardware.ceilings(h200, measured=False), hardware.ceilings(h200)
    both = with_hardware(rl)
    assert both.table.equals(rl.table)  # the table keeps the report's own roofs
    c = {(r["source"], r["kind"], r["name"]): r for r in both.ceilings.iter_rows(named=True)}
    assert c[("datasheet", "bandwidth", "DRAM")]["peak_per_s"] == sheet.bandwidth["dram"].value
    assert "h200-ds" in c[("datasheet", "bandwidth", "DRAM")]["note"]
    # shared memory and L1 are one SRAM: the datasheet-derived shared-memory rate is the L1 roof
    assert c[("datasheet", "bandwidth", "L1")]["peak_per_s"] == pytest.approx(c[("Nsight Compute", "bandwidth", "L1")]["peak_per_s"], rel=0.01)
    assert ("datasheet", "bandwidth", "L2") not in c  # NVIDIA publishes none
    assert c[("measured", "bandwidth", "DRAM")]["peak_per_s"] == best.bandwidth["dram"].measured
    assert c[("measured", "compute", "tensor_bf16")]["peak_per_s"] == best.compute["bf16"].measured
    assert c[("measured", "compute", "tensor_bf16")]["note"].startswith("measured on NVIDIA H200")
    # below the report's peaks, as measured rates are
    assert c[("measured", "bandwidth", "DRAM")]["peak_per_s"] < c[("Nsight Compute", "bandwidth", "DRAM")]["peak_per_s"]
    practical = [t for t in explain_ridges(both) if "best measured rates" in t]
    bf16 = best.compute["bf16"].measured / best.bandwidth["dram"].measured
    assert any(f"BF16 tensor {best.compute['bf16'].measured / 1e12:.3g} TFLOP/s" in t and f"at {bf16:,.0f} FLOP/byte" in t for t in practical)
