"""Rung 00: dequantise to bf16, then a bf16 tensor-core GEMM - FP8 as storage only.

Change: the baseline. One elementwise kernel widens A and B^T from e4m3 to bf16 into scratch
buffers (exact: e4m3's 3 fraction bits and 4 exponent bits fit in bf16's 7 and 8), then a bf16
Triton GEMM - the BF16 ladder's pipelined kernel (128 x 256 x 64 blocks, 3 stages of cp.async,
8 warps, row-major tile order) - multiplies them with fp32 accumulation. The per-tensor scales
factor out of every sum, C = sa sb (A_q @ B_q), so the GEMM applies sa sb once per output in its
epilogue, in fp32, before the one rounding to bf16 (dequantising with the scale would round each
input to bf16 instead).

Why it is slow: the math runs at the bf16 rate (wgmma .bf16, half the FP8 rate), and the widening
pass reads 128 MiB of FP8 and writes 256 MiB of bf16 that the GEMM reads back - traffic an FP8
GEMM never makes. It is what a framework without FP8 kernels does with FP8 weights.

Counters: two kernels per call; the GEMM's SASS runs HGMMA.64x256x16.F32.BF16; the widening
kernel is DRAM-bound (~0.1 ms).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64
NUM_WARPS, NUM_STAGES = 8, 3
WIDEN_BLOCK = 4096


@triton.jit
def mmfp8_00_widen(src_ptr, dst_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask).to(tl.bfloat16), mask=mask)


@triton.jit
def mmfp8_00_bf16_gemm(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M  # rows past M re-read row 0..: never stored
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))  # the per-tensor scales, once per output
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _widen(ctx, name, x):
    """x (contiguous fp8) widened to bf16 in a scratch buffer of the same shape."""
    out = ctx.scratch(name, x.numel(), torch.bfloat16).view(x.shape)
    mmfp8_00_widen[(triton.cdiv(x.numel(), WIDEN_BLOCK),)](x, out, x.numel(), BLOCK=WIDEN_BLOCK)
    return out


def launch(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    a16 = _widen(ctx, "a_bf16", a)
    b16 = _widen(ctx, "bt_bf16", b.t()).t()  # B^T is the contiguous one; B stays column-major
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    mmfp8_00_bf16_gemm[grid](a16, b16, c, inp["scale_a"], inp["scale_b"], m, n, k, a16.stride(0), a16.stride(1),
                             b16.stride(0), b16.stride(1), c.stride(0), c.stride(1), BLOCK_M=BLOCK_M,
                             BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
