"""Floors worked by hand from the datasheet numbers, and the `coach predict` / `coach gpus` commands."""

from __future__ import annotations

import json

import pytest

from coach.analyze import predict as p
from coach.analyze.hardware import ceilings
from coach.cli import main


def test_softmax_on_h100_sxm_by_hand():
    # softmax over 32768 x 4096 bf16: every element read once and written once
    #   bytes = 2 x 32768 x 4096 x 2 B = 536,870,912 B
    #   time  = 536,870,912 B / 3.35e12 B/s (H100 SXM datasheet) = 160.26 us
    # FLOPs = 5 x 32768 x 4096 = 671,088,640 at 66.9 TFLOP/s FP32 = 10.03 us, so DRAM dominates.
    work = p.softmax(32768, 4096, "bf16")
    assert work.bytes == 2 * 32768 * 4096 * 2 == 536_870_912
    r = p.predict(work, "h100-sxm")
    assert r.floor_s == pytest.approx(536_870_912 / 3.35e12)
    assert r.floor_s == pytest.approx(160.26e-6, rel=1e-4)
    assert r.bound == "memory" and r.dominant.name == "dram" and r.dominant.origin == "published"
    fp32 = next(t for t in r.terms if t.name == "fp32")
    assert fp32.floor_s == pytest.approx(5 * 32768 * 4096 / 66.9e12)
    # intensity 5 FLOP / 4 B per element = 1.25 FLOP/B, far below the FP32 ridge 66.9/3.35 = 19.97
    assert r.intensity_flop_per_byte == pytest.approx(1.25)
    assert r.ridge_flop_per_byte == pytest.approx(66.9e12 / 3.35e12)


def test_percent_of_floor():
    # 536,870,912 B on the H100 SXM: floor 160.26 us; measured 320.53 us is half the floor speed
    r = p.predict(p.softmax(32768, 4096, "bf16"), "h100-sxm", measured_s=2 * 536_870_912 / 3.35e12)
    assert r.pct_of_floor == pytest.approx(50.0)
    assert r.achieved_bytes_per_s == pytest.approx(3.35e12 / 2)


def test_gemm_on_h100_sxm_is_compute_bound():
    # 8192^3 bf16: 2 x 8192^3 = 1.0995e12 FLOP / 989.4e12 = 1.1113 ms;
    # bytes 2 B x 3 x 8192^2 = 402,653,184 B / 3.35e12 = 120.2 us
    r = p.predict(p.gemm(8192, 8192, 8192, "bf16"), "h100-sxm")
    assert r.floor_s == pytest.approx(2 * 8192**3 / 989.4e12)
    assert r.bound == "compute" and r.dominant.name == "bf16"
    assert r.intensity_flop_per_byte == pytest.approx(2 * 8192**3 / (2 * 3 * 8192**2))  # 2730.7 FLOP/B
    assert r.ridge_flop_per_byte == pytest.approx(989.4e12 / 3.35e12)  # 295.3 FLOP/B


def test_h200_uses_its_measured_ceilings_unless_told_not_to():
    work = p.copy(2**28, "fp32")  # 2 x 2^28 x 4 B = 2,147,483,648 B
    measured = p.predict(work, "h200")
    dram = ceilings("h200").bandwidth["dram"].value  # the calibration, raised to the best recorded rate
    assert dram >= 4.1948e12
    assert measured.floor_s == pytest.approx(2_147_483_648 / dram, rel=1e-4) and measured.dominant.origin == "measured"
    sheet = p.predict(work, "h200", use_measured=False)
    assert sheet.floor_s == pytest.approx(2_147_483_648 / 4.8e12)


def test_entered_work_with_two_precisions():
    # 8e9 B and 1e12 bf16 FLOP on the H100 SXM: DRAM 2.388 ms vs tensor 1.011 ms: memory-bound
    r = p.predict(p.Work(bytes=8e9, flops={"bf16": 1e12, "fp32": 1e10}), "h100-sxm")
    assert r.floor_s == pytest.approx(8e9 / 3.35e12) and r.bound == "memory"
    assert [t.name for t in r.terms] == ["dram", "bf16", "fp32"]
    assert r.ridge_flop_per_byte == pytest.approx(989.4e12 / 3.35e12)  # of the larger compute term


def test_op_models_count_bytes_and_flops():
    assert p.reduction(1000, "fp32").bytes == 4004
    assert p.transpose(16384, 16384, "fp32").bytes == 2 * 16384**2 * 4
    assert p.layernorm(32768, 4096, "bf16").bytes == 2 * 32768 * 4096 * 2 + 2 * 4096 * 2
    gemv = p.gemv(28672, 8192, "bf16")  # GEMV bf16 8192x28672, batch 1
    assert gemv.bytes == 2 * (28672 * 8192 + 8192 + 28672) and gemv.flops == {"fp32": 2.0 * 28672 * 8192}
    attn = p.attention(4, 32, 4096, 128, dtype="bf16")
    assert attn.flops["bf16"] == 4 * 4 * 32 * 4096 * 4096 * 128  # 274.9 GFLOP
    assert attn.bytes == 2 * 4 * 32 * 128 * 4 * 4096
    causal = p.attention(4, 32, 4096, 128, causal=True, dtype="bf16")
    assert causal.flops["bf16"] == pytest.approx(attn.flops["bf16"] * 4097 / 8192)  # (S + 1) / 2S of the scores
    assert p.causal_fraction(1, 4096) == pytest.approx(1.0)  # one decode query sees every key


