"""Tensor cores: idle on FMA-heavy matrix-shaped work, or underfed where they are used.

A kernel whose floating-point work is mostly FMAs (dot products: matrix multiplication,
convolution, attention) and that keeps the FMA pipe busy while the tensor pipe sits at zero is
doing on CUDA cores what tensor cores do several times faster (FP32 inputs without TF32, or BF16
shapes the library could not map to tensor-core tiles). Where the tensor pipe is in use but far
from busy, it is waiting to be fed.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_metrics import hardware_value
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_time
from coach.analyze.kernel_rules.speed_of_light import LATENCY_PCT

SPEC = RuleSpec(
    id="tensor-cores",
    name="Idle or underfed tensor cores",
    category=Bottleneck.TENSOR,
    table="launches",
    requires=("duration_ns", "tensor_pipe_active_pct", "fma_pipe_active_pct"),
    optional=("fma_inst_fraction", "fp32_fma_inst", "fp16_fma_inst", "sm_throughput_pct"),
    doc="FMA pipe busy with an FMA-dominated mix while the tensor pipe is idle; tensor pipe use in general.",
)

# Below 1% of its peak the tensor pipe is not part of the kernel's work (a stray MMA at most).
TENSOR_IDLE_PCT = 1.0
# The FMA pipe above the root's latency mark (Nsight Compute's 60%) is where CUDA-core math, not
# waiting, dominates the kernel.
FMA_BUSY_PCT = LATENCY_PCT
# At least half the FP32/FP16 instructions are FMAs: the mix of a dot product (one FMA per
# multiply-accumulate), not of element-wise arithmetic.
FMA_MIX = 0.5
# How much faster the tensor pipe does the same FP32 multiply-accumulates (as TF32): measured on the
# H200, 356 TFLOP/s TF32 (cuBLAS) against 51.1 TFLOP/s FP32 on CUDA cores (hardware/measured/h200.json).
# A GPU table entry can override it (key tensor_over_fma_speedup).
TENSOR_OVER_FMA = 356.0 / 51.1
# A tensor-core kernel whose tensor pipe is busy less than half the time leaves most of the
# matrix rate unused; cuBLAS keeps it near 69% on the H200 (683 TFLOP/s BF16 measured,
# hardware/measured/h200.json, of the datasheet's 989.5 dense, hardware/gpus/h200.toml).
TENSOR_UNDERFED_PCT = 50.0


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    tensor, fma = launch["tensor_pipe_active_pct"], launch["fma_pipe_active_pct"]
    if tensor < TENSOR_IDLE_PCT:
        return _idle(launch, ctx, tensor, fma)
    if tensor < TENSOR_UNDERFED_PCT and tensor >= fma:
        return [_underfed(launch, ctx, tensor)]
    return []


def _idle(launch: dict[str, Any], ctx: KernelContext, tensor: float, fma: float) -> list[Finding]:
    mix = launch.get("fma_inst_fraction")
    if fma < FMA_BUSY_PCT or (mix is not None and mix < FMA_MIX):
        return []
    speedup = float(hardware_value(ctx.hardware, "tensor_over_fma_speedup") or TENSOR_OVER_FMA)
    saving = launch["duration_ns"] * fma / 100 * (1 - 1 / speedup)
    message = f"The FMA pipe is busy {fma:.0f}% of the time and the tensor pipe {tensor:.1f}%"
    message += f"; {100 * mix:.0f}% of the FP32/FP16 instructions are FMAs: matrix-shaped work on CUDA cores." if mix is not None else "."
    evidence = [ev("tensor_pipe_active_pct", tensor, "%", "busy on matrix work", TENSOR_IDLE_PCT),
                ev("fma_pipe_active_pct", fma, "%", "", FMA_BUSY_PCT)]
    if mix is not None:
        evidence.append(ev("fma_inst_fraction", mix, "", "", FMA_MIX))
    return [finding(
        SPEC, launch, title=f"Tensor cores idle while the FMA pipe is {fma:.0f}% busy",
        message=message,
        next_step=("Run the matrix work on tensor cores: allow TF32 for FP32 inputs (torch.backends.cuda.matmul."
                   "allow_tf32 / cublasSetMathMode), or use BF16/FP16 with dimensions that are multiples of 8 "
                   "(16 bytes); in your own kernel use mma/wgmma (CUTLASS, Triton tl.dot)."),
        evidence=evidence, saving_ns=saving,
        gain_model=(f"time x FMA-pipe share ({fma:.0f}%) x (1 - 1/{speedup:.1f}): the FMA work at the tensor pipe's "
                    f"rate; saves {fmt_time(saving)}"),
        details={"fma_pipe_pct": fma, "tensor_pipe_pct": tensor, "speedup_assumed": speedup},
    )]


def _underfed(launch: dict[str, Any], ctx: KernelContext, tensor: float) -> Finding:
    saving = ctx.cap(launch["duration_ns"] * (1 - tensor / 100), launch)
    return finding(
        SPEC, launch, title=f"Tensor cores underfed: tensor pipe busy {tensor:.0f}% of the time",
        message=(f"The tensor pipe is the busiest math pipe but active only {tensor:.0f}% of the time: the MMAs "
                 "wait for operands."),
        next_step=("Feed the tensor cores: larger tiles for more reuse per byte, a deeper multistage pipeline "
                   "(cp.async or TMA with mbarriers) so loads overlap MMAs, asynchronous wgmma on Hopper, and "
                   "shapes that are multiples of the MMA tile."),
        evidence=[ev("tensor_pipe_active_pct", tensor, "%", "70% or more in a tuned GEMM", TENSOR_UNDERFED_PCT)],
        saving_ns=saving,
        gain_model=f"time x (1 - {tensor:.0f}%), capped at the gap to the roof; saves {fmt_time(saving)}",
        details={"tensor_pipe_pct": tensor},
    )
