"""The host side of the BF16 ladder's hand-written wgmma rungs (07, 08): the launch they get (grid,
block, shared memory and argument types checked against the kernels' own signatures and #defines),
the tensor maps the driver is asked for, and a one-line error where the driver call is not there.
The kernels themselves run on the GPU only (kernels/matmul/bf16/check_wgmma.py)."""

from __future__ import annotations

import ctypes
import importlib.util
import re

import pytest

torch = pytest.importorskip("torch")

from coach.capture import ladder as runner  # noqa: E402
from coach.paths import kernels_dir  # noqa: E402

FOLDER = kernels_dir() / "matmul" / "bf16"
RUNGS = ("07_wgmma_tma", "08_wgmma_specialized", "09_wgmma_cluster", "10_wgmma_tma_store")


def _problem():
    spec = importlib.util.spec_from_file_location("matmul_bf16_problem_under_test", FOLDER / "problem.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


problem = _problem()


def _defines(key: str) -> dict[str, int]:
    """The kernel's #defines, each evaluated (SMEM_BYTES is an expression of the others)."""
    src = (FOLDER / f"{key}.cu").read_text()
    raw = dict(re.findall(r"^#define (\w+) ([^/\n]+)", src, re.M))
    values: dict[str, int] = {}
    for name, expr in raw.items():
        values[name] = eval(expr, {}, dict(values))  # noqa: S307 - the rung's own constant expressions
    return values


@pytest.mark.parametrize("key", RUNGS)
def test_the_launchers_tile_and_shared_memory_are_the_kernels(key):
    d = _defines(key)
    assert (d["BM"], d["BN"], d["BK"]) == problem.WGMMA_TILE
    assert d["STAGES"] == problem.WGMMA_STAGES
    smem = problem.WGMMA_STORE_SMEM if key == "10_wgmma_tma_store" else problem.WGMMA_SMEM
    assert smem == d["SMEM_BYTES"]
    assert smem <= 227 * 1024, "one block's dynamic shared memory on an H100/H200"


class RecordingBuild:
    def __init__(self, key):
        self.signatures = runner.kernel_signatures((FOLDER / f"{key}.cu").read_text())
        self.resources = {}
        self.launches = []

    def launch(self, name, grid, block, args, smem):
        self.launches.append((name, grid, block, [a for _, a in args], smem))


@pytest.mark.parametrize("key, grid, block", [("07_wgmma_tma", (2, 3, 1), (256, 1, 1)),
                                              ("08_wgmma_specialized", (4, 1, 1), (384, 1, 1)),
                                              ("09_wgmma_cluster", (4, 1, 1), (384, 1, 1)),
                                              ("10_wgmma_tma_store", (4, 1, 1), (384, 1, 1))])
def test_a_launch_passes_the_maps_buffer_and_the_runners_checks(monkeypatch, key, grid, block):
    """384 x 512 (the small size): 3 x 2 tiles of 128 x 256; rung 08 runs one block per SM (4 here),
    rung 09 an even number of blocks (clusters of 2): 2 x 2 tile pairs, 2 clusters on 4 SMs."""
    maps = torch.zeros(256, dtype=torch.uint8)
    monkeypatch.setattr(problem, "_maps", lambda a, b, c=None: maps)
    build = RecordingBuild(key)
    ctx = runner.Context(torch, "cpu", 4, build)
    size = problem.SIZES["small"]
    inp = problem.inputs("normal", device="cpu", generator=torch.Generator().manual_seed(0), **size)
    problem.LAUNCH[key](ctx, inp, problem.outputs(device="cpu", **size))
    [(name, g, b, args, smem)] = build.launches
    assert name == f"mmbf16_{key}" and g == grid and b == block
    assert smem == (problem.WGMMA_STORE_SMEM if key == "10_wgmma_tma_store" else problem.WGMMA_SMEM)
    assert args[0] is maps and args[2:] == [size["m"], size["n"], size["k"]]


@pytest.mark.parametrize("key", RUNGS)
def test_a_shape_off_the_tile_is_refused_with_the_rungs_name(monkeypatch, key):
    monkeypatch.setattr(problem, "_maps", lambda a, b, c=None: torch.zeros(384, dtype=torch.uint8))
    ctx = runner.Context(torch, "cpu", 4, RecordingBuild(key))
    a, b = torch.zeros(128, 96, dtype=torch.bfloat16), torch.zeros(96, 256, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=f"{key} needs m % 128, n % 256, k % 64 == 0; got 128 x 256 x 96"):
        problem.LAUNCH[key](ctx, {"a": a, "b": b}, {"c": torch.empty(128, 256, dtype=torch.bfloat16)})


class FakeDriver:
    """cuTensorMapEncodeTiled's arguments, recorded; the map filled with a pattern."""

    def __init__(self, rc=0):
        self.rc, self.calls = rc, []

    def cuTensorMapEncodeTiled(self, tmap, dtype, rank, addr, dims, strides, box, elem, inter, swz, l2, oob):
        self.calls.append({"aligned": tmap.value % 64 == 0, "dtype": dtype, "rank": rank, "addr": addr.value,
                           "dims": (dims[0], dims[1]), "stride": strides[0], "box": (box[0], box[1]), "l2": l2,
                           "elem": (elem[0], elem[1]), "swizzle": swz, "interleave": inter, "oob": oob})
        ctypes.memmove(tmap.value, bytes(range(128)), 128)
        return self.rc


def test_the_maps_are_inner_dimension_first_with_128_byte_rows_swizzled(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(problem, "_libcuda", lambda: drv)
    a = torch.zeros(384, 256, dtype=torch.bfloat16)
    b = torch.zeros(256, 512, dtype=torch.bfloat16)
    raw_a, raw_b = problem.tensor_map_2d(a, 64, 128), problem.tensor_map_2d(b, 64, 64)
    assert raw_a == raw_b == bytes(range(128))
    ca, cb = drv.calls
    assert ca["dims"] == (256, 384) and ca["stride"] == 512 and ca["box"] == (64, 128) and ca["addr"] == a.data_ptr()
    assert cb["dims"] == (512, 256) and cb["stride"] == 1024 and cb["box"] == (64, 64)
    for c in (ca, cb):  # bf16, 2-D, 128-byte swizzle, no interleave, no OOB fill, L2 promotion 128 B; 64-byte aligned
        assert (c["dtype"], c["rank"], c["swizzle"], c["interleave"], c["oob"], c["elem"], c["l2"]) == (9, 2, 3, 0, 0, (1, 1), 2)
        assert c["aligned"]


def test_a_refused_encoding_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(problem, "_libcuda", lambda: FakeDriver(rc=1))
    with pytest.raises(RuntimeError, match=r"^cuTensorMapEncodeTiled failed with CUresult 1 for a 128 x 64 tensor, box 128 x 64$"):
        problem.tensor_map_2d(torch.zeros(128, 64, dtype=torch.bfloat16), 64, 128)


def test_a_missing_driver_is_a_one_line_error(monkeypatch):
    def no_lib(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(problem, "_LIBCUDA", [])
    monkeypatch.setattr(problem.ctypes, "CDLL", no_lib)
    with pytest.raises(RuntimeError, match=r"^TMA rungs need the CUDA driver's cuTensorMapEncodeTiled \(libcuda.so.1\): "
                                           r"libcuda.so.1: cannot open shared object file$"):
        problem.tensor_map_2d(torch.zeros(128, 64, dtype=torch.bfloat16), 64, 128)


def test_the_maps_buffer_holds_a_b_and_for_the_tma_store_rung_c(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(problem, "_libcuda", lambda: drv)
    monkeypatch.setattr(problem, "_MAPS", {})
    a = torch.zeros(384, 256, dtype=torch.bfloat16)
    b = torch.zeros(256, 512, dtype=torch.bfloat16)
    c = torch.zeros(384, 512, dtype=torch.bfloat16)
    two, three = problem._maps(a, b), problem._maps(a, b, c)
    assert two.numel() == 256 and three.numel() == 384 and two.dtype == three.dtype == torch.uint8
    assert [call["box"] for call in drv.calls] == [(64, 128), (64, 64), (64, 128), (64, 64), (64, 64)]
    assert drv.calls[-1]["dims"] == (512, 384) and drv.calls[-1]["addr"] == c.data_ptr()
    assert problem._maps(a, b, c) is three and len(drv.calls) == 5, "encoded once per input set"
