"""The reference material: glossary entries and lookup, CUDA and Triton snippets that compile and run,
and the numbers sheet computed from hardware/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coach import best_rates, scenarios
from coach.analyze import collectives, hardware
from coach.cli import main
from coach.errors import InputError
from coach.reference import glossary, numbers, quickref

# Terms a GPU performance / kernel / inference / ML-compiler interview uses, that the glossary must answer.
REQUIRED_TERMS = [
    "occupancy", "warp", "wave", "tail effect", "bank conflict", "coalescing", "sector", "L2", "HBM", "roofline",
    "ridge point", "arithmetic intensity", "Little's law", "ILP", "TMA", "wgmma", "mbarrier", "cluster", "DSMEM",
    "tcgen05", "TMEM", "e4m3", "e5m2", "MXFP8", "NVFP4", "split-K", "stream-K", "persistent kernel", "CUDA graph",
    "NVTX", "nsys", "ncu", "replay", "paged KV", "continuous batching", "speculative decoding", "TP", "PP", "DP",
    "FSDP", "ZeRO", "all-reduce", "ring", "NVLink", "NVSwitch", "MoE", "all-to-all", "Inductor", "fusion", "autotune",
    "warp divergence", "register spill", "shared memory", "cp.async", "warp specialization", "KV cache", "prefill",
    "decode", "FlashAttention", "GQA", "compute-sanitizer", "async error", "torch.compile", "graph break", "MFU", "6ND",
]
NVCC = shutil.which("nvcc")
ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------
# Glossary
# --------------------------------------------------------------------------------------------


def test_the_glossary_answers_every_required_term():
    g = glossary.load()
    assert len(g.terms) >= 120
    missing = [t for t in REQUIRED_TERMS if g.resolve(t) is None]
    assert not missing, missing


def test_every_entry_is_complete_and_belongs_to_a_quiz_topic():
    from coach.exercises.bank import load_bank

    topics = set(load_bank().topics)
    for t in glossary.load().terms:
        assert t.topic in topics, (t.term, t.topic)
        assert len(t.definition) >= 120 and t.definition.endswith((".", ")")), t.term  # a paragraph, not a phrase
        assert t.profile and t.see, t.term


@pytest.mark.parametrize("query, term, how", [
    ("occupancy", "occupancy", "exact"),
    ("OCCUPANCY", "occupancy", "exact"),
    ("smem", "shared memory", "alias"),
    ("ocupancy", "occupancy", "fuzzy"),
    ("bank conflcit", "bank conflict", "fuzzy"),
    ("wrap", "warp", "fuzzy"),  # two letters swapped
    ("littles law", "Little's law", "exact"),  # punctuation does not count
    ("tcgen05.mma", "tcgen05", "alias"),
    ("stream k", "stream-K", "exact"),  # the same name without its punctuation
])
def test_lookup_forgives_case_punctuation_and_typos(query, term, how):
    found = glossary.load().lookup(query)
    assert found.term is not None and found.term.term == term and found.how == how


def test_a_query_too_far_from_every_term_gets_suggestions_not_a_guess():
    found = glossary.load().lookup("stall")
    assert found.term is None and found.suggestions[0] == "warp stall reasons"
    assert glossary.load().lookup("mem").term is None  # too short to correct
    assert glossary.load().lookup("xyzzy").suggestions == ()


@pytest.mark.parametrize("body, message", [
    ('[[terms]]\nterm = "a"\ntopic = "t"\ndefinition = "d"\nsee = []\n', "needs a non-empty profile"),
    ('[[terms]]\nterm = "a"\ntopic = "t"\ndefinition = "d"\nprofile = "p"\nsee = ["b"]\n', "see-also 'b'"),
    ('[[terms]]\nterm = "a"\ntopic = "t"\ndefinition = "d"\nprofile = "p"\n'
     '[[terms]]\nterm = "A"\ntopic = "t"\ndefinition = "d"\nprofile = "p"\n', "names both"),
    ('[[terms]\n', "not valid TOML"),
])
def test_a_broken_glossary_file_is_a_one_line_error_naming_it(tmp_path, body, message):
    path = tmp_path / "glossary.toml"
    path.write_text(body)
    with pytest.raises(InputError, match=message) as err:
        glossary.load(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_cli_glossary_entry_list_and_unknown_term(capsys):
    code, out, _ = _run(capsys, "glossary", "ocupancy")
    assert code == 0 and out.startswith("occupancy  (for 'ocupancy')")
    assert "sm__warps_active.avg.pct_of_peak_sustained_active" in out and "See also:" in out
    code, out, _ = _run(capsys, "glossary")
    assert code == 0 and out.startswith(f"{len(glossary.load().terms)} terms.") and "hopper-blackwell" in out
    code, _, err = _run(capsys, "glossary", "xyzzy")
    assert code != 0 and err.strip().count("\n") == 0 and "no glossary entry for 'xyzzy'" in err


def test_every_glossary_entry_prints_within_80_columns(capsys):
    for t in glossary.load().terms:
        code, out, _ = _run(capsys, "glossary", t.term)
        assert code == 0, t.term
        assert max(len(line) for line in out.splitlines()) <= 80, t.term


# --------------------------------------------------------------------------------------------
# Quick references
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("section", [s.id for s in quickref.sheet("cuda").sections])
def test_every_cuda_snippet_compiles_for_sm90(tmp_path, section):
    code = quickref.sheet("cuda").section(section).code
    src = tmp_path / f"{section}.cu"
    src.write_text(code + "\n")
    done = subprocess.run([NVCC, "-arch=sm_90", "--std=c++17", "-c", str(src), "-o", str(tmp_path / "x.o")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


# The interpreter has no driver to time autotuning candidates with: each configuration runs once and
# the first is kept (as tests/ladder_emu/triton_interpreter.py does for the ladders).
AUTOTUNE_PRELUDE = '''
from triton.runtime import autotuner as _autotuner
def _run_once(kernel_call, quantiles=None):
    kernel_call()
    return [1.0, 1.0, 1.0]
_autotuner.Autotuner.do_bench = property(lambda self: _run_once)
'''


@pytest.mark.parametrize("section", [s.id for s in quickref.sheet("triton").sections])
def test_every_triton_snippet_runs_under_the_interpreter(tmp_path, section):
    pytest.importorskip("triton")
    s = quickref.sheet("triton").section(section)
    assert s.check, "each Triton snippet has a check"
    script = tmp_path / f"{section}.py"
    # the snippet as shown, then the patch (after its imports), then the check against PyTorch
    script.write_text(s.code + "\n" + AUTOTUNE_PRELUDE + "\n" + s.check + "\nprint('checked')\n")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("checked"), done.stderr[-2000:]


def test_the_sheets_cover_what_a_whiteboard_asks():
    cuda = " ".join(s.code for s in quickref.sheet("cuda").sections)
    for needle in ("<<<", "blockIdx.x * blockDim.x + threadIdx.x", "__shared__", "__syncthreads()", "__shfl_xor_sync",
                   "__ballot_sync", "atomicAdd", "atomicCAS", "cudaStreamCreate", "cudaEventRecord", "cudaMemcpyAsync",
                   "cg::tiled_partition", "grid.sync()", "cudaStreamBeginCapture", "__launch_bounds__"):
        assert needle in cuda, needle
    triton = " ".join(s.code for s in quickref.sheet("triton").sections)
    for needle in ("tl.program_id", "tl.arange", "mask=", "tl.load", "tl.store", "tl.dot", "@triton.autotune",
                   "triton.cdiv", "tl.atomic_add", "tl.constexpr", "num_warps"):
        assert needle in triton, needle


def test_sections_are_found_by_id_prefix_or_misspelling():
    cuda = quickref.sheet("cuda")
    assert cuda.section("warp").id == "warp" and cuda.section("coop").id == "cooperative-groups"
    assert cuda.section("atomcs").id == "atomics"
    with pytest.raises(quickref.UnknownSectionError, match="sections: launch"):
        cuda.section("nothing-like-it")
    with pytest.raises(quickref.UnknownSectionError, match="use one of cuda, triton"):
        quickref.sheet("opencl")


def test_cli_ref_fits_80_columns(capsys):
    for lang in ("cuda", "triton"):
        code, out, _ = _run(capsys, "ref", lang)
        assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    code, out, _ = _run(capsys, "ref", "cuda", "warp")
    assert code == 0 and "__shfl_xor_sync" in out and "Warp intrinsics" in out
    code, _, err = _run(capsys, "ref", "cuda", "nothing-like-it")
    assert code != 0 and "no section 'nothing-like-it'" in err


# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------


def _value(frame, quantity):
    row = frame.filter(quantity=quantity)
    assert row.height == 1, quantity
    return row.row(0, named=True)


def test_h200_numbers_come_from_the_tables_and_the_measurements():
    s = numbers.sheet("h200")
    h200 = hardware.get("h200")
    m = hardware.measured(h200)
    bw = _value(s, "HBM bandwidth (datasheet)")
    assert bw["value"] == h200.dram_bandwidth_bytes_per_s == 4.8e12 and bw["origin"] == "datasheet"
    assert bw["shown"] == "4.80 TB/s" and "h200-ds" in bw["source"]
    copy = _value(s, "HBM copy bandwidth (measured)")
    # the measured ceiling: the calibration raised to the best copy rate recorded on the GPU, as the
    # scenarios' floors use it (never below a recorded copy rate)
    ceiling, raised = hardware.measured_ceiling(h200, m, "dram_copy_bandwidth_bytes_per_s")
    assert copy["value"] == ceiling >= m.values["dram_copy_bandwidth_bytes_per_s"] and copy["origin"] == "measured"
    assert ceiling == pytest.approx(scenarios.find("01").model.bytes_per_s)
    # the roofline's and the Hardware page's DRAM roof: at least the copy ceiling, and at least every
    # DRAM rate recorded on the GPU whatever its read/write mix
    roof = _value(s, "HBM bandwidth, any read/write mix (measured: the DRAM roof)")
    assert roof["value"] == hardware.ceilings(h200).bandwidth["dram"].value >= ceiling
    assert roof["value"] == best_rates.read("h200")["rates"]["dram_bandwidth_bytes_per_s"]["value"]
    assert (f"raised to {raised}" in copy["source"]) == bool(raised)
    read = _value(s, "HBM read bandwidth (measured)")
    assert read["value"] == pytest.approx(scenarios.find("08").model.bytes_per_s)
    # BF16 ridge from the datasheet: 989.5e12 / 4.8e12 = 206.1 FLOP/B
    assert _value(s, "BF16 ridge (datasheet)")["value"] == pytest.approx(206.15, rel=1e-4)
    # NVLink each direction: 900e9 / 2
    assert _value(s, "NVLink, each direction")["value"] == 450e9
    launch = _value(s, "Kernel launch, back to back")
    assert launch["value"] == m.values["launch_latency_s"] and launch["origin"] == "measured"
    lat = _value(s, "DRAM load latency")
    assert lat["value"] == m.values["dram_load_latency_s"] and lat["origin"] == "measured"


H200_JSON = Path(__file__).resolve().parents[1] / "hardware" / "measured" / "h200.json"


def test_h200_latencies_come_from_the_merged_run_with_its_own_provenance():
    """hardware/measured/h200.json keeps its 2026-11-30 ceilings and carries the L1 and L2 load
    latencies of the 2026-12-02 runs (merged with scripts/merge-calibration.py): each row names the
    run its value comes from. The first run's DRAM latency was withheld (its chase hit the L2); the
    second run's, with the chase fixed, is merged, and Little's law's bytes in flight follow from it."""
    s = numbers.sheet("h200")
    m = hardware.measured(hardware.get("h200"))
    assert m.date.startswith("2026-11-30")
    for quantity, key in (("L1 hit load latency", "l1_load_latency_s"), ("L2 hit load latency", "l2_load_latency_s")):
        row = _value(s, quantity)
        assert row["value"] == m.values[key] and row["origin"] == "measured"
        assert m.provenance_of(key)["date"].startswith("2026-12-02")
        assert "2026-12-02" in row["source"] and "merged into h200.json" in row["source"] and key in row["source"]
    assert _value(s, "L1 hit load latency")["shown"] == "22.3 ns"
    assert _value(s, "L2 hit load latency")["shown"] == "149 ns"
    assert _value(s, "L1 hit load latency")["value"] < _value(s, "L2 hit load latency")["value"]
    copy = _value(s, "HBM copy bandwidth (measured)")  # a value of the file's own run
    assert "2026-11-30" in copy["source"] and "merged" not in copy["source"]
    dram = _value(s, "DRAM load latency")
    assert dram["origin"] == "measured" and dram["shown"] == "358 ns" and "merged into h200.json" in dram["source"]
    assert _value(s, "L2 hit load latency")["value"] < dram["value"]
    assert m.provenance_of("dram_load_latency_s")["date"].startswith("2026-12-02T17")
    inflight = _value(s, "Bytes in flight to fill HBM")
    assert inflight["origin"] == "derived"
    assert inflight["value"] == pytest.approx(hardware.ceilings(hardware.get("h200")).bandwidth["dram"].value * dram["value"], rel=1e-6)


