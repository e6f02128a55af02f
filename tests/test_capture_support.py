"""Fakes for the capture tests: nvidia-smi, nsys and ncu as small Python scripts on PATH, and a
throw-away scenario. No GPU is needed; the fakes behave like the tools in the ways the capture code
relies on (arguments, exit codes, the files they write, the lines they print on failure).

Each fake's behaviour is chosen with a file beside it, not an environment variable (profiled programs
get a minimal environment): ``set_mode(bin, "nsys", "hang")`` writes ``bin/nsys.mode``. Modes:
nvidia-smi fail; nsys no-import, hang; ncu none, hang. ``hand_out(bin, "nsys", path)`` makes the
fake export (or report) a copy of a real file.
"""

from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

_MODE = """
import sys
from pathlib import Path
_here = Path(__file__)
mode = _here.with_name(_here.name + ".mode").read_text().strip() if _here.with_name(_here.name + ".mode").exists() else "ok"
src = _here.with_name(_here.name + ".src").read_text().strip() if _here.with_name(_here.name + ".src").exists() else ""
"""

FAKE_SMI = _MODE + """
if mode == "fail":
    print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    sys.exit(9)
if any(a.startswith("--query-gpu") for a in sys.argv):
    print("NVIDIA H200, 580.95.05, 143771, 9.0, 1980, 3201")
else:
    print("| NVIDIA-SMI 580.95.05    Driver Version: 580.95.05    CUDA Version: 13.0 |")
"""

# The application starts at the first argument that is not an option (options use --name=value).
FAKE_NSYS = _MODE + """
import shutil, subprocess, time
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0")
    sys.exit(0)
out = next((a.split("=", 1)[1] for a in args if a.startswith("--output=")), "report")
if args[0] == "profile":
    app = args[next(i for i in range(1, len(args)) if not args[i].startswith("-")):]
    if mode == "hang":
        time.sleep(60)
    print("Collecting data...")
    rc = subprocess.call(app)
    if mode == "no-import":
        open(out + ".qdstrm", "wb").write(b"raw")
        print("Importer error status: The importer binary and its dependencies were not found.", file=sys.stderr)
        sys.exit(rc)
    open(out + ".nsys-rep", "wb").write(b"NVIDIA Tegra Profiler Report (fake)")
    sys.exit(rc)
if args[0] == "export":
    if src:
        shutil.copyfile(src, out)
    else:
        open(out, "wb").write(b"SQLite format 3\\x00(fake)")
    sys.exit(0)
sys.exit(2)
"""

FAKE_NCU = _MODE + """
import shutil, subprocess, time
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler")
    print("Version 2025.3.1.0 (build 36398880) (public-release)")
    sys.exit(0)
with_value = {"--clock-control", "--set", "--import-source", "-k", "-c", "--export", "-o"}
i, export = 0, "report"
while i < len(args) and args[i].startswith("-"):
    if args[i] in ("--export", "-o"):
        export = args[i + 1]
    i += 2 if args[i] in with_value else 1
app = args[i:]
if mode == "hang":
    time.sleep(60)
rc = subprocess.call(app)
if rc != 0:
    print(f"==ERROR== The application returned an error code ({rc}).")
    sys.exit(rc)
if mode == "none":
    print("==WARNING== No kernels were profiled.")
    sys.exit(0)
if src:
    shutil.copyfile(src, export + ".ncu-rep")
else:
    open(export + ".ncu-rep", "wb").write(b"NVR\\x00(fake)")
print("==PROF== Report: " + export + ".ncu-rep")
"""


