"""Scenario 19: a time-series mixer whose activations change layout twice in every block.

    python mixer.py --variant slow     # batch-first (B, T, C): transposed views feed the time-mixing MLP
    python mixer.py --variant fixed    # time-major (T, B, C): every matrix product reads a contiguous operand

A TSMixer-style forecaster: `blocks` blocks, each mixing along time (a two-layer MLP over the `steps`
time steps, shared by every series and channel) and then along channels (a two-layer MLP over the
`channels`), with layer norms and residuals; a linear head maps the `steps` inputs to `horizon`
forecasts. bf16 inference on batches of `batch` series. Both variants draw the same weights and input
from the same seed, poison the output (NaN), forecast once and check every element against the slow
path in float64, then time single forecasts with CUDA events and report the median (one JSON line,
coach.capture.harness.emit). NVTX ranges mark each forecast, block and mixing step; Nsight Systems
records only the timed forecasts (scenario.toml: nsys_timed_only).

slow: the activations are (B, T, C), channels contiguous. Mixing along time needs T as the last
dimension, so the block transposes to a (B, C, T) view. F.linear on a 3-D input with a weight that
requires gradients (any nn.Module parameter, also under torch.no_grad()) folds the leading dimensions
into one matrix before the product; a transposed view cannot be folded without a copy, so reshape
copies the whole activation (a direct_copy kernel, nowhere in the Python source). Transposing back,
the residual add then reads the product's output with a stride. fixed: the activations are kept
(T, B, C). Time mixing is then W @ X on the (T, B*C) matrix and channel mixing X @ W^T on the (T*B, C)
matrix: both plain matrix products on contiguous memory, and the second time-mixing product adds
straight into the residual stream (addmm_), which the transposed layout could not. The only copy
left is the one transpose of the input, once per forecast.

`forecast(variant, ...)` runs on any device, so the check also runs on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from coach.capture import harness

#: bf16 (8 significant bits, ~4e-3 per rounding) through `blocks` residual blocks of products and
#: norms, against float64: the measured relative error is near 1e-2 at every size tried; a block
#: skipped or mixed along the wrong axis is off by order 1.
TOLERANCE = 4e-2


@dataclass
class Weights:
    ln1: list[tuple[torch.Tensor, torch.Tensor]]
    time1: list[tuple[torch.Tensor, torch.Tensor]]  # (hidden, steps) weight, bias
    time2: list[tuple[torch.Tensor, torch.Tensor]]  # (steps, hidden)
    ln2: list[tuple[torch.Tensor, torch.Tensor]]
    chan1: list[tuple[torch.Tensor, torch.Tensor]]  # (ff, channels)
    chan2: list[tuple[torch.Tensor, torch.Tensor]]  # (channels, ff)
    head: tuple[torch.Tensor, torch.Tensor]  # (horizon, steps)

    def to(self, dtype: torch.dtype, *, parameters: bool = False) -> Weights:
        """A copy in `dtype`; `parameters` marks every tensor as requiring gradients, as an
        nn.Module's parameters do (also in inference, under torch.no_grad())."""
        def conv(x):
            if isinstance(x, list):
                return [conv(v) for v in x]
            return tuple(t.detach().to(dtype).requires_grad_(parameters) for t in x)
        return Weights(**{k: conv(v) for k, v in vars(self).items()})


