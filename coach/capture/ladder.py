"""Check and time every rung of a version ladder on the GPU, beside its PyTorch (and other) peers.

    python -m coach.capture.ladder run NAME... --out DIR [--ncu] [--size SIZE]

For each ladder (``kernels/<NAME>/ladder.toml``; NAME may be nested, ``matmul/fp32``), at each of
its sizes (``sizes`` in ladder.toml: the first, the main one, goes to ``results.json``, any other to
``results.<size>.json``; ``--size`` measures one size of the problem instead), and each rung in order:

1. **Build.** A CUDA rung (``NN_<technique>.cu``) is compiled at run time by NVRTC through
   ``cupy.RawModule`` for the device at hand (``-arch=sm_90`` on an H200, chosen by CuPy from the
   device's compute capability, or the rung's ``arch``, ``sm_90a``) with ``--std=c++17``; the
   compiler's register and local-memory figures of every kernel are recorded. A Triton rung
   (``NN_<technique>.py``) is imported; Triton compiles it on the first call.
2. **Check.** For each input distribution the ladder's ``problem.py`` names, fresh random inputs
   (a new seed every run, never zeros), outputs poisoned with NaN, one call, then every output element
   must have been written and ``||out - ref|| / ||ref||`` (float64) must be within the tolerance of
   the output's dtype (``TOLERANCE``, or the problem's own ``TOLERANCE`` for a dtype it names), or
   zero where the problem says the result is exact.
3. **Time.** ``triton.testing.do_bench`` (median, with the 20th and 80th percentiles), cycling through
   enough input sets that the L2 cannot serve one call's inputs to the next; the ladder's bytes model
   (or its FLOP model, for a compute-bound ladder) turns the median into GB/s (TFLOP/s) and a
   percentage of the measured ceiling (``hardware/measured/<gpu>.{json,toml}``).

The peers (``torch.sum``, ``torch.compile`` of the same function, CuPy, ...) are checked and timed
the same way in the same run, so the "vs PyTorch" ratios compare numbers taken minutes apart on one
machine. Each ladder (at each size) runs in a child process that writes its results file after every
rung: a kernel that faults poisons its CUDA context, and one that hangs never returns, so the parent
restarts the child after the rung that failed (recording why) and the rest of the run goes on.

With ``--ncu``, each ladder is then run once more under Nsight Compute at its main size
(``profile`` below): every rung called once to warm it up (JIT compilation, Triton autotuning)
outside any NVTX range, then once more inside an NVTX range named ``<NAME>/<rung>``; only those
calls' kernels are profiled (``--nvtx-include`` and ``-k regex:``), the default sections plus the
ladder's ``ncu_sections``, clocks left alone. One Nsight Compute process per ladder, not per rung,
because starting Python, torch and the profiler costs seconds each time.

This module needs only the standard library at import; torch, triton and cupy are imported when a
ladder runs, so its argument parsing, JSON writing and checking helpers are tested without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import functools
import importlib.util
import itertools
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from coach.capture import harness, nvrtc
from coach.capture.calibrate import describe_gpu, write_json
from coach.capture.sass import disassemble, sass_record, triton_sass
from coach.errors import InputError
from coach.ladders import (
    CEILING_UNITS,
    FLOPS,
    RESULTS_SCHEMA,
    LadderDef,
    RungDef,
    load_definition,
    problem_sizes,
    results_file,
)
from coach.paths import hardware_dir, kernels_dir

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

#: Largest ||out - ref|| / ||ref|| (float64 reference) accepted, by output dtype.
#: - float32: unit round-off u = 2^-24 = 6e-8. A tree reduction of n terms errs by about
#:   u * log2(n) (2e-6 at 2^28) and a chain of k dependent additions by about u * sqrt(k) at random
#:   rounding (6e-5 at k = 2^20); float32 code "lands far under 1e-3" (the project's method notes).
#:   1e-4 passes both and fails a wrong element of any weight above 1e-4 of the whole.
#: - bfloat16: 8 significant bits, u = 2^-9 = 2e-3; rounding the output alone gives about u / sqrt(3)
#:   = 1.1e-3 in this norm, and accumulating in float32 adds little; inputs in bf16 "land between
#:   1e-3 and 1e-2", so 1e-2.
#: - float16: 11 bits, u = 2^-12 = 2.4e-4; output rounding about 1.4e-4; 2e-3 leaves room for
#:   accumulation.
#: Exact problems (a transpose, sums of small integers) use 0: every element must match bit for bit.
#: A problem whose arithmetic warrants another limit (FP8 tensor-core accumulation) sets its own
#: ``TOLERANCE`` for the dtypes it names, and says why in its problem.py (``tolerances``).
TOLERANCE: dict[str, float] = {"float64": 1e-12, "float32": 1e-4, "bfloat16": 1e-2, "float16": 2e-3}

#: do_bench budget per rung, in ms. The slowest naive rungs take about 10 ms a call, so 300 ms still
#: gives tens of repetitions; the fastest (about 0.1 ms) get thousands.
WARMUP_MS = 50
REP_MS = 300
#: Input sets in rotation: enough that the inputs of ROTATION_L2_MULTIPLE calls exceed the L2, so no
#: call finds its inputs left in L2 by the one before (the H200's L2 is 60 MB; every ladder's inputs
#: are larger already, so two sets are used, but the rule holds for smaller sizes too).
ROTATION_L2_MULTIPLE = 3
MIN_SETS = 2
#: Children: a ladder gets this long before its child is killed and restarted after the rung in
#: progress (a hung kernel). A ladder takes 10-50 s when nothing hangs (torch.compile peers are most
#: of it), so a hang costs at most this much of the run.
CHILD_TIMEOUT_S = 150
#: Nsight Compute: the sections recorded per rung (``--set full`` costs ~38 replay passes per kernel);
#: a ladder's ``ncu_sections`` add to them (compute-bound ones: ComputeWorkloadAnalysis,
#: InstructionStats, WarpStateStats).
NCU_SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats")
#: The time one ladder's Nsight Compute process gets. It replays every profiled kernel once per pass
#: its metrics need: about 10 passes for the four default sections, about 20 with the three compute
#: sections added (each pass saves and restores the kernel's memory). A ladder's profiled time is
#: then about passes x the sum of its rungs' kernel times plus ~1 s per kernel of replay overhead,
#: plus ~20 s to start Python, torch and the warm-up calls: the memory ladders (six rungs of
#: 0.1-1 ms) took 20-40 s on the H200; a matmul ladder of ten rungs whose naive rungs run 0.1-0.3 s
#: at 4096^3 needs ~20 x 1 s + 10 x 1 s + 20 s = 50-70 s. 150 s covers both with room, and bounds
#: what a stuck profile can cost the run.
NCU_TIMEOUT_S = 150
#: The whole run (measuring, then profiling) should end within this many seconds: profiling of a
#: ladder starts only while time is left, and its time limit shrinks to what is left.
RUN_BUDGET_S = 540
#: Child exit code meaning "a rung failed and the CUDA context may be poisoned: restart me".
EXIT_RESTART = 3


# --------------------------------------------------------------------------------------------
# Kernel signatures: CUDA rungs declare `extern "C" __global__ void name(params)`
# --------------------------------------------------------------------------------------------

#: A kernel's attributes between ``void`` and its name: ``__launch_bounds__(...)`` and, for a rung
#: launched in thread-block clusters, ``__cluster_dims__(...)`` (the cluster shape fixed at compile
#: time, so that a plain launch forms the clusters).
_KERNEL = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+(?:(?:__launch_bounds__|__cluster_dims__)\s*\([^)]*\)\s*)*(\w+)\s*\(([^)]*)\)', re.S)
_TRITON_KERNEL = re.compile(r"^@(?:triton|gluon)\.jit[^\n]*\ndef\s+(\w+)\s*\(", re.M)

#: Pointer parameters: the pointee type -> the tensor dtypes it may point at (None: any; raw bytes).
POINTEES: dict[str, frozenset[str] | None] = {
    "float": frozenset({"float32"}), "float2": frozenset({"float32"}), "float4": frozenset({"float32"}),
    "double": frozenset({"float64"}), "bf16": frozenset({"bfloat16"}),
    "int": frozenset({"int32"}), "unsigned": frozenset({"int32", "uint32"}),
    "unsigned int": frozenset({"int32", "uint32"}), "long long": frozenset({"int64"}),
    "unsigned long long": frozenset({"int64", "uint64"}),
    "uint2": None, "uint4": None, "void": None,
}
#: Scalar parameters: C type -> the fixed-width type the launch passes.
SCALARS: dict[str, str] = {
    "int": "int32", "unsigned": "uint32", "unsigned int": "uint32", "long long": "int64",
    "unsigned long long": "uint64", "float": "float32",
}


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # "float", "bf16", "unsigned long long", ...
    pointer: bool


def kernel_signatures(source: str) -> dict[str, tuple[Param, ...]]:
    """The ``extern "C" __global__`` kernels of a CUDA rung and their parameters, in order.

    Rungs keep to pointers and plain scalars (``POINTEES``, ``SCALARS``), so the launch can check each
    argument against its parameter: a float32 tensor passed where the kernel reads bf16 is an error
    at the launch, not a silent wrong answer.
    """
    found: dict[str, tuple[Param, ...]] = {}
    for name, params in _KERNEL.findall(_strip_comments(source)):
        found[name] = tuple(_param(p) for p in params.split(",") if p.strip())
    return found


def triton_kernel_names(source: str) -> tuple[str, ...]:
    """Names of the ``@triton.jit`` (or Gluon's ``@gluon.jit``) functions of a Triton rung (the names
    Nsight Compute shows)."""
    return tuple(_TRITON_KERNEL.findall(source))


def _strip_comments(source: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)


def _param(text: str) -> Param:
    words = text.replace("*", " * ").split()
    pointer = "*" in words
    words = [w for w in words if w not in ("const", "__restrict__", "*", "volatile")]
    if len(words) < 2:
        raise ValueError(f"kernel parameter {text.strip()!r}: expected a type and a name")
    ctype, name = " ".join(words[:-1]), words[-1]
    known = POINTEES if pointer else SCALARS
    if ctype not in known:
        raise ValueError(f"kernel parameter {text.strip()!r}: type {ctype}{' *' if pointer else ''} "
                         f"is not one the runner passes ({', '.join(known)})")
    return Param(name=name, ctype=ctype, pointer=pointer)


# --------------------------------------------------------------------------------------------
# Builds and the context a launcher sees
# --------------------------------------------------------------------------------------------


class Build(Protocol):
    """A compiled CUDA rung: its kernels, launchable by name."""

    signatures: Mapping[str, tuple[Param, ...]]
    resources: Mapping[str, Mapping[str, int]]  # kernel -> registers, local (spill) bytes, static smem

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[tuple[Param, Any]], smem: int) -> None: ...

    # A build may also offer ``launch(..., smem, cooperative=True)`` (every block resident at once, or
    # the launch fails) and ``blocks_per_sm(name, threads, smem)`` (the driver's occupancy), for the
    # rungs whose blocks wait for each other (Context.launch's ``cooperative``).


class Builder(Protocol):
    """Compiles one CUDA rung: ``arch`` the rung's target (None: the device's), ``include`` the
    folder of the shared headers (kernels/common)."""

    def __call__(self, path: Path, *, arch: str | None, include: Path) -> Build: ...

Dim = int | tuple[int, ...]


class Context:
    """What a rung's launcher gets: the CUDA build (if any), the device, and scratch buffers.

    ``launch`` checks every argument against the kernel's declared parameters (count, tensor dtype
    and device, integer range) before the launch; ``scratch`` hands out a named buffer that lives as
    long as the rung (partial sums, tile flags), allocated on first use so it is not timed.
    """

    def __init__(self, torch: Any, device: str, sm_count: int, build: Build | None = None,
                 picks: Sequence[str] = ()):
        """``picks``: candidate names (see ``candidate_name``) that ``time_each`` chooses without timing,
        so that a profiled call runs the candidate the timed run chose."""
        self.torch = torch
        self.device = device
        self.sm_count = sm_count
        self.build = build
        self.picks = frozenset(picks)
        self.tunings: list[dict[str, Any]] = []  # what each time_each call measured and chose
        self._scratch: dict[str, Any] = {}

    def launch(self, kernel: str, grid: Dim, block: Dim, *args: Any, smem: int = 0, cooperative: bool = False) -> None:
        """``cooperative``: every block of the grid resident at once, or the launch fails (the rung's
        blocks wait for one another; size the grid with ``blocks_per_sm``)."""
        if self.build is None:
            raise RuntimeError("this rung has no CUDA build to launch from")
        params = self.build.signatures.get(kernel)
        if params is None:
            raise KeyError(f"no kernel {kernel!r} in this rung (it has {', '.join(self.build.signatures)})")
        if len(args) != len(params):
            raise TypeError(f"{kernel} takes {len(params)} arguments, got {len(args)}")
        checked = [(p, _check_arg(self.torch, kernel, p, a, self.device)) for p, a in zip(params, args)]
        g, b = _dim3(grid), _dim3(block)
        if min(g) < 1 or min(b) < 1 or b[0] * b[1] * b[2] > 1024:
            raise ValueError(f"{kernel}: bad launch grid {g} block {b}")
        if cooperative:
            self.build.launch(kernel, g, b, checked, smem, cooperative=True)
        else:
            self.build.launch(kernel, g, b, checked, smem)

    def blocks_per_sm(self, kernel: str, threads: int, smem: int = 0) -> int:
        """How many blocks of ``kernel`` (``threads`` threads, ``smem`` bytes of dynamic shared memory)
        an SM holds at once: the driver's occupancy calculator on the GPU."""
        if self.build is None or not hasattr(self.build, "blocks_per_sm"):
            raise RuntimeError("this rung's build cannot say how many blocks fit on an SM")
        return int(self.build.blocks_per_sm(kernel, threads, smem))

    def time_each(self, candidates: Sequence[Any], run: Callable[[Any], None], *, warmup: int,
                  reps: int) -> dict[Any, float]:
        """Seconds per call of ``run(candidate)`` for each candidate, in order: ``warmup`` untimed calls
        (the first loads the kernel), then ``reps`` calls timed together by CUDA events. For a rung that
        chooses among configurations on its first call (as triton.autotune does); GPU only.

        A candidate named in ``picks`` is chosen without timing: it gets 0 s and the others infinity.
        Each call's times and choice (the fastest) are kept in ``tunings`` for the results file."""
        names = [candidate_name(c) for c in candidates]
        picked = next((c for c, name in zip(candidates, names) if name in self.picks), None)
        if picked is not None:
            self.tunings.append({"pick": candidate_name(picked), "given": True})
            return {c: 0.0 if c is picked else math.inf for c in candidates}
        times = {}
        for candidate in candidates:
            for _ in range(warmup):
                run(candidate)
            start, end = (self.torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            for _ in range(reps):
                run(candidate)
            end.record()
            end.synchronize()
            times[candidate] = start.elapsed_time(end) * 1e-3 / reps
        best = min(times, key=times.get)
        self.tunings.append({"pick": candidate_name(best),
                             "times_s": {name: times[c] for c, name in zip(candidates, names)}})
        return times

    def scratch(self, name: str, numel: int, dtype: Any, *, zero: bool = False) -> Any:
        """A buffer of at least ``numel`` elements, kept for later calls; zeroed when first made if
        ``zero`` (a kernel that uses it as a counter must leave it zero for the next call)."""
        buf = self._scratch.get(name)
        if buf is None or buf.numel() < numel or buf.dtype != dtype:
            make = self.torch.zeros if zero else self.torch.empty
            buf = make(numel, dtype=dtype, device=self.device)
            self._scratch[name] = buf
        return buf[:numel]


def candidate_name(candidate: Any) -> str:
    """A tuning candidate's name in results files and ``--picks``: its kernel's name where it has one."""
    return str(getattr(candidate, "kernel", None) or candidate)


def _dim3(d: Dim) -> tuple[int, int, int]:
    t = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(t) <= 3 or not all(isinstance(x, int) for x in t):
        raise ValueError(f"launch dimension {d!r} must be 1 to 3 integers")
    return (*t, *(1,) * (3 - len(t)))  # type: ignore[return-value]


_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-(2**63), 2**63 - 1),
              "uint64": (0, 2**64 - 1)}


