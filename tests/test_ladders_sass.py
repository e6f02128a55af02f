"""Static SASS evidence of ladder rungs (coach.capture.sass) and the sentence a compute-bound rung's
``measured`` line is written from (coach.analyze.ladder_evidence): opcode histograms parsed from a
real disassembly (tests/data/ladders/sass/README.md), the Triton variant that ran, failures recorded
rather than raised, and the busiest pipe from a real Nsight Compute profile (tests/data/ncu_roofline)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from coach.analyze import ladder_evidence as ev
from coach.capture import ladder as runner
from coach.capture import sass
from coach.ladders import load_definition, load_results, rung_table

DATA = Path(__file__).parent / "data"
SASS = DATA / "ladders" / "sass"
SYNTHETIC_ROOT = DATA / "ladders" / "synthetic-root"

# Counted by hand in opcodes.sass (cuobjdump -sass of opcodes.cu built for sm_90a).
EXPECTED = {
    "wgmma_bf16": {"BRA": 1, "EXIT": 1, "HGMMA": 1, "IMAD": 1, "LDC": 2, "NOP": 15, "S2R": 1, "SHF": 1, "STG": 4,
                   "ULDC": 3, "WARPGROUP": 2},
    "cp_async_copy": {"BAR": 1, "BRA": 1, "DEPBAR": 1, "EXIT": 1, "IADD3": 1, "IMAD": 2, "LDC": 3, "LDGDEPBAR": 1,
                      "LDGSTS": 1, "LDS": 1, "LEA": 2, "NOP": 8, "S2R": 1, "S2UR": 1, "STG": 1, "ULDC": 1, "ULEA": 1,
                      "UMOV": 1},
    "mma_sync_bf16": {"BRA": 1, "EXIT": 1, "HMMA": 1, "IMAD": 3, "LDC": 4, "LDG": 6, "NOP": 16, "S2R": 1, "SHF": 2,
                      "STG": 4, "ULDC": 1},
    "ffma_smem": {"BAR": 1, "BRA": 2, "EXIT": 1, "FFMA": 32, "HFMA2": 1, "IADD3": 1, "IMAD": 1, "ISETP": 1, "LDC": 2,
                  "LDG": 1, "LDS": 9, "LEA": 4, "MOV": 1, "NOP": 14, "S2R": 2, "S2UR": 1, "STG": 1, "STS": 1,
                  "ULDC": 2, "ULEA": 1, "UMOV": 1},
}


def test_opcode_histograms_of_a_real_cuobjdump_listing():
    got = sass.opcode_histograms((SASS / "opcodes.sass").read_text())
    assert got == EXPECTED
    assert got["wgmma_bf16"]["HGMMA"] == 1 and "HMMA" not in got["wgmma_bf16"], "warpgroup MMA: HGMMA"
    assert got["mma_sync_bf16"]["HMMA"] == 1 and "HGMMA" not in got["mma_sync_bf16"], "mma.sync: HMMA"
    assert got["ffma_smem"]["FFMA"] == 32 and "HMMA" not in got["ffma_smem"], "HFMA2.MMA is a move, not an HMMA"
    assert got["cp_async_copy"]["LDGSTS"] == 1


def test_nvdisasm_listing_gives_the_same_histograms():
    """nvdisasm prints data sections (.nv.info: ``/*0000*/ .byte ...``) too; only code is counted."""
    assert sass.opcode_histograms((SASS / "opcodes.nvdisasm").read_text()) == EXPECTED


def test_never_executed_filler_and_predicates():
    text = ("\t\tFunction : k\n"
            "        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;  /* 0x0 */\n"
            "        /*0010*/              @!PT LDS RZ, [RZ] ;                    /* 0x0 */\n"
            "        /*0020*/               @P0 BRA 0x10 ;                         /* 0x0 */\n"
            "        /*0030*/              @!P1 FFMA R1, R2, R3, R1 ;             /* 0x0 */\n")
    assert sass.opcode_histograms(text) == {"k": {"BRA": 1, "FFMA": 1, "LDG": 1}}


def test_sass_record_keeps_the_rungs_kernels_and_refuses_empty_output():
    text = (SASS / "opcodes.sass").read_text()
    record = sass.sass_record(text, "cuobjdump -sass", ("ffma_smem", "wgmma_bf16"))
    assert record == {"source": "cuobjdump -sass", "kernels": {k: EXPECTED[k] for k in ("wgmma_bf16", "ffma_smem")}}
    with pytest.raises(RuntimeError, match="printed no kernel's SASS"):
        sass.sass_record("nothing here", "cuobjdump -sass")


@pytest.mark.skipif(shutil.which("nvcc") is None or sass.find_disassembler() is None, reason="nvcc or cuobjdump missing")
def test_disassemble_a_cubin_built_here(tmp_path):
    cubin = tmp_path / "opcodes.cubin"
    subprocess.run(["nvcc", "-cubin", "-gencode", "arch=compute_90a,code=sm_90a", "-o", str(cubin),
                    str(SASS / "opcodes.cu")], check=True, capture_output=True, timeout=300)
    text, tool = sass.disassemble(cubin.read_bytes())
    assert tool in ("cuobjdump -sass", "nvdisasm")
    got = sass.opcode_histograms(text)
    assert {k: (v.get("HGMMA", 0), v.get("HMMA", 0), v.get("FFMA", 0)) for k, v in got.items()} == {
        "wgmma_bf16": (1, 0, 0), "mma_sync_bf16": (0, 1, 0), "cp_async_copy": (0, 0, 0), "ffma_smem": (0, 0, 32)}


# Triton: its asm["sass"] listing, and which compiled variant ran (real kernels compiled here for
# sm_90 by Triton, which needs no GPU for that: tests/data/ladders/sass/triton_dot.py).

def test_triton_asm_sass_listing():
    """Triton's own listing (triton_dot.triton-sass): ``CTRL<tab>INSTRUCTION;`` lines under
    ``Function:NAME``, branch targets as ``LBBn:`` labels; every instruction line is counted."""
    text = (SASS / "triton_dot.triton-sass").read_text()
    got = sass.opcode_histograms(text)
    assert list(got) == ["dot_tile"]
    h = got["dot_tile"]
    assert (h["HGMMA"], h["WARPGROUP"], h["FMUL"], h["LDG"], h["STG"], h["BRA"]) == (4, 2, 32, 64, 32, 4)
    assert "HMMA" not in h and "FFMA" not in h
    assert sum(h.values()) == sum("\t" in line for line in text.splitlines()) == 664
    assert sass.sass_record(text, "Triton asm['sass']")["kernels"] == got


def test_a_listing_without_instructions_is_an_error():
    with pytest.raises(RuntimeError, match="no instruction read for k "):
        sass.sass_record("Function:k\n0000: HGMMA R0 (a format nobody prints)\n", "somewhere")


# Triton reads TRITON_INTERPRET when it is imported, and these tests import it for the interpreter:
# compiling needs a fresh interpreter without it. The child compiles two variants of dot_tile for
# sm_90 (BLOCK 64: one warpgroup, wgmma; BLOCK 32: too few rows for wgmma, mma.sync), puts them
# where Triton keeps what it compiled (device_caches), and reports what coach.capture.sass makes of them.
_CHILD = r"""
import importlib.util, json, sys
import triton
from coach.capture import sass

