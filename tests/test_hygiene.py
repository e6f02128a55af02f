"""`coach check`: measurement hygiene on benchmark results and traces.

Real data: the recorded Nsight Systems export (tests/data/nsys_torch_softmax: its step0 range holds
the lazy module loads), the recorded Nsight Compute report (tests/data/ncu_strided_copy: clocks and
the persisting-L2 set-aside), and, once recorded on the H200 by scripts/record-hygiene.sh, the three
cases of tests/programs/hygiene_bench.py. Benchmark results built in the tests are SYNTHETIC: each
says what it stands for, and its numbers are chosen to sit on one side of a threshold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_capture_support import run_cli

from coach.analyze.hardware import ceilings
from coach.analyze.hygiene import (
    CEILING_MARGIN, MIN_REPETITIONS, Benchmark, check, compact, looks_like_benchmark, read_benchmark,
)
from coach.errors import InputError
from coach.ingest import load

DATA = Path(__file__).parent / "data"
NSYS = DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"
NCU = DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"
KINETO = DATA / "kineto_torch_softmax" / "torch_softmax_kineto.json"
H200_L2 = 62914560  # device__attribute_l2_cache_size in the recorded reports
# the best DRAM ceiling measured on the H200: the calibration (hardware/measured/h200.json, 4.1948 TB/s)
# raised to the best rate recorded on it (coach.best_rates)
MEASURED_READ = ceilings("h200").bandwidth["dram"].value
DATASHEET_DRAM = 4.8e12


def synthetic(times_ms, **fields) -> Benchmark:
    """A SYNTHETIC benchmark result on the H200 (only the fields a test is about)."""
    return Benchmark(path="synthetic.json", times_ms=tuple(times_ms), raw={"gpu": "NVIDIA H200", **fields})


STEADY = [1.000, 1.004, 0.998, 1.002, 1.001, 0.999, 1.003, 0.997, 1.000, 1.002, 1.001, 0.999]


# --------------------------------------------------------------------------------------------
# Benchmark results (synthetic)
# --------------------------------------------------------------------------------------------


def test_warm_l2_working_set_that_fits_and_repeats():
    # 16 MiB read 64 times per run, 1 GiB per run in 0.15 ms: 7.2 TB/s, above the DRAM ceiling
    r = check(benchmark=synthetic([0.15 * t for t in STEADY], bytes_per_rep=1 << 30, working_set_bytes=16 << 20))
    flag, = r.flagged("warm-l2")
    assert flag.details["severity"] == "warning" and flag.details["confirmed"]
    assert "fits in the 62.91 MB L2" in flag.message
    # below the ceiling, the working set alone still makes the runs measure L2
    r = check(benchmark=synthetic(STEADY, bytes_per_rep=1 << 20, working_set_bytes=16 << 20))
    assert r.flagged("warm-l2")[0].details["confirmed"] is False
    # flushed between runs: nothing to flag
    r = check(benchmark=synthetic(STEADY, bytes_per_rep=1 << 20, working_set_bytes=16 << 20, l2_flush=True))
    assert not r.flagged("warm-l2") and ("warm-l2", "L2 cleared between runs") in r.passed


def test_bandwidth_above_the_ceiling_confirms_warm_l2_only_past_the_margin():
    working = 16 << 20
    at_margin = MEASURED_READ * (1 + CEILING_MARGIN)
    below = check(benchmark=synthetic([1.0] * 12, bytes_per_rep=0.99 * at_margin * 1e-3, working_set_bytes=working))
    above = check(benchmark=synthetic([1.0] * 12, bytes_per_rep=1.01 * at_margin * 1e-3, working_set_bytes=working))
    assert below.flagged("warm-l2")[0].details["confirmed"] is False
    assert above.flagged("warm-l2")[0].details["confirmed"] is True


def test_unsynchronised_rate_no_memory_can_deliver():
    # 1 GiB (17x the L2) "read" in 30 us: 36 TB/s, what a host timer around a launch reports
    r = check(benchmark=synthetic([0.030] * 30, bytes_per_rep=1 << 30, working_set_bytes=1 << 30, timer="host"))
    flag, = r.flagged("unsynchronised")
    assert flag.details["severity"] == "warning" and "above the DRAM peak of 4.80 TB/s" in flag.message
    assert not r.flagged("warm-l2")  # larger than the L2: no cache explains it


def test_clean_benchmark_passes():
    # 1 GiB in 0.26 ms: 4.13 TB/s, the H200's measured read ceiling
    r = check(benchmark=synthetic([0.260, 0.261, 0.259] * 10, bytes_per_rep=1 << 30, working_set_bytes=1 << 30,
                                  timer="cuda-events", inputs="random"))
    assert r.clean and not r.flags
    assert {c for c, _ in r.passed} == {"repetitions", "spread", "warm-l2", "unsynchronised", "zero-inputs"}


def test_rate_just_under_the_datasheet_peak_is_not_called_unsynchronised():
    # 1 GiB at 99% of the 4.8 TB/s datasheet peak: improbable, not impossible
    r = check(benchmark=synthetic([1.0] * 12, bytes_per_rep=0.99 * DATASHEET_DRAM * 1e-3, working_set_bytes=1 << 30))
    assert not r.flagged("unsynchronised")


def test_repetitions_spread_and_first_run():
    few = check(benchmark=synthetic([1.0, 1.0, 1.01]))
    assert few.flagged("repetitions")[0].evidence[0].value == 3
    assert check(benchmark=synthetic([1.0] * MIN_REPETITIONS)).flagged("repetitions") == []
    noisy = check(benchmark=synthetic([1.0, 1.3, 0.9, 1.2, 1.0, 0.8, 1.1, 1.25, 0.85, 1.0, 1.15, 0.95]))
    assert noisy.flagged("spread")[0].evidence[0].value > 10
    cold = check(benchmark=synthetic([9.5, *STEADY]))
    flag, = cold.flagged("compile-in-timing")
    assert flag.evidence[0].value == 9.5 and "9.5x" in flag.message


def test_zero_inputs_declared_and_implied():
    assert check(benchmark=synthetic(STEADY, inputs="zeros")).flagged("zero-inputs")
    # bf16 matmul of 8192^3 (1.1 TFLOP) in 1.4 ms: 785 TFLOP/s, above the 679 measured on random data, under
    # the 989.5 datasheet peak
    flop = 2 * 8192**3
    fast = check(benchmark=synthetic([1.4] * 12, flop_per_rep=flop, precision="bf16"))
    assert fast.flagged("zero-inputs")[0].evidence[0].value == pytest.approx(flop / 1.4e-3)
    # in 1.0 ms: 1100 TFLOP/s, above the datasheet: not zeros, no synchronisation
    impossible = check(benchmark=synthetic([1.0] * 12, flop_per_rep=flop, precision="bf16"))
    assert impossible.flagged("unsynchronised") and not impossible.flagged("zero-inputs")
    fine = check(benchmark=synthetic([1.75] * 12, flop_per_rep=flop, precision="bf16"))
    assert fine.clean and ("zero-inputs" in {c for c, _ in fine.passed})


def test_unknown_gpu_is_not_checked():
    b = Benchmark("synthetic.json", tuple(STEADY), {"bytes_per_rep": 1 << 30, "working_set_bytes": 16 << 20})
    r = check(benchmark=b)
    assert {c for c, _ in r.not_checked} >= {"warm-l2", "unsynchronised"}


def test_read_benchmark(tmp_path):
    lines = tmp_path / "result_synthetic.jsonl"
    lines.write_text("compiling...\n" + json.dumps({"times_ms": [1.0, 2.0], "gpu": "NVIDIA H200"}) + "\n")
    assert read_benchmark(lines).times_ms == (1.0, 2.0) and looks_like_benchmark(lines)
    assert not looks_like_benchmark(KINETO)
    bad = tmp_path / "bad_synthetic.json"
    bad.write_text(json.dumps({"times_ms": []}))
    with pytest.raises(InputError, match="non-empty list"):
        read_benchmark(bad)
    bad.write_text(json.dumps({"median_ms": 1.0}))
    with pytest.raises(InputError, match="times_ms"):
        read_benchmark(bad)


# --------------------------------------------------------------------------------------------
# Recorded traces
# --------------------------------------------------------------------------------------------


def test_nsys_module_loads_inside_step0():
    r = check([load(NSYS)])
    flag, = r.flagged("compile-in-timing")
    assert flag.details["ranges"] == ["step0"]
    one_time = {e.metric: e.value for e in flag.evidence}
    assert one_time["one_time_calls"] == 3  # cuLibraryLoadData; the other two of five run before step0
    assert one_time["one_time_ns"] == pytest.approx(57.63e6, rel=1e-3)
    assert one_time["range_ns"] == 138114883  # step0, against 48.06 and 43.86 ms for step1 and step2
    assert "unsynchronised" in {c for c, _ in r.passed}  # each step ends in a blocking .cpu() copy
    info, = r.flagged("repetitions")
    assert info.details["severity"] == "info" and info.evidence[0].value == 3
    assert not r.clean


def test_kineto_without_timing_ranges_is_not_checked():
    r = check([load(KINETO)])
    assert r.clean and {c for c, _ in r.not_checked} == {"unsynchronised", "compile-in-timing"}


def test_ncu_clocks_and_persisting_l2():
    r = check([load(NCU)])
    clocks, = r.flagged("clocks")
    assert clocks.details["severity"] == "info" and clocks.details["locked"] is False
    assert {e.metric: e.value for e in clocks.evidence}["sm_clock_max_hz"] == 1.98e9
    assert "at boost" in clocks.title
    l2, = r.flagged("persisting-l2")
    assert l2.evidence[0].value == 11796480  # launch__persisting_l2_cache_size, 30% of the 39.3 MB maximum
    assert r.clean


def test_ncu_bytes_model():
    # copy_coalesced reads and writes 2^26 floats: 536.9 MB; copy_strided moves 4.56 GB: neither is under half
    assert not check([load(NCU)], expected_bytes=2 * 4 * (1 << 26)).flagged("zero-inputs")
    # a model four times the coalesced copy's bytes leaves it (517.7 MB of DRAM traffic) under half
    flags = check([load(NCU)], expected_bytes=4 * 2 * 4 * (1 << 26)).flagged("zero-inputs")
    assert [f.scope for f in flags] == ["copy_coalesced"]


def test_compact_lines_for_load():
    assert compact(load(NSYS)) == ["warning: Module loading inside the timed range 'step0'", "info: 'step#' repeats 3 times"]


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def test_cli_exit_status_and_json(tmp_path, capsys):
    code, out, _ = run_cli(["check", str(NSYS), "--json"], capsys)
    assert code == 1 and not json.loads(out)["clean"]
    clean = tmp_path / "clean_synthetic.json"
    clean.write_text(json.dumps({"times_ms": [0.26] * 30, "gpu": "NVIDIA H200", "bytes_per_rep": 1 << 30,
                                 "working_set_bytes": 1 << 30}))
    code, out, _ = run_cli(["check", str(clean)], capsys)
    assert code == 0 and "No warning" in out
    code, _, err = run_cli(["check", str(clean), str(clean)], capsys)
    assert code == 2 and "one benchmark result at a time" in err


# --------------------------------------------------------------------------------------------
# The program behind the recordings, at a small size on the CPU (Triton's interpreter)
# --------------------------------------------------------------------------------------------


def test_hygiene_bench_kernel_interpreted():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    # Triton reads TRITON_INTERPRET when it is imported: run in a fresh interpreter
    code = """
