"""A Hugging Face-style training step fed by a DataLoader whose samples are tokenised in Python.

    python dataloader_train.py --workers 0 [--kineto trace.json.gz] [--nvtx-ops]
    python dataloader_train.py --workers 4 ...

Known bottleneck. With --workers 0 the training process tokenises every sample itself (a Python loop
over the characters of a 4,000-character text: 0.5-1.5 ms a sample on one core, tens of ms a batch of
32), and the GPU, whose step (a 4-layer transformer encoder, d_model 512, 256 tokens, fp32, AdamW)
should take about 10 ms, idles while it does: the run is input-bound, and the fix is DataLoader
workers (num_workers > 0) with pin_memory and prefetching. With --workers 4 the same batches come
from four worker processes, prefetch_factor 4, into pinned memory, copied with non_blocking=True: the
GPU should be busy most of the time. Expect coach's input-pipeline finding first for --workers 0,
naming the DataLoader and num_workers, and not for --workers 4.

--kineto writes a torch.profiler trace of the profiled steps (the DataLoader's
"enumerate(DataLoader)#..._DataLoaderIter.__next__" ranges are in it). --nvtx-ops runs the steps
under torch.autograd.profiler.emit_nvtx, so an nsys recording sees the same ranges as NVTX.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from _common import device, emit, kineto, nvtx, parser, timed

VOCAB = 8192
LETTERS = "abcdefghijklmnopqrstuvwxyz ,.;:!?'\n"


class Texts(Dataset):
    """Sample i: a pseudo-random text of ``chars`` characters, tokenised by a Python loop (a hash of
    each 4-character window into the vocabulary), truncated or padded to ``seq`` tokens."""

    def __init__(self, n: int, seq: int, chars: int, classes: int):
        self.n, self.seq, self.chars, self.classes = n, seq, chars, classes

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(i)
        picks = torch.randint(0, len(LETTERS), (self.chars,), generator=g).tolist()
        text = "".join(LETTERS[p] for p in picks)
        ids = [1]  # [CLS]
        for k in range(0, len(text) - 4, 2):  # the per-sample Python work a tokenizer does
            h = 0
            for ch in text[k:k + 4]:
                h = (h * 131 + ord(ch)) % (VOCAB - 3)
            ids.append(h + 3)
        ids = ids[:self.seq] + [0] * max(0, self.seq - len(ids))
        return torch.tensor(ids, dtype=torch.long), i % self.classes


class Encoder(nn.Module):
    def __init__(self, seq: int, d: int, layers: int, classes: int):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        layer = nn.TransformerEncoderLayer(d, nhead=8, dim_feedforward=4 * d, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.body(self.embed(ids) + self.pos)
        return self.head(h[:, 0])


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--chars", type=int, default=4000)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--nvtx-ops", action="store_true", help="emit NVTX for every op and range (for nsys)")
    args = ap.parse_args()
    steps = args.steps or 12
    dev = device()
    torch.manual_seed(0)
    classes = 16
    data = Texts(args.batch * (steps + args.warmup + 1), args.seq, args.chars, classes)
    workers = args.workers
    loader = DataLoader(data, batch_size=args.batch, shuffle=False, num_workers=workers,
                        pin_memory=workers > 0 and dev.type == "cuda",
                        prefetch_factor=4 if workers > 0 else None, persistent_workers=workers > 0)
    model = Encoder(args.seq, args.d_model, args.layers, classes).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    it = iter(loader)

    def step(k: int) -> None:
        with nvtx(f"step{k}"):
            ids, labels = next(it)
            ids, labels = ids.to(dev, non_blocking=True), labels.to(dev, non_blocking=True)
            loss = nn.functional.cross_entropy(model(ids), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    for k in range(args.warmup):
        step(k)
    ops = torch.autograd.profiler.emit_nvtx() if args.nvtx_ops and dev.type == "cuda" else contextlib.nullcontext()
    with ops, kineto(args.kineto, dev):
        stop = timed(dev)
        for k in range(args.warmup, args.warmup + steps):
            step(k)
        seconds = stop()
    emit("dataloader_train", workers=workers, steps=steps, step_ms=round(1e3 * seconds / steps, 3))


if __name__ == "__main__":
    main()
