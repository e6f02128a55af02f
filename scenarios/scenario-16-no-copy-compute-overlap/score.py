"""Scenario 16: score a dataset held in host memory, chunk by chunk, on the GPU.

    python score.py --variant slow     # copy in, compute, copy out: every chunk on the default stream
    python score.py --variant fixed    # the same chunks round-robin over three streams, overlapped

The dataset is `chunks` chunks of `rows` x `features` fp32 values in pinned host memory. Each chunk
goes to the GPU, through one fp32 dense layer with GELU (`features` -> `outputs`), and its scores
come back into pinned host memory. Both variants draw the same data and weights from the same seed,
poison the output (NaN), score the dataset once and check every chunk against float64 on a sample of
rows (every element for NaN), then time whole passes with CUDA events and report the median (one
JSON line, coach.capture.harness.emit). NVTX ranges mark each chunk and its copy and compute parts;
Nsight Systems records only the timed passes (scenario.toml: nsys_timed_only).

slow: the copies are asynchronous (pinned memory, non_blocking=True) but all on one stream, and a
stream runs its work in order: the copy engines idle while the SMs compute, and the SMs while a chunk
crosses PCIe. fixed: chunk i goes to stream i % 3, each stream with its own device buffers, so while
chunk i computes, chunk i+1 is copied in by the host-to-device copy engine and chunk i-1 copied out
by the device-to-host one. Events (Stream.wait_stream) order the pass against the default stream.

`Scorer(variant, size, device, seed)` runs on any device (without pinning or streams on a CPU), so the
check also runs without a GPU.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from coach.capture import harness

STREAMS = 3  # one per pipeline stage: copy in, compute, copy out
CHECK_ROWS = 64  # rows of each chunk checked against float64 (all rows are checked for NaN)
#: fp32 products of length `features` (4096) against float64: each output is a sum of 4096 rounded
#: terms, relative error near 1e-6; a chunk scored from the wrong input differs by order 1.
TOLERANCE = 1e-4


class Scorer:
    def __init__(self, variant: str, size: dict, device: torch.device, seed: int):
        self.variant, self.device = variant, device
        chunks, rows, features, outputs = (size[k] for k in ("chunks", "rows", "features", "outputs"))
        pin = device.type == "cuda"
        gen = torch.Generator().manual_seed(seed)
        self.host_in = torch.randn(chunks, rows, features, generator=gen).pin_memory() if pin else \
            torch.randn(chunks, rows, features, generator=gen)
        self.host_out = torch.empty(chunks, rows, outputs, pin_memory=pin)
        self.weight = (torch.randn(features, outputs, generator=gen) / math.sqrt(features)).to(device)
        self.bias = torch.randn(outputs, generator=gen).to(device)
        n = STREAMS if variant == "fixed" else 1
        self.buffers = [torch.empty(rows, features, device=device) for _ in range(n)]
        self.streams = [torch.cuda.Stream(device) for _ in range(n)] if variant == "fixed" and pin else []

    def score_chunk(self, i: int, slot: int) -> None:
        """Copy chunk i in, run the layer, copy its scores out (all asynchronous from pinned memory)."""
        x = self.buffers[slot]
        with harness.nvtx("copy in"):
            x.copy_(self.host_in[i], non_blocking=True)
        with harness.nvtx("compute"):
            y = F.gelu(torch.addmm(self.bias, x, self.weight))
        with harness.nvtx("copy out"):
            self.host_out[i].copy_(y, non_blocking=True)

    def score(self) -> None:
        """One pass over the dataset."""
        if not self.streams:  # slow, or any variant on a CPU: one stream, in order
            for i in range(self.host_in.shape[0]):
                with harness.nvtx(f"chunk {i}"):
                    self.score_chunk(i, 0)
            return
        main = torch.cuda.current_stream(self.device)
        for s in self.streams:
            s.wait_stream(main)  # the weights, and the previous pass's use of the buffers
        for i in range(self.host_in.shape[0]):
            slot = i % len(self.streams)
            with harness.nvtx(f"chunk {i}"), torch.cuda.stream(self.streams[slot]):
                self.score_chunk(i, slot)
        for s in self.streams:
            main.wait_stream(s)  # the pass ends when every stream's last copy out has


def check(scorer: Scorer) -> float:
    """Relative error of a sample of rows of every chunk against float64; infinite if any output
    element is NaN."""
    if scorer.device.type == "cuda":
        torch.cuda.synchronize()  # the copies out are asynchronous
    if not bool(torch.isfinite(scorer.host_out).all()):
        return float("inf")
    x = scorer.host_in[:, :CHECK_ROWS].to(scorer.device).double()
    want = F.gelu(x @ scorer.weight.double() + scorer.bias.double())
    return harness.relative_error(scorer.host_out[:, :CHECK_ROWS].to(scorer.device), want)


def run(variant: str, size: dict, device: torch.device, seed: int) -> tuple[Scorer, float]:
    scorer = Scorer(variant, size, device, seed)
    scorer.host_out.fill_(float("nan"))  # poison: a chunk that is never copied back fails the check
    with harness.nvtx("check"):
        scorer.score()
    return scorer, check(scorer)


def main() -> None:
    size = harness.sizes(__file__)
    args = harness.parse_args(__doc__.splitlines()[0], warmup=1, repeat=5)
    scorer, error = run(args.variant, size, torch.device("cuda"), args.seed)
    # One sample is a pass over the dataset, the passes back to back; the events are on the default
    # stream, which each pass waits for at its start and joins at its end (Scorer.score).
    timing = harness.time_steps(scorer.score, warmup=args.warmup, repeat=args.repeat, label=f"pass {args.variant}")
    harness.emit(variant=args.variant, timing=timing, unit="pass", rel_error=error, tolerance=TOLERANCE,
                 seed=args.seed, device=torch.cuda.get_device_name(), pinned=bool(scorer.host_in.is_pinned()))


if __name__ == "__main__":
    main()