spec = importlib.util.spec_from_file_location("triton_dot", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["triton_dot"] = module
spec.loader.exec_module(module)
out = {}
try:
    out["none_compiled"] = sass.triton_sass(module, ["scaled", "dot_tile"])
except RuntimeError as err:
    out["none_compiled"] = str(err)
try:
    variants = {64: module.compile_variant(64, 4), 32: module.compile_variant(32, 4)}
except Exception as err:
    print(json.dumps({"cannot_compile": f"{type(err).__name__}: {err}"}))
    raise SystemExit(0)
cubin_text, _ = sass.disassemble(bytes(variants[64].asm["cubin"]))
out["listings_agree"] = sass.opcode_histograms(variants[64].asm["sass"]) == sass.opcode_histograms(cubin_text)
configs = [triton.Config({"BLOCK": b}, num_warps=4, num_stages=3) for b in (32, 64, 128)]
tuner = triton.autotune(configs=configs[:2], key=["K"])(module.dot_tile)
out["tuner_has_cache_dict"] = isinstance(tuner.cache, dict)
out["unwrapped"] = sass._unwrap(tuner) == (module.dot_tile, tuner)
module.dot_tile.device_caches[0] = ({0: variants[32], 1: variants[64]}, {}, None, None, None)
rung = type(module)("rung")
rung.dot_tile, rung.scaled = tuner, module.scaled
for config in configs:
    tuner.best_config = config
    try:
        out[f"best_{config.kwargs['BLOCK']}"] = sass.triton_sass(rung, ["scaled", "dot_tile"])
    except RuntimeError as err:
        out[f"best_{config.kwargs['BLOCK']}"] = str(err)
tuner.best_config = configs[1]
sass.find_disassembler = lambda: None
out["fallback"] = sass.triton_sass(rung, ["dot_tile"])
out["fallback_expected"] = {"source": "Triton asm['sass']", "kernels": sass.opcode_histograms(variants[64].asm["sass"])}
print(json.dumps(out))
"""


@pytest.mark.skipif(importlib.util.find_spec("triton") is None or sass.find_disassembler() is None,
                    reason="triton, or a cuobjdump/nvdisasm, missing")
def test_triton_sass_of_real_compiled_variants(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(Path(__file__).resolve().parents[1]), TRITON_CACHE_DIR=str(tmp_path),
               TRITON_DEFAULT_FP_FUSION="1")
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(SASS / "triton_dot.py")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    if "cannot_compile" in out:
        pytest.skip(f"Triton cannot compile for sm_90 here: {out['cannot_compile']}")
    # nothing launched: neither the kernel nor its inlined helper holds a compiled kernel
    assert out["none_compiled"] == "Triton holds no compiled kernel of scaled, dot_tile (were they launched?)"
    # Triton's listing and cuobjdump's of the same cubin give the same histogram
    assert out["listings_agree"] is True
    # an Autotuner keeps a cache dict of its own; it is unwrapped to the JIT function under it
    assert out["tuner_has_cache_dict"] is True and out["unwrapped"] is True
    # the autotuner's choice picks the variant: wgmma for BLOCK 64, mma.sync for BLOCK 32; the
    # helper `scaled`, inlined into dot_tile, is skipped
    for block, (present, absent) in ((64, ("HGMMA", "HMMA")), (32, ("HMMA", "HGMMA"))):
        record = out[f"best_{block}"]
        assert record["source"] in ("cuobjdump -sass", "nvdisasm") and list(record["kernels"]) == ["dot_tile"]
        h = record["kernels"]["dot_tile"]
        assert h.get(present, 0) > 0 and absent not in h, (block, h)
    assert out["best_128"].startswith("dot_tile: 2 compiled variants and 0 match the autotuner's choice (BLOCK: 128")
    # no disassembler of ours: Triton's own listing of the chosen variant
    assert out["fallback"] == out["fallback_expected"]
    assert out["fallback"]["kernels"]["dot_tile"]["HGMMA"] > 0


def test_a_failure_to_get_sass_is_recorded_not_raised():
    def no_tool():
        raise RuntimeError("no cuobjdump or nvdisasm found")
    assert runner.sass_entry(no_tool) == {"error": "RuntimeError: no cuobjdump or nvdisasm found"}
    assert runner.sass_entry(lambda: {"source": "s", "kernels": {}}) == {"source": "s", "kernels": {}}


def test_measure_item_records_the_sass_of_a_build_that_has_one(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    defn = load_definition("matmul/synthetic")
    problem = runner.load_problem(defn)

    class Build:
        signatures = runner.kernel_signatures(defn.path(defn.rung("00")).read_text())
        resources = {"mm_naive": {}}

        def launch(self, name, grid, block, args, smem):
            a, b, c, _ = (x for _, x in args)
            c.copy_(a @ b)

        def sass(self):
            return sass.sass_record((SASS / "opcodes.sass").read_text(), "cuobjdump -sass", ("ffma_smem",))

    ctx = {"torch": torch, "device": "cpu", "sm_count": 4}
    record = runner.measure_item(torch, problem, lambda: runner.prepare_rung(
        defn, defn.rung("00"), problem, ctx, lambda path, arch, include: Build()), {"n": 32}, "cpu", 3, lambda: None, None)
    assert record["status"] == "ok" and record["sass"]["kernels"]["ffma_smem"]["FFMA"] == 32


# The measured sentence of a compute-bound rung.

def test_busiest_pipe_of_real_profiles():
    from coach.ingest import load

    profile = load(DATA / "ncu_roofline" / "roofline_kernels")
    pipes = {r["kernel_name"]: (r["busiest_pipe_metric"], round(r["busiest_pipe_pct"], 2)) for r in
             profile.launches.select("launch_id", "kernel_name").join(ev.busiest_pipes(profile.metrics), on="launch_id")
             .iter_rows(named=True)}
    assert pipes["fp32_fma_high"] == ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 90.48)
    assert pipes["sgemm_tiled"] == ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", 77.96)
    assert pipes["nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"][1] == 96.85
    assert ev._pipe_name(pipes["sgemm_tiled"][0]) == "lsu (instructions issued)"
    assert ev._pipe_name(pipes["fp32_fma_high"][0]) == "fma (cycles active)"


def test_compute_rung_sentence_quotes_tflops_the_ceiling_and_the_sass(monkeypatch):
    monkeypatch.setenv("COACH_DATA", str(SYNTHETIC_ROOT))
    defn = load_definition("matmul/synthetic")
    res = load_results(SYNTHETIC_ROOT / "traces" / "h200" / "ladders" / "matmul" / "synthetic" / "results.json")
    profile = {"launches": 1, "total_duration_ns": 3.1e6, "kernel_name": "mm_fenced", "duration_ns": 3.1e6,
               "grid_size": 65536, "block_size": 256, "waves_per_sm": 62.06,
               "busiest_pipe_metric": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
               "busiest_pipe_pct": 88.25, "sm_issue_active_pct": 91.5, "achieved_occupancy_pct": 60.1,
               "theoretical_occupancy_pct": 62.5, "registers_per_thread": 96, "dram_throughput_pct": 4.2,
               "l2_throughput_pct": 20.5, "l1_throughput_pct": 55.0, "warp_inst": 2.5e9}
    rec = ev.Recorded(defn, res, tuple(rung_table(defn, res)), {"01_wgmma": profile})
    assert ev.measured_text(rec, 0) == (
        "100,000.0 us median (p20-p80 99,000.0-101,000.0 us), 1.4 TFLOP/s = 2.7% of the FP32 CUDA-core matmul "
        "ceiling; x0.03 over cublas.fp32. SASS of mm_naive: no tensor-core instruction (HGMMA, HMMA), 4 FFMA "
        "(instructions in the code, not executions)")
    assert ev.measured_text(rec, 1) == (
        "3,200.0 us median (p20-p80 3,168.0-3,232.0 us), 42.9 TFLOP/s = 84.0% of the FP32 CUDA-core matmul "
        "ceiling; x31.25 over rung 00, x0.86 over cublas.fp32. Nsight Compute, mm_fenced: 3,100.0 us, 65,536 blocks "
        "of 256 (62.06 waves), busiest pipe fma (cycles active) at 88.2% of its peak, issue active 91.5%, warps "
        "60.1% of the SM (62.5% possible, 96 registers), DRAM 4.2% of peak, L2 20.5% and L1 55.0% of peak, "
        "2500.00 M warp instructions. SASS of mm_fenced: no tensor-core instruction (HGMMA, HMMA), 4 FFMA "
        "(instructions in the code, not executions)")
    assert ev.sass_text({"a": {"HGMMA": 64, "FFMA": 3}, "b": {"HMMA": 2}}) == (
        "SASS of its 2 kernels: 64 HGMMA, 2 HMMA, 3 FFMA (instructions in the code, not executions)")
    table = ev.results_table(rec)
    assert "| rung | median | TFLOP/s | % of ceiling |" in table and "| 01 a warpgroup fence | 3,200.0 us | 42.9 | 84.0 |" in table
    assert "| peer: cublas.fp32 | 2,750.0 us | 50.0 | 97.8 |" in table and "FP32 CUDA-core matmul ceiling, 51.1 TFLOP/s" in table


def test_the_compute_benchmark_script_names_the_three_ladders_and_needs_an_out_dir():
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "ladders_compute.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert proc.returncode != 0 and "usage: benchmarks/ladders_compute.sh OUT_DIR [LADDER...]" in proc.stderr
    text = script.read_text()
    assert "ladders=(matmul/fp32 matmul/bf16 attention)" in text and "--ncu --out" in text
