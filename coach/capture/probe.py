"""What is on this machine: the GPU and driver, NVIDIA's tools and their versions, the Python GPU
stack, the project's commit. ``coach doctor`` reports these; ``coach record`` stores them as the
provenance of every recording. Standard library only; each probe answers within seconds and never
raises for something that is merely absent.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coach.capture import tools
from coach.errors import ToolError

#: nvidia-smi --query-gpu fields, in the order they are printed.
GPU_FIELDS = ("name", "driver_version", "memory.total", "compute_cap", "clocks.max.sm", "clocks.max.memory")
#: Python distributions worth naming, by the import name they provide.
PACKAGES = {
    "torch": ("torch",),
    "triton": ("triton",),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"),
    "cuda.core": ("cuda-core", "cuda_core"),
    "numpy": ("numpy",),
    "polars": ("polars",),
    "ncu_report": ("ncu-report", "ncu_report"),
}
PROBE_TIMEOUT_S = 60.0
#: A tiny capture of ``true`` shows whether nsys can turn its raw stream (.qdstrm) into a report.
NSYS_SELF_TEST_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    driver: str
    memory_mib: int | None
    compute_capability: str | None
    max_sm_clock_mhz: int | None
    max_memory_clock_mhz: int | None


def gpus() -> tuple[list[Gpu], str]:
    """The GPUs nvidia-smi lists and the CUDA version the driver supports, or ([], why not)."""
    smi = tools.find("nvidia-smi")
    if not smi.found:
        return [], "nvidia-smi not found (no NVIDIA driver installed)"
    try:
        done = tools.run([smi.path, f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader,nounits"],
                         what="nvidia-smi", timeout=PROBE_TIMEOUT_S, check=False)
    except ToolError as err:
        return [], str(err)
    if done.returncode != 0:
        return [], f"nvidia-smi: {tools.last_line(done.stdout + done.stderr)}"
    found = []
    for i, line in enumerate(ln for ln in done.stdout.splitlines() if ln.strip()):
        cells = [c.strip() for c in line.split(",")]
        cells += [""] * (len(GPU_FIELDS) - len(cells))
        found.append(Gpu(index=i, name=cells[0], driver=cells[1], memory_mib=_int(cells[2]),
                         compute_capability=cells[3] or None, max_sm_clock_mhz=_int(cells[4]),
                         max_memory_clock_mhz=_int(cells[5])))
    if not found:
        return [], "nvidia-smi lists no GPU"
    return found, ""


def cuda_driver_version() -> str | None:
    """The CUDA version the driver supports ("CUDA Version: 13.0" in nvidia-smi's header)."""
    smi = tools.find("nvidia-smi")
    if not smi.found:
        return None
    try:
        done = tools.run([smi.path], what="nvidia-smi", timeout=PROBE_TIMEOUT_S, check=False)
    except ToolError:
        return None
    m = re.search(r"CUDA Version:\s*([\d.]+)", done.stdout)
    return m.group(1) if m else None


def _int(text: str) -> int | None:
    try:
        return int(float(text))
    except ValueError:
        return None


def tool_version(name: str) -> tuple[tools.Tool, str | None]:
    """Where ``name`` is and its version line (None if it is missing or does not run)."""
    try:
        tool = tools.find(name)
    except ToolError:
        return tools.Tool(name, None, ""), None
    return tool, tools.version_line(tool.path) if tool.found else None


def package_versions() -> dict[str, str | None]:
    """Installed versions of the GPU stack and of what ingest needs, without importing them."""
    out: dict[str, str | None] = {}
    for module, dists in PACKAGES.items():
        out[module] = None
        if importlib.util.find_spec(module.split(".")[0]) is None:
            continue
        for dist in dists:
            try:
                out[module] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return out


_TORCH_PROBE = (
    "import json, torch\n"
    "ok = torch.cuda.is_available()\n"
    "print(json.dumps({'available': ok, 'cuda': torch.version.cuda,\n"
    "                  'device': torch.cuda.get_device_name(0) if ok else None}))\n"
)


def torch_cuda() -> dict[str, Any]:
    """Whether torch sees a GPU, asked in a child process (importing torch here would cost seconds
    and gigabytes of address space for a question)."""
    if importlib.util.find_spec("torch") is None:
        return {"available": False, "error": "torch is not installed"}
    try:
        done = tools.run([sys.executable, "-c", _TORCH_PROBE], what="torch probe", timeout=PROBE_TIMEOUT_S,
                         check=False)
    except ToolError as err:
        return {"available": False, "error": str(err)}
    if done.returncode != 0:
        return {"available": False, "error": tools.last_line(done.stderr)}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"available": False, "error": "torch probe printed no result"}


