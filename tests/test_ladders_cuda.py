"""Every CUDA rung compiles for sm_90 with nvcc, its kernels are the ones the runner parses from the
source, and the compiler's resource report (-Xptxas -v) shows no spills where the rung claims none."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from coach.capture.ladder import kernel_signatures
from coach.ladders import ladder_names, load_definition
from coach.paths import kernels_dir

NVCC = shutil.which("nvcc")
RUNGS = [(name, r) for name in ladder_names() for r in load_definition(name).rungs if r.language == "cuda"]

_ENTRY = re.compile(r"Compiling entry function '(\w+)' for 'sm_90'")
_SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def ptxas_report(text: str) -> dict[str, tuple[int, int, int]]:
    """kernel -> (stack frame, spill store, spill load bytes) from nvcc -Xptxas -v output."""
    report, current = {}, None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
        elif current and (m := _SPILLS.search(line)):
            report[current] = tuple(int(g) for g in m.groups())
            current = None
    return report


def test_ptxas_report_parser():
    text = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n"
            "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\nptxas info    : Used 255 registers\n")
    assert ptxas_report(text) == {"k": (16, 8, 4)}


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("name, rung", RUNGS, ids=[f"{n}/{r.key}" for n, r in RUNGS])
def test_cuda_rung_compiles_for_sm90(name, rung, tmp_path):
    src = load_definition(name).path(rung)
    proc = subprocess.run([NVCC, "-arch=sm_90", "--std=c++17", "-c", "-Xptxas", "-v", f"-I{kernels_dir() / 'common'}",
                           "-o", str(tmp_path / "rung.o"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = ptxas_report(proc.stdout + proc.stderr)
    assert set(report) == set(kernel_signatures(src.read_text())), "every extern \"C\" kernel, and only those"
    if not rung.spills:
        spilled = {k: v for k, v in report.items() if v != (0, 0, 0)}
        assert not spilled, f"{rung.key} claims no spills but ptxas reports (stack, spill st, spill ld) {spilled}"


def _nvrtc():
    """libnvrtc through ctypes (the nvidia-cuda-nvrtc wheel, or CUDA's lib64), or None."""
    import ctypes
    import glob
    import importlib.util

    candidates = []
    spec = importlib.util.find_spec("nvidia")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            candidates += sorted(glob.glob(f"{root}/*/lib/libnvrtc.so*"))
    candidates += sorted(glob.glob("/usr/local/cuda/lib64/libnvrtc.so*"))
    for path in candidates:
        if "alt" in path or "builtins" in path:
            continue
        try:  # libnvrtc opens its builtins library by name: load it first, globally
            for builtins in glob.glob(f"{path.rsplit('/', 1)[0]}/libnvrtc-builtins.so.*"):
                if "alt" not in builtins:
                    ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


NVRTC = _nvrtc()


@pytest.mark.skipif(NVRTC is None, reason="libnvrtc not found (pip install nvidia-cuda-nvrtc)")
@pytest.mark.parametrize("name, rung", RUNGS, ids=[f"{n}/{r.key}" for n, r in RUNGS])
def test_cuda_rung_compiles_with_nvrtc(name, rung):
    """The runner builds rungs with NVRTC, which sees no host headers: a rung that leans on one
    (size_t, INFINITY, <cmath>) compiles with nvcc but not there. Same options as the runner."""
    import ctypes

    src = load_definition(name).path(rung).read_text().encode()
    prog = ctypes.c_void_p()
    assert NVRTC.nvrtcCreateProgram(ctypes.byref(prog), src, rung.file.encode(), 0, None, None) == 0
    opts = [b"--std=c++17", b"-arch=sm_90", f"-I{kernels_dir() / 'common'}".encode()]
    rc = NVRTC.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    NVRTC.nvrtcGetProgramLog(prog, log)
    NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
    assert rc == 0, log.value.decode(errors="replace")
