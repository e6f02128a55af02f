"""Rung 03: software pipelining - num_stages = 3.

Change: only num_stages, 1 -> 3. Triton then keeps three K steps of A and B blocks in flight: while
wgmma multiplies the blocks of step k, the copies of steps k+1 and k+2 are already issued as
asynchronous copies (cp.async on Hopper when loads go through pointers), each stage 48 KiB of shared
memory (128 x 64 + 64 x 256 bf16), 144 KiB in all. The wgmma of step k is itself asynchronous
(wgmma.wait_group keeps one in flight), so loads, math and the next issue overlap instead of
alternating.

Counters: the tensor pipe's active cycles (sm__pipe_tensor_op_gmma_cycles_active) should rise towards
70-80% of elapsed; warp stalls on long scoreboard and barriers fall; shared memory per block grows
from ~48 KiB to ~144 KiB (still one block per SM, as in rung 02).
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 64, 8
NUM_WARPS, NUM_STAGES = 8, 3  # 3 x 48 KiB of A and B blocks in shared memory


@triton.jit
def mmbf16_03_pipelined(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)  # the last group may be shorter
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
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
    mmbf16_03_pipelined[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                              c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                              num_warps=NUM_WARPS, num_stages=NUM_STAGES)
