"""``coach doctor``: what this machine can do with coach, what is missing, and how to get it.

Each check names a component, says whether it works (``ok``), is absent (``missing``), is there but
cannot do its job (``broken``), or works with a limit worth knowing (``limited``), and gives the
fix. The capabilities at the end (read traces, profile, record) follow from the checks.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from coach.capture import probe, tools
from coach.errors import ToolError

OK, MISSING, BROKEN, LIMITED = "ok", "missing", "broken", "limited"

NSYS_ENV_FIX = ("source scripts/nsys-env.sh DEBS_DIR (DEBS_DIR holds libdw1 and libelf1, fetched with "
                "scripts/fetch-nsys-deps.sh): it unpacks them under /tmp, links host/host-linux-x64 and "
                "puts the bundled nsys on PATH")
#: The oldest Nsight Systems whose importer reads the reports our H200 recordings were made with
#: (2025.3): a report opens only in the same or a newer version.
NSYS_REPORT_YEAR = 2025


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class Capability:
    what: str
    ok: bool
    needs: tuple[str, ...]  # the checks it depends on that are not ok


def run_checks(*, self_test: bool = True) -> list[Check]:
    """Probe the machine. ``self_test`` profiles ``true`` with nsys (about a second) to prove
    that it can import its own captures."""
    checks = _gpu_checks()
    checks.append(_nvcc_check())
    checks.append(_ncu_check())
    checks.append(_nsys_check(self_test))
    checks.extend(_python_checks())
    return checks


def _gpu_checks() -> list[Check]:
    found, why = probe.gpus()
    if not found:
        fix = ("coach reads recorded traces without a GPU (coach run scenario-NN, coach load); "
               "profiling and recording need an NVIDIA GPU with its driver")
        return [Check("GPU", MISSING, why, fix), Check("driver", MISSING, "no NVIDIA driver answered"),
                Check("CUDA", MISSING, "no NVIDIA driver answered")]
    g = found[0]
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    detail = f"{g.name}{more}, {g.memory_mib} MiB, compute capability {g.compute_capability}"
    cuda = probe.cuda_driver_version()
    return [Check("GPU", OK, detail), Check("driver", OK, g.driver),
            Check("CUDA", OK if cuda else MISSING, f"{cuda} (the driver's)" if cuda else "nvidia-smi names none")]


def _nvcc_check() -> Check:
    tool, version = probe.tool_version("nvcc")
    if not tool.found:
        return Check("nvcc", MISSING, "not found", "install the CUDA toolkit to build .cu files ahead of time "
                                                   "(scenarios compile their kernels at run time through NVRTC)")
    if version is None:
        return Check("nvcc", BROKEN, f"{tool.path} does not run", "reinstall the CUDA toolkit")
    return Check("nvcc", OK, f"{version} ({tool.path})")


def _ncu_check() -> Check:
    try:
        tool = tools.find("ncu")
    except ToolError as err:  # a wrong COACH_NCU
        return Check("ncu", BROKEN, str(err), "fix or unset COACH_NCU")
    if not tool.found:
        return Check("ncu", MISSING, "not found", tools.INSTALL_HINT["ncu"])
    version = tools.version_line(tool.path)
    if version is None:
        return Check("ncu", BROKEN, f"{tool.path} does not run", "reinstall Nsight Compute")
    return Check("ncu", OK, f"{version} ({tool.path}, from {tool.origin})")


def _nsys_check(self_test: bool) -> Check:
    try:
        tool = tools.find("nsys")
    except ToolError as err:  # a wrong COACH_NSYS
        return Check("nsys", BROKEN, str(err), "fix or unset COACH_NSYS")
    if not tool.found:
        fix = tools.INSTALL_HINT["nsys"] + "; coach reads .sqlite exports without it"
        return Check("nsys", MISSING, "not found", fix)
    bundle_problem = probe.bundled_nsys_problem(tool.path)
    version = tools.version_line(tool.path)
    where = f"{tool.path}, from {tool.origin}"
    if version is None:
        fix = NSYS_ENV_FIX if bundle_problem is not None or tool.origin == "Nsight Compute bundle" \
            else "reinstall Nsight Systems"
        return Check("nsys", BROKEN, f"{where} does not run", fix)
    year = _year(version)
    old = year is not None and year < NSYS_REPORT_YEAR
    old_note = (f"; nsys {year} cannot open .nsys-rep reports from {NSYS_REPORT_YEAR} (pass their "
                ".sqlite exports instead)") if old else ""
    if bundle_problem:
        return Check("nsys", BROKEN, f"{version} ({where}): cannot import its captures: {bundle_problem}",
                     NSYS_ENV_FIX)
    if not self_test:
        return Check("nsys", LIMITED if old else OK, f"{version} ({where}); not test-run (--quick){old_note}")
    result = probe.nsys_self_test(tool.path)
    if result.ok:
        return Check("nsys", LIMITED if old else OK, f"{version} ({where}); profiled and imported a test run"
                     + old_note, "install Nsight Systems 2025.3 or newer" if old else "")
    bundled = tool.origin == "Nsight Compute bundle" or "target-linux-x64" in tool.path
    fix = NSYS_ENV_FIX if bundled else ("install a complete Nsight Systems (2025.3 or newer) to profile; "
                                        "coach reads .sqlite exports without it")
    return Check("nsys", BROKEN, f"{version} ({where}): {result.problem}{old_note}", fix)


def _year(version: str) -> int | None:
    m = re.search(r"\b(20\d\d)\.\d", version)
    return int(m.group(1)) if m else None


def _python_checks() -> list[Check]:
    versions = probe.package_versions()
    gpu_fix = "pip install 'coach[gpu]' (needed only to run the scenario and ladder programs)"
    out = []
    torch_version = versions["torch"]
    if torch_version is None:
        out.append(Check("torch", MISSING, "not installed", gpu_fix))
    else:
        cuda = probe.torch_cuda()
        if cuda.get("available"):
            out.append(Check("torch", OK, f"{torch_version}, CUDA {cuda.get('cuda')}, sees {cuda.get('device')}"))
        else:
            why = cuda.get("error") or (f"built for CUDA {cuda.get('cuda')}, but sees no GPU" if cuda.get("cuda")
                                        else "a CPU-only build")
            out.append(Check("torch", LIMITED, f"{torch_version}: {why}",
                             "install a CUDA build of torch on a GPU machine to run the programs"))
    for name in ("triton", "cupy", "cuda.core"):
        v = versions[name]
        out.append(Check(name, OK, v) if v else Check(name, MISSING, "not installed", gpu_fix))
    ingest_fix = "pip install coach (its dependencies); needed to read profiles, not to record them"
    out.append(Check("polars", OK, versions["polars"]) if versions["polars"]
               else Check("polars", MISSING, "not installed (coach cannot read profiles here)", ingest_fix))
    out.append(Check("ncu_report", OK, versions["ncu_report"]) if versions["ncu_report"]
               else Check("ncu_report", MISSING, "not installed (.ncu-rep files cannot be read here; "
                                                 "ncu --csv exports can)", "pip install ncu-report"))
    return out


def capabilities(checks: list[Check]) -> list[Capability]:
    ok = {c.name for c in checks if c.status in (OK, LIMITED)}
    nsys_ok = any(c.name == "nsys" and c.status == OK for c in checks)
    torch_gpu = any(c.name == "torch" and c.status == OK for c in checks)
    usable = ok | ({"nsys (working)"} if nsys_ok else set()) | ({"torch (with a GPU)"} if torch_gpu else set())

    def cap(what: str, needs: tuple[str, ...]) -> Capability:
        missing = tuple(n for n in needs if n not in usable)
        return Capability(what, not missing, missing)

    return [
        cap("read recorded traces and reports (coach run, coach load)", ("polars",)),
        cap("read .ncu-rep files", ("polars", "ncu_report")),
        cap("profile a program with Nsight Systems (coach profile --nsys)", ("GPU", "nsys (working)")),
        cap("profile a program with Nsight Compute (coach profile --ncu)", ("GPU", "ncu")),
        cap("record the scenarios (coach record)",
            ("GPU", "ncu", "nsys (working)", "torch (with a GPU)", "cupy")),
    ]


def report(checks: list[Check]) -> dict[str, Any]:
    return {"checks": [asdict(c) for c in checks],
            "capabilities": [{"what": c.what, "ok": c.ok, "needs": list(c.needs)} for c in capabilities(checks)]}


def format_text(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{c.status:<8} {c.name:<{width}}  {c.detail}")
        if c.fix and c.status != OK:
            lines.append(f"{'':<8} {'':<{width}}  fix: {c.fix}")
    lines.append("")
    lines.append("What works here:")
    for cap in capabilities(checks):
        needs = f"  (needs {', '.join(cap.needs)})" if cap.needs else ""
        lines.append(f"  {'yes' if cap.ok else 'no ':<3}  {cap.what}{needs}")
    return "\n".join(lines)
