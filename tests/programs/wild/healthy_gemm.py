"""A well-utilised run: large bf16 matrix products queued back to back, nothing else in the loop.

    python healthy_gemm.py [--kineto trace.json.gz]

Known bottleneck: none on the timeline (the GPU is busy almost all of the profiled time: coach should
report no finding worth more than a few percent), and each GEMM runs near the tensor cores' roof
under Nsight Compute (the speed-of-light root at roof, compute-bound on the tensor pipe).
"""

from __future__ import annotations

import torch

from _common import device, emit, kineto, nvtx, parser, timed


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--size", type=int, default=8192)
    args = ap.parse_args()
    steps = args.steps or 20
    dev = device()
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    torch.manual_seed(0)
    n = args.size
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    c = torch.empty(n, n, device=dev, dtype=dtype)
    for _ in range(args.warmup):
        torch.matmul(a, b, out=c)
    with kineto(args.kineto, dev):
        stop = timed(dev)
        for k in range(steps):
            with nvtx(f"gemm{k}"):
                torch.matmul(a, b, out=c)
        seconds = stop()
    tflops = 2 * n ** 3 * steps / seconds / 1e12
    check = (a[:4].float() @ b[:, :4].float() - c[:4, :4].float()).abs().max().item()
    assert check < (2.0 if dtype == torch.bfloat16 else 1e-2) * n ** 0.5 / 10, f"GEMM result off by {check}"
    emit("healthy_gemm", size=n, steps=steps, tflop_per_s=round(tflops, 1))


if __name__ == "__main__":
    main()