def test_a_merged_measurement_of_another_gpu_is_refused(tmp_path):
    doc = json.loads(H200_JSON.read_text())
    doc["measurements"]["l2_load_latency_s"]["provenance"]["gpu_name"] = "NVIDIA H100 80GB HBM3"
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="l2_load_latency_s: measured on NVIDIA H100"):
        hardware.read_measurements(path)
    doc["measurements"]["l2_load_latency_s"]["provenance"] = {"gpu_name": "NVIDIA H200"}  # no date
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="its own provenance needs at least a date"):
        hardware.read_measurements(path)


def test_merged_latencies_give_littles_law(tmp_path):
    """A DRAM latency merged the same way fills the bytes-in-flight rows from the file's own HBM
    read bandwidth, the HBM roof (the latency here is made up for the test, not a measurement)."""
    doc = json.loads(H200_JSON.read_text())
    prov = doc["measurements"]["l2_load_latency_s"]["provenance"]
    doc["measurements"]["dram_load_latency_s"] = {"unit": "s", "value": 6.0e-7, "provenance": prov}
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(doc))
    s = numbers.sheet("h200", measured=path)
    bw = doc["measurements"]["dram_read_bandwidth_bytes_per_s"]["value"]  # the HBM roof in use: the read rate
    assert _value(s, "DRAM load latency")["origin"] == "measured"
    assert _value(s, "Bytes in flight to fill HBM")["value"] == pytest.approx(bw * 6.0e-7)
    assert _value(s, "... per SM")["value"] == pytest.approx(bw * 6.0e-7 / 132)


