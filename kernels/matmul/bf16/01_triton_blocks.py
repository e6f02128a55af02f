"""Rung 01: Triton's tl.dot with a Hopper-sized block - 128 x 256 x 64, 8 warps, no pipelining.

Change: the kernel is written in Triton. One program computes a 128 x 256 tile of C: it walks K in
steps of 64, loads a 128 x 64 block of A and a 64 x 256 block of B, and accumulates tl.dot into a
128 x 256 fp32 accumulator (128 registers a thread over 8 warps). Programs are numbered in row-major
order of their tiles. num_stages = 1: each K step loads, waits, then multiplies - the same
unoverlapped schedule as rung 00, so the difference from rung 00 is the instruction Triton picks.

On Hopper, with num_warps a multiple of 4 and these shapes, Triton lowers tl.dot to wgmma
(warpgroup MMA, SASS HGMMA.64x256x16.F32.BF16): a warpgroup of 4 warps multiplies operands read
directly from shared memory, 64 x 256 x 16 per instruction, instead of mma.sync's 16 x 8 x 16 from
registers loaded by ldmatrix.

Counters: InstructionStats shows HGMMA instead of HMMA; the tensor pipe's active cycles rise; warps
still stall waiting for each K step's loads (long scoreboard / barrier).
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64
NUM_WARPS, NUM_STAGES = 8, 1


@triton.jit
def mmbf16_01_blocks(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
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
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def launch(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    mmbf16_01_blocks[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                           c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS,
                           num_stages=NUM_STAGES)
