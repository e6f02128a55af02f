"""C = A @ B in bf16 on the tensor cores: A (m x k) and B (k x n) row-major bf16, fp32 accumulation,
C (m x n) row-major bf16."""

from __future__ import annotations

import ctypes

import torch

#: "small" is one CUDA tile row short of square on purpose (384 = 3 x 128, 512 = 2 x 256): non-square,
#: several tiles in both directions, and a multiple of every block size the rungs use, so no rung
#: needs a smaller block than it runs with on the H200.
SIZES = {"h200": {"m": 8192, "n": 8192, "k": 8192}, "small": {"m": 384, "n": 512, "k": 256}}
#: "uniform": entries in [0, 1), so every product is positive and a dropped or repeated K-block
#: shifts each output by ~1/(k / BLOCK_K) of its value - far past the tolerance. "normal": N(0, 1),
#: signs mixed, which catches a transposed fragment or a swapped tile (the last is timed).
INPUTS = ("uniform", "normal")
EXACT = frozenset()
CUDA_TILE = (128, 128, 32)  # rung 00's block tile (BM, BN, BK): the launcher's grid and its size check
WGMMA_TILE = (128, 256, 64)  # rungs 07-10: (BM, BN, BK), as their #defines
WGMMA_STAGES = 4
WGMMA_SMEM = WGMMA_STAGES * (128 * 64 + 64 * 256) * 2 + 1024  # the kernels' SMEM_BYTES: 4 stages of 48 KiB + alignment
WGMMA_STORE_SMEM = WGMMA_SMEM + 2 * 2 * 64 * 64 * 2  # rung 10: + two 8 KiB staging buffers of C per consumer


