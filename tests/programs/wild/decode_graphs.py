"""Batch-1 decoding: a step of many tiny kernels, launched one by one or replayed as a CUDA graph.

    python decode_graphs.py --mode eager [--kineto trace.json.gz]
    python decode_graphs.py --mode graph ...

One decode step of a 16-layer model at batch 1 (d_model 512, a 256-token KV cache): per layer an
RMSNorm, the QKV projection, attention over the cache, the output projection and a GELU MLP, about a
dozen kernels of a few microseconds each. Known bottleneck: in eager mode every kernel is shorter than
its own launch call (about 5-10 us on the host), so the GPU waits for launches: coach should lead
with the launch-bound finding. With --mode graph the step is captured once into a CUDA graph and
replayed with one cudaGraphLaunch per step: its kernels run back to back (the graph's kernels carry
a graph id in nsys), and the launch-bound finding should be gone. On a CPU only eager mode runs.
"""

from __future__ import annotations

import torch
from torch import nn

from _common import device, emit, kineto, nvtx, parser, timed


class Layer(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(4 * d, d, bias=False)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        scores = (torch.cat([k_cache, k]) @ q.T).T / q.shape[-1] ** 0.5  # (1, cache + 1)
        x = x + self.out(scores.softmax(-1) @ torch.cat([v_cache, v]))
        return x + self.down(nn.functional.gelu(self.up(self.norm2(x))))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--mode", choices=("eager", "graph"), default="eager")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--cache", type=int, default=256)
    args = ap.parse_args()
    steps = args.steps or 20
    dev = device()
    torch.manual_seed(0)
    d = args.d_model
    layers = nn.ModuleList(Layer(d) for _ in range(args.layers)).to(dev).eval()
    caches = [(torch.randn(args.cache, d, device=dev), torch.randn(args.cache, d, device=dev)) for _ in layers]
    x_in = torch.randn(1, d, device=dev)

    def decode_step(x: torch.Tensor) -> torch.Tensor:
        for layer, (k, v) in zip(layers, caches):
            x = layer(x, k, v)
        return x

    mode = args.mode if dev.type == "cuda" else "eager"
    with torch.no_grad():
        reference = decode_step(x_in)
        if mode == "graph":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm up outside the capture, as the CUDA graphs docs ask
                for _ in range(3):
                    decode_step(x_in)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                x_out = decode_step(x_in)
            run = graph.replay
        else:
            x_out = None

            def run():
                nonlocal x_out
                x_out = decode_step(x_in)

        for _ in range(args.warmup):
            run()
        with kineto(args.kineto, dev):
            stop = timed(dev)
            for k in range(steps):
                with nvtx(f"token{k}"):
                    run()
            seconds = stop()
    err = (x_out - reference).abs().max().item()
    assert err < 1e-3, f"{mode} output differs by {err}"
    emit("decode_graphs", mode=mode, steps=steps, us_per_token=round(1e6 * seconds / steps, 2), max_abs_err=err)


if __name__ == "__main__":
    main()
