"""The corpus programs of tests/programs/wild on the CPU at small sizes: each runs, checks its own
result and prints its JSON line; the CUDA programs compile. A DataLoader trace recorded here on the
CPU is read with its DataLoader ranges (no GPU: the input-pipeline rule has nothing to say)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

WILD = Path(__file__).resolve().parent / "programs" / "wild"

SMALL = {
    "dataloader_train.py": ["--workers", "2", "--steps", "2", "--warmup", "1", "--d-model", "32", "--layers", "1",
                            "--seq", "32", "--chars", "200", "--batch", "4"],
    "decode_graphs.py": ["--mode", "graph", "--steps", "2", "--layers", "2", "--d-model", "32", "--cache", "8"],
    "multiprocess_sync.py": ["--procs", "2", "--steps", "2", "--warmup", "1", "--size", "32"],
    "nvtx_heavy.py": ["--steps", "1", "--warmup", "1", "--layers", "2", "--d-model", "32", "--tokens", "32"],
    "healthy_gemm.py": ["--size", "128", "--steps", "2"],
    "host_python_bound.py": ["--steps", "2", "--warmup", "1", "--tokens", "500", "--batch", "4"],
    "sdpa_attention.py": ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16", "--steps", "1"],
}


def run(program: str, *args: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, program, *args], cwd=WILD, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines and lines[-1]["program"] == program.removesuffix(".py")
    return lines[-1]


@pytest.mark.parametrize("program", sorted(SMALL))
def test_program_runs_and_checks_itself_on_the_cpu(program):
    run(program, *SMALL[program])


def test_triton_kernels_under_the_interpreter():
    out = run("triton_kernels.py", "--small", "--iters", "1", env={"TRITON_INTERPRET": "1"})
    assert out["matmul_max_abs_err"] < 1e-3


def test_compile_program_parses_its_options():
    """torch.compile of the CPU path takes a minute on a laptop: here only its command line."""
    done = subprocess.run([sys.executable, "compile_triton.py", "--help"], cwd=WILD, capture_output=True, text=True)
    assert done.returncode == 0 and "--from-start" in done.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("source", ["memory_patterns.cu", "setup_allocs.cu"])
def test_cuda_programs_compile(source, tmp_path):
    done = subprocess.run(["nvcc", "-arch=sm_90", "-O2", "-o", str(tmp_path / "a.out"), source], cwd=WILD,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_a_dataloader_trace_recorded_here_reads_with_its_ranges(tmp_path):
    from coach.analyze.timeline import TimelineAnalysis  # noqa: PLC0415
    from coach.analyze.timeline_rules import input_pipeline  # noqa: PLC0415
    from coach.ingest import load  # noqa: PLC0415

    trace = tmp_path / "dataloader.json.gz"
    run("dataloader_train.py", *SMALL["dataloader_train.py"][:1], "0", *SMALL["dataloader_train.py"][2:],
        "--kineto", str(trace))
    tl = load(trace)
    a = TimelineAnalysis(tl)
    ranges = input_pipeline.loader_ranges(a)
    assert ranges.height == 2  # one per profiled step
    assert ranges["text"].str.contains("_SingleProcessDataLoaderIter").all()
    assert input_pipeline.apply(a) == []  # no GPU, no GPU gaps to claim