def git_commit(root: Path | None = None) -> str | None:
    """The project's commit (with ``-dirty`` if the tree has changes); ``$COACH_GIT_COMMIT`` wins,
    for copies of the tree that travel without their .git folder."""
    if os.environ.get("COACH_GIT_COMMIT"):
        return os.environ["COACH_GIT_COMMIT"]
    root = root or Path(__file__).resolve().parents[2]
    git = tools.find("git")
    if not git.found or not (root / ".git").exists():
        return None
    try:
        head = tools.run([git.path, "rev-parse", "HEAD"], what="git", timeout=30, cwd=root, check=False)
        dirty = tools.run([git.path, "status", "--porcelain", "--untracked-files=no"], what="git", timeout=30,
                          cwd=root, check=False)
    except ToolError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


@dataclass(frozen=True)
class NsysSelfTest:
    ok: bool
    problem: str  # empty when ok


def nsys_self_test(nsys: str) -> NsysSelfTest:
    """Profile ``true`` and export it: proves that nsys can import its own captures.

    A broken installation writes the raw ``.qdstrm`` stream and then reports that "the importer
    binary and its dependencies were not found" (the Nsight Systems bundled with Nsight Compute,
    before scripts/nsys-env.sh has run, and some distribution packages).
    """
    true = tools.find("true")
    if not true.found:
        return NsysSelfTest(False, "no 'true' program to profile")
    with tempfile.TemporaryDirectory(prefix="coach-doctor-") as scratch:
        try:
            done = tools.run([nsys, "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
                              "--force-overwrite=true", "--output=selftest", true.path],
                             what="nsys profile", timeout=NSYS_SELF_TEST_TIMEOUT_S, cwd=scratch,
                             env=tools.minimal_env(home=scratch), check=False)
        except ToolError as err:
            return NsysSelfTest(False, str(err))
        report = Path(scratch) / "selftest.nsys-rep"
        text = done.stdout + "\n" + done.stderr
        if report.is_file():
            return NsysSelfTest(True, "")
        if "importer" in text.lower():
            line = next(ln.strip() for ln in text.splitlines() if "importer" in ln.lower())
            return NsysSelfTest(False, f"it captures but cannot import its captures ({line})")
        if (Path(scratch) / "selftest.qdstrm").is_file():
            return NsysSelfTest(False, "it wrote a .qdstrm stream but no .nsys-rep report")
        return NsysSelfTest(False, f"no report written: {tools.last_line(text)}")


def bundled_nsys_problem(nsys_path: str) -> str | None:
    """For the nsys inside an Nsight Compute installation: what stops it importing captures, if
    the known cause is visible (the host-linux-x64 folder its importer is looked for in)."""
    target = Path(nsys_path).resolve().parent
    if target.name != "target-linux-x64" or target.parent.name != "host":
        return None
    host = target.parent
    if not (host / "host-linux-x64").exists():
        return f"{host}/host-linux-x64 is missing (the importer lives in {host}/linux-desktop-glibc_2_11_3-x64)"
    return None


def machine(command: list[str] | None = None) -> dict[str, Any]:
    """Provenance of a recording: GPU, driver, CUDA, tool and package versions, commit, date."""
    found, why = gpus()
    ncu, ncu_version = tool_version("ncu")
    nsys, nsys_version = tool_version("nsys")
    nvcc, nvcc_version = tool_version("nvcc")
    return {
        "gpu": asdict(found[0]) if found else None,
        "gpu_count": len(found),
        "gpu_problem": why or None,
        "cuda_driver_version": cuda_driver_version(),
        "ncu": ncu_version,
        "nsys": nsys_version,
        "nvcc": nvcc_version,
        "python": platform.python_version(),
        "packages": package_versions(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "git_commit": git_commit(),
        "command": command,
        "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
    }


def gpu_slug(name: str) -> str:
    """A folder name for a GPU: 'NVIDIA H200' -> 'h200', 'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3'."""
    text = re.sub(r"^(nvidia|geforce|tesla)\s+", "", name.strip().lower())
    text = re.sub(r"^(nvidia|geforce|tesla)\s+", "", text)
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    return slug or "unknown-gpu"