def _check_arg(torch: Any, kernel: str, p: Param, a: Any, device: str) -> Any:
    where = f"{kernel}({p.name})"
    if p.pointer:
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"{where}: expects a tensor, got {type(a).__name__}")
        allowed = POINTEES[p.ctype]
        dtype = str(a.dtype).removeprefix("torch.")
        if allowed is not None and dtype not in allowed:
            raise TypeError(f"{where}: {p.ctype} * cannot point at a {dtype} tensor")
        if not a.is_contiguous():
            raise ValueError(f"{where}: tensor must be contiguous")
        if a.device.type != torch.device(device).type:
            raise ValueError(f"{where}: tensor on {a.device}, rung runs on {device}")
        return a
    kind = SCALARS[p.ctype]
    if kind == "float32":
        if not isinstance(a, (int, float)):
            raise TypeError(f"{where}: expects a number")
        return float(a)
    if not isinstance(a, int) or isinstance(a, bool):
        raise TypeError(f"{where}: expects an integer, got {type(a).__name__}")
    lo, hi = _INT_RANGE[kind]
    if not lo <= a <= hi:
        raise OverflowError(f"{where}: {a} does not fit {p.ctype}")
    return a


def nvrtc_options(include: Path, arch: str | None = None) -> tuple[str, ...]:
    """The NVRTC options of a CUDA rung. Without ``arch`` CuPy adds ``-arch=sm_XX`` for the device;
    with one (``sm_90a``) it still appends its own after ours, and NVRTC 13 builds for the
    architecture-specific target whichever comes first (an sm_90a-only instruction such as
    ``wgmma.fence`` compiles with ``-arch=sm_90 -arch=sm_90a`` in either order and fails with
    ``-arch=sm_90`` alone), so the rung gets the target it asks for. ``-lineinfo`` maps the machine
    code to the rung's lines (with ``harness.cuda_source``, to the rung's own file) for Nsight
    Compute's source view; it does not change the code generated."""
    return ("--std=c++17", "-lineinfo", f"-I{include}", *((f"-arch={arch}",) if arch else ()))


