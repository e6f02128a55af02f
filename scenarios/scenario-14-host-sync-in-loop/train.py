"""Scenario 14: a training loop that reads its metrics back to the host every step.

    python train.py --variant slow     # .item(), bool(tensor) and torch.cuda.synchronize() every step
    python train.py --variant fixed    # metrics accumulated on the GPU, read back once per epoch

A three-layer fp32 MLP classifier trains on batches already on the GPU with SGD (momentum) and
gradient clipping. Each step logs the loss, the accuracy, the gradient norm and the norm of every
parameter's (clipped) gradient, and checks the loss for NaN. The matrix products are sized so that a
step's GPU work (about 2.5 ms) outlasts the host's Python and launches for it (about 2 ms): without
synchronisation the host can queue the next step while the GPU runs this one. Both variants draw the same data and weights from the same seed, train one epoch and check the
final weights and the epoch's mean loss against the same training in float64, then time whole epochs
with CUDA events and report the median time per step (one JSON line, coach.capture.harness.emit).
NVTX ranges mark each step and its phases; Nsight Systems records only the timed epochs
(scenario.toml: nsys_timed_only).

slow: bool(isfinite(loss)), loss.item(), correct.item(), one .item() per parameter's gradient norm,
grad_norm.item() and torch.cuda.synchronize() each make the host wait until the GPU has finished
everything queued: eleven waits a step. The queue drains, and the host work that follows (Python,
autograd's start, launching the next kernels, formatting the log line) runs while the GPU idles.
fixed: the step's metrics (the per-parameter norms from one multi-tensor kernel) are added into a
small tensor on the GPU and read back with one .tolist() every `log_every` steps; the NaN check looks
at the accumulated loss then (a sum of cross-entropies, all >= 0, is finite exactly when every one of
them is). The host runs ahead of the GPU and the queue never drains.

`epoch(variant, ...)` and `reference(...)` run on any device, so the check also runs on a CPU.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from coach.capture import harness

LR, MOMENTUM, MAX_NORM = 0.05, 0.9, 1.0
#: fp32 against float64 over one epoch of SGD: matrix products of length 1024 round each output to
#: about 1e-7 relative, and the errors of a few dozen steps stay near 1e-6; a step trained on the
#: wrong batch or with the clipping skipped moves the weights by more than 1e-3 of their norm.
TOLERANCE = 1e-4


def make_model(size: dict, device: torch.device, seed: int) -> nn.Module:
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(size["features"], size["hidden"]), nn.GELU(),
                          nn.Linear(size["hidden"], size["hidden"]), nn.GELU(),
                          nn.Linear(size["hidden"], size["classes"]))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[-1]))
    return model.to(device)


def make_data(size: dict, device: torch.device, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`pool` batches of inputs and labels, drawn on the device (they stay there)."""
    gen = torch.Generator(device=device).manual_seed(seed + 1)
    x = torch.randn(size["pool"], size["batch"], size["features"], generator=gen, device=device)
    y = torch.randint(0, size["classes"], (size["pool"], size["batch"]), generator=gen, device=device)
    return x, y


