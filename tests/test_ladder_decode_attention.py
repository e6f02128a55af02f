"""The decode-attention ladder's problem on the CPU: the paged copy of the KV cache holds the
contiguous one's values where the block table says, the float64 reference agrees with PyTorch's
SDPA and FlexAttention (GQA and the lower-right causal mask of several query tokens), the split rule gives the
documented grid, and every configuration the autotuners of rungs 04-06 may choose is correct, not
only the one the interpreter keeps."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from coach.capture import ladder as runner  # noqa: E402
from coach.ladders import load_definition  # noqa: E402

DEFN = load_definition("decode_attention")
PROBLEM = runner.load_problem(DEFN)
SMALL = PROBLEM.SIZES["small"]


def _inputs(kind="normal", seed=3, **size):
    gen = torch.Generator().manual_seed(seed)
    return PROBLEM.inputs(kind, device="cpu", generator=gen, **{**SMALL, **size})


@pytest.mark.parametrize("kind", PROBLEM.INPUTS)
def test_the_paged_copy_holds_each_sequences_tokens_in_the_pages_its_table_names(kind):
    inp = _inputs(kind)
    page, ctx = SMALL["page"], SMALL["ctx"]
    table = inp["block_table"]
    assert table.dtype == torch.int32 and table.shape == (SMALL["batch"], math.ceil(ctx / page))
    assert sorted(table.flatten().tolist()) == list(range(table.numel())), "every page used once"
    assert not torch.equal(table.flatten(), torch.arange(table.numel(), dtype=torch.int32)), "pages shuffled"
    for name in ("k", "v"):
        gathered = inp[f"{name}_pages"][table.long()]  # (B, pages, H_kv, page, D)
        seq = gathered.permute(0, 2, 1, 3, 4).reshape(SMALL["batch"], SMALL["kv_heads"], -1, SMALL["head_dim"])
        assert torch.equal(seq[:, :, :ctx], inp[name])
        assert bool((seq[:, :, ctx:] == PROBLEM._TAIL).all()) and seq.shape[2] > ctx, "the tail is poisoned"


@pytest.mark.parametrize("queries", [1, 2])
@pytest.mark.parametrize("peer", ["torch.sdpa", "torch.sdpa.expand_kv"])
def test_the_reference_agrees_with_sdpa_through_the_runners_check(peer, queries):
    """T = 1 without a mask, T = 2 with the lower-right causal mask: SDPA (math backend on the CPU)
    passes the runner's check against the float64 reference, for both input distributions."""
    size = {**SMALL, "queries": queries}
    record = runner.measure_item(torch, PROBLEM, lambda: runner.prepare_peer(PROBLEM, peer), size, "cpu", 5,
                                 lambda: None, None)
    assert record["status"] == "ok", record.get("error")
    assert all(c["rel_err"] < 1e-2 for c in record["checks"])


@pytest.mark.parametrize("queries", [1, 2])
def test_the_flex_attention_peer_calls_it_with_gqa_and_the_lower_right_mask(queries, monkeypatch):
    """Uncompiled here (torch.compile on the CPU takes about a minute); the call, its block mask and
    enable_gqa are what is checked, through the runner's check."""
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)
    size = {**SMALL, "queries": queries}
    record = runner.measure_item(torch, PROBLEM, lambda: runner.prepare_peer(PROBLEM, "torch.flex_attention"), size,
                                 "cpu", 5, lambda: None, None)
    assert record["status"] == "ok", record.get("error")


def test_a_wrong_mask_fails_the_check():
    """The mask matters at T = 2: SDPA's own is_causal (aligned to the upper left, so token 0 sees
    only key 0) is far from the reference."""
    import torch.nn.functional as F

    inp = _inputs()
    ref = PROBLEM.reference(inp)["o"]
    out = F.scaled_dot_product_attention(inp["q"], inp["k"], inp["v"], is_causal=True, enable_gqa=True)
    ok, rel, _ = runner.compare(torch, out, ref, 1e-2)
    assert not ok and rel > 0.1


def test_the_bytes_model_counts_the_cache_once_and_q_and_o():
    main = PROBLEM.SIZES["h200"]
    assert PROBLEM.bytes_moved(**main) == 2 * 32 * 8 * 8192 * 128 * 2 + 2 * 32 * 32 * 128 * 2
    assert PROBLEM.flops(**main) == 4 * 32 * 32 * 8192 * 128


def _rung(key):
    rung = next(r for r in DEFN.rungs if r.key == key)
    return runner._import_file(DEFN.path(rung), f"decode_attention_{key}_under_test")


@pytest.mark.parametrize("key, programs, sm_count, length", [
    ("02_split_kv", 32 * 8, 132, 512),     # the main size on the H200: 16 splits, 4096 programs
    ("02_split_kv", 2 * 2, 3, 64),         # the CPU test size: 4 splits of 200 keys
    ("04_async_loads", 32 * 8, 132, 512),  # rung 04: the same splits, whole 128-key blocks
    ("04_async_loads", 2 * 2, 3, 128),
])
def test_the_split_rule(key, programs, sm_count, length, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    pytest.importorskip("triton")
    ctx = 8192 if sm_count == 132 else SMALL["ctx"]
    assert _rung(key).split_len(ctx, programs, sm_count) == length


@pytest.mark.parametrize("resident, programs, sm_count, splits", [
    (4, 32 * 8, 132, 2),  # the main size on the H200: 4 blocks per SM, 512 programs (one wave of 528)
    (2, 32 * 8, 132, 1),  # 2 per SM: 256 programs of the whole context (one wave of 264)
    (4, 2 * 2, 3, 3),     # the CPU test size: 3 splits of 128 keys over 200, the last one empty
    (4, 1024, 132, 1),    # more (b, KV head) pairs than slots: never fewer than one split
])
def test_rung_05_cuts_the_context_into_one_wave_of_resident_programs(resident, programs, sm_count, splits,
                                                                    monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    pytest.importorskip("triton")
    ctx = 8192 if sm_count == 132 else SMALL["ctx"]
    assert _rung("05_resident_waves").splits_for(resident, programs, sm_count, ctx) == splits


@pytest.mark.parametrize("key, kernel, configs", [("04_async_loads", "decode04_split", 7),
                                                  ("05_resident_waves", "decode05_split", 5),
                                                  ("06_fused_combine", "decode06_split", 5)])
def test_every_configuration_of_the_autotuned_rungs_is_correct(key, kernel, configs, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    pytest.importorskip("triton")
    import triton.language as tl

    if type(tl.max).__name__ != "InterpretedFunction":
        pytest.skip("triton was imported before TRITON_INTERPRET was set; run this file on its own")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from ladder_emu import triton_interpreter

    triton_interpreter.patch(monkeypatch)
    module = _rung(key)
    tuner = getattr(module, kernel)
    assert len(module.CONFIGS) == configs
    ctx = runner.Context(torch=torch, device="cpu", sm_count=3)
    for config in module.CONFIGS:
        monkeypatch.setattr(tuner, "configs", [config])
        tuner.cache.clear()
        inp, out = _inputs("large_logits", seed=9), PROBLEM.outputs(device="cpu", **SMALL)
        runner.poison(torch, out)
        module.launch(ctx, inp, out)
        ok, rel, missing = runner.compare(torch, out["o"], PROBLEM.reference(inp)["o"], 1e-2)
        assert ok, f"{config}: relative error {rel}, {missing} unwritten"
        if "count" in ctx._scratch:  # rung 06's arrival counters: left at zero for the next call
            assert not ctx._scratch["count"].any()