#: Options CuPy's RawModule adds to the caller's before NVRTC compiles (cupy.cuda.compiler
#: _compile_with_cache_cuda: -ftz=true; compile_using_nvrtc: --device-as-default-execution-space
#: for NVRTC 12+, and -arch for the device).
CUPY_RAWMODULE_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")


def cubin_options(options: Sequence[str], compute_capability: str) -> tuple[str, ...]:
    """The NVRTC options that rebuild a rung's module as RawModule built it, for a cubin: the rung's
    own, CuPy's, and the device's real architecture (``-arch=sm_90`` for capability "90") unless the
    rung names one (``-arch=sm_90a``)."""
    arch = () if any(o.startswith("-arch=") for o in options) else (f"-arch=sm_{compute_capability}",)
    return (*options, *CUPY_RAWMODULE_OPTIONS, *arch)


class CupyBuild:
    """A CUDA rung compiled with NVRTC through CuPy, launched on torch's current stream."""

    def __init__(self, path: Path, *, arch: str | None, include: Path):
        import cupy
        import numpy

        self._np = numpy
        source = path.read_text(encoding="utf-8")
        self.signatures = kernel_signatures(source)
        if not self.signatures:
            raise ValueError(f"{path.name}: no extern \"C\" __global__ kernel found")
        self.options = nvrtc_options(include, arch)
        self._source = harness.cuda_source(path)  # the line table names the rung's file, not CuPy's temporary one
        self._module = cupy.RawModule(code=self._source, options=self.options, backend="nvrtc")
        self._functions = {name: self._module.get_function(name) for name in self.signatures}  # compiles now
        self.resources = {
            name: {"registers": int(f.num_regs), "local_bytes": int(f.local_size_bytes),
                   "static_smem_bytes": int(f.shared_size_bytes)}
            for name, f in self._functions.items()
        }

    def sass(self) -> dict[str, Any]:
        """The opcode histograms of the rung's kernels, from the cubin NVRTC makes of the same source
        with the same options as the loaded module (RawModule exposes no cubin of its own), through
        the NVRTC library CuPy loaded (coach.capture.nvrtc says why not through CuPy)."""
        import cupy
        from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc

        lib = nvrtc.library(f"libnvrtc.so.{cupy_nvrtc.getVersion()[0]}")
        options = cubin_options(self.options, str(cupy.cuda.Device().compute_capability))
        text, tool = disassemble(nvrtc.compile_cubin(lib, self._source, options))
        return sass_record(text, f"NVRTC cubin, {tool}", tuple(self.signatures))

    _NP = {"int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64", "float32": "float32"}

    def launch(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: Sequence[tuple[Param, Any]], smem: int, cooperative: bool = False) -> None:
        np = self._np
        values = tuple(np.uint64(a.data_ptr()) if p.pointer else getattr(np, self._NP[SCALARS[p.ctype]])(a)
                       for p, a in args)
        fn = self._functions[name]
        if smem > 48 * 1024:  # above 48 KB a kernel must opt in to more dynamic shared memory
            fn.max_dynamic_shared_size_bytes = smem
        if cooperative:  # cuLaunchCooperativeKernel; CuPy refuses a grid larger than the occupancy allows
            fn.kernel(grid, block, values, shared_mem=smem, enable_cooperative_groups=True)
        else:
            fn(grid, block, values, shared_mem=smem)

    def blocks_per_sm(self, name: str, threads: int, smem: int) -> int:
        import cupy

        fn = self._functions[name]
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem
        return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, smem))


