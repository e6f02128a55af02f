"""Fakes for the correctness-recording tests: nvcc and compute-sanitizer as small Python scripts on
PATH (beside test_capture_support's nvidia-smi), so coach.capture.sanitize runs end to end without
a GPU. What they print is made up for the tests: no number from them is a measurement.

- ``nvcc ... -o OUT SOURCE`` writes OUT as a Python program that behaves like a scenario program:
  ``--variant buggy`` fails its check (exit 1), ``--variant fixed`` passes; the scenario 25 program
  (embed.cu) run buggy stops with the CUDA error line of correctness.cuh, at the copy, or at the
  launch check with ``--check-launches``.
- ``compute-sanitizer --tool T --log-file F [--xml --save X] APP...`` runs APP and writes, for a
  buggy run, one record of T's kind at the line in ``compute-sanitizer.line`` (file:line, written by
  the test), for a fixed run a clean summary.

A file beside a fake chooses its mode: ``nvcc.mode`` "fail"; ``compute-sanitizer.mode`` "refuse-xml"
(an older tool that rejects --xml), "hang".
"""

from __future__ import annotations

from pathlib import Path

from test_capture_support import _MODE, write_tool

FAKE_NVCC = _MODE + """
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("nvcc: NVIDIA (R) Cuda compiler driver")
    print("Cuda compilation tools, release 13.0, V13.0.88")
    sys.exit(0)
if mode == "fail":
    print(args[-1] + "(12): error: identifier \\"tile\\" is undefined", file=sys.stderr)
    sys.exit(1)
out = args[args.index("-o") + 1]
source = Path(args[-1]).name
Path(out).write_text(PROGRAM.replace("SOURCE", source))
Path(out).chmod(0o755)
"""

FAKE_PROGRAM = '''#!PYTHON
import json, os, sys
args = sys.argv[1:]
variant = args[args.index("--variant") + 1]
if "SOURCE" == "embed.cu" and variant == "buggy":
    where = "81 in the launch of embed" if "--check-launches" in args else "113 in cudaMemcpy(host_out.data(), out, out_bytes, cudaMemcpyDeviceToHost)"
    print(f'CUDA error cudaErrorIllegalAddress (700) "an illegal memory access was encountered" at embed.cu:{where}', file=sys.stderr)
    sys.exit(2)
ok = variant == "fixed"
print(json.dumps({"coach_result": 1, "variant": variant, "seed": 7, "n": 1024, "mismatches": [0, 0] if ok else [12, 0],
                  "max_mismatches": 0 if ok else 12, "tolerance": 0.0, "blocking": os.environ.get("CUDA_LAUNCH_BLOCKING"),
                  "ok": ok}))
sys.exit(0 if ok else 1)
'''

FAKE_SANITIZER = _MODE + """
import subprocess, time
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("NVIDIA (R) Compute Sanitizer")
    print("Copyright (c) 2020-2025 NVIDIA Corporation")
    print("Version 2025.3.1.0 (build 36398880) (public-release)")
    sys.exit(0)
if mode == "refuse-xml" and "--xml" in args:
    print("========= Error: unrecognised option '--xml'", file=sys.stderr)
    sys.exit(1)
if mode == "hang":
    time.sleep(60)
with_value = {"--tool", "--log-file", "--save", "--print-limit", "--racecheck-report"}
i, opts = 0, {}
while i < len(args) and args[i].startswith("-"):
    if args[i] in with_value:
        opts[args[i]] = args[i + 1]
        i += 2
    else:
        opts[args[i]] = True
        i += 1
app = args[i:]
rc = subprocess.call(app)
tool = opts.get("--tool", "memcheck")
place = _here.with_name(_here.name + ".line").read_text().strip()
buggy = app[app.index("--variant") + 1] == "buggy"
records = {
    "memcheck": ["Invalid __global__ write of size 4 bytes", "    at buggy::kernel(float *, int)+0x1f0 in " + place,
                 "    by thread (231,0,0) in block (3,999,0)", "    Access to 0x7f2a6e3d0900 is out of bounds",
                 "    and is 0 bytes after the nearest allocation at 0x7f2a6e000000 of size 4,000,000 bytes"],
    "racecheck": ["Error: Race reported between Write access at buggy::kernel(const float *, float *, int)+0x90 in "
                  + place, "    and Read access at buggy::kernel(const float *, float *, int)+0x120 in " + place
                  + " [4,096 hazards]"],
    "initcheck": ["Uninitialized __global__ memory read of size 4 bytes", "    at kernel(const float *, float *, int)+0x70 in "
                  + place, "    by thread (0,0,0) in block (0,0,0)", "    Address 0x7f3c7ec000fc"],
    "synccheck": ["Barrier error detected. Divergent thread(s) in block.", "    at buggy::kernel(const float *, float *, int)+0x2b0 in "
                  + place, "    by thread (16,0,0) in block (0,0,0)"],
}
lines = ["COMPUTE-SANITIZER"]
if buggy:
    lines += records[tool] + [""]
lines.append("RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)" if tool == "racecheck" and buggy else
             "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" if tool == "racecheck" else
             f"ERROR SUMMARY: {1 if buggy else 0} error{'' if buggy else 's'}")
text = "".join("========= " + ln + "\\n" for ln in lines)
if "--log-file" in opts:
    Path(opts["--log-file"]).write_text(text)
else:
    print(text, end="")
if "--xml" in opts and "--save" in opts:
    Path(opts["--save"]).write_text('<?xml version="1.0"?>\\n<ComputeSanitizerOutput></ComputeSanitizerOutput>\\n')
sys.exit(rc)
"""


def install(folder: Path) -> None:
    """Add fake nvcc and compute-sanitizer to the fake bin ``folder`` (test_capture_support.fake_bin)."""
    import sys

    program = FAKE_PROGRAM.replace("#!PYTHON", f"#!{sys.executable}")
    write_tool(folder, "nvcc", f"PROGRAM = {program!r}\n" + FAKE_NVCC)
    write_tool(folder, "compute-sanitizer", FAKE_SANITIZER)


def set_line(folder: Path, place: str) -> None:
    """The file:line the fake compute-sanitizer's buggy records name."""
    (folder / "compute-sanitizer.line").write_text(place)