def write_tool(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body).lstrip("\n"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def fake_bin(tmp_path, monkeypatch) -> Path:
    """A PATH holding only the fakes, `true`, and the running Python: no real NVIDIA tool is seen."""
    folder = tmp_path / "bin"
    folder.mkdir()
    write_tool(folder, "nvidia-smi", FAKE_SMI)
    write_tool(folder, "nsys", FAKE_NSYS)
    write_tool(folder, "ncu", FAKE_NCU)
    write_tool(folder, "true", "import sys; sys.exit(0)\n")
    os.symlink(sys.executable, folder / "python")
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setenv("COACH_NCU_ROOT", str(tmp_path / "no-ncu-install"))
    monkeypatch.delenv("COACH_NSYS", raising=False)
    monkeypatch.delenv("COACH_NCU", raising=False)
    return folder


def set_mode(folder: Path, tool: str, mode: str) -> None:
    (folder / f"{tool}.mode").write_text(mode)


def hand_out(folder: Path, tool: str, source: Path) -> None:
    """Make the fake's export (nsys) or report (ncu) a copy of ``source``."""
    (folder / f"{tool}.src").write_text(str(source))


FAKE_SCENARIO = '''
id = "scenario-99"
title = "A fake scenario for the capture tests"
level = "beginner"
tool = "ncu"
symptom = "It takes {slow_ms:.1f} ms."
question = "What would you check first?"
hints = ["Look at the sectors."]

[expected]
bottleneck = "memory-access-pattern"
first_rule = "uncoalesced-global-access"
min_speedup = 1.5

[fix]
id = "coalesce"
summary = "Coalesce."
details = "Make neighbouring threads read neighbouring addresses."

[rubric]
strong = ["Checks sectors per request."]
red_flags = ["Raises occupancy."]

[[evidence]]
name = "sectors_per_request"
label = "sectors per request"
table = "launches"
kernel = "copy"
metric = "global_load_sectors"
per = "global_load_requests"
direction = "down"
slow_range = [16.0, 32.0]

[model]
bound = "dram"
bytes_per_s = 4.0e12
ceiling_source = "a round number for the tests"
sizes = { n = 1024 }
useful_bytes = "8 * n"
flops = "0"

[model.moved_bytes]
slow = "36 * n"
fixed = "8 * n"

[programs.slow]
script = "prog.py"
args = ["--variant", "slow"]

[programs.fixed]
script = "prog.py"
args = ["--variant", "fixed"]

[profile]
ncu = true
nsys = true
ncu_kernel = "copy"
timeout_s = 60
'''

# Prints a result line as a scenario program does. A file FAIL beside it holding "check" makes the
# slow variant's check fail; "crash" makes it exit with an error.
FAKE_PROGRAM = '''
from pathlib import Path
from coach.capture import harness
args = harness.parse_args("fake", warmup=0, repeat=3)
flag = Path(__file__).with_name("FAIL")
fail = flag.read_text().strip() if flag.exists() else ""
if fail == "crash" and args.variant == "slow":
    raise SystemExit("boom: the input was not what the kernel expected")
error = 0.5 if fail == "check" and args.variant == "slow" else 1e-7
times = [2.0, 2.2, 2.1] if args.variant == "slow" else [1.0, 1.1, 0.9]
harness.emit(variant=args.variant, times_ms=times, unit="launch", rel_error=error, tolerance=1e-6, seed=args.seed,
             n=harness.sizes(__file__)["n"])
'''


@pytest.fixture
def fake_data_root(tmp_path, monkeypatch) -> Path:
    """A data root (COACH_DATA) with the fake scenario-99 and an empty traces/."""
    root = tmp_path / "data"
    folder = root / "scenarios" / "scenario-99-fake"
    folder.mkdir(parents=True)
    (folder / "scenario.toml").write_text(FAKE_SCENARIO)
    (folder / "prog.py").write_text(FAKE_PROGRAM)
    (root / "traces").mkdir()
    monkeypatch.setenv("COACH_DATA", str(root))
    return root


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run the coach CLI in this process: (exit code, stdout, stderr)."""
    from coach.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def flat(text: str) -> str:
    """Whitespace folded to single spaces (rich wraps long lines at the terminal width)."""
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# A raw recording of scenario-01 built in the test (until real traces exist). The numbers are made
# up to look like what the scenario predicts; they are not measurements and no test claims they are.
# --------------------------------------------------------------------------------------------

SYNTHETIC_PROVENANCE = {
    "gpu": {"index": 0, "name": "NVIDIA H200", "driver": "580.95.05", "memory_mib": 143771,
            "compute_capability": "9.0", "max_sm_clock_mhz": 1980, "max_memory_clock_mhz": 3201},
    "gpu_count": 1, "cuda_driver_version": "13.0", "ncu": "Version 2025.3.1.0", "nsys": "2025.3.1",
    "date": "2026-12-01T09:30:00+00:00", "git_commit": "synthetic", "command": ["coach", "record", "scenario-01"],
}
# Per variant: kernel, median ms, sectors per request, useful bytes per sector %, DRAM GB read, DRAM %.
SYNTHETIC_SCENARIO_01 = {
    "slow": ("drift_x_aos", 3.45, 32, 12.5, 12.9, 91.0),
    "fixed": ("drift_x_soa", 1.16, 4, 100.0, 3.22, 88.0),
}


def build_raw_scenario_01(raw: Path) -> Path:
    """A raw folder as `coach record scenario-01` writes it, with saved coach profiles in place of
    the .ncu-rep and .sqlite files (the import reads any format coach.ingest.load reads)."""
    import json

    import polars as pl

    from coach.model import Source, make_kernel_profile, make_timeline, save

    folder = raw / "scenario-01"
    folder.mkdir(parents=True)
    variants = {}
    requests = 2 * 402653184 // 32  # two warp-wide loads per 32 particles
    for variant, (kernel, ms, per_request, pct, dram_gb, dram_pct) in SYNTHETIC_SCENARIO_01.items():
        launches = pl.DataFrame({
            "launch_id": [0], "kernel_name": [kernel], "duration_ns": [ms * 1e6],
            "global_load_requests": [float(requests)], "global_load_sectors": [float(requests * per_request)],
            "global_load_bytes_per_sector_pct": [pct], "dram_read_bytes": [dram_gb * 1e9],
            "dram_throughput_pct": [dram_pct],
        })
        save(make_kernel_profile(Source("x.ncu-rep", "ncu-rep", "Nsight Compute", "2025.3.1"), launches=launches),
             folder / f"{variant}.ncu")
        starts = [i * 5_000_000 for i in range(3)]
        kernels = pl.DataFrame({"start_ns": starts, "end_ns": [s + int(ms * 1e6) for s in starts],
                                "dur_ns": [int(ms * 1e6)] * 3, "name": [kernel] * 3})
        save(make_timeline(Source("x.sqlite", "nsys-sqlite", "Nsight Systems", "2025.3.1"), kernels=kernels),
             folder / f"{variant}.nsys")
        (folder / f"{variant}.plain.json").write_text(json.dumps({
            "coach_result": 1, "variant": variant, "ok": True, "rel_error": 3e-8, "tolerance": 1e-6,
            "unit": "launch", "median_ms": ms, "min_ms": ms - 0.01, "times_ms": [ms] * 3, "seed": 1}))
        variants[variant] = {"plain": f"{variant}.plain.json", "ncu": f"{variant}.ncu", "nsys": f"{variant}.nsys"}
    manifest = {"coach_raw_format": 1, "scenario": "scenario-01", "gpu": "h200", "provenance": SYNTHETIC_PROVENANCE,
                "commands": {v: ["python", "particles.py", "--variant", v] for v in variants},
                "variants": variants, "steps": []}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder
