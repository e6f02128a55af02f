"""Scenario 17: a CuPy pipeline that normalises batches of signals, with CuPy's memory pool switched off.

    python normalize.py --variant slow     # cupy.cuda.set_allocator(None): cudaMalloc/cudaFree per temporary
    python normalize.py --variant fixed    # a memory pool: the temporaries reuse the pool's blocks

Each batch is `rows` signals of `cols` fp32 samples. The pipeline applies a window, a tanh
compression, and standardises every signal (subtract its mean, divide by its standard deviation),
writing into an output buffer. Written as NumPy-style array expressions, every step creates a new
temporary array the size of the batch. Both variants draw the same signals from the same seed, poison
the output (NaN), process every batch once and check every element against float64, then time whole
passes of `steps` batches with CUDA events and report the median time per batch (one JSON line,
coach.capture.harness.emit). NVTX ranges mark each batch; Nsight Systems records only the timed passes
(scenario.toml: nsys_timed_only).

slow: the pool was switched off so that CuPy would hand memory back to the driver between batches
(to leave room for PyTorch on the same GPU). Every temporary is then a cudaMalloc when it is created
and a cudaFree when Python drops it; cudaFree waits for the GPU to finish, so the queue drains at every
temporary, and the next kernel waits for the host to allocate. fixed: CuPy's MemoryPool, capped at
`pool_limit_gb`, keeps freed blocks and hands them out again: after the first batch no
allocation reaches the driver.

`Pipeline(variant, size, xp, seed)` takes the array module, so the check also runs with NumPy on a CPU.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import torch

from coach.capture import harness

EPS = 1e-6
#: fp32 against float64 over a window, tanh and a mean and variance over 4096 samples: each output
#: carries a few float32 roundings (~1e-7 relative); a batch normalised with the wrong statistics
#: differs by order 1.
TOLERANCE = 1e-5


def use_allocator(variant: str, pool_limit_bytes: int) -> None:
    """slow: no pool (every array is its own cudaMalloc); fixed: a pool with a cap."""
    import cupy

    if variant == "slow":
        cupy.cuda.set_allocator(None)
    else:
        pool = cupy.cuda.MemoryPool()
        pool.set_limit(size=pool_limit_bytes)
        cupy.cuda.set_allocator(pool.malloc)


class Pipeline:
    def __init__(self, size: dict, xp: ModuleType, seed: int):
        self.xp, self.steps = xp, size["steps"]
        rng = np.random.default_rng(seed)
        shape = (size["pool"], size["rows"], size["cols"])
        self.signals = xp.asarray(rng.standard_normal(shape, dtype=np.float32))
        self.window = xp.asarray(np.hanning(size["cols"]).astype(np.float32) + np.float32(0.5))
        self.out = xp.empty(shape, dtype=xp.float32)

    def normalize(self, x, out) -> None:
        """Window, compress, standardise each row: one temporary array per step, as written."""
        xp = self.xp
        y = xp.tanh(x * self.window)
        z = y - y.mean(axis=1, keepdims=True)
        std = xp.sqrt((z * z).mean(axis=1, keepdims=True) + EPS)
        xp.divide(z, std, out=out)

    def run_pass(self) -> None:
        """`steps` batches, cycling over the signals."""
        for k in range(self.steps):
            b = k % self.signals.shape[0]
            with harness.nvtx(f"batch {k}"):
                self.normalize(self.signals[b], self.out[b])


def reference(p: Pipeline):
    xp = p.xp
    y = xp.tanh(p.signals.astype(xp.float64) * p.window.astype(xp.float64))
    z = y - y.mean(axis=2, keepdims=True)
    return z / xp.sqrt((z * z).mean(axis=2, keepdims=True) + EPS)


def check(p: Pipeline) -> float:
    return harness.relative_error(torch.from_dlpack(p.out), torch.from_dlpack(reference(p)))


def run(size: dict, xp: ModuleType, seed: int) -> tuple[Pipeline, float]:
    p = Pipeline(size, xp, seed)
    p.out[...] = np.nan  # poison: a batch that is never written fails the check
    with harness.nvtx("check"):
        for b in range(p.signals.shape[0]):
            p.normalize(p.signals[b], p.out[b])
    return p, check(p)


def main() -> None:
    import cupy

    size = harness.sizes(__file__)
    args = harness.parse_args(__doc__.splitlines()[0], warmup=1, repeat=5)
    torch.cuda.init()  # one CUDA context for both: CuPy and PyTorch share the device's primary context
    use_allocator(args.variant, int(size["pool_limit_gb"] * 1e9))
    p, error = run(size, cupy, args.seed)
    # One sample is a pass of `steps` batches, the passes back to back: every cudaFree of the slow
    # version waits for the GPU inside the pass, which the time per batch must hold.
    timing = harness.time_steps(p.run_pass, warmup=args.warmup, repeat=args.repeat, label=f"pass {args.variant}")
    harness.emit(variant=args.variant, timing=timing.per(size["steps"], "batch"), unit="batch", rel_error=error,
                 tolerance=TOLERANCE, seed=args.seed, pass_ms=timing.times_ms, device=torch.cuda.get_device_name(),
                 pool=args.variant == "fixed")


if __name__ == "__main__":
    main()
