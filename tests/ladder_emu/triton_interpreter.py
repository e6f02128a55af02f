"""Two gaps of Triton's CPU interpreter (``TRITON_INTERPRET=1``) that the tensor-core ladders meet,
closed for the tests: with them a Triton rung runs on the CPU through its real launcher unchanged.

- ``tl.dot`` on bf16 blocks: the interpreter holds bf16 as raw uint16 bit patterns (NumPy has no
  bf16) and multiplies those integers (``np.matmul`` on the uint16 arrays), so every bf16 matmul
  comes out ~1e9 too large. It widens fp8 operands before the product but not bf16: widened here
  the same way (a bf16 is the top half of an fp32, so widening is exact).
- ``triton.autotune``: the tuner times each configuration with the GPU driver's benchmarker, and the
  interpreter has no driver. Here each configuration is run once and timed as equal, so every
  configuration is at least executed and the first is kept.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _widen_bf16(handle: Any, tl: Any, tensor_handle: type) -> Any:
    if handle.dtype.scalar != tl.bfloat16:
        return handle
    bits = handle.data.astype(np.uint32) << np.uint32(16)
    return tensor_handle(bits.view(np.float32), tl.float32)


def _run_once(kernel_call: Callable[[], None], quantiles: Any = None) -> list[float]:
    kernel_call()
    return [1.0, 1.0, 1.0]


def patch(monkeypatch: Any) -> None:
    """Apply both fixes for one test (``monkeypatch`` undoes them after it)."""
    import triton.language as tl
    from triton.runtime import autotuner, interpreter

    builder = interpreter.InterpreterBuilder
    create_dot = builder.create_dot

    def create_dot_widening_bf16(self, a, b, d, input_precision, max_num_imprecise_acc):
        a, b = (_widen_bf16(h, tl, interpreter.TensorHandle) for h in (a, b))
        return create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    monkeypatch.setattr(builder, "create_dot", create_dot_widening_bf16)
    monkeypatch.setattr(autotuner.Autotuner, "do_bench", property(lambda self: _run_once))
