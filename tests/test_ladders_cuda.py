"""Every CUDA rung compiles for sm_90 (or the ``arch`` its ladder.toml gives it, sm_90a) with nvcc,
its kernels are the ones the runner parses from the source, and the compiler's resource report
(-Xptxas -v) shows no spills where the rung claims none; and with NVRTC, with the runner's options."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from pathlib import Path

from coach.capture.ladder import kernel_signatures, nvrtc_options
from coach.ladders import ladder_names, load_definition

NVCC = shutil.which("nvcc")
RUNGS = [(name, r) for name in ladder_names() for r in load_definition(name).rungs if r.language == "cuda"]
#: The synthetic compute ladder (tests/data/ladders/PROVENANCE.md): rung 01 needs sm_90a.
SYNTHETIC = load_definition("matmul/synthetic", Path(__file__).parent / "data" / "ladders" / "synthetic-root" / "kernels")
#: The target a rung is built for when its ladder.toml names none (the H200's; CuPy picks it there).
DEFAULT_ARCH = "sm_90"

def nvcc_arch(arch: str | None) -> list[str]:
    """nvcc's target options for a rung. ``-arch=sm_90a`` would not do: nvcc 13 expands it to SASS for
    sm_90a plus portable compute_90 PTX, which ptxas checks too and refuses for sm_90a-only
    instructions (wgmma.fence: "not supported on .target 'sm_90'"); the runner's NVRTC build makes
    the sm_90a cubin alone, and so does this ``-gencode``."""
    arch = arch or DEFAULT_ARCH
    if arch.endswith("a"):
        return ["-gencode", f"arch=compute_{arch.removeprefix('sm_')},code={arch}"]
    return [f"-arch={arch}"]


_ENTRY = re.compile(r"Compiling entry function '(\w+)' for 'sm_90a?'")
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
    defn = load_definition(name)
    src = defn.path(rung)
    proc = subprocess.run([NVCC, *nvcc_arch(rung.arch), "--std=c++17", "-c", "-Xptxas", "-v",
                           f"-I{defn.include_dir}", "-o", str(tmp_path / "rung.o"), str(src)],
                          capture_output=True, text=True, timeout=300)
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
    defn = load_definition(name)
    rc, log = nvrtc_compile(defn, rung)
    assert rc == 0, log


def nvrtc_compile(defn, rung, arch_after: str | None = DEFAULT_ARCH) -> tuple[int, str]:
    """Compile a rung with NVRTC as the runner does: its own options (the rung's arch among them),
    then ``-arch=<arch_after>`` as CuPy appends the device's after them."""
    import ctypes

    src = defn.path(rung).read_text().encode()
    prog = ctypes.c_void_p()
    assert NVRTC.nvrtcCreateProgram(ctypes.byref(prog), src, rung.file.encode(), 0, None, None) == 0
    opts = [o.encode() for o in (*nvrtc_options(defn.include_dir, rung.arch), *([f"-arch={arch_after}"] if arch_after else []))]
    rc = NVRTC.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    NVRTC.nvrtcGetProgramLog(prog, log)
    NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, log.value.decode(errors="replace")


@pytest.mark.skipif(NVRTC is None, reason="libnvrtc not found (pip install nvidia-cuda-nvrtc)")
def test_a_rungs_arch_reaches_nvrtc_over_the_devices():
    """The synthetic rung 01 uses wgmma.fence, which only sm_90a has: with the rung's -arch=sm_90a
    NVRTC builds it even with CuPy's -arch=sm_90 after it; for plain sm_90 it is refused."""
    fenced = SYNTHETIC.rung("01")
    assert nvrtc_compile(SYNTHETIC, fenced)[0] == 0
    rc, log = nvrtc_compile(SYNTHETIC, SYNTHETIC.rung("00"))
    assert rc == 0, log
    plain = type(fenced)(**{**fenced.__dict__, "arch": None})
    rc, log = nvrtc_compile(SYNTHETIC, plain)
    assert rc != 0 and "not supported on .target 'sm_90'" in log


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_the_sm90a_rung_builds_with_nvcc_for_its_arch(tmp_path):
    fenced = SYNTHETIC.rung("01")
    cmd = [NVCC, "--std=c++17", "-c", f"-I{SYNTHETIC.include_dir}", "-o", str(tmp_path / "r.o"), str(SYNTHETIC.path(fenced))]
    assert nvcc_arch(fenced.arch) == ["-gencode", "arch=compute_90a,code=sm_90a"]
    proc = subprocess.run([*cmd, *nvcc_arch(fenced.arch), "-Xptxas", "-v"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert set(ptxas_report(proc.stdout + proc.stderr)) == {"mm_fenced"}, "the report of the sm_90a build is parsed"
    assert subprocess.run([*cmd, *nvcc_arch(None)], capture_output=True, timeout=300).returncode != 0