def test_every_row_says_where_it_comes_from():
    for gpu in hardware.gpus():
        s = numbers.sheet(gpu)
        assert set(s["origin"]) <= {"datasheet", "measured", "derived", "missing"}, gpu
        assert s.filter(s["source"].str.len_chars() == 0).is_empty(), gpu
        assert s.filter((s["origin"] == "missing") != s["value"].is_null()).is_empty(), gpu


def test_numbers_agree_with_the_other_owners_of_the_same_quantity():
    """Two commands printing the same quantity print the same number."""
    s = numbers.sheet("h200")
    roofs = hardware.ceilings("h200")
    assert _value(s, "BF16 ridge (measured)")["value"] == roofs.ridge_point("bf16")  # the Hardware page's ridge
    # the drill's link rate and all-reduce model: 2 x 7/8 x 1e9 B / 450e9 B/s = 3.889 ms
    allreduce = _value(s, "All-reduce of 1 GB in one domain")["value"]
    assert allreduce == pytest.approx(2 * 7 / 8 * 1e9 / 450e9)
    assert allreduce == collectives.seconds(collectives.ring_allreduce_bytes(1e9, 8), collectives.link("h200"))
    gb200 = numbers.sheet("gb200")  # 72 GPUs in the domain: 2 x 71/72 x 1e9 / 900e9 = 2.191 ms
    assert _value(gb200, "All-reduce of 1 GB in one domain")["value"] == pytest.approx(2 * 71 / 72 * 1e9 / 900e9)


