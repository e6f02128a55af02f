"""Static SASS evidence: how many of each machine instruction a kernel's compiled code holds.

A compute-bound rung's claim ("this rung moves the FMAs onto the tensor cores", "loads are now
128-bit") is visible in its SASS before it is measured: HGMMA (Hopper warpgroup MMA) against HMMA
(warp-level ``mma.sync``) against FFMA (CUDA-core FMA), LDS/LDG against LDGSTS (``cp.async``) and
UTMALDG (TMA). The runner disassembles each rung's cubin with ``cuobjdump -sass`` (or ``nvdisasm``)
and records, per kernel, the count of every opcode mnemonic (``HGMMA.64x128x16.F32.BF16`` counts as
``HGMMA``, ``LDG.E.128`` as ``LDG``). These are static counts, instructions in the code, not
executions: a loop body counts once. (What ran is Nsight Compute's InstructionStats section: the
executed count of each opcode, which coach.analyze.ladder_evidence prefers.)

Three listings are read: ``cuobjdump -sass`` (``/*0060*/  HGMMA... ;  /* 0x... */`` under
``Function : NAME``), ``nvdisasm`` (the same instruction lines under ``.text.NAME:``) and Triton's
``CompiledKernel.asm["sass"]`` (triton/tools/disasm.py rewrites cuobjdump's listing as
``Function:NAME`` then one ``CTRL<tab>INSTRUCTION;`` line per instruction, CTRL being the decoded
scheduling fields ``--:-:0:Y:4``, and ``LBBn:`` labels for branch targets). A kernel whose listing
yields no instruction is an error (an unrecognised format), never an empty histogram.

Instructions predicated on ``@!PT`` (never true) are left out: ptxas emits them as filler
(``@!PT LDS RZ, [RZ]``) and they never execute.

Standard library only: the parser is tested without a GPU on a committed disassembly
(tests/data/ladders/sass/).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

#: cuobjdump -sass names each kernel so; nvdisasm labels its code section so.
_CUOBJDUMP_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
_NVDISASM_TEXT = re.compile(r"^\.text\.(\S+):\s*$")
_SECTION = re.compile(r"^\s*\.section\s+(\S+?),")
#: An instruction line: ``/*0060*/  [@P0 ]OPCODE.MODIFIERS operands ;`` (cuobjdump, nvdisasm), or
#: Triton's ``--:-:0:Y:4<tab>[@P0 ]OPCODE.MODIFIERS operands;`` (wait mask, read and write barriers,
#: yield, stall cycles).
_INSTRUCTION = re.compile(r"^(?:\s*/\*[0-9a-f]{4,}\*/\s+|(?:--|\d\d):[-0-7]:[-0-7]:[-Y]:[0-9a-f]\t)(?:\{\s*)?"
                          r"(?P<pred>@!?U?P\w+\s+)?(?P<op>[A-Z][A-Z0-9_]*)(?:\.\S*)?[\s;]")
#: A predicate that is never true: the instruction never executes.
_NEVER = "@!PT"
TIMEOUT_S = 60


def opcode_histograms(text: str) -> dict[str, dict[str, int]]:
    """kernel -> opcode mnemonic -> count, from ``cuobjdump -sass``, ``nvdisasm`` or Triton's
    ``asm["sass"]`` output."""
    counts: dict[str, Counter[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if m := _CUOBJDUMP_FUNCTION.match(line) or _NVDISASM_TEXT.match(line):
            current = m.group(1)
            counts.setdefault(current, Counter())
        elif (s := _SECTION.match(line)) and not s.group(1).startswith(".text."):
            current = None  # nvdisasm: a data section (.nv.info, .nv.constant0, ...) follows the code
        elif current is not None and (i := _INSTRUCTION.match(line)):
            if (i.group("pred") or "").strip() != _NEVER:
                counts[current][i.group("op")] += 1
    return {kernel: dict(sorted(c.items())) for kernel, c in counts.items()}


def find_disassembler() -> list[str] | None:
    """The command that prints a cubin's SASS: ``cuobjdump -sass`` (else ``nvdisasm``), from PATH, the
    CUDA toolkit, or the copies the Triton wheel carries; None when there is neither."""
    folders = [Path("/usr/local/cuda/bin")]
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.origin:
        folders.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin")
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", [])):
        found = shutil.which(tool) or next((str(f / tool) for f in folders if (f / tool).is_file()), None)
        if found:
            return [found, *args]
    return None


def disassemble(cubin: bytes) -> tuple[str, str]:
    """(the SASS text of ``cubin``, the command that printed it). Raises RuntimeError when no
    disassembler is found or it fails."""
    tool = find_disassembler()
    if tool is None:
        raise RuntimeError("no cuobjdump or nvdisasm found (CUDA toolkit, or the Triton wheel's copies)")
    with tempfile.TemporaryDirectory(prefix="coach-sass-") as folder:
        path = Path(folder) / "rung.cubin"
        path.write_bytes(cubin)
        proc = subprocess.run([*tool, str(path)], capture_output=True, text=True, timeout=TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(tool[0]).name} failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    return proc.stdout, " ".join([Path(tool[0]).name, *tool[1:]])


def sass_record(text: str, source: str, kernels: list[str] | tuple[str, ...] = ()) -> dict[str, object]:
    """results.json's ``sass`` entry: the histogram of each kernel (of ``kernels``, when given: the
    cubin of a CUDA rung may hold helpers the rung does not launch) and what produced it. Raises
    RuntimeError where there is no kernel, or a kernel without one instruction read."""
    histograms = opcode_histograms(text)
    if kernels:
        histograms = {k: v for k, v in histograms.items() if k in kernels}
    if not histograms:
        raise RuntimeError(f"{source} printed no kernel's SASS")
    if empty := sorted(k for k, v in histograms.items() if not v):
        raise RuntimeError(f"{source}: no instruction read for {', '.join(empty)} (a listing format this parser does not know)")
    return {"source": source, "kernels": histograms}


# --------------------------------------------------------------------------------------------
# Triton rungs: the compiled kernels Triton keeps after a call
# --------------------------------------------------------------------------------------------


def triton_sass(module: object, names: list[str] | tuple[str, ...]) -> dict[str, object]:
    """The ``sass`` entry of a Triton rung whose kernels have run: for each ``@triton.jit`` function
    named in ``names`` (an attribute of the rung's module, possibly under ``@triton.autotune`` or
    ``@triton.heuristics``) that Triton compiled, the SASS of the variant compiled for the call.

    A ``@triton.jit`` helper that kernels call is inlined into them and never compiled on its own:
    it is skipped; none of ``names`` compiled is an error. The variant's cubin is disassembled here
    (the whole listing, as for CUDA rungs); Triton's own ``asm["sass"]`` is the fallback where no
    disassembler is found (Triton may know one through TRITON_CUOBJDUMP_PATH)."""
    histograms: dict[str, dict[str, int]] = {}
    sources: set[str] = set()
    compiled: dict[str, object] = {}
    for name in names:
        jit, tuner = _unwrap(getattr(module, name))
        if variants := compiled_variants(jit):
            compiled[name] = _chosen(name, variants, tuner)
    if not compiled:
        raise RuntimeError(f"Triton holds no compiled kernel of {', '.join(names)} (were they launched?)")
    for kernel in compiled.values():
        if find_disassembler() is not None:
            text, source = disassemble(bytes(kernel.asm["cubin"]))
        else:
            text, source = kernel.asm["sass"], "Triton asm['sass']"
        record = sass_record(text, source)
        histograms.update(record["kernels"])  # type: ignore[arg-type]
        sources.add(source)
    return {"source": ", ".join(sorted(sources)), "kernels": histograms}


def _unwrap(obj: object) -> tuple[object, object | None]:
    """The JIT function under an autotuner or heuristics wrapper (each has ``fn``), and the autotuner
    (the wrapper with ``configs``)."""
    tuner = None
    while not _is_jit(obj) and hasattr(obj, "fn"):
        if hasattr(obj, "configs"):
            tuner = obj
        obj = obj.fn  # type: ignore[attr-defined]
    return obj, tuner


def _is_jit(obj: object) -> bool:
    """A ``JITFunction`` of Triton 3.2 or later: it keeps its kernels in ``device_caches``. (An
    ``Autotuner`` holds a ``cache`` dict too, of the configs it chose, so that is no sign of one.)"""
    return hasattr(obj, "device_caches")


def compiled_variants(jit: object) -> list[object]:
    """Every kernel Triton compiled for ``jit``, in compilation order: Triton 3.2 and later keep them
    in ``device_caches[device][0]`` (key -> kernel)."""
    caches = getattr(jit, "device_caches", {})
    return [k for entry in caches.values() for k in (entry[0] if isinstance(entry, tuple) else entry).values()]


def _chosen(name: str, variants: list[object], tuner: object | None) -> object:
    """The variant the call ran: the only one, or the autotuner's best config's (matched on its
    constexpr values, warps and stages)."""
    if len(variants) == 1:
        return variants[0]
    best = getattr(tuner, "best_config", None)
    matches = [v for v in variants if best is not None and _runs_config(v, best)]
    if len(matches) != 1:
        raise RuntimeError(f"{name}: {len(variants)} compiled variants and {len(matches)} match the autotuner's "
                           f"choice ({best})")
    return matches[0]


def _runs_config(compiled: object, config: object) -> bool:
    src, meta = getattr(compiled, "src", None), getattr(compiled, "metadata", None)
    arg_names = getattr(getattr(src, "fn", None), "arg_names", [])
    constants = {(arg_names[k[0]] if isinstance(k, tuple) and len(k) == 1 else k): v
                 for k, v in getattr(src, "constants", {}).items()}
    return (all(constants.get(k) == v for k, v in getattr(config, "kwargs", {}).items())
            and getattr(meta, "num_warps", None) == getattr(config, "num_warps", None)
            and getattr(meta, "num_stages", None) == getattr(config, "num_stages", None))
