"""Two hand-written Triton kernels for Nsight Compute: one near its roof, one far from it.

    python triton_kernels.py                      # on a GPU
    TRITON_INTERPRET=1 python triton_kernels.py --small   # on a CPU, Triton's interpreter

vector_add: out = x + y over 2^27 floats, one pass, 16-byte vector accesses per thread: DRAM-bound at
close to its roof (healthy: the speed-of-light root at roof, nothing else worth naming).
matmul_no_dot: a 2048^3 fp32 product accumulated with element-wise multiplies and a reduction instead of
tl.dot, so the tensor cores sit idle and the FMA pipe does the work: far below the GEMM's roof
(compute-side, tensor cores unused). Both results are checked against torch.
"""

from __future__ import annotations

import argparse
import json

import torch
import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def matmul_no_dot(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)  # FMAs and a reduction: no tensor cores
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="sizes the CPU interpreter finishes in seconds")
    ap.add_argument("--iters", type=int, default=3)
    args = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    n = 1 << (12 if args.small else 27)
    size = 32 if args.small else 2048
    torch.manual_seed(0)
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = torch.empty_like(x)
    a, b = torch.randn(size, size, device=dev), torch.randn(size, size, device=dev)
    c = torch.empty(size, size, device=dev)
    bm = bn = 16 if args.small else 64
    bk = 8
    for _ in range(args.iters):
        vector_add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        matmul_no_dot[(triton.cdiv(size, bm), triton.cdiv(size, bn))](a, b, c, size, size, size, BM=bm, BN=bn, BK=bk)
    assert torch.equal(out, x + y), "vector_add differs from torch"
    err = (c - a @ b).abs().max().item()
    assert err < 1e-2 * size ** 0.5, f"matmul_no_dot differs from torch by {err}"
    print(json.dumps({"program": "triton_kernels", "device": dev, "n": n, "size": size, "matmul_max_abs_err": err}))


if __name__ == "__main__":
    main()
