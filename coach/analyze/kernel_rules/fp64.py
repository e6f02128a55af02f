"""FP64 by accident: double-precision math mixed into an FP32 kernel.

In C++ a literal ``2.0`` is a double and ``sqrt(x)``/``exp(x)`` without the ``f`` may resolve to the
double versions, so an FP32 kernel quietly promotes values, computes in FP64 and converts back. A
kernel that runs both FP32 and FP64 arithmetic is the signature; a kernel that is all FP64 is taken
to mean it (the report does not say what the inputs' types are). The cost depends on the GPU: FP64
runs at half the FP32 rate on the data-centre parts and at 1/64 on the others.
"""

from __future__ import annotations

from typing import Any

from coach.analyze.findings import Bottleneck, Finding, RuleSpec
from coach.analyze.kernel_metrics import hardware_value
from coach.analyze.kernel_rules._common import KernelContext, ev, finding, fmt_count, fmt_time

SPEC = RuleSpec(
    id="fp64-by-accident",
    name="FP64 by accident",
    category=Bottleneck.FP64,
    table="launches",
    requires=("duration_ns", "fp64_add_inst", "fp64_mul_inst", "fp64_fma_inst", "fp32_add_inst", "fp32_mul_inst",
              "fp32_fma_inst"),
    optional=("fp64_pipe_active_pct", "device_cc_major", "device_cc_minor", "fp16_add_inst", "fp16_mul_inst",
              "fp16_fma_inst"),
    doc="FP64 instructions alongside FP32 ones; cost from the GPU's FP64:FP32 rate.",
)

# A share of FP64 among the floating-point instructions from 1% up is more than a stray conversion
# (the whole kernel's FP work, not one reduction step); up to 99% the kernel also computes in FP32,
# so the FP64 is mixed in rather than the kernel's chosen precision.
FP64_SHARE_MIN = 0.01
FP64_SHARE_MAX = 0.99

# FP64 : FP32 results per clock per SM for add/multiply/FMA (CUDA C++ Programming Guide,
# "Arithmetic Instructions" throughput table), by compute capability.
FP64_OVER_FP32 = {
    (6, 0): 32 / 64, (6, 1): 4 / 128, (7, 0): 32 / 64, (7, 5): 2 / 64, (8, 0): 32 / 64, (8, 6): 2 / 128,
    (8, 7): 2 / 128, (8, 9): 2 / 128, (9, 0): 64 / 128, (10, 0): 64 / 128, (12, 0): 2 / 128,
}


def apply(launch: dict[str, Any], ctx: KernelContext) -> list[Finding]:
    share = launch.get("fp64_inst_fraction")
    if share is None or not FP64_SHARE_MIN <= share <= FP64_SHARE_MAX:
        return []
    fp64, fp32 = launch["fp64_inst"], launch["fp32_inst"]
    rate = hardware_value(ctx.hardware, "fp64_over_fp32")
    cc = (launch.get("device_cc_major"), launch.get("device_cc_minor"))
    if rate is None and None not in cc:
        rate = FP64_OVER_FP32.get((int(cc[0]), int(cc[1])))
    pipe = launch.get("fp64_pipe_active_pct")
    saving = None if rate is None or pipe is None else launch["duration_ns"] * pipe / 100 * (1 - rate)
    message = (f"{fmt_count(fp64)} FP64 instructions run beside {fmt_count(fp32)} FP32 ones ({100 * share:.0f}% of "
               "the floating-point instructions are FP64)")
    message += f"; the FP64 pipe is busy {pipe:.0f}% of the time." if pipe is not None else "."
    if rate is not None:
        message += f" On this GPU FP64 runs at {rate:g} of the FP32 rate."
    evidence = [ev("fp64_inst_fraction", share, "", "0 in an FP32 kernel", FP64_SHARE_MIN),
                ev("fp64_inst", fp64, "inst", "0")]
    if pipe is not None:
        evidence.append(ev("fp64_pipe_active_pct", pipe, "%", "0"))
    return [finding(
        SPEC, launch, title=f"FP64 math in an FP32 kernel: {100 * share:.0f}% of FP instructions",
        message=message,
        next_step=("Look for double literals (write 2.0f), double math calls (sqrtf, expf, or --use_fast_math), and "
                   "implicit promotion in mixed expressions; the SASS shows DADD/DMUL/DFMA and F2F conversions."),
        evidence=evidence, saving_ns=saving,
        gain_model=(f"time x FP64-pipe share x (1 - FP64:FP32 rate {rate:g}): the same math at the FP32 rate; saves "
                    f"{fmt_time(saving)}" if saving is not None else
                    "not estimated: the FP64 pipe utilisation or the GPU's FP64 rate is not known"),
        details={"fp64_share": share, "fp64_over_fp32": rate},
    )]
