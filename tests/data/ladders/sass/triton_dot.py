"""A small Triton kernel (a 64 x 64 tile of C = A B in bf16 with fp32 accumulation, through tl.dot)
and the @triton.jit helper it calls, compiled for sm_90 by Triton on a machine without a GPU. The
tests compile it (``compile_variant``) to read a real Triton ``CompiledKernel``; run this file to
remake ``triton_dot.triton-sass``, Triton's ``asm["sass"]`` of the 64-wide, 4-warp variant."""

from __future__ import annotations

from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def scaled(acc, alpha):
    """Inlined into dot_tile: Triton never compiles it on its own."""
    return acc * alpha


@triton.jit
def dot_tile(a_ptr, b_ptr, c_ptr, K, alpha, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + offs[:, None] * K + (k + offs[None, :]))
        b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], scaled(acc, alpha))


SIGNATURE = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32", "K": "i32", "alpha": "fp32", "BLOCK": "constexpr"}


def compile_variant(block: int, num_warps: int, num_stages: int = 3):
    """Triton's CompiledKernel of dot_tile for sm_90 with these meta-parameters."""
    src = ASTSource(fn=dot_tile, signature=SIGNATURE, constexprs={"BLOCK": block})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps, "num_stages": num_stages})


if __name__ == "__main__":
    (Path(__file__).parent / "triton_dot.triton-sass").write_text(compile_variant(64, 4).asm["sass"])
