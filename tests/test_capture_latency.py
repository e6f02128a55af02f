"""The pointer-chase latency measurement, as far as a machine without a GPU can take it: the chain,
the kernel followed under the Triton interpreter and compiled for sm_90, and what a calibration with
latencies shows in `coach numbers`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from coach.capture import calibrate, latency
from coach.reference import numbers

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n_lines", [2, 3, 64, 1000])
def test_the_chain_is_one_cycle_through_every_line(n_lines):
    nxt = latency.chain(torch, n_lines, seed=7)
    stride = latency.LINE_BYTES // latency.INDEX_BYTES
    assert nxt.numel() == n_lines * stride
    seen, i = [], 0
    for _ in range(n_lines):
        seen.append(i)
        i = int(nxt[i])
    assert i == 0 and sorted(seen) == [k * stride for k in range(n_lines)]  # back at the start, each line once


def test_the_kernel_follows_the_chain_under_the_interpreter():
    pytest.importorskip("triton")
    script = (
        "import torch\n"
        "from coach.capture import latency\n"
        "nxt = latency.chain(torch, 100, seed=3)\n"
        "i = 0\n"
        "for _ in range(37):\n"
        "    i = int(nxt[i])\n"
        "assert latency.follow(torch, nxt, 0, 37) == i\n"
        "assert latency.follow(torch, nxt, 0, 100) == 0\n"
        "print('followed')\n"
    )
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "followed", done.stderr[-2000:]


def test_the_kernel_compiles_for_sm90_to_dependent_global_loads():
    pytest.importorskip("triton")
    # in a process of its own: the test session runs Triton in its interpreter (tests/conftest.py)
    script = (
        "import triton\n"
        "from triton.backends.compiler import GPUTarget\n"
        "from triton.compiler import ASTSource\n"
        "from coach.capture import latency\n"
        "sig = {'next_ptr': '*i64', 'out_ptr': '*i64', 'start': 'i32', 'steps': 'i32'}\n"
        "src = ASTSource(fn=latency.chase_kernel(), signature=sig, constexprs={})\n"
        "c = triton.compile(src, target=GPUTarget('cuda', 90, 32), options={'num_warps': 1})\n"
        "import json\n"
        "print(json.dumps({'loads': [l.strip() for l in c.asm['ptx'].splitlines() if 'ld.global' in l],\n"
        "                  'cubin': 'cubin' in c.asm}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    if done.returncode != 0 and "backend" in done.stderr.lower():
        pytest.skip(f"Triton cannot compile for sm_90 here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-2000:]
    # one 8-byte load in the loop, with the default caching (no .cg / .cs hint that would skip L1)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["cubin"] and len(got["loads"]) == 1
    assert got["loads"][0].startswith("ld.global.b64") and not any(h in got["loads"][0] for h in (".cg", ".cs", ".lu"))


def test_a_calibration_with_latencies_fills_the_numbers_and_littles_law(tmp_path):
    out = tmp_path / "h200.json"
    fake = {"dram_copy_bandwidth_bytes_per_s": {"value": 4.0e12}, "l1_load_latency_s": {"value": 3.0e-8},
            "l2_load_latency_s": {"value": 2.5e-7}, "dram_load_latency_s": {"value": 6.0e-7}}  # made up for this test
    describe = lambda args: {"gpu_name": "NVIDIA H200", "date": "2026-12-01T00:00:00+00:00"}  # noqa: E731
    assert calibrate.main([str(out)], measure=lambda args: fake, describe=describe) == 0
    doc = json.loads(out.read_text())
    assert doc["measurements"]["dram_load_latency_s"]["detail"] == latency.DETAIL["dram_load_latency_s"]
    s = numbers.sheet("h200", measured=out)
    row = s.filter(quantity="DRAM load latency").row(0, named=True)
    assert row["value"] == 6.0e-7 and row["origin"] == "measured" and row["shown"] == "600 ns"
    # Little's law: 4.0e12 B/s x 6.0e-7 s = 2.4e6 B in flight; / 132 SMs = 18,182 B per SM
    assert s.filter(quantity="Bytes in flight to fill HBM")["value"][0] == pytest.approx(2.4e6)
    assert s.filter(quantity="... per SM")["value"][0] == pytest.approx(2.4e6 / 132)


def _visited(nxt, start, steps):
    seen, i = [], start
    for _ in range(steps + 1):  # the start and every line a step loads
        seen.append(i)
        i = int(nxt[i])
    return seen


def test_cold_chases_never_revisit_a_line():
    """The DRAM chase's timed runs each walk a stretch of the cycle no other run (and not the
    compiling one) touches, so none can hit in a cache an earlier run filled."""
    nxt, order = latency.cycle(torch, 500, seed=11)
    runs, span = 6, 40
    starts = latency.cold_starts(order, runs, span, compile_steps=10)
    stretches = [set(_visited(nxt, s, span - 1)) for s in starts]  # a chase of span steps loads span lines
    stretches.append(set(_visited(nxt, latency.cold_compile_start(order, 10), 10)))
    assert sum(len(x) for x in stretches) == len(set().union(*stretches))  # pairwise disjoint
    assert torch.equal(nxt, latency.chain(torch, 500, seed=11))
    with pytest.raises(ValueError, match="need more than the 500 lines"):
        latency.cold_starts(order, 20, 40, compile_steps=10)


def test_the_calibrated_dram_cycle_holds_every_timed_chase():
    n_lines = latency.LEVEL_BYTES["dram_load_latency_s"] // latency.LINE_BYTES
    assert "dram_load_latency_s" in latency.COLD and "l2_load_latency_s" not in latency.COLD
    order = list(range(n_lines))  # only its length matters here
    assert len(latency.cold_starts(order, 2 * latency.REPEATS, latency.LONG_STEPS)) == 2 * latency.REPEATS
