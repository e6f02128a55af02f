"""GEMV at batch 1: y = W x, W of n x k bf16 (row-major: nn.Linear's weight layout), x of k, y of n.

fp32 accumulation, bf16 out. The size is a decode step through a 8192 -> 28672 projection (the
up-projection of a 70B-class transformer's MLP).
"""

from __future__ import annotations

import math

import torch

SIZES = {"h200": {"n": 28672, "k": 8192}, "small": {"n": 72, "k": 2048}}
INPUTS = ("normal", "scaled")
EXACT = frozenset()
VEC_K = 256  # rungs 02-04: k must be a multiple of 8 bf16 per lane * 32 lanes
ROWS_PER_WARP = 4  # rungs 03-04: their ROWS
WARPS_PER_BLOCK = 8


def inputs(kind: str, *, n: int, k: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """"normal": N(0, 1) entries; "scaled": each row of W scaled by 10^u, u uniform in [-2, 2], so rows
    differ in magnitude by up to 10^4 and a result added to or stored in another row's place usually
    shows as an error the size of the larger row."""
    w = torch.randn(n, k, device=device, generator=generator)
    if kind == "scaled":
        w *= 10.0 ** (4.0 * torch.rand(n, 1, device=device, generator=generator) - 2.0)
    x = torch.randn(k, device=device, generator=generator)
    return {"w": w.to(torch.bfloat16), "x": x.to(torch.bfloat16)}


def outputs(*, n: int, k: int, device: str) -> dict[str, torch.Tensor]:
    return {"y": torch.empty(n, device=device, dtype=torch.bfloat16)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"y": inp["w"].to(torch.float64) @ inp["x"].to(torch.float64)}


def bytes_moved(*, n: int, k: int) -> int:
    """W read once (2nk bytes: all but 0.02% of the traffic), x read once, y written once."""
    return 2 * n * k + 2 * k + 2 * n


def flops(*, n: int, k: int) -> int:
    return 2 * n * k


PEERS = {
    # cuBLAS through torch, on the same layout: x @ W^T with W stored n x k (torch.nn.functional.linear)
    "torch x @ W.T": lambda: (lambda inp: {"y": inp["x"] @ inp["w"].t()}),
}


def _launcher(kernel: str, rows_per_warp: int, k_multiple: int = 1):
    def launch(ctx, inp, out):
        w = inp["w"]
        n, k = w.shape
        if k % k_multiple:
            raise ValueError(f"{kernel} needs k a multiple of {k_multiple}; got {k}")
        if rows_per_warp == 0:  # one thread per row
            blocks = math.ceil(n / 256)
        else:
            blocks = math.ceil(n / (rows_per_warp * WARPS_PER_BLOCK))
        ctx.launch(kernel, blocks, 32 * WARPS_PER_BLOCK, w, inp["x"], out["y"], n, k)

    return launch


LAUNCH = {
    "00_thread_per_row": _launcher("gemv00_thread_per_row", 0),
    "01_warp_per_row": _launcher("gemv01_warp_per_row", 1),
    "02_vec8": _launcher("gemv02_vec8", 1, VEC_K),
    "03_rows_per_warp": _launcher("gemv03_rows_per_warp", ROWS_PER_WARP, VEC_K),
    "04_streaming_loads": _launcher("gemv04_streaming", ROWS_PER_WARP, VEC_K),
}
