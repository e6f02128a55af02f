"""A small pipeline on four CUDA streams with NVTX ranges: a real multi-stream timeline.

    python torch_multistream.py [--chunks 8] [--size 4096]

Each chunk is copied host->device from pinned memory, multiplied (a bf16 GEMM), and copied back,
on one of four streams, so copies on one stream can overlap compute on another. One extra copy from
pageable memory per step shows the difference on the timeline. NVTX marks each step and chunk.
"""

import argparse

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    n = args.size
    streams = [torch.cuda.Stream() for _ in range(4)]
    host_in = [torch.randn(n, n, dtype=torch.bfloat16).pin_memory() for _ in range(args.chunks)]
    host_out = [torch.empty(n, n, dtype=torch.bfloat16).pin_memory() for _ in range(args.chunks)]
    pageable = torch.randn(n, n, dtype=torch.bfloat16)
    w = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step{step}")
        for c in range(args.chunks):
            s = streams[c % len(streams)]
            with torch.cuda.stream(s):
                torch.cuda.nvtx.range_push(f"chunk{c}")
                x = host_in[c].to("cuda", non_blocking=True)
                y = x @ w
                host_out[c].copy_(y, non_blocking=True)
                torch.cuda.nvtx.range_pop()
        extra = pageable.to("cuda")  # pageable: a staged, synchronous copy on the default stream
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    ref = (host_in[0].cuda().float() @ w.float())
    err = ((host_out[0].cuda().float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"GEMM mismatch: relative error {err:.2e}"
    print(f"ok chunks={args.chunks} size={n} rel_err={err:.1e} extra={extra.shape}")


if __name__ == "__main__":
    main()
