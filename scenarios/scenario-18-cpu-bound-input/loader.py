"""Scenario 18: a training loop that prepares every batch on the CPU, in its own thread.

    python loader.py --variant slow     # crop, flip, colour jitter and normalise in the training loop
    python loader.py --variant fixed    # the same batches from a DataLoader: worker processes, pinned memory

Each step takes `batch` random `crop` x `crop` crops of decoded RGB images (uint8, `image` x `image`),
flips half of them, jitters brightness, contrast and saturation, normalises them and lays them out
channels-first in fp32: NumPy work, tens of milliseconds per batch on one core. The GPU then runs one
training step of an MLP classifier (fp32, SGD with momentum) on the batch. Both variants prepare the
same batches (each drawn from its own seed) and train the same model; after one epoch the change in
the weights is checked against the same epoch in float64. Whole epochs are then timed with CUDA events
and the median time per step reported (one JSON line, coach.capture.harness.emit). NVTX ranges mark
each step and its parts; Nsight Systems records only the timed epochs (scenario.toml: nsys_timed_only).

slow: while the main thread prepares batch k+1, the GPU has nothing queued: it runs batch k's step in
a few milliseconds and idles for the rest. The batch then crosses PCIe from pageable memory. fixed: a
DataLoader with `workers` processes prepares batches in parallel, `prefetch` each ahead, and a
pin-memory thread copies them into page-locked buffers; the loop copies them with non_blocking=True.
The main thread only launches GPU work, so the GPU stays busy as long as the workers keep up.

`run(variant, size, device, seed)` works on any device, so the check also runs on a CPU.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from coach.capture import harness

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)  # ImageNet channel statistics
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
LUMA = (0.299, 0.587, 0.114)
LR, MOMENTUM = 0.05, 0.9
#: The check compares the change of the weights over one epoch with float64. fp32 products of length
#: 3 x crop^2 (27,648) round to ~1e-6 relative; a batch out of order or a half-copied batch changes
#: the update of every weight by order 1.
TOLERANCE = 1e-3


class Augmented(Dataset):
    """Batch k: `batch` crops of images from a pool of decoded images, with random augmentation drawn
    from seed + k, so any process produces the same batch k."""

    def __init__(self, size: dict, seed: int):
        self.size, self.seed = size, seed
        rng = np.random.default_rng(seed)
        n, s = size["images"], size["image"]
        self.images = rng.integers(0, 256, (n, s, s, 3), dtype=np.uint8)  # HWC, as a JPEG decoder returns
        self.labels = rng.integers(0, size["classes"], n)

    def __len__(self) -> int:
        return self.size["steps"]

    def __getitem__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        b, c, s = self.size["batch"], self.size["crop"], self.size["image"]
        rng = np.random.default_rng([self.seed, k])
        idx = rng.integers(0, len(self.images), b)
        top, left = rng.integers(0, s - c + 1, b), rng.integers(0, s - c + 1, b)
        flip = rng.random(b) < 0.5
        crops = np.stack([img[t:t + c, l:l + c][:, ::-1 if f else 1]
                          for img, t, l, f in zip(self.images[idx], top, left, flip)])
        x = crops.astype(np.float32) / np.float32(255)
        x *= rng.uniform(0.6, 1.4, (b, 1, 1, 1)).astype(np.float32)  # brightness
        mean = x.mean(axis=(1, 2, 3), keepdims=True)  # contrast, around each image's mean
        x = (x - mean) * rng.uniform(0.6, 1.4, (b, 1, 1, 1)).astype(np.float32) + mean
        gray = LUMA[0] * x[..., 0:1] + LUMA[1] * x[..., 1:2] + LUMA[2] * x[..., 2:3]  # saturation
        sat = rng.uniform(0.6, 1.4, (b, 1, 1, 1)).astype(np.float32)
        x = x * sat + gray * (np.float32(1) - sat)
        np.clip(x, 0, 1, out=x)
        x = (x - MEAN) / STD
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))  # NCHW for the model
        return torch.from_numpy(x), torch.from_numpy(self.labels[idx])


def make_model(size: dict, device: torch.device, seed: int) -> nn.Module:
    features = 3 * size["crop"] ** 2
    model = nn.Sequential(nn.Flatten(), nn.Linear(features, size["hidden"]), nn.GELU(),
                          nn.Linear(size["hidden"], size["classes"]))
    gen = torch.Generator(device=device).manual_seed(seed)
    model.to(device)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, device=device) / p.shape[-1] ** 0.5)
    return model


class Loop:
    """The model, its optimizer, and where the batches come from."""

    def __init__(self, variant: str, size: dict, device: torch.device, seed: int):
        self.variant, self.device, self.size = variant, device, size
        self.data = Augmented(size, seed)
        self.model = make_model(size, device, seed)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM)
        self.loader = None
        if variant == "fixed":
            self.loader = DataLoader(self.data, batch_size=None, shuffle=False, num_workers=size["workers"],
                                     prefetch_factor=size["prefetch"], persistent_workers=True,
                                     pin_memory=device.type == "cuda")

    def batches(self):
        if self.loader is None:
            return (self.data[k] for k in range(len(self.data)))  # prepared here, in the loop's thread
        return iter(self.loader)

    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        loss = F.cross_entropy(self.model(x), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def epoch(self) -> None:
        it = self.batches()
        for k in range(len(self.data)):
            with harness.nvtx(f"step {k}"):
                with harness.nvtx("batch"):
                    x, y = next(it)
                with harness.nvtx("copy"):
                    x = x.to(self.device, non_blocking=self.loader is not None)
                    y = y.to(self.device, non_blocking=self.loader is not None)
                with harness.nvtx("train"):
                    self.train_step(x, y)


def reference(loop: Loop, initial: nn.Module) -> nn.Module:
    """The same epoch in float64 on batches prepared here, one by one."""
    ref = copy.deepcopy(initial).double()
    opt = torch.optim.SGD(ref.parameters(), lr=LR, momentum=MOMENTUM)
    for k in range(len(loop.data)):
        x, y = loop.data[k]
        loss = F.cross_entropy(ref(x.to(loop.device).double()), y.to(loop.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return ref


def weights(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten().double() for p in model.parameters()])


def run(variant: str, size: dict, device: torch.device, seed: int) -> tuple[Loop, float]:
    """Train one epoch and compare the change of the weights with float64."""
    loop = Loop(variant, size, device, seed)
    initial = copy.deepcopy(loop.model)
    with harness.nvtx("check"):
        loop.epoch()
    start = weights(initial)
    error = harness.relative_error(weights(loop.model) - start, weights(reference(loop, initial)) - start)
    return loop, error


def main() -> None:
    size = harness.sizes(__file__)
    # no warm-up epoch: the checked epoch before the timing has loaded every kernel
    args = harness.parse_args(__doc__.splitlines()[0], warmup=0, repeat=3)
    loop, error = run(args.variant, size, torch.device("cuda"), args.seed)
    # One sample is an epoch, the epochs back to back: the host's batch preparation between the GPU's
    # steps is what the time per step must hold.
    timing = harness.time_steps(loop.epoch, warmup=args.warmup, repeat=args.repeat, label=f"epoch {args.variant}")
    harness.emit(variant=args.variant, timing=timing.per(size["steps"], "step"), unit="step", rel_error=error,
                 tolerance=TOLERANCE, seed=args.seed, epoch_ms=timing.times_ms, device=torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