def cupy_builder(path: Path, *, arch: str | None, include: Path) -> Build:
    return CupyBuild(path, arch=arch, include=include)


# --------------------------------------------------------------------------------------------
# Problems and rungs
# --------------------------------------------------------------------------------------------


def load_problem(defn: LadderDef) -> ModuleType:
    """``kernels/<name>/problem.py``: sizes, inputs, reference, bytes model, peers, CUDA launchers."""
    module = _import_file(defn.folder / "problem.py", f"coach_ladder_{_module_name(defn.name)}_problem")
    for attr in ("SIZES", "INPUTS", "EXACT", "inputs", "outputs", "reference", "bytes_moved", "flops", "PEERS", "LAUNCH"):
        if not hasattr(module, attr):
            raise AttributeError(f"{defn.folder / 'problem.py'} lacks {attr}")
    return module


def _module_name(ladder: str) -> str:
    """A ladder name as part of a Python module name (``matmul/fp32`` -> ``matmul_fp32``)."""
    return ladder.replace("/", "_")


def _import_file(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Triton's JIT looks functions' modules up here
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass
class Prepared:
    """A rung or peer ready to call: ``call(inputs, outputs)`` and what to record about it."""

    call: Callable[[dict[str, Any], dict[str, Any]], Any]
    writes_outputs: bool  # rungs write into the outputs given; peers return theirs
    kernels: tuple[str, ...] = ()
    resources: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)
    build_s: float = 0.0
    sass: Callable[[], Mapping[str, Any]] | None = None  # the SASS opcode histograms, once it has run
    context: Context | None = None  # a rung's launch context (its tunings), none for a peer


def prepare_rung(defn: LadderDef, rung: RungDef, problem: ModuleType, ctx_args: Mapping[str, Any],
                 builder: Builder) -> Prepared:
    """Build a rung and bind its launcher to a fresh context."""
    path = defn.path(rung)
    t0 = time.perf_counter()
    if rung.language == "cuda":
        build = builder(path, arch=rung.arch, include=defn.include_dir)
        ctx = Context(build=build, **ctx_args)
        launch = problem.LAUNCH.get(rung.key)
        if launch is None:
            raise KeyError(f"problem.py has no launcher for {rung.key} (LAUNCH[{rung.key!r}])")
        kernels, resources = tuple(build.signatures), build.resources
        sass = getattr(build, "sass", None)  # an NVRTC build has a cubin; the CPU emulator none
    else:
        module = _import_file(path, f"coach_ladder_{_module_name(defn.name)}_{rung.key}")
        ctx = Context(**ctx_args)
        launch = getattr(module, "launch", None)
        if launch is None:
            raise AttributeError(f"{rung.file} defines no launch(ctx, inputs, outputs)")
        kernels, resources = triton_kernel_names(path.read_text(encoding="utf-8")), {}
        sass = functools.partial(triton_sass, module, kernels)
    return Prepared(call=lambda inp, out: launch(ctx, inp, out), writes_outputs=True, kernels=kernels,
                    resources=resources, build_s=time.perf_counter() - t0, sass=sass, context=ctx)


def prepare_peer(problem: ModuleType, name: str) -> Prepared:
    factory = problem.PEERS.get(name)
    if factory is None:
        raise KeyError(f"problem.py has no peer {name!r} (PEERS)")
    fn = factory()
    return Prepared(call=lambda inp, out: fn(inp), writes_outputs=False)


# --------------------------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------------------------


def poison(torch: Any, outputs: Mapping[str, Any]) -> None:
    """Fill every output with a value no correct kernel writes: NaN for floats, the minimum integer
    otherwise. An element still holding it after the call was never written."""
    for t in outputs.values():
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        else:
            t.fill_(torch.iinfo(t.dtype).min)


def unwritten(torch: Any, t: Any) -> int:
    """Elements of ``t`` still holding the poison (NaN; or the integer minimum)."""
    if t.dtype.is_floating_point:
        return int(torch.isnan(t).sum())
    return int((t == torch.iinfo(t.dtype).min).sum())


def tolerances(problem: ModuleType | None) -> dict[str, float]:
    """The runner's ``TOLERANCE`` with the problem's own (``problem.TOLERANCE``, optional) in place
    for the dtypes it names."""
    own = getattr(problem, "TOLERANCE", None) or {}
    if not isinstance(own, Mapping) or not all(isinstance(v, (int, float)) and v > 0 for v in own.values()):
        raise ValueError("problem.py's TOLERANCE must map dtype names to positive limits")
    return {**TOLERANCE, **{str(k): float(v) for k, v in own.items()}}


def tolerance_for(dtype: Any, exact: bool, problem: ModuleType | None = None) -> float:
    if exact:
        return 0.0
    name = str(dtype).removeprefix("torch.")
    table = tolerances(problem)
    if name not in table:
        raise KeyError(f"no tolerance for {name} outputs (TOLERANCE)")
    return table[name]


def compare(torch: Any, out: Any, ref: Any, tol: float) -> tuple[bool, float | None, int]:
    """(passed, ||out - ref|| / ||ref|| in float64, elements never written). NaN never passes."""
    if tuple(out.shape) != tuple(ref.shape) and out.numel() == ref.numel():
        out = out.reshape(ref.shape)
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"output shape {tuple(out.shape)} differs from the reference's {tuple(ref.shape)}")
    missing = unwritten(torch, out)
    o, r = out.to(torch.float64), ref.to(torch.float64)
    if tol == 0.0:
        exact = bool(torch.equal(o, r))
        diff = float(torch.linalg.vector_norm(o - r)) if missing == 0 else None
        rel = None if diff is None else diff / max(float(torch.linalg.vector_norm(r)), 1e-300)
        return exact and missing == 0, rel, missing
    norm = float(torch.linalg.vector_norm(r))
    rel = float(torch.linalg.vector_norm(o - r)) / norm if norm > 0 else float(torch.linalg.vector_norm(o))
    ok = missing == 0 and math.isfinite(rel) and rel <= tol
    return ok, (rel if math.isfinite(rel) else None), missing


