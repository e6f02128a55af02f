"""The cubin of a CUDA rung for its SASS (coach.capture.nvrtc, CupyBuild.sass's options): NVRTC of
the nvidia-cuda-nvrtc wheel here, on real rungs, disassembled with the cuobjdump the Triton wheel
carries. On the GPU the runner uses the NVRTC CuPy loaded, by soname."""

from __future__ import annotations

import ctypes
import glob
import importlib.util
from pathlib import Path

import pytest

from coach.capture import nvrtc, sass
from coach.capture.ladder import CUPY_RAWMODULE_OPTIONS, cubin_options, kernel_signatures, nvrtc_options
from coach.ladders import load_definition


def _wheel_nvrtc() -> ctypes.CDLL | None:
    spec = importlib.util.find_spec("nvidia")
    roots = spec.submodule_search_locations if spec is not None and spec.submodule_search_locations else []
    for path in sorted(p for root in roots for p in glob.glob(f"{root}/*/lib/libnvrtc.so.*")
                       if "alt" not in p and "builtins" not in p):
        try:  # libnvrtc opens its builtins library by name: load it first, globally
            for builtins in glob.glob(f"{Path(path).parent}/libnvrtc-builtins.so.*"):
                if "alt" not in builtins:
                    ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
            return nvrtc.library(path)
        except (OSError, RuntimeError):
            continue
    return None


LIB = _wheel_nvrtc()
pytestmark = pytest.mark.skipif(LIB is None or sass.find_disassembler() is None,
                                reason="libnvrtc (pip install nvidia-cuda-nvrtc) or cuobjdump missing")


def _rung_cubin(ladder: str, rung_id: str) -> tuple[bytes, tuple[str, ...]]:
    defn = load_definition(ladder)
    rung = defn.rung(rung_id)
    source = defn.path(rung).read_text()
    options = cubin_options(nvrtc_options(defn.include_dir, rung.arch), "90")
    return nvrtc.compile_cubin(LIB, source, options, rung.file), tuple(kernel_signatures(source))


def test_a_simt_rung_and_an_mma_sync_rung_disassemble_to_their_opcodes():
    cubin, kernels = _rung_cubin("matmul/fp32", "00")
    assert cubin.startswith(nvrtc.ELF_MAGIC)
    text, tool = sass.disassemble(cubin)
    record = sass.sass_record(text, f"NVRTC cubin, {tool}", kernels)
    assert list(record["kernels"]) == ["sgemm00_naive"]
    naive = record["kernels"]["sgemm00_naive"]
    assert naive["FFMA"] > 0 and "HMMA" not in naive and "HGMMA" not in naive

    cubin, kernels = _rung_cubin("matmul/bf16", "00")
    mma = sass.sass_record(sass.disassemble(cubin)[0], "cuobjdump -sass", kernels)["kernels"]["mmbf16_00_mma_sync"]
    assert mma["HMMA"] > 0 and "HGMMA" not in mma


def test_a_cubin_one_byte_short_has_no_device_code_for_cuobjdump(tmp_path):
    """What CuPy's getCUBIN returned on the H200: the cubin without its last byte."""
    cubin, _ = _rung_cubin("matmul/fp32", "00")
    with pytest.raises(RuntimeError, match="does not contain device code"):
        sass.disassemble(cubin[:-1])


def test_nvrtc_errors_say_why():
    with pytest.raises(RuntimeError, match=r"NVRTC could not compile bad\.cu: .*error"):
        nvrtc.compile_cubin(LIB, 'extern "C" __global__ void k() { undeclared(); }', ["-arch=sm_90"], "bad.cu")
    with pytest.raises(RuntimeError, match="made no cubin of virtual.cu"):
        nvrtc.compile_cubin(LIB, 'extern "C" __global__ void k() {}', ["-arch=compute_90"], "virtual.cu")
    with pytest.raises(RuntimeError, match="cannot load NVRTC"):
        nvrtc.library("libnvrtc.so.0-not-there")


def test_cubin_options_take_the_rungs_arch_or_the_devices():
    assert cubin_options(("--std=c++17",), "90") == ("--std=c++17", *CUPY_RAWMODULE_OPTIONS, "-arch=sm_90")
    assert cubin_options(("--std=c++17", "-arch=sm_90a"), "90") == ("--std=c++17", "-arch=sm_90a", *CUPY_RAWMODULE_OPTIONS)


def test_a_rung_that_names_sm_90a_gets_its_warpgroup_instructions(monkeypatch):
    """The synthetic ladder's rung 01 puts a wgmma.fence (sm_90a only) before a naive product."""
    monkeypatch.setenv("COACH_DATA", str(Path(__file__).parent / "data" / "ladders" / "synthetic-root"))
    cubin, kernels = _rung_cubin("matmul/synthetic", "01")
    (h,) = sass.sass_record(sass.disassemble(cubin)[0], "cuobjdump -sass", kernels)["kernels"].values()
    assert h["WARPGROUP"] >= 1 and h["FFMA"] >= 1


def test_the_soname_finds_the_copy_already_loaded():
    """How CupyBuild.sass reaches the NVRTC CuPy loaded: by soname, which the process already holds
    (here the wheel's, loaded by path above; nothing on the library path provides it)."""
    soname = Path(LIB._name).name  # libnvrtc.so.13, the file's name being its soname
    assert nvrtc.library(soname)._handle == LIB._handle


@pytest.mark.parametrize("rung_id, extra", [("07", {}), ("08", {"USETMAXREG": 2}), ("09", {"USETMAXREG": 2, "UCGABAR_ARV": 2}),
                                            ("10", {"USETMAXREG": 2, "UTMASTG": 4})])
def test_the_hand_written_wgmma_rungs_build_to_hgmma_and_tma_through_the_runners_nvrtc(rung_id, extra):
    """BF16 rungs 07-10 with the options the runner gives NVRTC (their arch sm_90a): the 64 x 256 x 16
    warpgroup MMA four times a K step and TMA copies (UTMALDG), no pre-Hopper HMMA, no shared-memory
    copies by the threads (LDGSTS); from rung 09 the copies of B multicast to the cluster, and rung 10
    writes C with TMA stores (UTMASTG). The cluster rungs arrive on the peer's barriers without a
    GPU-scope fence (MEMBAR.ALL.GPU only in the two cluster barriers)."""
    cubin, kernels = _rung_cubin("matmul/bf16", rung_id)
    (h,) = sass.sass_record(sass.disassemble(cubin)[0], "cuobjdump -sass", kernels)["kernels"].values()
    assert h["HGMMA"] == 4 and h["UTMALDG"] >= 3 and "HMMA" not in h and "LDGSTS" not in h
    assert all(h.get(op) == n for op, n in extra.items()), {op: h.get(op) for op in extra}
    text = sass.disassemble(cubin)[0]
    assert "HGMMA.64x256x16.F32.BF16" in text and ".tnspB" in text, "B read transposed (N-major) from shared memory"
    assert ("UTMALDG.2D.MULTICAST" in text) == (rung_id in ("09", "10"))
    assert h.get("MEMBAR", 0) <= (9 if rung_id in ("09", "10") else 1) and text.count("MEMBAR.ALL.GPU") <= 2
