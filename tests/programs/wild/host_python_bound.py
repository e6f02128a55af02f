"""A loop whose host does its own work between short GPU steps (no DataLoader, no synchronisation).

    python host_python_bound.py [--kineto trace.json.gz]

Each step builds its input on the host in Python (a feature-hashing loop over 20,000 pseudo-random
tokens, a few milliseconds on one core), copies it to the GPU from pinned memory, and runs a small
MLP forward and backward (well under a millisecond of GPU time). Nothing synchronises: the host is
simply slower than the GPU.

Known bottleneck: host-bound. The GPU idles most of each step while the host is outside any CUDA
call; coach should lead with the GPU-idle finding, host-bound (not a synchronisation, not the
DataLoader, not a copy).
"""

from __future__ import annotations

import torch

from _common import device, emit, kineto, nvtx, parser, timed

FEATURES = 4096


def features(step: int, tokens: int, out: torch.Tensor) -> None:
    """The host's own work: hash tokens into a bag-of-features vector, in Python."""
    counts = [0.0] * FEATURES
    h = step * 2654435761 % 4294967296
    for _ in range(tokens):
        h = (h * 1103515245 + 12345) % 2147483648
        counts[h % FEATURES] += 1.0
    out.copy_(torch.tensor(counts).view(1, FEATURES).expand_as(out))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tokens", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    steps = args.steps or 20
    dev = device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    host = torch.empty(args.batch, FEATURES, pin_memory=dev.type == "cuda")
    target = torch.zeros(args.batch, dtype=torch.long, device=dev)

    def step(k: int) -> None:
        with nvtx(f"step{k}"):
            with nvtx("features (host)"):
                features(k, args.tokens, host)
            x = host.to(dev, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x / args.tokens), target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    for k in range(args.warmup):
        step(k)
    with kineto(args.kineto, dev):
        stop = timed(dev)
        for k in range(args.warmup, args.warmup + steps):
            step(k)
        seconds = stop()
    emit("host_python_bound", steps=steps, step_ms=round(1e3 * seconds / steps, 3))


if __name__ == "__main__":
    main()