def test_datasheet_only_drops_the_measured_rows():
    s = numbers.sheet("h200", measured=False)
    assert s.filter(origin="measured").is_empty()
    assert _value(s, "Time to read all of HBM once")["value"] == pytest.approx(141e9 / 4.8e12)


def test_compare_puts_gpus_side_by_side_in_sheet_order():
    c = numbers.compare(["h100-sxm", "h200", "b200"])
    assert c.columns == ["group", "quantity", "h100-sxm", "h200", "b200"]
    q = c["quantity"].to_list()
    assert q.index("HBM bandwidth (datasheet)") < q.index("HBM copy bandwidth (measured)") < q.index("L2 cache")
    row = c.filter(quantity="FP4 tensor, dense").row(0, named=True)
    assert (row["h100-sxm"], row["b200"]) == ("-", "9.00 PFLOP/s")


def test_cli_numbers(capsys):
    code, out, _ = _run(capsys, "numbers", "--gpu", "b200", "--group", "links")
    assert code == 0 and "1.80 TB/s" in out and max(len(line) for line in out.splitlines()) <= 80
    code, out, _ = _run(capsys, "numbers", "--gpu", "h100-sxm", "--gpu", "h200", "--gpu", "b200")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    code, out, _ = _run(capsys, "numbers", "--json")
    import json

    rows = json.loads(out)
    assert {r["gpu"] for r in rows} == {"h200"} and any(r["origin"] == "measured" for r in rows)
    code, _, err = _run(capsys, "numbers", "--gpu", "h900")
    assert code != 0 and "unknown GPU 'h900'" in err


def _run(capsys, *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
