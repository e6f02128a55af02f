"""Scenario 13: an AdamW step over a model's many small parameter tensors.

    python optimizer.py --variant slow     # one parameter at a time: 8 tiny kernels per tensor
    python optimizer.py --variant fixed    # the same update with torch._foreach_* ops over all tensors

The model has `tensors` parameter tensors of `elements` fp32 values each (norm weights, biases and
small projections of a deep, narrow network), with their gradients and AdamW moments. One step is
AdamW with decoupled weight decay, written as torch.optim.AdamW writes it. Both variants draw the same
state from the same seed, run `check_steps` steps and check the parameter update and both moments
against a float64 reference, then time single steps with CUDA events and report the median (one JSON
line, coach.capture.harness.emit). Each timed step is an NVTX range; Nsight Systems records only those
steps (scenario.toml: nsys_timed_only).

slow: a Python loop over the parameters issues eight element-wise operations per tensor, each one
kernel over 16 KB: the GPU finishes each in about two microseconds, less than the host needs to issue
the next, so it waits on the host ~16,000 times a step. fixed: each operation is one torch._foreach_*
call over all the tensors, which launches a multi-tensor kernel per few dozen tensors: a few hundred
launches a step instead of ~16,000, the same arithmetic and the same bytes.

`run(variant, size, device, seed)` is the whole check without timing, so that it also runs on a CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from coach.capture import harness

LR, BETA1, BETA2, EPS, WEIGHT_DECAY = 1e-3, 0.9, 0.999, 1e-8, 1e-2
#: The state is taken mid-training: the bias corrections of step FIRST_STEP onwards.
FIRST_STEP = 100
#: The check compares the parameter update and the moments with float64. Each step moves a parameter
#: by ~5e-5 and rounds it (|p| ~ 0.02, as initialised) to 2^-24 of its value, ~1e-9: a relative error
#: near 1e-5 after a few steps; a missing step or a wrong bias correction changes the update by far
#: more than 1e-3.
TOLERANCE = 1e-3


@dataclass
class AdamWState:
    params: list[torch.Tensor]
    grads: list[torch.Tensor]
    exp_avgs: list[torch.Tensor]
    exp_avg_sqs: list[torch.Tensor]
    step: int = FIRST_STEP

    def hyper(self) -> tuple[float, float]:
        """(step size, sqrt of the second bias correction) for the next step."""
        t = self.step + 1
        return LR / (1 - BETA1**t), math.sqrt(1 - BETA2**t)


def draw(size: dict, device: torch.device, seed: int) -> dict[str, torch.Tensor]:
    """The initial state as four (tensors, elements) matrices: fresh random values, none zero."""
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (size["tensors"], size["elements"])
    return {
        "params": torch.randn(shape, generator=gen, device=device) * 2e-2,
        "grads": torch.randn(shape, generator=gen, device=device) * 1e-2,
        "exp_avgs": torch.randn(shape, generator=gen, device=device) * 1e-3,
        "exp_avg_sqs": torch.rand(shape, generator=gen, device=device) * 1e-4 + 1e-6,
    }


def as_tensors(initial: dict[str, torch.Tensor]) -> AdamWState:
    """One separately allocated tensor per row, as a model's parameters are."""
    return AdamWState(**{name: [row.clone() for row in matrix] for name, matrix in initial.items()})


def step_slow(s: AdamWState) -> None:
    """AdamW one parameter at a time (torch.optim's single-tensor code path)."""
    step_size, bias2_sqrt = s.hyper()
    for p, g, m, v in zip(s.params, s.grads, s.exp_avgs, s.exp_avg_sqs):
        p.mul_(1 - LR * WEIGHT_DECAY)
        m.lerp_(g, 1 - BETA1)
        v.mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
        denom = (v.sqrt() / bias2_sqrt).add_(EPS)
        p.addcdiv_(m, denom, value=-step_size)
    s.step += 1


def step_fixed(s: AdamWState) -> None:
    """The same AdamW with one multi-tensor call per operation (torch.optim's foreach code path)."""
    step_size, bias2_sqrt = s.hyper()
    torch._foreach_mul_(s.params, 1 - LR * WEIGHT_DECAY)
    torch._foreach_lerp_(s.exp_avgs, s.grads, 1 - BETA1)
    torch._foreach_mul_(s.exp_avg_sqs, BETA2)
    torch._foreach_addcmul_(s.exp_avg_sqs, s.grads, s.grads, value=1 - BETA2)
    denom = torch._foreach_sqrt(s.exp_avg_sqs)
    torch._foreach_div_(denom, bias2_sqrt)
    torch._foreach_add_(denom, EPS)
    torch._foreach_addcdiv_(s.params, s.exp_avgs, denom, value=-step_size)
    s.step += 1


STEPS = {"slow": step_slow, "fixed": step_fixed}


def reference(initial: dict[str, torch.Tensor], steps: int) -> dict[str, torch.Tensor]:
    """The same AdamW steps on the whole state at once, in float64."""
    p, g, m, v = (initial[k].double() for k in ("params", "grads", "exp_avgs", "exp_avg_sqs"))
    for t in range(FIRST_STEP + 1, FIRST_STEP + steps + 1):
        p = p * (1 - LR * WEIGHT_DECAY)
        m = m + (1 - BETA1) * (g - m)
        v = BETA2 * v + (1 - BETA2) * g * g
        p = p - LR / (1 - BETA1**t) * m / (v.sqrt() / math.sqrt(1 - BETA2**t) + EPS)
    return {"update": p - initial["params"].double(), "exp_avgs": m, "exp_avg_sqs": v}


def check(state: AdamWState, initial: dict[str, torch.Tensor], steps: int) -> float:
    """The largest relative error of the parameter update and of the two moments."""
    want = reference(initial, steps)
    got = {"update": torch.stack(state.params).double() - initial["params"].double(),
           "exp_avgs": torch.stack(state.exp_avgs), "exp_avg_sqs": torch.stack(state.exp_avg_sqs)}
    return max(harness.relative_error(got[k], want[k]) for k in want)


def run(variant: str, size: dict, device: torch.device, seed: int) -> tuple[AdamWState, float]:
    """Draw the state, take `check_steps` steps with the variant, and check them."""
    initial = draw(size, device, seed)
    state = as_tensors(initial)
    with harness.nvtx("check"):
        for _ in range(size["check_steps"]):
            STEPS[variant](state)
    return state, check(state, initial, size["check_steps"])


def main() -> None:
    size = harness.sizes(__file__)
    args = harness.parse_args(__doc__.splitlines()[0], warmup=1, repeat=size["timed_steps"])
    state, error = run(args.variant, size, torch.device("cuda"), args.seed)
    step = STEPS[args.variant]
    # One sample is one optimizer step, queued right behind the one before as in a training loop: where
    # the host cannot launch as fast as the GPU runs the tiny kernels, the GPU's idle time between them
    # is in the step's time, which is the point.
    timing = harness.time_steps(lambda: step(state), warmup=args.warmup, repeat=args.repeat,
                                label=f"optimizer step ({args.variant})")
    harness.emit(variant=args.variant, timing=timing, unit="step", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, tensors=size["tensors"], elements=size["elements"],
                 device=torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
