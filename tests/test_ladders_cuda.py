"""Every CUDA rung compiles for sm_90 with nvcc, its kernels are the ones the runner parses from the
source, and the compiler's resource report (-Xptxas -v) shows no spills where the rung claims none."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from coach.capture.ladder import kernel_signatures
from coach.ladders import ladder_names, load_definition
from coach.paths import kernels_dir

NVCC = shutil.which("nvcc")
RUNGS = [(name, r) for name in ladder_names() for r in load_definition(name).rungs if r.language == "cuda"]

_ENTRY = re.compile(r"Compiling entry function '(\w+)' for 'sm_90'")
_SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def ptxas_report(text: str) -> dict[str, tuple[int, int, int]]:
    """kernel -> (stack frame, spill store, spill load bytes) from nvcc -Xptxas -v output."""
    report, current = {}, None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
        elif current and (m := _SPILLS.search(line)):
            report[current] = tuple(int(g) for g in m.groups())
            current = None
    return report


def test_ptxas_report_parser():
    text = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n"
            "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\nptxas info    : Used 255 registers\n")
    assert ptxas_report(text) == {"k": (16, 8, 4)}


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("name, rung", RUNGS, ids=[f"{n}/{r.key}" for n, r in RUNGS])
def test_cuda_rung_compiles_for_sm90(name, rung, tmp_path):
    src = load_definition(name).path(rung)
    proc = subprocess.run([NVCC, "-arch=sm_90", "--std=c++17", "-c", "-Xptxas", "-v", f"-I{kernels_dir() / 'common'}",
                           "-o", str(tmp_path / "rung.o"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = ptxas_report(proc.stdout + proc.stderr)
    assert set(report) == set(kernel_signatures(src.read_text())), "every extern \"C\" kernel, and only those"
    if not rung.spills:
        spilled = {k: v for k, v in report.items() if v != (0, 0, 0)}
        assert not spilled, f"{rung.key} claims no spills but ptxas reports (stack, spill st, spill ld) {spilled}"