def draw(size: dict, device: torch.device, seed: int) -> tuple[Weights, torch.Tensor]:
    """Weights (bf16 parameters) and an input batch (B, T, C) in bf16: fresh random values."""
    gen = torch.Generator(device=device).manual_seed(seed)
    steps, channels = size["steps"], size["channels"]

    def linear(out_features: int, in_features: int) -> tuple[torch.Tensor, torch.Tensor]:
        w = torch.randn(out_features, in_features, generator=gen, device=device) / in_features**0.5
        return w, torch.randn(out_features, generator=gen, device=device) * 0.1

    def norm(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (1 + 0.1 * torch.randn(n, generator=gen, device=device),
                0.1 * torch.randn(n, generator=gen, device=device))

    n = size["blocks"]
    w = Weights(ln1=[norm(channels) for _ in range(n)], time1=[linear(size["time_hidden"], steps) for _ in range(n)],
                time2=[linear(steps, size["time_hidden"]) for _ in range(n)], ln2=[norm(channels) for _ in range(n)],
                chan1=[linear(size["ff"], channels) for _ in range(n)],
                chan2=[linear(channels, size["ff"]) for _ in range(n)],
                head=linear(size["horizon"], steps))
    x = torch.randn(size["batch"], steps, channels, generator=gen, device=device)
    return w.to(torch.bfloat16, parameters=True), x.to(torch.bfloat16)


def forecast_slow(w: Weights, x: torch.Tensor) -> torch.Tensor:
    """Batch-first, as the model is usually written: (B, T, C) in, (B, horizon, C) out."""
    c = x.shape[-1]
    for i in range(len(w.time1)):
        with harness.nvtx(f"block {i}"):
            with harness.nvtx("time mixing"):
                y = F.layer_norm(x, (c,), *w.ln1[i]).transpose(1, 2)  # (B, C, T): a view
                y = F.linear(F.gelu(F.linear(y, *w.time1[i])), *w.time2[i])
                x = x + y.transpose(1, 2)
            with harness.nvtx("channel mixing"):
                y = F.layer_norm(x, (c,), *w.ln2[i])
                x = x + F.linear(F.gelu(F.linear(y, *w.chan1[i])), *w.chan2[i])
    with harness.nvtx("head"):
        return F.linear(x.transpose(1, 2), *w.head).transpose(1, 2)


def forecast_fixed(w: Weights, x: torch.Tensor) -> torch.Tensor:
    """Time-major: one copy into (T, B, C) and every product on contiguous memory."""
    b, t, c = x.shape
    with harness.nvtx("to time-major"):
        x = x.transpose(0, 1).contiguous()  # (T, B, C): the one copy
    for i in range(len(w.time1)):
        with harness.nvtx(f"block {i}"):
            with harness.nvtx("time mixing"):
                y = F.layer_norm(x, (c,), *w.ln1[i]).view(t, b * c)
                (w1, b1), (w2, b2) = w.time1[i], w.time2[i]
                h = F.gelu((w1 @ y).add_(b1[:, None]))
                x.view(t, b * c).add_(b2[:, None]).addmm_(w2, h)  # the residual stream takes W2 h in place
            with harness.nvtx("channel mixing"):
                y = F.layer_norm(x, (c,), *w.ln2[i])
                x = x + F.linear(F.gelu(F.linear(y, *w.chan1[i])), *w.chan2[i])
    with harness.nvtx("head"):
        wh, bh = w.head
        return (wh @ x.view(t, b * c)).add_(bh[:, None]).view(-1, b, c).transpose(0, 1)  # (B, horizon, C) view


FORECAST = {"slow": forecast_slow, "fixed": forecast_fixed}


def run(variant: str, size: dict, device: torch.device, seed: int) -> tuple[Weights, torch.Tensor, torch.Tensor, float]:
    """Forecast once and compare with the slow path in float64: (weights, input, output, error)."""
    w, x = draw(size, device, seed)
    out = torch.full((size["batch"], size["horizon"], size["channels"]), float("nan"), device=device,
                     dtype=torch.bfloat16)
    with torch.no_grad():
        with harness.nvtx("check"):
            out.copy_(FORECAST[variant](w, x))  # into the poisoned buffer: a forecast not written fails
        want = forecast_slow(w.to(torch.float64), x.double())
    return w, x, out, harness.relative_error(out, want)


def main() -> None:
    size = harness.sizes(__file__)
    args = harness.parse_args(__doc__.splitlines()[0], warmup=2, repeat=10)
    w, x, _, error = run(args.variant, size, torch.device("cuda"), args.seed)
    fn = FORECAST[args.variant]
    with torch.no_grad(), harness.kineto():
        # One sample is a forecast, the forecasts back to back as a serving loop runs them.
        timing = harness.time_steps(lambda: fn(w, x), warmup=args.warmup, repeat=args.repeat,
                                    label=f"forecast {args.variant}")
    harness.emit(variant=args.variant, timing=timing, unit="forecast", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, device=torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