def check(torch: Any, problem: ModuleType, prepared: Prepared, size: Mapping[str, int], device: str,
          seed: int, sync: Callable[[], None]) -> list[dict[str, Any]]:
    """Run ``prepared`` once per input distribution of the problem, on fresh inputs, and compare."""
    results = []
    for i, kind in enumerate(problem.INPUTS):
        gen = torch.Generator(device=device).manual_seed(seed + i)
        inp = problem.inputs(kind, device=device, generator=gen, **size)
        out = problem.outputs(device=device, **size)
        poison(torch, out)
        produced = prepared.call(inp, out)
        sync()
        if not prepared.writes_outputs:
            produced = produced if isinstance(produced, Mapping) else {next(iter(out)): produced}
            out = dict(produced)
        ref = problem.reference(inp)
        passed, missing, worst, tolerance = True, 0, 0.0, 0.0
        for name, r in ref.items():
            tol = tolerance_for(out[name].dtype, kind in problem.EXACT, problem)
            ok, rel, miss = compare(torch, out[name], r, tol)
            passed, missing, tolerance = passed and ok, missing + miss, max(tolerance, tol)
            worst = None if rel is None or worst is None else max(worst, rel)
        results.append({"name": kind, "passed": passed, "rel_err": worst, "tolerance": tolerance, "unwritten": missing})
        del inp, out, ref
    return results


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def rotation_sets(bytes_per_set: int, l2_bytes: int) -> int:
    """Input sets to cycle through so that no call finds its inputs in L2 (see ROTATION_L2_MULTIPLE)."""
    return max(MIN_SETS, math.ceil(ROTATION_L2_MULTIPLE * l2_bytes / max(bytes_per_set, 1)))


def rotating(fns: Sequence[Callable[[], Any]]) -> Callable[[], Any]:
    """One callable that calls ``fns`` in turn, one per call."""
    cycle = itertools.cycle(fns)
    return lambda: next(cycle)()


def time_call(torch: Any, problem: ModuleType, prepared: Prepared, size: Mapping[str, int], device: str,
              seed: int, l2_bytes: int) -> dict[str, Any]:
    """Median and quantiles of one call, cycling through fresh input sets (the last distribution)."""
    from triton.testing import do_bench

    kind = problem.INPUTS[-1]
    n_sets = rotation_sets(problem.bytes_moved(**size), l2_bytes)
    sets = []
    for i in range(n_sets):
        gen = torch.Generator(device=device).manual_seed(seed + 1000 + i)
        sets.append((problem.inputs(kind, device=device, generator=gen, **size), problem.outputs(device=device, **size)))
    fn = rotating([lambda i=i, o=o: prepared.call(i, o) for i, o in sets])
    p50, p20, p80 = do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, quantiles=[0.5, 0.2, 0.8])
    del sets, fn
    return {"time_s": p50 * 1e-3, "p20_s": p20 * 1e-3, "p80_s": p80 * 1e-3, "input_sets": n_sets}


# --------------------------------------------------------------------------------------------
# One ladder (in a child process)
# --------------------------------------------------------------------------------------------


def measure_item(torch: Any, problem: ModuleType, prepared_fn: Callable[[], Prepared], size: Mapping[str, int],
                 device: str, seed: int, sync: Callable[[], None], l2_bytes: int | None) -> dict[str, Any]:
    """Build, check and (if correct, and ``l2_bytes`` is given) time one rung or peer.

    Never raises for a problem of the rung itself: a build error, a launch error or a wrong answer
    becomes the record's status and error, so one bad rung costs only itself.
    """
    record: dict[str, Any] = {"bytes": int(problem.bytes_moved(**size)), "flops": int(problem.flops(**size))}
    try:
        prepared = prepared_fn()
        record.update(kernels=list(prepared.kernels), resources=dict(prepared.resources),
                      build_s=round(prepared.build_s, 3))
        checks = check(torch, problem, prepared, size, device, seed, sync)
        record["checks"] = checks
        if prepared.sass is not None:
            record["sass"] = sass_entry(prepared.sass)
        if not all(c["passed"] for c in checks):
            bad = next(c for c in checks if not c["passed"])
            record.update(status="wrong", error=_describe_failure(bad))
            return record
        if l2_bytes is not None:
            record.update(time_call(torch, problem, prepared, size, device, seed, l2_bytes))
        if prepared.context is not None and prepared.context.tunings:
            record["tuned"] = prepared.context.tunings
        record["status"] = "ok"
    except Exception as err:  # noqa: BLE001 - any failure of a rung is recorded, not raised
        record.update(status="error", error=f"{type(err).__name__}: {_first_lines(str(err))}",
                      traceback=traceback.format_exc(limit=6))
    return record


def sass_entry(sass: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
    """results.json's ``sass`` of a rung: its kernels' opcode histograms, or why there are none (a
    missing disassembler is no reason to lose the rung's measurement)."""
    try:
        return dict(sass())
    except Exception as err:  # noqa: BLE001 - recorded, never fatal
        return {"error": f"{type(err).__name__}: {_first_lines(str(err), 3)}"}


def _describe_failure(c: Mapping[str, Any]) -> str:
    if c["unwritten"]:
        return f"{c['name']} inputs: {c['unwritten']} output elements never written"
    if c["rel_err"] is None:
        return f"{c['name']} inputs: output holds NaN or infinity"
    return f"{c['name']} inputs: relative error {c['rel_err']:.3g} over tolerance {c['tolerance']:.3g}"


def _first_lines(text: str, n: int = 12) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[:n]) + (" | ..." if len(lines) > n else "")


def run_ladder_child(name: str, out_dir: Path, size_name: str, *, device: str = "cuda",
                     builder: Builder = cupy_builder, timing: bool = True,
                     describe: Callable[[], Mapping[str, Any]] | None = None,
                     only: Sequence[str] | None = None) -> int:
    """Measure what ``out_dir/<name>/results.json`` does not hold yet, saving after each item.

    With ``only`` (rung ids, rung keys or peer names), measure just those: a trial, whose results file
    says so (``"only"``) and which scripts/import-ladders.py refuses.

    Returns 0 when every rung and peer is recorded, EXIT_RESTART when an item failed in a way that may
    have poisoned the CUDA context (the parent starts a fresh child for the rest).
    """
    import torch

    defn = load_definition(name)
    problem = load_problem(defn)
    size = dict(problem.SIZES[size_name])
    path = out_dir / name / results_file(size_name, defn.main_size)
    doc = _read_partial(path) or new_results(defn, problem, size_name, size,
                                             (describe or (lambda: describe_run(device)))())
    on_gpu = device.startswith("cuda")
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count if on_gpu else 4
    l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size if on_gpu else 0
    if on_gpu:
        _use_torch_stream(torch)
    ctx_args = {"torch": torch, "device": device, "sm_count": sm_count}
    items = [("rungs", r.key, (lambda r=r: prepare_rung(defn, r, problem, ctx_args, builder))) for r in defn.rungs]
    items += [("peers", p, (lambda p=p: prepare_peer(problem, p))) for p in defn.peers]
    if only:
        wanted = set(only)
        items = [it for it in items if it[1] in wanted or (it[0] == "rungs" and defn.rung(it[1]).id in wanted)]
        doc["only"] = sorted(wanted)
    for section, key, prep in items:
        if any(m["key"] == key for m in doc[section]):
            continue
        if doc.get("in_progress") == key:  # the previous child died or hung on it
            doc[section].append({"key": key, "status": "error", "checks": [], "bytes": problem.bytes_moved(**size),
                                 "flops": problem.flops(**size), "error": doc.pop("in_progress_error", "the process died or hung on it")})
            doc.pop("in_progress")
            write_json(path, doc)
            continue
        doc["in_progress"] = key
        write_json(path, doc)
        print(f"[{name}] {key} ...", file=sys.stderr, flush=True)
        record = {"key": key, **measure_item(torch, problem, prep, size, device, doc["seed"], sync,
                                             l2_bytes if timing else None)}
        doc[section].append(record)
        doc.pop("in_progress")
        write_json(path, doc)
        _report(name, record, defn.compute_bound)
        if record["status"] == "error" and on_gpu and not _context_healthy(torch):
            return EXIT_RESTART
        if on_gpu:
            torch.cuda.empty_cache()
    doc.pop("in_progress", None)
    write_json(path, doc)
    return 0


