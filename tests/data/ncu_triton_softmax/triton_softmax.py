"""A row softmax written in Triton, run a few times: a real Triton kernel for the profilers to see.

    python triton_softmax.py [--rows 32768] [--cols 4096] [--iters 5]

One program per row; each reads its row once and writes it once, so the bytes model is
2 x rows x cols x 4 bytes per call (fp32). Checked against torch.softmax on fresh random inputs.
"""

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, y, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.full_like(x, float("nan"))  # poisoned: every element must be written
    block = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block, num_warps=8)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=32768)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    x = torch.randn(args.rows, args.cols, device="cuda", dtype=torch.float32)
    y = softmax(x)
    err = ((y.double() - torch.softmax(x.double(), -1)).norm() / torch.softmax(x.double(), -1).norm()).item()
    assert err < 1e-5, f"softmax mismatch: relative error {err:.2e}"
    for _ in range(args.iters):
        y = softmax(x)
    torch.cuda.synchronize()
    print(f"ok rows={args.rows} cols={args.cols} rel_err={err:.1e}")


if __name__ == "__main__":
    main()
