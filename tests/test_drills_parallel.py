"""Parallelism drills against worked examples done by hand from the datasheets.

Numbers used below (as the hardware tables carry them):
  H200:     NVLink 900 GB/s bidirectional (NVIDIA H200 datasheet), so 450 GB/s each way;
            dense BF16 tensor 989.5 TFLOP/s (1,979 with sparsity); DRAM 4.8 TB/s.
  H100 SXM: NVLink 900 GB/s bidirectional (H100 whitepaper p. 47), 450 GB/s each way;
            dense BF16 tensor 989.4 TFLOP/s (whitepaper Table 3).
  GB200:    NVLink 1.8 TB/s bidirectional (Blackwell technical brief p. 10), 900 GB/s each way;
            72 GPUs in one NVLink domain (Blackwell datasheet, GB200 NVL72).
  B200:     8 GPUs in one NVLink domain (HGX B200).
"""

from __future__ import annotations

import pytest

from coach.exercises import drills as d


def test_tensor_parallel_forward_all_reduces_of_a_70b_layer_stack_on_8_h200():
    # one all-reduce: b*s*h*2 B = 1 x 4096 x 8192 x 2 = 67,108,864 B
    # ring: 2 x 7/8 x 67,108,864 = 117,440,512 B sent per GPU
    # two per layer, 80 layers: 160 x 117,440,512 = 18,790,481,920 B
    # 18,790,481,920 B / 450e9 B/s = 41.757 ms
    drill = d.tensor_parallel(80, 8192, 1, 4096, 8, "h200")
    assert drill.unit.name == "ms" and drill.answer == pytest.approx(41.757, rel=1e-4)
    assert drill.topic == "training" and drill.tolerance == 0.20
    assert "67,108,864 B" in drill.steps[0] and "117,440,512 B" in drill.steps[1]
    assert "18,790,481,920 B" in drill.steps[2] and "450 GB/s each way" in drill.steps[3]
    assert drill.check("42 ms").correct and not drill.check("21 ms").correct  # forgetting the factor 2(n-1)/n


@pytest.mark.parametrize("p, m, pct", [
    (4, 8, 27.273),   # 3 / (8 + 3) = 3/11
    (8, 64, 9.859),   # 7 / (64 + 7) = 7/71
    (2, 1, 50.0),     # 1 / (1 + 1)
])
def test_pipeline_bubble(p, m, pct):
    drill = d.pipeline_bubble(p, m)
    assert drill.answer == pytest.approx(pct, rel=1e-4) and drill.unit.name == "%"
    assert drill.tolerance == 0.05


def test_data_parallel_ring_all_reduce_of_7b_bf16_gradients_on_8_h100():
    # 7e9 x 2 B = 14e9 B; ring: 2 x 7/8 x 14e9 = 24.5e9 B; / 450e9 B/s = 54.444 ms
    drill = d.data_parallel(7e9, 2, 8, "h100-sxm")
    assert drill.answer == pytest.approx(54.444, rel=1e-4) and drill.unit.name == "ms"
    assert "24,500,000,000 B" in drill.steps[1]


def test_data_parallel_over_a_whole_nvl72_rack():
    # 70e9 x 2 B = 140e9 B; 2 x 71/72 x 140e9 = 276.11e9 B; / 900e9 B/s = 306.79 ms
    drill = d.data_parallel(70e9, 2, 72, "gb200")
    assert drill.answer == pytest.approx(306.79, rel=1e-4)
    assert "900 GB/s each way" in drill.steps[2]


def test_moe_all_to_all_of_mixtral_on_8_h100():
    # dispatch: 8192 tokens x top-2 x 4096 x 2 B = 134,217,728 B; 7/8 leaves the GPU: 117,440,512 B
    # combine brings as much back: 234,881,024 B; / 450e9 B/s = 521.96 us
    drill = d.moe_all_to_all("Mixtral-8x7B", 8192, 8, "h100-sxm")
    assert drill.unit.name == "us" and drill.answer == pytest.approx(521.96, rel=1e-4)
    assert drill.topic == "inference" and "234,881,024 B" in drill.steps[3]


def test_activation_memory_of_gpt3_175b_as_korthikanti_counts_it():
    # s*b*h = 2048 x 1 x 12288 = 25,165,824; 5as/h = 5 x 96 x 2048 / 12288 = 80
    # per layer 25,165,824 x (34 + 80) = 2,868,903,936 B; x 96 layers = 275,414,777,856 B = 275.41 GB
    drill = d.activation_memory("GPT-3 175B", 1, 2048)
    assert drill.answer == pytest.approx(275.4148, rel=1e-5) and drill.unit.name == "GB"
    assert drill.tolerance == 0.10


def test_activation_memory_with_tensor_and_sequence_parallel_and_flash_attention():
    # the scores term drops: 25,165,824 x 34 / 8 = 106,954,752 B per layer; x 96 = 10,267,656,192 B = 10.268 GB
    drill = d.activation_memory("GPT-3 175B", 1, 2048, tp=8, flash=True)
    assert drill.answer == pytest.approx(10.267656, rel=1e-6)
    assert any("FlashAttention" in s for s in drill.steps)


def test_prefill_of_llama_3_70b_on_8_h200_is_compute_bound():
    # weights: 2 x 70e9 x 8192 = 1.14688e15 FLOP
    # causal attention: 2 x 80 x 8192^2 x 8192 x 1 = 87,960,930,222,080 FLOP
    # total 1.23484093e15 / (8 x 989.5e12 = 7.916e15 FLOP/s) = 155.99 ms
    # weights read once: 140e9 B / (8 x 4.8e12) = 3.646 ms, far below
    drill = d.prefill("Llama-3-70B", 8192, 1, 8, "h200")
    assert drill.answer == pytest.approx(155.99, rel=1e-4) and drill.unit.name == "ms"
    assert "compute-bound" in drill.steps[5]


def test_training_days_of_a_70b_model_on_2t_tokens():
    # 6 x 70e9 x 2e12 = 8.4e23 FLOP; 1024 x 989.4e12 x 40% = 4.0525824e17 FLOP/s
    # 8.4e23 / 4.0525824e17 = 2,072,752 s / 86,400 = 23.990 days
    drill = d.training_days(70e9, 2e12, 1024, 40, "h100-sxm")
    assert drill.answer == pytest.approx(23.990, rel=1e-4) and drill.unit.name == "days"
    assert drill.check("24 days").correct and drill.check("3.4 weeks").correct is False  # weeks are not a unit here
    assert drill.check("576 hours").correct


def test_collective_drills_refuse_what_the_link_model_does_not_cover():
    with pytest.raises(d.DrillError, match="not on NVLink switches"):
        d.data_parallel(7e9, 2, 8, "l4")
    with pytest.raises(d.DrillError, match="not on NVLink switches"):
        d.tensor_parallel(32, 4096, 1, 2048, 4, "v100-sxm2-16gb")  # 6 links in a cube-mesh, no switch
    with pytest.raises(d.DrillError, match="do not fit one NVLink domain"):
        d.data_parallel(7e9, 2, 16, "b200")
    with pytest.raises(d.DrillError, match="do not split evenly"):
        d.moe_all_to_all("Mixtral-8x7B", 4096, 16, "gb200")


def test_a_gpu_without_switches_still_gets_the_drills_it_can_answer():
    kinds = d.kinds_for("l4")
    assert "data-parallel" not in kinds and "prefill" in kinds and "pipeline-bubble" in kinds
    for seed in range(20):
        assert d.generate(gpu="l4", seed=seed).kind in kinds
