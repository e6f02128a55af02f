"""Scenario 20: how long does a Triton softmax take? Two benchmarks of the same kernel.

    python bench.py --variant slow     # time.perf_counter() around the first calls, no warm-up, no sync
    python bench.py --variant fixed    # warm-up, CUDA events around batches of calls, a median, rotating inputs

The kernel is a row-wise softmax over a `rows` x `cols` fp32 matrix, one Triton program per row. The
slow program measures it the way a first benchmark is often written: the wall-clock time of the first
`calls` calls divided by `calls`, with no warm-up and no synchronisation. The fixed program compiles
the kernel in a warm-up, then records CUDA events on the stream around each of `repeat` batches of
`per_batch` back-to-back calls, synchronises once before reading them, reports the median time per
call over the batches, and cycles over `rotate` input buffers so that every call reads its input from
DRAM as it would in a real model (they are far larger than the L2 anyway). Both check the kernel's output against float64 on a poisoned (NaN) buffer and print one JSON
line (coach.capture.harness.emit): the per-call times each benchmark reports. NVTX ranges mark the
timed regions ("timed") and the warm-up; Nsight Systems records the whole run, compilation included.
After its careful benchmark the fixed program also measures the first careful version's method
(events around each call, a synchronisation after each) and reports it beside (per_call_sync_ms).

slow reports the Triton compiler (the first call compiles the kernel and builds its launcher, hundreds
of milliseconds on the host) spread over `calls` calls, and none of the kernel's own run time: the
timer stops as soon as the last launch is queued. fixed reports the kernel: its median agrees with the
kernel durations Nsight Systems records. Events around one call each, with a synchronisation after
every call, would not: the queue is empty when the start event is recorded, so the GPU reaches it at
once and then idles until the host's launch arrives (a Triton launch from Python takes tens of
microseconds), and that wait lands inside every sample. Back to back, the host queues the next calls
while the GPU runs the current one, and the GPU reaches each event straight from the previous kernel.

The kernel runs under TRITON_INTERPRET=1 on a CPU, so its correctness is tested without a GPU.
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import time

import torch
import triton
import triton.language as tl

from coach.capture import harness

#: fp32 exponentials and a sum over 8192 terms against float64: ~1e-7 relative per element; a row
#: normalised by the wrong sum is off by order 1.
TOLERANCE = 1e-5


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_row_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Row-wise softmax of a 2-D fp32 tensor: one program per row, the whole row in registers."""
    rows, cols = x.shape
    out = torch.empty_like(x) if out is None else out
    block = triton.next_power_of_2(cols)
    warps = min(16, max(1, block // 512))  # 16 values per thread for the 8192-wide rows
    softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block, num_warps=warps)
    return out


def error(out: torch.Tensor, x: torch.Tensor) -> float:
    return harness.relative_error(out, torch.softmax(x.double(), dim=1))


def draw(size: dict, n: int, device: torch.device, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator(device=device).manual_seed(seed)
    return [torch.randn(size["rows"], size["cols"], generator=gen, device=device) * 4 for _ in range(n)]


def naive(size: dict, seed: int) -> tuple[list[float], float]:
    """The first benchmark: wall-clock time of the first calls, per call."""
    x, = draw(size, 1, torch.device("cuda"), seed)
    out = torch.full_like(x, float("nan"))  # poison: what the kernel does not write fails the check
    with harness.nvtx("timed"):
        start = time.perf_counter()
        for _ in range(size["calls"]):
            softmax(x, out)
        elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return [elapsed / size["calls"] * 1e3], error(out, x)


def careful(size: dict, seed: int, warmup: int, repeat: int) -> tuple[harness.Timing, float, list[float]]:
    """Warm-up, then CUDA events around `repeat` batches of `per_batch` back-to-back calls on rotating
    inputs, read after one synchronisation at the end; the time per call of every batch. This is the
    project's own timing method (coach.capture.harness.time_cuda, batched): the rotation over `rotate`
    inputs of 0.5 GB each keeps every call's input out of the 60 MiB L2 without a flush."""
    inputs = draw(size, size["rotate"], torch.device("cuda"), seed)
    outputs = [torch.full_like(x, float("nan")) for x in inputs]
    calls = itertools.count()

    def call() -> None:
        i = next(calls) % len(inputs)
        softmax(inputs[i], outputs[i])

    timing = harness.time_cuda(call, warmup=warmup, repeat=repeat, label="timed", calls_per_sample=size["per_batch"],
                               footprint_bytes=harness.footprint(*inputs, *outputs))
    return timing, max(error(o, x) for o, x in zip(outputs, inputs)), per_call_synchronised(call, repeat)


def per_call_synchronised(call, repeat: int) -> list[float]:
    """The first careful benchmark of this scenario, measured again for the comparison the narrative
    makes: CUDA events around each single call and a synchronisation after it. After the wait the
    queue is empty, so the GPU reaches the start event at once and then idles until the host's launch
    arrives: every sample holds one launch latency besides the kernel. Not the reported number."""
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with harness.nvtx("per-call events"):
            start.record()
            call()
            end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def main() -> None:
    size = harness.sizes(__file__)
    args = harness.parse_args(__doc__.splitlines()[0], warmup=3, repeat=20)
    # A cold start, as in a fresh container or a CI job: Triton's on-disk cache is empty, so the first
    # call compiles (with a warm cache it would only load the cubin, and the naive number would change
    # from one run to the next: a measurement that depends on the state of a cache is a bad one too).
    with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        if args.variant == "slow":
            times, err = naive(size, args.seed)
            timing = harness.Timing(times, {"method": "host timer", "timer": "host (time.perf_counter, no sync)",
                                            "calls_per_sample": size["calls"], "samples": 1, "warmup": 0,
                                            "l2_flush": False, "range": "timed"})
            extra = {}
        else:
            timing, err, per_call = careful(size, args.seed, args.warmup, args.repeat)
            careful_ms = statistics.median(timing.times_ms)
            extra = {"per_call_sync_ms": statistics.median(per_call),
                     "per_call_sync_excess_pct": (statistics.median(per_call) / careful_ms - 1) * 100}
    harness.emit(variant=args.variant, timing=timing, unit="call", rel_error=err, tolerance=TOLERANCE,
                 seed=args.seed, device=torch.cuda.get_device_name(), triton=triton.__version__, **extra)


if __name__ == "__main__":
    main()