def _use_torch_stream(torch: Any) -> None:
    """Make CuPy launch on torch's current stream, where do_bench records its events."""
    try:
        import cupy
    except ImportError:
        return
    cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream).use()


def _context_healthy(torch: Any) -> bool:
    try:
        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1).item()
        return True
    except Exception:  # noqa: BLE001 - any failure means the context is unusable
        return False


def _report(name: str, record: Mapping[str, Any], compute_bound: bool) -> None:
    if record["status"] == "ok" and record.get("time_s"):
        rate = (f"{record['flops'] / record['time_s'] / 1e12:7.1f} TFLOP/s" if compute_bound
                else f"{record['bytes'] / record['time_s'] / 1e9:7.0f} GB/s")
        print(f"[{name}] {record['key']}: {record['time_s'] * 1e6:9.1f} us  {rate}", file=sys.stderr)
    else:
        print(f"[{name}] {record['key']}: {record['status']}: {record.get('error', '')}", file=sys.stderr)


def _read_partial(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc if doc.get("schema") == RESULTS_SCHEMA and doc.get("partial") else None


def new_results(defn: LadderDef, problem: ModuleType, size_name: str, size: Mapping[str, int],
                provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The skeleton of a results.json, before any rung is measured (``kernels/README.md``)."""
    ceiling_value, ceiling_source = read_ceiling(str(provenance.get("gpu_name", "")), defn.ceiling)
    return {
        "schema": RESULTS_SCHEMA,
        "partial": True,
        "ladder": defn.name,
        "title": defn.title,
        "gpu": provenance.get("gpu_name", "unknown"),
        "size_name": size_name,
        "size": dict(size),
        "seed": int.from_bytes(os.urandom(4), "little"),
        "ceiling": ceiling_entry(defn.ceiling, ceiling_value, ceiling_source),
        "baseline": defn.baseline,
        "timing": {"method": "triton.testing.do_bench median (p20, p80 too); the L2 is cleared before "
                             "each repetition and input sets rotate", "warmup_ms": WARMUP_MS, "rep_ms": REP_MS},
        "tolerance": tolerances(problem),
        "provenance": dict(provenance),
        "rungs": [],
        "peers": [],
    }


def ceiling_entry(name: str, value: float | None, source: str | None) -> dict[str, Any]:
    """results.json's ``ceiling``: its name, unit and value (None: not measured on this GPU), and the
    file it came from; a bandwidth ceiling also as ``bytes_per_s``, as files before FLOP ceilings had it."""
    unit = CEILING_UNITS[name]
    entry: dict[str, Any] = {"name": name, "unit": unit, "value": value}
    if unit != FLOPS:
        entry["bytes_per_s"] = value
    return {**entry, "source": source}


def read_ceiling(gpu_name: str, ceiling: str, folder: Path | None = None) -> tuple[float | None, str | None]:
    """The measured ceiling ``ceiling`` of the GPU named ``gpu_name`` from ``hardware/measured/``
    (the JSON a calibration run writes, else the TOML carried from notes), and the file it came from."""
    folder = folder or hardware_dir() / "measured"
    slug = gpu_slug(gpu_name)
    for path in (folder / f"{slug}.json", folder / f"{slug}.toml"):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        entry = doc.get("measurements", {}).get(ceiling)
        if isinstance(entry, Mapping) and isinstance(entry.get("value"), (int, float)):
            return float(entry["value"]), f"{folder.parent.name}/{folder.name}/{path.name}"
    return None, None


def gpu_slug(gpu_name: str) -> str:
    """"NVIDIA H200" -> "h200": the file name of a GPU under hardware/measured/."""
    name = gpu_name.strip().lower()
    name = name.removeprefix("nvidia ").strip()
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-")


def describe_run(device: str) -> dict[str, Any]:
    """Provenance: the GPU and its software (as the calibration records it), CuPy, the git commit."""
    index = int(device.split(":")[1]) if ":" in device else 0
    prov = dict(describe_gpu(argparse.Namespace(device=index)))
    try:
        import cupy

        prov["cupy"] = cupy.__version__
    except ImportError:
        prov["cupy"] = None
    prov["method"] = "per rung: NVRTC (CuPy) or Triton build; checks on fresh random inputs; do_bench median"
    prov.update(git_state())
    return prov


def git_state() -> dict[str, Any]:
    """The commit the kernels came from, and whether the tree had uncommitted changes.

    ``COACH_GIT_COMMIT``, when set, wins: a copy of the tree sent to a GPU machine may carry a stale
    ``.git`` (or none), and whoever sent it knows which commit it was."""
    if os.environ.get("COACH_GIT_COMMIT"):
        return {"git_commit": os.environ["COACH_GIT_COMMIT"], "git_dirty": None}
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "kernels", "coach"], cwd=root,
                                    capture_output=True, text=True, timeout=10, check=True).stdout.strip())
        return {"git_commit": commit, "git_dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": os.environ.get("COACH_GIT_COMMIT", "unknown"), "git_dirty": None}


# --------------------------------------------------------------------------------------------
# The parent: one child per ladder, restarted past failures; then Nsight Compute
# --------------------------------------------------------------------------------------------


def run(names: Sequence[str], out_dir: Path, *, size: str | None = None, ncu: bool = False,
        ncu_path: str | None = None, command: str = "", budget_s: float = RUN_BUDGET_S,
        only: Sequence[str] | None = None) -> int:
    """Measure every ladder in ``names`` at each of its sizes (or at ``size`` alone), each in child
    processes, then optionally profile them at that run's first size while the time budget lasts;
    print a summary table last."""
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in names:
        defn = load_definition(name)
        for size_name in ([size] if size else defn.sizes):
            failed += not _measure(name, size_name, out_dir / name / results_file(size_name, defn.main_size),
                                   out_dir, command, only)
    if ncu:
        for name in names:
            defn = load_definition(name)
            if (out_dir / name / results_file(size or defn.main_size, defn.main_size)).is_file():
                left = budget_s - (time.monotonic() - started)
                profile_with_ncu(name, out_dir, size or defn.main_size, ncu_path,
                                 timeout_s=min(NCU_TIMEOUT_S, max(left, 0.0)))
    print(summary(out_dir, names))
    return 1 if failed else 0


def _measure(name: str, size_name: str, path: Path, out_dir: Path, command: str,
             only: Sequence[str] | None = None) -> bool:
    """Measure one ladder at one size into ``path``, restarting the child past rungs that kill it;
    False when a child fails without recording anything more."""
    path.unlink(missing_ok=True)
    done = -1
    ok = True
    while True:  # each restart records at least one more rung or peer, or the loop ends
        rc, timed_out = _run_child(["measure", name, "--out", str(out_dir), "--size", size_name,
                                    *(["--only", *only] if only else [])], CHILD_TIMEOUT_S)
        if rc == 0:
            break
        doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        progress = -1 if doc is None else len(doc["rungs"]) + len(doc["peers"]) + ("in_progress" in doc)
        if doc is None or progress <= done:
            print(f"[{name}] the measuring process failed without progress (exit {rc}); giving up on this ladder",
                  file=sys.stderr)
            ok = False
            break
        done = progress
        if "in_progress" in doc:
            doc["in_progress_error"] = (f"timed out after {CHILD_TIMEOUT_S} s (a hung kernel?)" if timed_out
                                        else f"the process died during it (exit {rc})")
            write_json(path, doc)
    if path.is_file():
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc.pop("partial", None)
        doc["provenance"]["command"] = command
        write_json(path, doc)
    return ok


def summary(out_dir: Path, names: Sequence[str]) -> str:
    """A short table of every rung and peer measured, each size: status, median time, the rate
    (TB/s, or TFLOP/s for a compute-bound ladder) and its % of the ceiling."""
    lines = [f"{'ladder[size]/rung':<46} {'status':<6} {'time':>10} {'rate':>14} {'%ceil':>6}"]
    for name in names:
        files = sorted((out_dir / name).glob("results*.json"), key=lambda p: (p.name != "results.json", p.name))
        if not files:
            lines.append(f"{name:<46} no results")
        for path in files:
            doc = json.loads(path.read_text(encoding="utf-8"))
            ceiling = doc.get("ceiling", {})
            flops = ceiling.get("unit") == FLOPS
            value = ceiling.get("value", ceiling.get("bytes_per_s"))
            label = name if path.name == "results.json" else f"{name}[{doc.get('size_name', '?')}]"
            for m in [*doc["rungs"], *({**p, "key": f"[{p['key']}]"} for p in doc["peers"])]:
                t = m.get("time_s")
                rate = (m.get("flops", 0) if flops else m.get("bytes", 0)) / t if t else None
                pct = f"{100 * rate / value:6.1f}" if rate and value else f"{'-':>6}"
                shown = f"{rate / 1e12:6.2f} {'TFLOP/s' if flops else 'TB/s'}" if rate else "-"
                lines.append(f"{label + '/' + m['key']:<46.46} {m['status']:<6} "
                             + (f"{t * 1e6:8.1f}us {shown:>14} {pct}" if t else f"{'-':>10} {'-':>14} {'-':>6}"))
            if "ncu" in doc:
                lines.append(f"{label + '/ncu':<46} {doc['ncu'].get('report') or doc['ncu'].get('error') or 'failed'}")
    return "\n".join(lines)


def _run_child(args: Sequence[str], timeout: float) -> tuple[int, bool]:
    cmd = [sys.executable, "-m", "coach.capture.ladder", *args]
    proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[2])
    try:
        return proc.wait(timeout=timeout), False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -9, True


def ncu_sections(defn: LadderDef) -> list[str]:
    """The default sections, then the ladder's own (``ncu_sections``), each once."""
    return list(dict.fromkeys([*NCU_SECTIONS, *defn.ncu_sections]))


def nvtx_filter(name: str) -> str:
    """The ``--nvtx-include`` configuration that selects a ladder's profiled calls.

    In Nsight Compute's NVTX filter ``/`` separates push/pop ranges nested one directly in the other
    and a trailing ``/`` marks a push/pop range; the match is not anchored to the bottom or top of
    the stack (``[`` and ``]`` would anchor it). The profile child pushes one range per part of the
    ladder's name (``matmul``, then ``fp32``) around the rung ranges, so ``"matmul/fp32/"`` selects
    every kernel launched inside them and none of the warm-up calls made before they were pushed.
    """
    return f"{name}/"


def report_stem(name: str) -> str:
    """The Nsight Compute report's file name, without suffix: ``matmul-fp32`` for ``matmul/fp32``."""
    return name.replace("/", "-")


def ncu_command(ncu: str, name: str, out_dir: Path, size: str, kernels: Sequence[str], rungs: Sequence[str],
                sections: Sequence[str] = NCU_SECTIONS, picks: Sequence[str] = ()) -> list[str]:
    """Nsight Compute over one ``profile`` child: the given rungs' kernels launched inside the ladder's
    NVTX ranges only (not their warm-up calls), the given sections; a tuned rung launches the candidate
    in ``picks`` (the timed run's choice) instead of choosing again under the profiler."""
    section_args = [a for s in sections for a in ("--section", s)]
    regex = "regex:^(" + "|".join(re.escape(k) for k in sorted(set(kernels))) + ")$"
    report = out_dir / name / "ncu" / report_stem(name)
    return [ncu, "--clock-control", "none", *section_args, "--nvtx", "--nvtx-include", nvtx_filter(name),
            "-k", regex, "-f", "-o", str(report),
            sys.executable, "-m", "coach.capture.ladder", "profile", name, "--size", size, "--rungs", *rungs,
            *(["--picks", *picks] if picks else [])]


def profile_with_ncu(name: str, out_dir: Path, size: str, ncu_path: str | None, timeout_s: float = NCU_TIMEOUT_S) -> None:
    """Run the ladder's rungs once each under Nsight Compute and note the report in the results file
    of that size."""
    defn = load_definition(name)
    path = out_dir / name / results_file(size, defn.main_size)
    doc = json.loads(path.read_text(encoding="utf-8"))
    # A rung that crashed or hung while measured would do it again under the profiler: leave it out.
    rungs = [r for r in doc["rungs"] if r["status"] != "error" and r.get("kernels")]
    kernels = [k for r in rungs for k in r["kernels"]]
    ncu = ncu_path or shutil.which("ncu") or _find_ncu()
    sections = ncu_sections(defn)
    entry: dict[str, Any] = {"sections": sections}
    if ncu is None or not kernels or timeout_s < 10:
        entry["error"] = ("ncu not found" if ncu is None else "no kernels to profile" if not kernels
                          else "skipped: the run's time budget was spent")
    else:
        (out_dir / name / "ncu").mkdir(parents=True, exist_ok=True)
        picks = [t["pick"] for r in rungs for t in r.get("tuned", ())]
        cmd = ncu_command(ncu, name, out_dir, size, kernels, [r["key"] for r in rungs], sections, picks)
        entry["command"] = shlex.join(cmd)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
                                  timeout=timeout_s)
            entry["returncode"] = proc.returncode
            entry["log_tail"] = proc.stdout[-2000:] + proc.stderr[-2000:]
        except subprocess.TimeoutExpired:
            entry["error"] = f"timed out after {timeout_s:.0f} s"
        entry["elapsed_s"] = round(time.monotonic() - t0, 1)
        report = out_dir / name / "ncu" / f"{report_stem(name)}.ncu-rep"
        entry["report"] = f"ncu/{report.name}" if report.is_file() else None
    doc["ncu"] = entry
    write_json(path, doc)
    print(f"[{name}] ncu: {entry.get('report') or entry.get('error') or 'failed'}", file=sys.stderr)


def _find_ncu() -> str | None:
    found = sorted(Path("/opt/nvidia/nsight-compute").glob("*/ncu")) + sorted(Path("/usr/local/cuda/bin").glob("ncu"))
    return str(found[-1]) if found else None


def profile_child(name: str, size_name: str, rungs: Sequence[str] | None = None, *, device: str = "cuda",
                  builder: Builder = cupy_builder, picks: Sequence[str] = ()) -> int:
    """Call every rung once to warm it up, then once more inside its NVTX range, for Nsight Compute.

    The warm-up calls (JIT compilation, Triton autotuning and anything else a launcher does on its
    first call) run outside any NVTX range, and the profiler takes only launches inside the ladder's
    ranges (``nvtx_filter``), so what is profiled is each rung's steady-state call. The rung ranges
    ``<name>/<rung>`` sit inside one range per part of the ladder's name. One input set for all rungs:
    Nsight Compute replays each kernel with its caches flushed, so one call is as good as any.
    """
    import torch

    defn = load_definition(name)
    problem = load_problem(defn)
    size = dict(problem.SIZES[size_name])
    on_gpu = device.startswith("cuda")
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    healthy = (lambda: _context_healthy(torch)) if on_gpu else (lambda: True)
    if on_gpu:
        _use_torch_stream(torch)
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count if on_gpu else 4
    ctx_args = {"torch": torch, "device": device, "sm_count": sm_count, "picks": picks}
    gen = torch.Generator(device=device).manual_seed(0)
    inp = problem.inputs(problem.INPUTS[-1], device=device, generator=gen, **size)
    out = problem.outputs(device=device, **size)
    warm: dict[str, Prepared] = {}
    for rung in defn.rungs:
        if rungs is not None and rung.key not in rungs:
            continue
        try:
            prepared = prepare_rung(defn, rung, problem, ctx_args, builder)
            prepared.call(inp, out)
            sync()
            warm[rung.key] = prepared
        except Exception as err:  # noqa: BLE001 - a broken rung is skipped; its record says why
            print(f"[{name}] {rung.key}: {type(err).__name__}: {_first_lines(str(err), 3)}", file=sys.stderr)
            if not healthy():
                return EXIT_RESTART
    with contextlib.ExitStack() as ranges:
        for part in name.split("/"):
            ranges.enter_context(nvtx_range(torch, part))
        for key, prepared in warm.items():
            try:
                with nvtx_range(torch, f"{name}/{key}"):
                    prepared.call(inp, out)
                sync()
            except Exception as err:  # noqa: BLE001 - as above
                print(f"[{name}] {key}: {type(err).__name__}: {_first_lines(str(err), 3)}", file=sys.stderr)
                if not healthy():
                    return EXIT_RESTART
    return 0


@contextlib.contextmanager
def nvtx_range(torch: Any, label: str) -> Iterator[None]:
    torch.cuda.nvtx.range_push(label)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m coach.capture.ladder",
        description="Check and time version-ladder rungs beside their PyTorch peers on this GPU; write "
                    "DIR/<ladder>/results.json (and Nsight Compute reports with --ncu).")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="measure ladders (each in a child process), optionally profile them")
    run_p.add_argument("names", nargs="+", metavar="NAME",
                       help="ladders (folders under kernels/: reduction, matmul/fp32, ...), or 'all'")
    run_p.add_argument("--out", type=Path, required=True, help="folder for <NAME>/results.json and ncu/ reports")
    run_p.add_argument("--ncu", action="store_true", help="then profile every rung once under Nsight Compute")
    run_p.add_argument("--ncu-path", help="the ncu executable (default: found on PATH or under /opt/nvidia)")
    run_p.add_argument("--size", help="measure only this size (a key of the problem's SIZES; default: each "
                                      "size the ladder.toml names, the first into results.json)")
    run_p.add_argument("--only", nargs="+", metavar="KEY",
                       help="a trial: measure only these rungs (ids or file stems) and peers; the results "
                            "file says so and is not imported")
    run_p.add_argument("--budget-s", type=float, default=RUN_BUDGET_S,
                       help=f"start no Nsight Compute pass after this many seconds (default {RUN_BUDGET_S})")
    for name, help_ in (("measure", "(internal) measure one ladder, resuming a partial results file"),
                        ("profile", "(internal) call each rung once for Nsight Compute")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("name")
        p.add_argument("--size", required=True)
        if name == "measure":
            p.add_argument("--out", type=Path, required=True)
            p.add_argument("--only", nargs="+", metavar="KEY")
        else:
            p.add_argument("--rungs", nargs="+", metavar="RUNG", help="only these rungs (file stems)")
            p.add_argument("--picks", nargs="+", metavar="CANDIDATE", default=(),
                           help="tuned rungs launch these candidates (the timed run's choices) untimed")
    args = parser.parse_args(argv)
    names = args.names if args.command == "run" else [args.name]
    known = _known_ladders()
    if names == ["all"]:
        names = args.names = known
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown ladder(s) {', '.join(unknown)}; known: {', '.join(known) or 'none'}")
    if args.size is not None:
        for n in names:
            try:
                sizes = problem_sizes(load_definition(n))
            except InputError as err:
                parser.error(str(err))
            if args.size not in sizes:
                parser.error(f"ladder {n} has no size {args.size!r} (its problem.py's SIZES: {', '.join(sizes)})")
    return args


def _known_ladders() -> list[str]:
    from coach.ladders import ladder_names

    return ladder_names(kernels_dir())


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "run":
        cmd = shlex.join([sys.executable, "-m", "coach.capture.ladder", *(argv if argv is not None else sys.argv[1:])])
        started = _dt.datetime.now(_dt.timezone.utc)
        rc = run(args.names, args.out, size=args.size, ncu=args.ncu, ncu_path=args.ncu_path, command=cmd,
                 budget_s=args.budget_s, only=args.only)
        print(f"done in {(_dt.datetime.now(_dt.timezone.utc) - started).total_seconds():.0f} s; results in {args.out}",
              file=sys.stderr)
        return rc
    if args.command == "measure":
        return run_ladder_child(args.name, args.out, args.size, only=args.only)
    return profile_child(args.name, args.size, args.rungs, picks=args.picks)


if __name__ == "__main__":
    sys.exit(main())