class Trainer:
    """One model, its optimizer and its data; `epoch()` trains `steps` steps and returns the mean
    loss as the variant logs it."""

    def __init__(self, variant: str, model: nn.Module, x: torch.Tensor, y: torch.Tensor, size: dict):
        self.variant, self.model, self.x, self.y = variant, model, x, y
        self.steps, self.log_every = size["steps"], size["log_every"]
        if self.steps % self.log_every:
            raise ValueError(f"steps ({self.steps}) must be a multiple of log_every ({self.log_every})")
        self.params = list(model.parameters())
        self.opt = torch.optim.SGD(self.params, lr=LR, momentum=MOMENTUM)
        self.log: list[str] = []
        # fixed: loss, correct predictions, gradient norm and each parameter's gradient norm, summed
        # on the device over the steps since the last read
        self.stats = torch.zeros(3 + len(self.params), device=x.device, dtype=x.dtype)

    def forward_backward(self, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x, y = self.x[k % self.x.shape[0]], self.y[k % self.y.shape[0]]
        with harness.nvtx("forward"):
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
        if self.variant == "slow":
            with harness.nvtx("nan check"):
                if not bool(torch.isfinite(loss)):
                    raise FloatingPointError(f"step {k}: loss is {loss.item()}")
        with harness.nvtx("backward"):
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
        with harness.nvtx("clip"):
            grad_norm = torch.nn.utils.clip_grad_norm_(self.params, MAX_NORM)
        with harness.nvtx("optimizer"):
            self.opt.step()
        return logits, loss, grad_norm

    def step_slow(self, k: int, totals: list[float]) -> None:
        logits, loss, grad_norm = self.forward_backward(k)
        with harness.nvtx("log"):
            loss_value = loss.item()
            correct = (logits.argmax(dim=1) == self.y[k % self.y.shape[0]]).sum().item()
            layer_norms = [p.grad.norm().item() for p in self.params]
            totals[0] += loss_value
            self.log.append(f"step {k}: loss {loss_value:.4f} accuracy {correct / logits.shape[0]:.3f} "
                            f"grad norm {grad_norm.item():.3f} per parameter "
                            + " ".join(f"{v:.3f}" for v in layer_norms))
            if loss.is_cuda:
                torch.cuda.synchronize()  # "so that the step time in the log is right"

    def step_fixed(self, k: int, totals: list[float]) -> None:
        logits, loss, grad_norm = self.forward_backward(k)
        with harness.nvtx("log"):
            correct = (logits.argmax(dim=1) == self.y[k % self.y.shape[0]]).sum(dtype=loss.dtype)
            layer_norms = torch._foreach_norm([p.grad for p in self.params])  # one multi-tensor kernel
            self.stats += torch.stack([loss.detach(), correct, grad_norm, *layer_norms])
            if (k + 1) % self.log_every == 0:
                loss_sum, correct_sum, norm_sum, *layer_sums = self.stats.tolist()  # the one read-back
                self.stats.zero_()
                n = self.log_every
                if not math.isfinite(loss_sum):
                    raise FloatingPointError(f"non-finite loss in steps {k + 1 - n}-{k}")
                totals[0] += loss_sum
                self.log.append(f"steps {k + 1 - n}-{k}: loss {loss_sum / n:.4f} accuracy "
                                f"{correct_sum / (n * logits.shape[0]):.3f} grad norm {norm_sum / n:.3f} per parameter "
                                + " ".join(f"{v / n:.3f}" for v in layer_sums))

    def epoch(self) -> float:
        step = self.step_slow if self.variant == "slow" else self.step_fixed
        totals = [0.0]
        for k in range(self.steps):
            with harness.nvtx(f"step {k}"):
                step(k, totals)
        return totals[0] / self.steps


def reference(model: nn.Module, x: torch.Tensor, y: torch.Tensor, size: dict) -> tuple[nn.Module, float]:
    """The same epoch in float64, without any logging: the trained copy and its mean loss."""
    ref = copy.deepcopy(model).double()
    params = list(ref.parameters())
    opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM)
    losses = []
    for k in range(size["steps"]):
        loss = F.cross_entropy(ref(x[k % x.shape[0]].double()), y[k % y.shape[0]])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, MAX_NORM)
        opt.step()
        losses.append(loss.detach())
    return ref, float(torch.stack(losses).mean())


def run(variant: str, size: dict, device: torch.device, seed: int) -> tuple[Trainer, float]:
    """Train one epoch with the variant and check it: (trainer, relative error)."""
    model = make_model(size, device, seed)
    x, y = make_data(size, device, seed)
    ref, ref_loss = reference(model, x, y, size)
    trainer = Trainer(variant, model, x, y, size)
    with harness.nvtx("check"):
        mean_loss = trainer.epoch()
    got = torch.cat([p.detach().flatten() for p in model.parameters()])
    want = torch.cat([p.detach().flatten() for p in ref.parameters()])
    error = max(harness.relative_error(got, want), abs(mean_loss - ref_loss) / abs(ref_loss))
    return trainer, error


def main() -> None:
    size = harness.sizes(__file__)
    args = harness.parse_args(__doc__.splitlines()[0], warmup=1, repeat=5)
    trainer, error = run(args.variant, size, torch.device("cuda"), args.seed)
    with harness.kineto():
        # One sample is an epoch (its steps and the fixed loop's one read of the logged totals), the
        # epochs queued back to back: the slow loop's .item() calls drain the queue inside every step,
        # the fixed loop's only once per logging window.
        timing = harness.time_steps(trainer.epoch, warmup=args.warmup, repeat=args.repeat,
                                    label=f"epoch {args.variant}")
    harness.emit(variant=args.variant, timing=timing.per(size["steps"], "step"), unit="step", rel_error=error,
                 tolerance=TOLERANCE, seed=args.seed, epoch_ms=timing.times_ms, log_lines=len(trainer.log), device=torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
