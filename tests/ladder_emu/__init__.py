"""Run a CUDA rung's kernels on the CPU (``cuda_emu.h``), behind the same ``Build`` interface as the
GPU's NVRTC build, so a test drives a rung through its real launcher, argument checks and the
runner's correctness check.

The rung is compiled with g++ together with a generated table of its kernels, loaded with ctypes and
launched block by block (a cooperative launch's blocks side by side: ``cuda_emu.h``). Every tensor argument is copied into a buffer with guard bands of 0xFF bytes
on both sides (NaN as float32 or bf16, -1 as an integer) and copied back after the launch: a write
outside a tensor changes a guard and fails the launch; a read outside one reads NaN, which the
correctness check then fails on.
"""

from __future__ import annotations

import ctypes
import hashlib
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

from coach.capture.ladder import SCALARS, Param, kernel_signatures
from coach.paths import kernels_dir

HERE = Path(__file__).resolve().parent
COMMON = kernels_dir() / "common"
GUARD_BYTES = 4096
_CACHE = Path(tempfile.gettempdir()) / "coach-ladder-emu"
_CTYPES = {"int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64,
           "uint64": ctypes.c_uint64, "float32": ctypes.c_float}


#: Blocks of any kernel that an emulated SM holds at once (``blocks_per_sm``): the grid of a rung
#: that sizes it by occupancy, run side by side.
EMU_BLOCKS_PER_SM = 2


class EmuBuild:
    def __init__(self, path: Path, include: Path = COMMON):
        """``include``: the folder of the headers rungs share (the ladder's kernels/common).
        ``schedule``: the seed of cooperative launches' schedules (0: blocks in order, all at one speed)."""
        self.schedule = 0
        source = path.read_text(encoding="utf-8")
        self.signatures = kernel_signatures(source)
        self.resources = {k: {} for k in self.signatures}
        self._lib = _compile(path, source, list(self.signatures), include)
        self._lib.emu_launch.restype = ctypes.c_int
        self._lib.emu_launch.argtypes = [ctypes.c_char_p, *[ctypes.c_uint] * 6, ctypes.POINTER(ctypes.c_void_p),
                                         ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_char_p, ctypes.c_int]

    def blocks_per_sm(self, name: str, threads: int, smem: int) -> int:
        if name not in self.signatures:
            raise KeyError(name)
        return EMU_BLOCKS_PER_SM

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[tuple[Param, Any]], smem: int, cooperative: bool = False) -> None:
        import torch

        guarded: dict[int, tuple[Any, Any]] = {}  # data_ptr -> (tensor, guarded copy)
        values = []
        for p, a in args:
            if p.pointer:
                if a.data_ptr() not in guarded:
                    guarded[a.data_ptr()] = (a, _with_guards(torch, a))
                values.append(ctypes.c_void_p(guarded[a.data_ptr()][1][GUARD_BYTES:].data_ptr()))
            else:
                values.append(_CTYPES[SCALARS[p.ctype]](a))
        argv = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        err = ctypes.create_string_buffer(512)
        rc = self._lib.emu_launch(name.encode(), *grid, *block, argv, smem, int(cooperative), self.schedule, err, len(err))
        if rc != 0:
            raise RuntimeError(f"{name}: {err.value.decode() or f'launch failed ({rc})'}")
        for tensor, buf in guarded.values():
            nbytes = tensor.numel() * tensor.element_size()
            head, body, tail = buf[:GUARD_BYTES], buf[GUARD_BYTES:GUARD_BYTES + nbytes], buf[GUARD_BYTES + nbytes:]
            if not (bool((head == 255).all()) and bool((tail == 255).all())):
                raise RuntimeError(f"{name}: wrote outside a tensor of {tensor.numel()} {tensor.dtype} elements")
            tensor.view(-1).view(torch.uint8).copy_(body)


def _with_guards(torch: Any, t: Any) -> Any:
    nbytes = t.numel() * t.element_size()
    buf = torch.full((2 * GUARD_BYTES + nbytes,), 255, dtype=torch.uint8)
    buf[GUARD_BYTES:GUARD_BYTES + nbytes] = t.reshape(-1).view(torch.uint8)
    return buf


def _compile(path: Path, source: str, kernels: list[str], include: Path) -> ctypes.CDLL:
    table = "\n".join(f'    if (!std::strcmp(name, "{k}")) {{ emu::launch({k}, grid, block, args); return 0; }}' for k in kernels)
    unit = f"""#include "cuda_emu.h"
#include "{path}"
extern "C" int emu_launch(const char* name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, void** args, unsigned smem, int cooperative, unsigned seed, char* err,
                          int err_len) {{
  try {{
    const dim3 grid(gx, gy, gz), block(bx, by, bz);
    emu::dynamic_bytes = smem;
    emu::coresident = cooperative != 0;
    emu::schedule_seed = seed;
{table}
    std::snprintf(err, err_len, "no kernel named %s", name);
    return 2;
  }} catch (const std::exception& e) {{
    std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }}
}}
"""
    header = (HERE / "cuda_emu.h").read_text() + "".join(p.read_text() for p in sorted(include.glob("*.cuh")))
    key = hashlib.sha256((unit + source + header).encode()).hexdigest()[:16]
    _CACHE.mkdir(exist_ok=True)
    lib = _CACHE / f"{path.stem}-{key}.so"
    if not lib.is_file():
        cpp = _CACHE / f"{path.stem}-{key}.cpp"
        cpp.write_text(unit)
        tmp = lib.with_suffix(".tmp")
        proc = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-w", f"-I{HERE}",
                               f"-I{include}", "-x", "c++", str(cpp), "-o", str(tmp)],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"{path.name} does not compile for the CPU emulator:\n{proc.stderr[-3000:]}")
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))