import torch, hygiene_bench as h
n_blocks, programs, passes = 16, 8, 4  # 32 reads over 16 blocks: each block twice
x = torch.rand(n_blocks * h.BLOCK)
out = torch.full((programs * h.BLOCK,), float("nan"))
h.launch(x, out, programs, passes)
assert h.check(x, out, programs, passes) < 1e-6, h.check(x, out, programs, passes)
assert abs(h.expected_total(x, programs, passes) - 2 * float(x.double().sum())) < 1e-6 * float(x.sum())
out[5] = float("nan")
assert h.check(x, out, programs, passes) == float("inf")
# the recorded sizes: 1 GiB per launch; each case's buffer against the 60 MiB L2
assert h.PROGRAMS * h.PASSES * h.BLOCK * 4 == 1 << 30
assert h.CASES["clean"][0] * 4 > %d > h.CASES["warm-l2"][0] * 4
print("ok")
""" % H200_L2
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(Path(__file__).parent / "programs")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


# --------------------------------------------------------------------------------------------
# The H200 recordings (scripts/record-hygiene.sh), once they are in tests/data
# --------------------------------------------------------------------------------------------


def _recorded(case: str) -> tuple[Path, Path]:
    folder = DATA / f"hygiene_{case.replace('-', '_')}"
    result, trace = folder / f"{case}.json", folder / f"{case}.sqlite"
    if not result.exists() or not trace.exists():
        pytest.skip(f"record it with scripts/record-hygiene.sh (needs the H200): {folder} is missing")
    return result, trace


def test_recorded_warm_l2_is_flagged():
    result, trace = _recorded("warm-l2")
    r = check([load(trace)], read_benchmark(result))
    assert r.flagged("warm-l2") and not r.clean
    assert not r.flagged("unsynchronised")  # timed with CUDA events


def test_recorded_unsynchronised_is_flagged():
    result, trace = _recorded("unsync")
    r = check([load(trace)], read_benchmark(result))
    sources = {f.evidence[0].source for f in r.flagged("unsynchronised")}
    assert "benchmark" in sources and "Nsight Systems" in sources  # the rate, and the ranges in the trace


def test_recorded_clean_passes():
    result, trace = _recorded("clean")
    r = check([load(trace)], read_benchmark(result))
    assert r.clean, [f.title for f in r.warnings]
    assert {"repetitions", "spread", "warm-l2", "unsynchronised", "compile-in-timing"} <= {c for c, _ in r.passed}
