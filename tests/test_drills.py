"""Estimation drills against worked examples done by hand from the datasheets, and their grading.

Datasheet numbers used below (as the hardware tables carry them):
  H100 SXM: DRAM 3.35 TB/s (NVIDIA H100 datasheet); dense BF16 tensor 989.4 TFLOP/s (H100 whitepaper
            Table 3; the datasheet's 1,979 is with sparsity); FP32 66.9 TFLOP/s.
  H200:     DRAM 4.8 TB/s (NVIDIA H200 datasheet).
  A100 80GB SXM: DRAM 2,039 GB/s (NVIDIA A100 datasheet).
  L4:       DRAM 300 GB/s; dense BF16 tensor 121 TFLOP/s (242 with sparsity) (NVIDIA L4 datasheet).
"""

from __future__ import annotations

import math

import pytest

from coach.exercises import drills as d


def test_softmax_on_h100_sxm():
    # read + write each element once: 2 x 32768 x 4096 x 2 B = 536,870,912 B
    # 536,870,912 B / 3.35e12 B/s = 160.26 us
    drill = d.memory_op("softmax", 32768, 4096, "bf16", "h100-sxm")
    assert drill.unit.name == "us" and drill.answer == pytest.approx(160.26, rel=1e-4)
    assert drill.tolerance == 0.20 and drill.topic == "perf-model"
    assert "536,870,912 B" in drill.steps[0] and "3.35 TB/s (h100-ds" in drill.steps[1]


def test_layernorm_on_h200_counts_gamma_and_beta():
    # 2 x 32768 x 4096 x 2 B + gamma and beta 2 x 4096 x 2 B = 536,887,296 B; / 4.8e12 B/s = 111.85 us
    drill = d.memory_op("layernorm", 32768, 4096, "bf16", "h200")
    assert drill.answer == pytest.approx(536_887_296 / 4.8e12 * 1e6) == pytest.approx(111.85, rel=1e-4)


def test_transpose_on_a100_is_in_ms():
    # 2 x 16384^2 x 4 B = 2,147,483,648 B; / 2.039e12 B/s = 1.0532 ms
    drill = d.memory_op("transpose", 16384, 16384, "fp32", "a100-sxm4-80gb")
    assert drill.unit.name == "ms" and drill.answer == pytest.approx(1.0532, rel=1e-4)


def test_gemm_on_h100_sxm_is_compute_bound():
    # 2 x 8192^3 = 1,099,511,627,776 FLOP / 989.4e12 FLOP/s = 1.1113 ms;
    # bytes 3 x 8192^2 x 2 B = 402,653,184 B / 3.35e12 = 0.1202 ms, smaller
    drill = d.gemm(8192, 8192, 8192, "bf16", "h100-sxm")
    assert drill.answer == pytest.approx(1.1113, rel=1e-4) and drill.unit.name == "ms"
    assert any("compute-bound" in s for s in drill.steps)


@pytest.mark.parametrize("flops, nbytes, bound, ms", [
    # intensity 1e12 / 1e9 = 1000 FLOP/B > ridge 121e12 / 300e9 = 403.3: compute; 1e12 / 121e12 = 8.264 ms
    (1e12, 1e9, "compute", 8.2645),
    # intensity 10 FLOP/B < 403.3: memory; 1e9 B / 300e9 B/s = 3.333 ms
    (1e10, 1e9, "memory", 3.3333),
])
def test_bound_on_l4(flops, nbytes, bound, ms):
    drill = d.bound(flops, nbytes, "bf16", "l4")
    assert drill.bound == bound and drill.answer == pytest.approx(ms, rel=1e-4)
    assert "403.3 FLOP/B" in drill.steps[2]


def test_decode_floor_70b_bf16_on_8_h200():
    # 70e9 x 2 B = 140 GB per token, 17.5 GB per GPU; 17.5e9 / 4.8e12 = 3.6458 ms; 1 / 3.6458 ms = 274.29 tokens/s
    drill = d.decode_floor(70e9, 2, 8, "h200", "BF16")
    assert drill.answer == pytest.approx(274.29, rel=1e-4) and drill.topic == "inference"
    assert "8 x NVIDIA H200" in drill.question


