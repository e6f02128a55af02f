"""One 'rank' of a data-parallel step, for recording a folder of per-rank timelines.

    python ranks.py --rank R [--world 8] [--slow-rank 5] [--steps 4]

Every rank does the same GEMMs per step, except the slow rank, which also runs an extra
element-wise pass per step and synchronises after every kernel (the straggler a multi-report view
should name). Ranks share one GPU here, one CUDA context per process.
"""

import argparse

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, default=8)
    ap.add_argument("--slow-rank", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    torch.manual_seed(args.rank)
    n = args.size
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step{step}")
        for _ in range(8):
            c = a @ b
            if args.rank == args.slow_rank:
                c = torch.nn.functional.gelu(c.float()).to(torch.bfloat16)
                torch.cuda.synchronize()
        loss = c.float().mean().item()  # every rank reads its loss back, as a training loop does
        torch.cuda.nvtx.range_pop()
    print(f"ok rank={args.rank} loss={loss:.4f}")


if __name__ == "__main__":
    main()