def inputs(kind: str, *, m: int, n: int, k: int, device: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
    draw = torch.rand if kind == "uniform" else torch.randn
    a = draw(m, k, device=device, generator=generator)
    b = draw(k, n, device=device, generator=generator)
    return {"a": a.to(torch.bfloat16), "b": b.to(torch.bfloat16)}


def outputs(*, m: int, n: int, k: int, device: str) -> dict[str, torch.Tensor]:
    return {"c": torch.empty(m, n, device=device, dtype=torch.bfloat16)}


def reference(inp: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"c": inp["a"].to(torch.float64) @ inp["b"].to(torch.float64)}


def bytes_moved(*, m: int, n: int, k: int) -> int:
    """Compulsory DRAM traffic: A and B read once, C written once, 2 bytes each."""
    return 2 * (m * k + k * n + m * n)


def flops(*, m: int, n: int, k: int) -> int:
    """A multiply and an add per (i, j, l): 2 m n k."""
    return 2 * m * n * k


PEERS = {
    # cuBLAS through PyTorch (bf16 in, fp32 accumulation, bf16 out), the ladder's baseline.
    "cublas.bf16": lambda: (lambda inp: {"c": torch.matmul(inp["a"], inp["b"])}),
}


def _mma_sync(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = CUDA_TILE
    if m % bm or n % bn or k % bk:
        raise ValueError(f"00_mma_sync needs m % {bm}, n % {bn}, k % {bk} == 0; got {m} x {n} x {k}")
    ctx.launch("mmbf16_00_mma_sync", (n // bn, m // bm), 256, a, b, c, m, n, k)


# --- TMA tensor maps (rungs 07-10) --------------------------------------------------------------
# cuTensorMapEncodeTiled (CUDA driver API, through ctypes on libcuda.so.1: no CUDA Python needed)
# writes the 128-byte CUtensorMap that describes a 2-D bf16 tensor and the box one TMA copy moves.
# Enum values from cuda.h (CUDA 12-13): CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9, INTERLEAVE_NONE = 0,
# SWIZZLE_128B = 3, FLOAT_OOB_FILL_NONE = 0; L2 promotion NONE = 0, 64B = 1, 128B = 2, 256B = 3.
# L2 promotion: how much an L2 miss of a TMA request fetches. 128 B, one box row - Triton's choice;
# with 256 B (a trial on the H200, rung 08) L2 looked up 1.6x the sectors for the same bytes delivered
# to the SMs (lts__t_sectors 55.6% of peak against Triton rung 06's 34.7%, l1tex xbar reads level).
_TMAP_BF16, _TMAP_SWIZZLE_128B = 9, 3
L2_PROMOTION = 2
_LIBCUDA: list = []
#: (device, L2 promotion, a, b and c pointers, m, k, n) -> the device buffer holding A's map, B's, and C's
#: where the rung stores through TMA (128 bytes each).
#: A map holds the tensor's address, so one per input set; encoded on the first call with that set.
_MAPS: dict[tuple, torch.Tensor] = {}


def _libcuda():
    if not _LIBCUDA:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            fn = lib.cuTensorMapEncodeTiled
        except (OSError, AttributeError) as err:
            raise RuntimeError(f"TMA rungs need the CUDA driver's cuTensorMapEncodeTiled (libcuda.so.1): {err}") from None
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                       ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                       ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                       ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        _LIBCUDA.append(lib)
    return _LIBCUDA[0]


def tensor_map_2d(t: torch.Tensor, box_cols: int, box_rows: int) -> bytes:
    """The CUtensorMap of a row-major 2-D bf16 tensor, boxes of box_rows x box_cols elements
    (box_cols * 2 bytes = 128: the 128-byte swizzle's row), 128-byte swizzled in shared memory."""
    lib = _libcuda()
    rows, cols = t.shape
    buf = ctypes.create_string_buffer(128 + 64)
    addr = (ctypes.addressof(buf) + 63) & ~63  # CUtensorMap is 64-byte aligned
    dims = (ctypes.c_uint64 * 2)(cols, rows)  # innermost first
    strides = (ctypes.c_uint64 * 1)(t.stride(0) * t.element_size())  # bytes from one row to the next
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    ones = (ctypes.c_uint32 * 2)(1, 1)
    rc = lib.cuTensorMapEncodeTiled(ctypes.c_void_p(addr), _TMAP_BF16, 2, ctypes.c_void_p(t.data_ptr()), dims,
                                    strides, box, ones, 0, _TMAP_SWIZZLE_128B, L2_PROMOTION, 0)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {rc} for a {rows} x {cols} tensor, "
                           f"box {box_rows} x {box_cols}")
    return ctypes.string_at(addr, 128)


def _maps(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
    """A's map (boxes of 128 rows x 64), B's (64 x 64), and with `c` C's (64 x 64), in one device buffer."""
    key = (str(a.device), L2_PROMOTION, a.data_ptr(), b.data_ptr(), c.data_ptr() if c is not None else None,
           *a.shape, b.shape[1])
    maps = _MAPS.get(key)
    if maps is None:
        _, bn, bk = WGMMA_TILE
        raw = tensor_map_2d(a, bk, WGMMA_TILE[0]) + tensor_map_2d(b, 64, bk)
        if c is not None:
            raw += tensor_map_2d(c, 64, 64)
        maps = torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(a.device)
        _MAPS[key] = maps
    return maps


def _wgmma_shape(name: str, a, b) -> tuple[int, int, int]:
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = WGMMA_TILE
    if m % bm or n % bn or k % bk:
        raise ValueError(f"{name} needs m % {bm}, n % {bn}, k % {bk} == 0; got {m} x {n} x {k}")
    return m, n, k


def _wgmma_tma(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    m, n, k = _wgmma_shape("07_wgmma_tma", a, b)
    bm, bn, _ = WGMMA_TILE
    ctx.launch("mmbf16_07_wgmma_tma", (n // bn, m // bm), 256, _maps(a, b), c, m, n, k, smem=WGMMA_SMEM)


def _wgmma_specialized(ctx, inp, out):
    a, b, c = inp["a"], inp["b"], out["c"]
    m, n, k = _wgmma_shape("08_wgmma_specialized", a, b)
    bm, bn, _ = WGMMA_TILE
    grid = min(ctx.sm_count, (m // bm) * (n // bn))  # persistent: one block per SM
    ctx.launch("mmbf16_08_wgmma_specialized", grid, 384, _maps(a, b), c, m, n, k, smem=WGMMA_SMEM)


def _wgmma_cluster(ctx, inp, out):
    """Clusters of 2 blocks (the kernel's __cluster_dims__), one per 256 x 256 tile pair: an even grid."""
    a, b, c = inp["a"], inp["b"], out["c"]
    m, n, k = _wgmma_shape("09_wgmma_cluster", a, b)
    bm, bn, _ = WGMMA_TILE
    pairs = (m // bm + 1) // 2 * (n // bn)
    grid = 2 * min(ctx.sm_count // 2, pairs)
    ctx.launch("mmbf16_09_wgmma_cluster", grid, 384, _maps(a, b), c, m, n, k, smem=WGMMA_SMEM)


def _wgmma_tma_store(ctx, inp, out):
    """Rung 09's clusters; C written by TMA stores, through a third tensor map."""
    a, b, c = inp["a"], inp["b"], out["c"]
    m, n, k = _wgmma_shape("10_wgmma_tma_store", a, b)
    bm, bn, _ = WGMMA_TILE
    pairs = (m // bm + 1) // 2 * (n // bn)
    grid = 2 * min(ctx.sm_count // 2, pairs)
    ctx.launch("mmbf16_10_wgmma_tma_store", grid, 384, _maps(a, b, c), c, m, n, k, smem=WGMMA_STORE_SMEM)


LAUNCH = {"00_mma_sync": _mma_sync, "07_wgmma_tma": _wgmma_tma, "08_wgmma_specialized": _wgmma_specialized,
          "09_wgmma_cluster": _wgmma_cluster, "10_wgmma_tma_store": _wgmma_tma_store}
