"""A synthetic matmul problem for the framework's tests: square FP32 C = A B."""

import torch

SIZES = {"h200": {"n": 4096}, "h200_big": {"n": 8192}, "small": {"n": 32}}
INPUTS = ("normal",)
EXACT: frozenset[str] = frozenset()


def inputs(kind, *, device, generator, n):
    return {"a": torch.randn(n, n, generator=generator, device=device),
            "b": torch.randn(n, n, generator=generator, device=device)}


def outputs(*, device, n):
    return {"c": torch.empty(n, n, device=device)}


def reference(inp):
    return {"c": inp["a"].double() @ inp["b"].double()}


def bytes_moved(*, n):
    return 3 * 4 * n * n


def flops(*, n):
    return 2 * n**3


PEERS = {"cublas.fp32": lambda: (lambda inp: {"c": inp["a"] @ inp["b"]})}


def _launch(kernel):
    def launch(ctx, inp, out):
        n = inp["a"].shape[0]
        ctx.launch(kernel, ((n + 15) // 16, (n + 15) // 16), (16, 16), inp["a"], inp["b"], out["c"], n)
    return launch


LAUNCH = {"00_naive": _launch("mm_naive"), "01_wgmma": _launch("mm_fenced")}