def test_decode_floor_70b_bf16_on_8_h200():
    # 70e9 weights x 2 B = 140 GB, 17.5 GB per GPU; at 4.8e12 B/s: 3.6458 ms per token, 274.3 tokens/s
    f = p.decode_floor(70e9, 2, "h200", gpus=8, use_measured=False)
    assert f.bytes_per_token_per_gpu == 17.5e9
    assert f.seconds_per_token == pytest.approx(17.5e9 / 4.8e12)
    assert f.tokens_per_s == pytest.approx(4.8e12 / 17.5e9)  # 274.29
    # at the measured DRAM ceiling (the calibration's 4.195 TB/s, hardware/measured/h200.json, raised to the
    # best rate recorded on the H200)
    dram = ceilings("h200").bandwidth["dram"].value
    assert p.decode_floor(70e9, 2, "h200", gpus=8).tokens_per_s == pytest.approx(dram / 17.5e9, rel=1e-4)


def test_precision_the_gpu_lacks_is_an_error():
    with pytest.raises(p.PredictionError, match="Tesla V100 SXM2 16 GB has no bf16 compute rate"):
        p.predict(p.gemm(1024, 1024, 1024, "bf16"), "v100-sxm2-16gb")
    with pytest.raises(p.PredictionError, match="unknown dtype 'fp4'"):
        p.softmax(2, 2, "fp4")
    with pytest.raises(p.PredictionError, match="rows must be positive"):
        p.softmax(0, 2)


def _run(capsys, *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_predict_json(capsys):
    code, out, _ = _run(capsys, "predict", "--gpu", "h100-sxm", "--bytes", "8e9", "--flops", "1e12", "--dtype", "bf16",
                        "--measured-ms", "3.1", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["floor_s"] == pytest.approx(8e9 / 3.35e12)
    assert d["pct_of_floor"] == pytest.approx(100 * (8e9 / 3.35e12) / 3.1e-3)  # 77.0%
    assert d["bound"] == "memory" and d["dominant"]["name"] == "dram"


def test_cli_predict_op_softmax_rich(capsys):
    code, out, _ = _run(capsys, "predict", "op", "softmax", "--rows", "32768", "--cols", "4096", "--dtype", "bf16",
                        "--gpu", "h100-sxm", "--measured-ms", "0.32052")
    assert code == 0
    assert "Floor: 160.3 us, memory-bound" in out and "50.0% of floor" in out


def test_cli_decode(capsys):
    code, out, _ = _run(capsys, "predict", "op", "decode", "--params", "70e9", "--dtype", "bf16", "--gpus", "8",
                        "--gpu", "h200", "--datasheet", "--json")
    assert code == 0 and json.loads(out)["tokens_per_s"] == pytest.approx(274.2857, rel=1e-5)


@pytest.mark.parametrize("args, message", [
    (("predict", "--gpu", "h900", "--bytes", "1e9"), "--gpu: unknown GPU 'h900'; use one of a10, a100-sxm4-40gb"),
    (("predict", "--bytes", "1e9"), "--gpu is required"),
    (("predict", "--gpu", "h200"), "give --bytes and/or --flops"),
    (("predict", "--gpu", "h200", "--flops", "1", "--dtype", "fp7"), "--dtype: unknown precision 'fp7'"),
    (("predict", "op", "softmax", "--rows", "8", "--gpu", "h200"), "softmax needs --cols"),
    (("predict", "op", "conv", "--gpu", "h200"), "unknown op 'conv'"),
    (("predict", "op", "gemm", "--m", "8", "--n", "8", "--k", "8", "--gpu", "v100-sxm2-16gb"), "has no bf16 compute rate"),
])
def test_cli_errors_name_the_flag_and_the_fix(capsys, args, message):
    code, out, err = _run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("coach: error: ") and message in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_cli_gpus(capsys):
    code, out, _ = _run(capsys, "gpus", "--json")
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out)}
    assert len(rows) == 13 and rows["h200"]["dram_bandwidth_bytes_per_s"] == 4.8e12
    code, out, _ = _run(capsys, "gpus", "h200", "--json")
    d = json.loads(out)
    assert {r["field"]: r["origin"] for r in d["fields"]}["sm_count"] == "recorded"
    assert any(c["name"] == "dram" and c["origin"] == "measured" for c in d["ceilings"])