def test_decode_floor_int4_on_one_l4():
    # 8e9 x 0.5 B = 4 GB per token; 4e9 / 300e9 = 13.33 ms; 75 tokens/s
    assert d.decode_floor(8e9, 0.5, 1, "l4", "INT4").answer == pytest.approx(75.0)


def test_mfu_7b_on_8_h100_sxm():
    # 6 x 7e9 x 80,000 = 3.36e15 FLOP/s; 8 x 989.4e12 = 7.9152e15; MFU = 42.45%
    drill = d.mfu(7e9, 80_000, 8, "h100-sxm")
    assert drill.answer == pytest.approx(42.45, abs=0.01) and drill.tolerance == 0.10
    assert "not the 2:4-sparse figure" in drill.steps[1]


def test_kv_cache_llama_2_70b():
    # 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token; x 16 x 4096 = 21,474,836,480 B
    drill = d.kv_cache("Llama-2-70B", 16, 4096)
    assert drill.answer == pytest.approx(21.474836, rel=1e-6) and drill.tolerance == 0.05
    assert "327,680 B" in drill.steps[1]


@pytest.mark.parametrize("text, correct", [
    ("160 us", True), ("0.16 ms", True), ("about 135 microseconds", True), ("1.9e-4 s", True),
    ("200us", False),  # 25% high
    ("16 us", False),  # a factor of ten
    ("fast", False),
])
def test_answers_are_read_with_units_and_graded_by_tolerance(text, correct):
    result = d.memory_op("softmax", 32768, 4096, "bf16", "h100-sxm").check(text)
    assert result.correct is correct
    assert result.feedback[-6] == "worked solution:" and result.feedback[-1].startswith("  5. Answer: about 160.3 us")


def test_feedback_says_how_far_off():
    result = d.decode_floor(70e9, 2, 8, "h200").check("140 tok/s")
    assert result.feedback[0] == "off: you said 140 tokens/s, the answer is 274.3 tokens/s (49% low; tolerance ±20%)"


@pytest.mark.parametrize("text, correct, line", [
    ("compute-bound, 8.3 ms", True, "right bound: compute-bound"),
    ("8.3 ms", False, "say which bound it is: this one is compute-bound"),
    ("memory bound, 8.3 ms", False, "wrong bound: you said memory-bound, it is compute-bound"),
    ("I computed 8.3 ms: compute-bound", True, "right bound: compute-bound"),
])
def test_bound_drills_need_the_bound_too(text, correct, line):
    result = d.bound(1e12, 1e9, "bf16", "l4").check(text)
    assert result.correct is correct and result.feedback[1] == line


@pytest.mark.parametrize("kind", d.KINDS)
def test_generated_drills_are_reproducible_and_sound(kind):
    for seed in range(12):
        drill = d.generate(kind, seed=seed)
        assert drill == d.generate(kind, seed=seed) and drill.kind == kind
        assert math.isfinite(drill.answer) and drill.answer > 0
        exact = f"{drill.answer} {drill.unit.name}" + (f" {drill.bound}-bound" if drill.bound else "")
        assert drill.check(exact).correct
        if kind == "bound":
            flops, nbytes = (float(x) for x in drill.id.split(":")[1:3])
            ridge = d._datasheet(drill.gpu).ridge_point("bf16")
            assert not ridge / d.BOUND_MARGIN < flops / nbytes < ridge * d.BOUND_MARGIN


def test_unknown_kind_and_gpu_are_clear_errors():
    from coach.analyze.hardware import UnknownGPUError

    with pytest.raises(d.DrillError, match="unknown drill kind 'nope'"):
        d.generate("nope")
    with pytest.raises(UnknownGPUError):
        d.generate("gemm", gpu="h900")
