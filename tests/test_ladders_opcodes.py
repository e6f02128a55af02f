"""Executed SASS opcodes of the compute ladders recorded on the H200 (traces/h200/ladders/matmul/*,
attention; Nsight Compute's InstructionStats section, sass__inst_executed_per_opcode, warp-level
counts) and the measured sentences written from them (coach.analyze.ladder_evidence)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl
import pytest

from coach.analyze import ladder_evidence as ev
from coach.ingest import load
from coach.ladders import load_definition, load_results, rung_table

DATA = Path(__file__).parent / "data"
SYNTHETIC_ROOT = DATA / "ladders" / "synthetic-root"
COMPUTE = ["matmul/fp32", "matmul/bf16", "attention"]
#: FLOP of one warp's share of one instruction, from the PTX shapes: mma.sync m16n8k16 (HMMA) is
#: 2*16*8*16 per warp; wgmma m64n256k16 (HGMMA, issued by a warpgroup of 4 warps, counted per warp)
#: is 2*64*256*16 / 4; an FFMA is one multiply-add per thread, 32 per warp.
FLOP_PER_HMMA = 2 * 16 * 8 * 16
FLOP_PER_HGMMA_N256 = 2 * 64 * 256 * 16 // 4
FLOP_PER_FFMA = 2 * 32


@cache
def recorded(name: str) -> ev.Recorded:
    return ev.recorded(name)


def _counts(name: str) -> dict[str, tuple[int, int, int, int]]:
    """rung -> executed (HGMMA, HMMA, FFMA, all instructions) of its longest kernel."""
    return {k: (int(p["hgmma_inst"]), int(p["hmma_inst"]), int(p["ffma_inst"]), int(p["warp_inst"]))
            for k, p in recorded(name).profiles.items()}


def test_matmul_bf16_mma_sync_rung_executes_hmma_and_the_triton_rungs_hgmma():
    counts = _counts("matmul/bf16")
    assert counts["00_mma_sync"] == (0, 268_435_456, 0, 652_214_272)
    triton = {k: c[:3] for k, c in counts.items() if k != "00_mma_sync"}  # and the hand-written wgmma rungs 07-10
    assert triton == {k: (8_388_608, 0, 0) for k in ("01_triton_blocks", "02_grouped_order", "03_pipelined", "04_autotuned",
                                                     "05_tma_persistent", "06_warp_specialized", "07_wgmma_tma",
                                                     "08_wgmma_specialized", "09_wgmma_cluster", "10_wgmma_tma_store")}
    flops = recorded("matmul/bf16").results.rungs[0].flops  # 2 * 8192^3
    assert counts["00_mma_sync"][1] * FLOP_PER_HMMA == flops
    assert all(c[0] * FLOP_PER_HGMMA_N256 == flops for c in triton.values()), "every later rung: m64n256k16"
    # the pipe metrics tell the same story: the warpgroup (gmma) tensor pipe idles under mma.sync
    metrics = load(ev.profile_folder("matmul/bf16")).metrics
    issued = dict(metrics.filter(pl.col("metric") == "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active")
                  .select("launch_id", "value").iter_rows())
    assert issued[0] == 0.0 and all(issued[i] > 1.0 for i in range(1, 11))


def test_matmul_fp32_rungs_execute_the_same_ffma_and_less_of_everything_else():
    counts = _counts("matmul/fp32")
    assert {c[:3] for c in counts.values()} == {(0, 0, 2_147_483_648)}  # 4096^3 multiply-adds / 32 lanes
    assert 2_147_483_648 * FLOP_PER_FFMA == recorded("matmul/fp32").results.rungs[0].flops
    share = {k: round(100 * c[2] / c[3], 1) for k, c in counts.items()}
    assert share == {"00_naive": 21.9, "01_coalesced": 21.9, "02_smem_tiling": 37.1, "03_1d_register_blocking": 56.1,
                     "04_2d_register_blocking": 88.2, "05_vectorized": 89.8, "06_warp_tiling": 90.6, "07_tuned": 89.5}
    assert counts["07_tuned"][3] == 2_400_509_952


def test_attention_online_softmax_rung_uses_mma_sync_and_the_later_rungs_wgmma():
    counts = _counts("attention")
    assert counts["00_naive"][:3] == (16_777_216, 0, 0)  # its longest kernel: the QK^T scores
    assert counts["01_online_softmax"][:3] == (0, 268_435_456, 100_663_296)
    assert counts["02_flash2"][:3] == (41_943_040, 0, 75_497_472)
    assert {counts[k][:3] for k in ("03_hopper_tiles", "04_causal_skip", "05_tma")} == {(16_777_216, 0, 69_206_016)}


@pytest.mark.parametrize("name", COMPUTE)
def test_compute_sentences_quote_the_executed_opcodes_not_an_empty_histogram(name):
    rec = recorded(name)
    for i, row in enumerate(rec.rows):
        text = ev.measured_text(rec, i)
        assert text == row.rung.measured
        assert "warp instructions executed: " in text and "SASS of" not in text and "no tensor-core instruction" not in text
    texts = {row.rung.key: row.rung.measured for row in rec.rows}
    if name == "matmul/bf16":
        assert texts["00_mma_sync"].endswith("652.21 M warp instructions executed: 0 HGMMA, 268.44 M HMMA, no FFMA")
        assert texts["06_warp_specialized"].endswith("189.51 M warp instructions executed: 8.39 M HGMMA, 0 HMMA, no FFMA")
    if name == "matmul/fp32":
        assert texts["07_tuned"].endswith("2400.51 M warp instructions executed: 0 HGMMA, 0 HMMA, FFMA 89.5% of them")


def test_memory_ladder_profiles_have_no_opcode_counts_and_keep_their_sentences():
    rec = recorded("reduction")
    assert all(p["ffma_inst"] is None for p in rec.profiles.values())
    assert ev.stale("reduction") == []


# Falling back to the static SASS histogram, and never quoting an empty one.

def _synthetic(profile):
    defn = load_definition("matmul/synthetic")
    res = load_results(SYNTHETIC_ROOT / "traces" / "h200" / "ladders" / "matmul" / "synthetic" / "results.json")
    return ev.Recorded(defn, res, tuple(rung_table(defn, res)), {"01_wgmma": profile})


PROFILE = {"launches": 1, "total_duration_ns": 3.1e6, "kernel_name": "mm_fenced", "duration_ns": 3.1e6,
           "grid_size": 65536, "block_size": 256, "waves_per_sm": 62.06,
           "busiest_pipe_metric": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
           "busiest_pipe_pct": 88.25, "sm_issue_active_pct": 91.5, "achieved_occupancy_pct": 60.1,
           "theoretical_occupancy_pct": 62.5, "registers_per_thread": 96, "dram_throughput_pct": 4.2,
           "l2_throughput_pct": 20.5, "l1_throughput_pct": 55.0, "warp_inst": 2.5e9}


def test_executed_counts_replace_the_static_histogram(monkeypatch):
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    rec = _synthetic({**PROFILE, "hgmma_inst": 0.0, "hmma_inst": 0.0, "ffma_inst": 2.25e9})
    text = ev.measured_text(rec, 1)
    assert text.endswith("2500.00 M warp instructions executed: 0 HGMMA, 0 HMMA, FFMA 90.0% of them")
    assert "SASS of" not in text
    tensor = _synthetic({**PROFILE, "hgmma_inst": 1.05e6, "hmma_inst": 0.0, "ffma_inst": 0.0})
    assert ev.measured_text(tensor, 1).endswith("warp instructions executed: 1.05 M HGMMA, 0 HMMA, no FFMA")
    fp8 = _synthetic({**PROFILE, "qgmma_inst": 4.19e6, "hgmma_inst": 0.0, "hmma_inst": 0.0, "ffma_inst": 0.0})
    assert ev.measured_text(fp8, 1).endswith("warp instructions executed: 4.19 M QGMMA, 0 HGMMA, 0 HMMA, no FFMA")


def test_fp8_wgmma_counts_as_a_tensor_core_instruction_in_the_static_histogram():
    assert ev.sass_text({"k": {"QGMMA": 4, "HGMMA": 0, "FFMA": 1}}) == (
        "SASS of k: 4 QGMMA, 1 FFMA (instructions in the code, not executions)")


def test_an_empty_histogram_is_no_evidence():
    assert ev.sass_text({"k": {}}) is None and ev.sass_text({}) is None
    assert ev.sass_text({"k": {}, "j": {"HMMA": 2}}, "k") == (
        "SASS of j: 2 HMMA, 0 FFMA (instructions in the code, not executions)")
