"""Time the schedule switches of the Gluon attention kernel (rung 08's file) at the ladder's sizes.

    python3 kernels/attention/sweep_gluon.py

Each line: size, switches (ping-pong, overlap within a warp group, reversed causal tile order), key
block and ring depth, median time and TFLOP/s (triton.testing.do_bench), and the relative norm error
against SDPA's output in the same run (both bf16; the ladder's own check is against float64). SDPA is
timed too, as the yardstick. A variant that fails to compile or launch prints its error and the sweep
goes on. Needs a Hopper GPU, torch and Triton 3.6.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
import triton

HERE = Path(__file__).resolve().parent
SIZES = {"h200": (128, 0), "h200_causal": (128, 1), "h200_d64": (64, 0), "h200_d64_causal": (64, 1)}
#: (size, pingpong, overlap, reverse, (BLOCK_N, stages))
VARIANTS = [
    ("h200", 0, 0, 0, (128, 2)), ("h200", 1, 0, 0, (128, 2)), ("h200", 0, 1, 0, (128, 2)),
    ("h200", 1, 1, 0, (128, 2)), ("h200", 1, 1, 0, (128, 3)),
    ("h200_causal", 0, 0, 0, (128, 2)), ("h200_causal", 1, 0, 0, (128, 2)), ("h200_causal", 1, 1, 0, (128, 2)),
    ("h200_causal", 1, 1, 1, (128, 2)),
    ("h200_d64", 1, 0, 0, (128, 2)), ("h200_d64", 1, 0, 0, (128, 3)), ("h200_d64", 1, 1, 0, (128, 2)),
    ("h200_d64", 1, 1, 0, (128, 3)), ("h200_d64", 1, 0, 0, (256, 2)),
    ("h200_d64_causal", 1, 0, 0, (128, 3)), ("h200_d64_causal", 1, 1, 0, (128, 3)),
    ("h200_d64_causal", 1, 1, 1, (128, 3)),
]


def load_rung(name: str):
    spec = importlib.util.spec_from_file_location(name.replace(".py", ""), HERE / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    rung = load_rung("08_gluon_overlap.py")
    batch, heads, seq = 4, 32, 4096
    gen = torch.Generator(device="cuda").manual_seed(5)
    current = None
    for size, pingpong, overlap, reverse, config in VARIANTS:
        head_dim, causal = SIZES[size]
        flops = 4 * batch * heads * seq * seq * head_dim // (2 if causal else 1)
        if current != size:
            shape = (batch, heads, seq, head_dim)
            q, k = ((1.5 * torch.randn(shape, device="cuda", generator=gen)).to(torch.bfloat16) for _ in range(2))
            v = torch.randn(shape, device="cuda", generator=gen).to(torch.bfloat16)
            inp = {"q": q, "k": k, "v": v, "causal": causal}
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            ms = triton.testing.do_bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
            print(f"{size:16s} sdpa{'':26s} {ms * 1e3:9.1f} us {flops / ms / 1e9:7.1f} TFLOP/s", flush=True)
            current = size
        out = {"o": torch.full_like(q, float("nan"))}
        label = f"pp={pingpong} ov={overlap} rev={reverse} n={config[0]} st={config[1]}"
        try:
            rung.launch(None, inp, out, config=config, PINGPONG=bool(pingpong), OVERLAP=bool(overlap),
                        REVERSE=bool(reverse))
            torch.cuda.synchronize()
            err = float((out["o"].float() - ref.float()).norm() / ref.float().norm())
            ms = triton.testing.do_bench(lambda: rung.launch(None, inp, out, config=config, PINGPONG=bool(pingpong),
                                                             OVERLAP=bool(overlap), REVERSE=bool(reverse)))
            print(f"{size:16s} {label:30s} {ms * 1e3:9.1f} us {flops / ms / 1e9:7.1f} TFLOP/s  err {err:.2e}",
                  flush=True)
        except Exception as exc:  # noqa: BLE001 - report and go on
            print(f"{size:16s} {label:30s} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
