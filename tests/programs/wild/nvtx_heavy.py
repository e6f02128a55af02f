"""A program annotated the way large codebases are: thousands of nested NVTX ranges per step.

    python nvtx_heavy.py [--kineto trace.json.gz]

Each step pushes a range per layer and, inside it, ranges six deep (forward/attention/qkv/...), marks
a few events, and a second thread opens and closes its own ranges, one of them a start/end range
handed from one thread to the other; a range name holds non-ASCII text. The GPU work is a healthy
bf16 MLP kept busy back to back (no synchronisation in the loop).

Known bottleneck: none worth naming; the GPU is busy nearly all the time. What it tests is the
reading: every range with its nesting and its GPU projection, at a few thousand ranges per step, and
no finding that mistakes annotation for a problem.
"""

from __future__ import annotations

import threading

import torch

from _common import device, emit, kineto, nvtx, parser, sync, timed


def cuda_nvtx():
    return torch.cuda.nvtx if torch.cuda.is_available() else None


def helper_thread(stop: threading.Event, handoff: list) -> None:
    n = cuda_nvtx()
    k = 0
    while not stop.is_set():
        with nvtx(f"helper/poll{k % 8}"):
            with nvtx("helper/inner"):
                stop.wait(0.0005)
        if n is not None and handoff and k == 10:
            n.range_end(handoff.pop())  # closes a start/end range the main thread opened
        k += 1


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--d-model", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=4096)
    args = ap.parse_args()
    steps = args.steps or 8
    dev = device()
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    torch.manual_seed(0)
    d = args.d_model
    ws = [torch.randn(d, d, device=dev, dtype=dtype) / d ** 0.5 for _ in range(4)]
    x = torch.randn(args.tokens, d, device=dev, dtype=dtype)
    n = cuda_nvtx()
    stop, handoff = threading.Event(), []
    if n is not None:
        handoff.append(n.range_start("handoff: opened by main, closed by helper"))
    helper = threading.Thread(target=helper_thread, args=(stop, handoff), daemon=True)
    helper.start()

    def step(k: int) -> torch.Tensor:
        y = x
        with nvtx(f"step{k}"):
            for layer in range(args.layers):
                with nvtx(f"layer{layer}"), nvtx("forward"):
                    with nvtx("attention"), nvtx("qkv"), nvtx("matmul"), nvtx("bf16 µ-kernel ✓"):
                        y = torch.tanh(y @ ws[layer % 4])
                    with nvtx("mlp"), nvtx("up"):
                        y = y + torch.nn.functional.gelu(y @ ws[(layer + 1) % 4])
                if n is not None and layer % 8 == 0:
                    n.mark(f"checkpoint layer {layer}")
        return y

    for k in range(args.warmup):
        step(k)
    sync(dev)
    with kineto(args.kineto, dev):
        stop_timer = timed(dev)
        for k in range(steps):
            y = step(args.warmup + k)
        seconds = stop_timer()
    stop.set()
    helper.join()
    assert torch.isfinite(y.float()).all()
    emit("nvtx_heavy", steps=steps, step_ms=round(1e3 * seconds / steps, 3), ranges_per_step=args.layers * 8 + 1)


if __name__ == "__main__":
    main()
