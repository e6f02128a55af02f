"""Compile each of rung 09's candidates for sm_90a without a GPU and print what the SASS holds.

    python3 kernels/attention/compile_09.py      (Triton 3.6, the H200's version; no torch needed)

Per candidate: registers at launch, stack and local memory (spills), LDL/STL count, the setmaxnreg
values, warps, and the static counts of HGMMA, MUFU.EX2 and the wgmma waits. Tensors are stand-ins
with the shapes, strides and dtype of the ladder's sizes (only the descriptors' metadata is used).
"""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type

HERE = Path(__file__).resolve().parent
CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"


class StandIn:
    """What TensorDescriptor.from_tensor reads of a contiguous bf16 tensor."""

    def __init__(self, shape):
        self.shape, self.dtype = list(shape), tl.bfloat16

    def stride(self):
        return [math.prod(self.shape[i + 1:]) for i in range(len(self.shape))]

    def data_ptr(self):
        return 1 << 20

    def view(self, *shape):
        return StandIn((math.prod(self.shape) // shape[-1], shape[-1]))


def main() -> int:
    spec = importlib.util.spec_from_file_location("rung09", HERE / "09_gluon_tuned.py")
    rung = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rung)
    kernel = rung._kernel
    for (head_dim, causal), candidates in rung.CANDIDATES.items():
        shape = (4, 32, 4096, head_dim)
        inp = {n: StandIn(shape) for n in "qkv"} | {"causal": int(causal)}
        for config in candidates:
            grid, args, consts = rung.kernel_args(inp, {"o": StandIn(shape)}, config)
            names = kernel.arg_names
            sig = {n: (mangle_type(args[i]) if i < len(args) else "constexpr") for i, n in enumerate(names)}
            src = GluonASTSource(kernel, sig, {n: consts[n] for n in names[len(args):]})
            compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
            with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                f.write(compiled.asm["cubin"])
                f.flush()
                res = subprocess.run([str(CUOBJDUMP), "-res-usage", f.name], capture_output=True, text=True).stdout
                sass = subprocess.run([str(CUOBJDUMP), "-sass", f.name], capture_output=True, text=True).stdout
            usage = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", res)
            maxnreg = sorted({int(x) for x in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)",
                                                         compiled.asm["ptx"])})
            counts = {op: len(re.findall(rf"\b{re.escape(op)}\b", sass))
                      for op in ("HGMMA", "MUFU.EX2", "WARPGROUP.DEPBAR.LE")}
            print(f"D{head_dim}{' causal' if causal else '':7s} {rung.describe(config):62s} grid {grid} "
                  f"regs {usage.group(1)} stack {usage.group(2)} local {usage.group(3)} "
                  f"LDL/STL {len(re.findall(r'(?:LDL|STL)', sass))} setmaxnreg {maxnreg} "
                  f"warps {compiled.metadata.num_warps} {counts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
