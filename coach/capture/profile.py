"""Run a command under Nsight Systems and/or Nsight Compute and keep the raw reports.

The program runs from a scratch folder with a minimal environment (``tools.minimal_env``), because
Nsight Systems stores the working folder and every environment variable in its report. Reports are
written in that scratch folder under relative names (the export stores the paths it was given) and
moved into the output folder only when every step has succeeded.

    nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none ...   # then nsys export --type=sqlite
    ncu --clock-control none --set full --import-source yes -k regex:K -c N ...
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coach.capture import probe, tools
from coach.capture.staging import staged_folder
from coach.errors import CoachError, ToolError

#: The Nsight Systems collection coach needs: CUDA API and GPU activity plus NVTX ranges. CPU
#: sampling and context switches are off: with them a 5-second Python run made a 2 GB capture on
#: the H200 machine, and the analysis does not read them.
NSYS_PROFILE_FLAGS = ("--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none")
#: Record only between the program's cudaProfilerStart and cudaProfilerStop (``harness.time_cuda``
#: makes those calls around the timed repetitions), and let the program run on to its end afterwards
#: (the default, ``stop-shutdown``, would end it before it prints its result).
NSYS_TIMED_ONLY_FLAGS = ("--capture-range=cudaProfilerApi", "--capture-range-end=stop")
#: Nsight Compute locks clocks to base by default; ``none`` measures the GPU as it runs (and leaves
#: a shared machine's clock settings alone).
NCU_FIXED_FLAGS = ("--clock-control", "none", "--import-source", "yes")
DEFAULT_NCU_SET = "full"
DEFAULT_TIMEOUT_S = 600.0
PROVENANCE_FILE = "provenance.json"


@dataclass(frozen=True)
class NcuOptions:
    set: str = DEFAULT_NCU_SET
    kernel: str | None = None  # regular expression on the kernel's function name
    launch_count: int | None = None

    def filters(self) -> list[str]:
        out = []
        if self.kernel:
            out += ["-k", self.kernel if self.kernel.startswith("regex:") else f"regex:{self.kernel}"]
        if self.launch_count:
            out += ["-c", str(self.launch_count)]
        return out


def resolve_command(command: Sequence[str], cwd: Path | None = None) -> list[str]:
    """Make ``command`` runnable from another folder: the program found on PATH (or relative to
    ``cwd``), and every argument that names an existing file or folder relative to ``cwd`` made
    absolute. Other arguments pass unchanged."""
    if not command:
        raise CoachError("no command given: put it after '--', e.g. coach profile --nsys -- python train.py")
    base = Path(cwd or Path.cwd())
    first = command[0]
    if os.sep in first:
        exe = os.path.abspath(base / first)  # not resolve(): a venv's python is a symlink that must stay one
        if not os.path.isfile(exe):
            raise CoachError(f"{first}: no such program")
    else:
        found = shutil.which(first)
        if found is None:
            raise CoachError(f"{first}: not found on PATH")
        exe = found
    rest = [os.path.abspath(base / a) if not a.startswith("-") and (base / a).exists() else a for a in command[1:]]
    return [exe, *rest]


def nsys_capture(nsys: str, command: list[str], scratch: Path, name: str, *, timeout: float,
                 env: dict[str, str], extra_flags: Sequence[str] = ()) -> list[Path]:
    """``nsys profile`` then ``nsys export --type=sqlite``: returns [report, export, log] in scratch.
    ``extra_flags`` follow the standard ones (e.g. ``NSYS_TIMED_ONLY_FLAGS``)."""
    what = f"{_short(command)} under nsys"
    argv = [nsys, "profile", *NSYS_PROFILE_FLAGS, *extra_flags, "--force-overwrite=true", f"--output={name}", *command]
    done = tools.run(argv, what=what, timeout=timeout, cwd=scratch, env=env, check=False)
    log = _write_log(scratch / f"{name}.nsys.log", done)
    report = scratch / f"{name}.nsys-rep"
    if done.returncode != 0:
        tools.show_tail(done.stderr or done.stdout)
        raise ToolError(f"{what} failed (exit {done.returncode}): {tools.last_line(done.stderr or done.stdout)}")
    if not report.is_file():
        text = done.stdout + "\n" + done.stderr
        tools.show_tail(text)
        importer = [ln.strip() for ln in text.splitlines() if "importer" in ln.lower()]
        if importer:
            raise ToolError(f"nsys wrote no report: {importer[0]} (run coach doctor)")
        raise ToolError(f"nsys wrote no report: {tools.last_line(text)}")
    export = scratch / f"{name}.sqlite"
    tools.run([nsys, "export", "--type=sqlite", "--force-overwrite=true", f"--output={export.name}", report.name],
              what="nsys export", timeout=timeout, cwd=scratch, env=env)
    if not export.is_file() or export.stat().st_size == 0:
        raise ToolError(f"nsys export wrote no {export.name}")
    return [report, export, log]


def ncu_capture(ncu: str, command: list[str], scratch: Path, name: str, options: NcuOptions, *, timeout: float,
                env: dict[str, str]) -> list[Path]:
    """``ncu --set SET -k regex:K -c N --export NAME``: returns [report, log] in scratch."""
    what = f"{_short(command)} under ncu"
    argv = [ncu, *NCU_FIXED_FLAGS, "--set", options.set, *options.filters(), "--force-overwrite",
            "--export", name, *command]
    done = tools.run(argv, what=what, timeout=timeout, cwd=scratch, env=env, check=False)
    log = _write_log(scratch / f"{name}.ncu.log", done)
    report = scratch / f"{name}.ncu-rep"
    text = done.stdout + "\n" + done.stderr
    if done.returncode != 0:
        tools.show_tail(text)
        raise ToolError(f"{what} failed (exit {done.returncode}): {tools.last_line(text)}")
    if not report.is_file():
        tools.show_tail(text)
        if "No kernels were profiled" in text:
            which = f" matching {options.kernel!r}" if options.kernel else ""
            raise ToolError(f"ncu profiled no kernels{which}: check --kernel against the kernel names")
        raise ToolError(f"ncu wrote no report: {tools.last_line(text)}")
    return [report, log]


def profile(command: Sequence[str], out: Path, *, nsys: bool = True, ncu: NcuOptions | None = None,
            timeout: float = DEFAULT_TIMEOUT_S, name: str = "report") -> list[Path]:
    """Profile ``command`` into the new folder ``out``; returns the files written there.

    Either the whole folder is written (reports, exports, logs, provenance.json) or nothing is.
    """
    if not nsys and ncu is None:
        raise CoachError("nothing to do: pass --nsys, --ncu SET, or both")
    argv = resolve_command(command)
    nsys_path = tools.require("nsys") if nsys else None
    ncu_path = tools.require("ncu") if ncu is not None else None
    with staged_folder(Path(out)) as stage, tempfile.TemporaryDirectory(prefix="coach-profile-") as tmp:
        scratch = Path(tmp)
        env = tools.minimal_env(home=scratch)
        files: list[Path] = []
        if nsys_path:
            files += nsys_capture(nsys_path, argv, scratch, name, timeout=timeout, env=env)
        if ncu_path and ncu is not None:
            files += ncu_capture(ncu_path, argv, scratch, name, ncu, timeout=timeout, env=env)
        moved = [Path(shutil.move(str(f), stage / f.name)) for f in files]
        provenance = probe.machine(command=argv)
        provenance["profile"] = {"nsys_flags": list(NSYS_PROFILE_FLAGS) if nsys else None,
                                 "ncu": {"set": ncu.set, "kernel": ncu.kernel, "launch_count": ncu.launch_count}
                                 if ncu else None, "timeout_s": timeout}
        (stage / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2) + "\n")
    return [Path(out) / f.name for f in moved] + [Path(out) / PROVENANCE_FILE]


def _write_log(path: Path, done: tools.Completed) -> Path:
    path.write_text(f"$ {' '.join(done.argv)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    return path


def _short(command: Sequence[str]) -> str:
    shown = " ".join(Path(command[0]).name if i == 0 else a for i, a in enumerate(command[:4]))
    return f"`{shown}{' ...' if len(command) > 4 else ''}`"
