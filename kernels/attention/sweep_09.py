"""Time each of rung 09's candidate configurations at each of the ladder's sizes.

    python3 kernels/attention/sweep_09.py [SIZE ...]    (default: all four sizes)

Each line: size, candidate (consumer groups, key block, ring depth, causal tile order), median time
and TFLOP/s (triton.testing.do_bench, 20 ms warm-up, 100 ms of repetitions), and the relative norm
error against SDPA's output in the same run (both bf16; the ladder's own check is against float64).
SDPA is timed too, as the yardstick. A candidate that fails to compile or launch prints its error and
the sweep goes on. Needs a Hopper GPU, torch and Triton 3.6.
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


def main() -> int:
    spec = importlib.util.spec_from_file_location("rung09", HERE / "09_gluon_tuned.py")
    rung = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rung)
    batch, heads, seq = 4, 32, 4096
    gen = torch.Generator(device="cuda").manual_seed(5)
    wanted = sys.argv[1:] or list(SIZES)
    unknown = [w for w in wanted if w not in SIZES]
    if unknown:
        print(f"sweep_09.py: unknown size {unknown[0]!r} (known: {', '.join(SIZES)})", file=sys.stderr)
        return 2
    for size in wanted:
        head_dim, causal = SIZES[size]
        flops = 4 * batch * heads * seq * seq * head_dim // (2 if causal else 1)
        shape = (batch, heads, seq, head_dim)
        q, k = ((1.5 * torch.randn(shape, device="cuda", generator=gen)).to(torch.bfloat16) for _ in range(2))
        v = torch.randn(shape, device="cuda", generator=gen).to(torch.bfloat16)
        inp = {"q": q, "k": k, "v": v, "causal": causal}
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        ms = triton.testing.do_bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)),
                                     warmup=20, rep=100)
        print(f"{size:16s} {'sdpa':44s} {ms * 1e3:9.1f} us {flops / ms / 1e9:7.1f} TFLOP/s", flush=True)
        for config in rung.CANDIDATES[(head_dim, bool(causal))]:
            out = {"o": torch.full_like(q, float("nan"))}
            label = rung.describe(config)
            try:
                rung.run(inp, out, config)
                torch.cuda.synchronize()
                err = float((out["o"].float() - ref.float()).norm() / ref.float().norm())
                ms = triton.testing.do_bench(lambda: rung.run(inp, out, config), warmup=20, rep=100)
                print(f"{size:16s} {label:44s} {ms * 1e3:9.1f} us {flops / ms / 1e9:7.1f} TFLOP/s  err {err:.2e}",
                      flush=True)
            except Exception as exc:  # noqa: BLE001 - report and go on
                print(f"{size:16s} {label:44s} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                      flush=True)
        del q, k, v, inp, ref
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
