"""torch.compile'd model pieces: TorchInductor generates Triton kernels, launched through the driver API.

    python compile_triton.py [--kineto trace.json.gz] [--from-start]

A GELU-MLP block with RMSNorm and a residual, compiled with torch.compile (default mode): Inductor
fuses the element-wise work into Triton kernels (triton_poi_fused_*, triton_red_fused_*) beside the
cuBLAS GEMMs, and the PyTorch profiler records each launch with its grid as text ("grid(100,)"), which
is what this program is for: a real trace in that shape.

Known bottleneck: with --from-start the profile begins before the first call, so it holds the
compilation (seconds of host time in Inductor and Triton, then cuModuleLoadData) and the GPU idles
through it: coach should lead with the one-time start-up finding. Without it (the default) the
profile covers steady-state steps only, after warm-up: a healthy run whose time is in the GEMMs (no
timeline finding should claim more than a few percent).
"""

from __future__ import annotations

import torch
from torch import nn

from _common import device, emit, kineto, nvtx, parser, timed


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.RMSNorm(d)
        self.up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(4 * d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(self.norm(x)), approximate="tanh"))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--d-model", type=int, default=2048)
    ap.add_argument("--from-start", action="store_true", help="profile from the first call, compilation included")
    args = ap.parse_args()
    steps = args.steps or 10
    dev = device()
    torch.manual_seed(0)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    model = nn.Sequential(*[Block(args.d_model) for _ in range(2)]).to(dev, dtype)
    compiled = torch.compile(model)
    x = torch.randn(args.tokens, args.d_model, device=dev, dtype=dtype)
    with torch.no_grad():
        reference = model(x)
        if not args.from_start:
            for _ in range(max(args.warmup, 1)):
                out = compiled(x)
        with kineto(args.kineto, dev):
            stop = timed(dev)
            for k in range(steps):
                with nvtx(f"step{k}"):
                    out = compiled(x)
            seconds = stop()
    err = (out.float() - reference.float()).abs().max().item()
    assert err < (0.5 if dtype == torch.bfloat16 else 1e-3), f"compiled output differs by {err}"
    emit("compile_triton", from_start=args.from_start, steps=steps, step_ms=round(1e3 * seconds / steps, 3),
         max_abs_err=err)


if __name__ == "__main__":
    main()
