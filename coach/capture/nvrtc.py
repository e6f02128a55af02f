"""Compile CUDA C++ to a cubin with NVRTC, through its C API (ctypes), for the SASS of a CUDA rung.

CuPy's RawModule compiles a rung with NVRTC and keeps no cubin, so the runner compiles the source a
second time, with the same options, to disassemble it. CuPy's own ``nvrtc.getCUBIN`` will not do:
it drops the last byte of the cubin (it strips a trailing NUL, as for PTX text, from binary that
has none), and cuobjdump then says the file "does not contain device code" (seen on the H200 with
CuPy 14.2; the same cubin cut by one byte gives that message here). This module asks NVRTC for the
size and copies that many bytes.

The library is named by its soname (``libnvrtc.so.13``): where CuPy has compiled the rung it is in
the process already and that copy is used, the same NVRTC that built the loaded module.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path

#: A cubin is an ELF file.
ELF_MAGIC = b"\x7fELF"


def library(name: str | Path) -> ctypes.CDLL:
    """The NVRTC library ``name`` (a soname such as ``libnvrtc.so.13``, or a path). Raises
    RuntimeError where it cannot be loaded."""
    try:
        lib = ctypes.CDLL(str(name))
    except OSError as err:
        raise RuntimeError(f"cannot load NVRTC ({name}): {err}") from None
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def compile_cubin(lib: ctypes.CDLL, source: str, options: Sequence[str], name: str = "rung.cu") -> bytes:
    """The cubin NVRTC makes of ``source`` with ``options`` (which must name a real architecture,
    ``-arch=sm_XX``). Raises RuntimeError with NVRTC's log where it does not compile."""
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None), "create a program")
    try:
        opts = [o.encode() for o in options]
        if lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts)) != 0:
            raise RuntimeError(f"NVRTC could not compile {name}: {_log(lib, prog)}")
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "size the cubin")
        if size.value == 0:
            raise RuntimeError(f"NVRTC made no cubin of {name}: the options name no real architecture (-arch=sm_XX)")
        cubin = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetCUBIN(prog, cubin), "copy the cubin")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if not cubin.raw.startswith(ELF_MAGIC):
        raise RuntimeError(f"NVRTC's cubin of {name} is not an ELF file")
    return cubin.raw


def _check(lib: ctypes.CDLL, status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"NVRTC could not {what}: {lib.nvrtcGetErrorString(status).decode()} ({status})")


def _log(lib: ctypes.CDLL, prog: ctypes.c_void_p) -> str:
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    return log.value.decode(errors="replace").strip()
