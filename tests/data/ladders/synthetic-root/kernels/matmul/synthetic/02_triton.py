"""Synthetic fixture rung: C = A B with one program per output tile."""

import triton
import triton.language as tl


@triton.jit
def mm_tile(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, n):
        a = tl.load(a_ptr + rows * n + k, mask=rows < n, other=0.0)
        b = tl.load(b_ptr + k * n + cols, mask=cols < n, other=0.0)
        acc += a[:, None] * b[None, :]
    tl.store(c_ptr + rows[:, None] * n + cols[None, :], acc, mask=(rows[:, None] < n) & (cols[None, :] < n))


def launch(ctx, inp, out):
    n = inp["a"].shape[0]
    mm_tile[(triton.cdiv(n, 16), triton.cdiv(n, 16))](inp["a"], inp["b"], out["c"], n, BLOCK=16)
