"""Scenario 15: feed batches from host memory to a model on the GPU.

    python feed.py --variant slow     # batches in pageable memory, copied with .to("cuda")
    python feed.py --variant fixed    # batches in pinned memory, copied one step ahead on a copy stream

Each step copies one fp32 batch (rows x features) from the host, casts it to bf16 and runs it through
`layers` square bf16 matrix multiplications with ReLU. An epoch is `steps` steps over a pool of `pool`
host batches. Both variants draw the same batches and weights from the same seed, poison the outputs
(NaN), run one epoch and check every step's output against a float64 reference on a sample of rows,
then time whole epochs with CUDA events and report the median time per step (one JSON line,
coach.capture.harness.emit). NVTX ranges mark each step and its copy and compute parts.

slow: a copy from pageable memory is staged by the driver through a pinned buffer, chunk by chunk,
with the CPU copying; the call returns only when the data is on the GPU, and the GPU computes nothing
meanwhile. fixed: from pinned memory the copy engine reads host memory directly (DMA), the call
returns at once, and with a second stream the copy of batch k+1 runs while batch k computes.
"""

from __future__ import annotations

import torch

from coach.capture import harness

#: bf16 operands, fp32 accumulation, `layers` matrix products: about 1e-2 relative error at most
#: (bf16 keeps 8 significant bits; each layer rounds its output once).
TOLERANCE = 2e-2
CHECK_ROWS = 64  # rows of each batch checked against float64 (all rows are checked for NaN)


def main() -> None:
    args = harness.parse_args(__doc__.splitlines()[0], warmup=1, repeat=5)
    size = harness.sizes(__file__)
    rows, features, layers, steps, pool = (size[k] for k in ("rows", "features", "layers", "steps", "pool"))

    gen = torch.Generator().manual_seed(args.seed)
    batches = torch.randn(pool, rows, features, generator=gen)  # pageable host memory
    if args.variant == "fixed":
        batches = batches.pin_memory()  # a page-locked copy; a DataLoader does this with pin_memory=True
    # Weights are drawn on the GPU: the only host-to-device copies are the batches (and the check's samples).
    gpu_gen = torch.Generator(device="cuda").manual_seed(args.seed)
    weights = [(torch.randn(features, features, device="cuda", generator=gpu_gen) / features**0.5).to(torch.bfloat16)
               for _ in range(layers)]
    outs = torch.empty(steps, rows, features, device="cuda", dtype=torch.bfloat16)

    def model(x: torch.Tensor, out: torch.Tensor) -> None:
        h = x.to(torch.bfloat16)
        for w in weights[:-1]:
            h = torch.relu(h @ w)
        torch.matmul(h, weights[-1], out=out)
        out.relu_()

    def epoch_slow() -> None:
        for k in range(steps):
            with harness.nvtx(f"step {k}"):
                with harness.nvtx("copy"):
                    x = batches[k % pool].to("cuda")
                with harness.nvtx("compute"):
                    model(x, outs[k])

    copy_stream = torch.cuda.Stream()
    slots = [torch.empty(rows, features, device="cuda") for _ in range(2)]
    ready = [torch.cuda.Event() for _ in range(2)]  # batch copied into the slot
    free = [torch.cuda.Event() for _ in range(2)]  # compute done with the slot

    def prefetch(k: int) -> None:
        slot = k % 2
        with torch.cuda.stream(copy_stream):
            copy_stream.wait_event(free[slot])
            slots[slot].copy_(batches[k % pool], non_blocking=True)
            ready[slot].record(copy_stream)

    def epoch_fixed() -> None:
        compute = torch.cuda.current_stream()
        for event in free:
            event.record(compute)
        with harness.nvtx("copy"):
            prefetch(0)
        for k in range(steps):
            with harness.nvtx(f"step {k}"):
                if k + 1 < steps:
                    with harness.nvtx("copy"):
                        prefetch(k + 1)
                compute.wait_event(ready[k % 2])
                with harness.nvtx("compute"):
                    model(slots[k % 2], outs[k])
                free[k % 2].record(compute)

    epoch = epoch_slow if args.variant == "slow" else epoch_fixed
    outs.fill_(float("nan"))  # poison: a step that writes nothing fails the check
    with harness.nvtx("check"):
        epoch()
    torch.cuda.synchronize()
    error = check(outs, batches, weights, steps, pool)

    # One sample is an epoch of steps, the epochs back to back: a pageable copy blocks the host and
    # serialises with the compute inside the epoch, which is what the step time must show.
    timing = harness.time_steps(epoch, warmup=args.warmup, repeat=args.repeat, label=f"epoch {args.variant}")
    harness.emit(variant=args.variant, timing=timing.per(steps, "step"), unit="step", rel_error=error,
                 tolerance=TOLERANCE, seed=args.seed, epoch_ms=timing.times_ms, device=torch.cuda.get_device_name(),
                 pinned=bool(batches.is_pinned()))


def check(outs: torch.Tensor, batches: torch.Tensor, weights: list[torch.Tensor], steps: int, pool: int) -> float:
    """Relative error of the sampled rows of every step against float64; infinite if any output
    element (sampled or not) is still NaN."""
    if not bool(torch.isfinite(outs).all()):
        return float("inf")
    got, want = [], []
    w64 = [w.double() for w in weights]
    for k in range(steps):
        h = batches[k % pool][:CHECK_ROWS].to("cuda").to(torch.bfloat16).double()
        for w in w64:
            h = torch.relu(h @ w)
        got.append(outs[k][:CHECK_ROWS])
        want.append(h)
    return harness.relative_error(torch.stack(got), torch.stack(want))


if __name__ == "__main__":
    main()
