"""Find NVIDIA's tools and run programs: an argument list (never a shell string), a timeout, a
minimal environment, and one line that says what went wrong.

Where each tool is looked for, in order:

- ``nsys``: ``$COACH_NSYS``, then ``PATH``, then the copy bundled with Nsight Compute
  (``<ncu root>/host/target-linux-x64/nsys``; see ``scripts/nsys-env.sh`` for what it needs).
- ``ncu``: ``$COACH_NCU``, then ``PATH``, then ``<ncu root>/ncu``.
- anything else: ``PATH``.

The Nsight Compute installation ("ncu root") is ``$COACH_NCU_ROOT`` or the newest
``/opt/nvidia/nsight-compute/<version>/``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from coach.errors import ToolError

ENV_OVERRIDE = {"nsys": "COACH_NSYS", "ncu": "COACH_NCU"}
NCU_INSTALL_GLOB = "/opt/nvidia/nsight-compute"
BUNDLED_NSYS = Path("host") / "target-linux-x64" / "nsys"
#: Where each tool sits inside an Nsight Compute installation.
BUNDLE_PATHS = {"ncu": Path("ncu"), "nsys": BUNDLED_NSYS}

#: Variables a profiled program keeps. Nsight Systems stores the whole environment (and the working
#: folder) in its report, so everything else is left out: the reports we ship must not carry a
#: user's paths, tokens or shell settings. CUDA_*, NCCL_* and friends steer the GPU stack, and NCCL's
#: NVLS switch in particular must survive on multi-GPU hosts.
ENV_KEEP = ("PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "VIRTUAL_ENV")
ENV_KEEP_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "NVSHMEM_", "TORCH_", "TRITON_", "CUPY_", "CUBLAS_", "CUDNN_")

#: Lines of a failed tool's stderr shown before the one-line error.
STDERR_TAIL_LINES = 15


@dataclass(frozen=True)
class Tool:
    name: str
    path: str | None  # None when not found
    origin: str  # "COACH_NSYS", "PATH", "Nsight Compute bundle", or "" when not found

    @property
    def found(self) -> bool:
        return self.path is not None


def ncu_roots() -> list[Path]:
    """Nsight Compute installations, newest first (``$COACH_NCU_ROOT`` alone when set)."""
    override = os.environ.get("COACH_NCU_ROOT")
    if override:
        return [Path(override)]
    base = Path(NCU_INSTALL_GLOB)
    if not base.is_dir():
        return []
    return sorted((d for d in base.iterdir() if d.is_dir()), key=lambda d: _version_key(d.name), reverse=True)


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def find(name: str) -> Tool:
    """Locate ``name``; a set but wrong ``$COACH_NSYS``/``$COACH_NCU`` is an error, not a fallback."""
    var = ENV_OVERRIDE.get(name)
    if var and os.environ.get(var):
        path = os.environ[var]
        resolved = shutil.which(path)
        if resolved is None:
            raise ToolError(f"{var}={path} is not an executable file")
        return Tool(name, resolved, var)
    on_path = shutil.which(name)
    if on_path:
        return Tool(name, on_path, "PATH")
    relative = BUNDLE_PATHS.get(name)
    for root in ncu_roots() if relative else []:
        candidate = root / relative
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return Tool(name, str(candidate), "Nsight Compute bundle")
    return Tool(name, None, "")


INSTALL_HINT = {
    "nsys": "install Nsight Systems (or source scripts/nsys-env.sh where Nsight Compute bundles it), "
            "or set COACH_NSYS to its nsys",
    "ncu": "install Nsight Compute, or set COACH_NCU to its ncu",
    "nvcc": "install the CUDA toolkit",
    "nvidia-smi": "install the NVIDIA driver",
}


def require(name: str) -> str:
    """The path of ``name`` or a ``ToolError`` that says how to get it."""
    tool = find(name)
    if not tool.found:
        raise ToolError(f"{name} not found: {INSTALL_HINT.get(name, 'install it or put it on PATH')}")
    return tool.path  # type: ignore[return-value]


def minimal_env(extra: dict[str, str] | None = None, *, home: str | Path | None = None) -> dict[str, str]:
    """The environment a profiled program gets: ``ENV_KEEP`` and ``ENV_KEEP_PREFIXES`` only."""
    env = {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES)}
    env["PYTHONUNBUFFERED"] = "1"
    if home is not None:
        env["HOME"] = str(home)
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run(argv: list[str], *, what: str, timeout: float, cwd: str | Path | None = None,
        env: dict[str, str] | None = None, check: bool = True) -> Completed:
    """Run ``argv`` and return its output; raise ``ToolError`` with one line when it cannot start,
    times out, or (with ``check``) exits non-zero. On failure the last lines of its stderr are
    written to our stderr first, so the user sees the tool's own words.

    The program runs in its own process group, and a timeout ends the whole group: profilers start
    children (the application, an importer) that must not outlive them.
    """
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                    start_new_session=True)
        except FileNotFoundError:
            raise ToolError(f"{what}: {argv[0]} not found") from None
        except PermissionError:
            raise ToolError(f"{what}: {argv[0]} is not executable") from None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise ToolError(f"{what} timed out after {timeout:g} s (raise the limit with --timeout)") from None
        except BaseException:
            _kill_group(proc)
            raise
        out.seek(0)
        err.seek(0)
        done = Completed(argv, proc.returncode, _decode(out.read()), _decode(err.read()), time.monotonic() - start)
    if check and done.returncode != 0:
        show_tail(done.stderr or done.stdout)
        raise ToolError(f"{what} failed (exit {_exit_text(done.returncode)}): {last_line(done.stderr or done.stdout)}")
    return done


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"{code}, {signal.Signals(-code).name}"
        except ValueError:
            return str(code)
    return str(code)


#: Lines that say nothing about why a program failed: the profilers' own progress and status lines
#: (nsys also reports a failed import of its capture this way), skipped when choosing the one line.
_NOISE = re.compile(r"^(==PROF==|Collecting data|Generating|Generated:|Processing|Importer error status|"
                    r"Unable to retrieve the importer|\s*/\S+\.(qdstrm|nsys-rep)$|\[\d/\d\]|\s*$)")


def last_line(text: str, limit: int = 240) -> str:
    """The most telling line of a tool's output: its last ``==ERROR==`` line, else its last
    non-noise line; shortened to ``limit`` characters."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("==ERROR==")]
    useful = errors or [ln for ln in lines if not _NOISE.match(ln)] or lines
    line = useful[-1] if useful else "no output"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def show_tail(text: str) -> None:
    lines = [ln for ln in text.splitlines() if ln.strip()][-STDERR_TAIL_LINES:]
    for ln in lines:
        sys.stderr.write(f"  | {ln}\n")
    sys.stderr.flush()


def version_line(path: str, *, timeout: float = 30) -> str | None:
    """The line of ``path --version`` that names the version, or None if it does not run."""
    try:
        done = run([path, "--version"], what=f"{Path(path).name} --version", timeout=timeout, check=False)
    except ToolError:
        return None
    if done.returncode != 0:
        return None
    text = done.stdout + "\n" + done.stderr
    for ln in text.splitlines():
        if re.search(r"\d+\.\d+", ln) and ("ersion" in ln or "release" in ln):
            return ln.strip()
    return last_line(text) if text.strip() else None
