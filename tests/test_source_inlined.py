"""Inlined code: each instruction charged to its innermost line from the line table of the binary the
report embeds (coach.ingest.cubin_lines), the line it is inlined at kept as context.

Recorded data: scenario 06's kept report (NVRTC -lineinfo on the H200, Nsight Compute 2025.3.1):
``model()`` and its ``switch`` are inlined into the kernel, so the switch's first branches carry two
lines in the binary, the switch (37) inlined at the call (54); ``source_info`` answers 54 for them.
The strided-copy report (tests/data/ncu_strided_copy) has no inlined code.
"""

from __future__ import annotations

import importlib.util
import json
import lzma
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from coach.analyze import source
from coach.analyze.diagnose import diagnose
from coach.ingest import cubin_lines, load, ncu_source
from coach.paths import traces_dir
from cli_support import run_cli

ncu_report = pytest.importorskip("ncu_report")

SCENARIO_06 = traces_dir() / "h200" / "scenario-06" / "slow"
MATERIALS = "materials.cu"
SWITCH, CALL = 37, 54  # `switch (material) {` and `if (i < n) out[i] = model(material[i], x[i]);`
#: The switch's first compare-and-branch run, in the binary right after the two loads of line 54.
SWITCH_PCS = range(0x110, 0x1C0, 0x10)


@pytest.fixture(scope="module")
def report_06(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("s06") / "report.ncu-rep"
    out.write_bytes(lzma.decompress((SCENARIO_06 / "report.ncu-rep.xz").read_bytes()))
    return out


@pytest.fixture(scope="module")
def profile_06(report_06):
    return load(report_06)


@pytest.fixture(scope="module")
def image_06(report_06) -> bytes:
    (image,) = cubin_lines.elf_images(report_06.read_bytes())
    return image


# --------------------------------------------------------------------------------------------
# The binary's line table
# --------------------------------------------------------------------------------------------


def _nvdisasm() -> str | None:
    found = shutil.which("nvdisasm")
    if found:
        return found
    spec = importlib.util.find_spec("triton")  # Triton's wheel carries one
    if spec is None or not spec.submodule_search_locations:
        return None
    bundled = Path(next(iter(spec.submodule_search_locations))) / "backends" / "nvidia" / "bin" / "nvdisasm"
    return str(bundled) if bundled.is_file() else None


def _nvdisasm_chains(listing: str) -> dict[int, tuple[tuple[str, int], ...]]:
    """{address: chain} from `nvdisasm -gi`: a run of `//## File "F", line N [inlined at ...]`
    comments (innermost first) holds for the instructions after it."""
    out, chain, fresh = {}, [], False
    for text in listing.splitlines():
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)', text)
        if m:
            chain = [] if not fresh else chain
            chain.append((Path(m.group(1)).name, int(m.group(2))))
            fresh = True
            continue
        a = re.match(r"\s*/\*([0-9a-f]{4,})\*/", text)
        if a:
            out[int(a.group(1), 16)] = tuple(chain)
            fresh = False
    return out


def test_the_decoded_chains_are_nvdisasms(image_06, tmp_path):
    tool = _nvdisasm()
    if tool is None:
        pytest.skip("no nvdisasm (CUDA toolkit or Triton's wheel) to compare with")
    cubin = tmp_path / "material_response.cubin"
    cubin.write_bytes(image_06)
    listing = subprocess.run([tool, "-gi", "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    expected = _nvdisasm_chains(listing)
    (lines,) = cubin_lines.line_maps(image_06)["material_response"]
    assert len(expected) == 0x1900 // 16  # the function's 400 instructions
    got = {pc: tuple((Path(f).name, n) for f, n in lines.chain(pc)) for pc in expected}
    assert got == expected
    assert expected[0x130] == ((MATERIALS, SWITCH), (MATERIALS, CALL))
    assert max(len(c) for c in expected.values()) == 4  # a lambda inlined in series() inlined in model() in the kernel


#: Two kernels in one binary, with an inlined function, a __noinline__ one (a subroutine in each
#: kernel's section) and double-precision sine and cosine (CUDA's slow-path subroutine).
SUBROUTINES_CU = """\
__device__ __noinline__ float helper(float x) { return x * x + 1.0f; }
__device__ __forceinline__ float twice(float x) { return 2.0f * helper(x); }
extern "C" __global__ void k(const double* x, double* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = sin(x[i]) * cos(x[i] * 3.0);
        z[i] = twice((float)x[i]);
    }
}
extern "C" __global__ void k2(float* z) { z[threadIdx.x] = twice(z[threadIdx.x]); }
"""


def _sections_chains(listing: str) -> dict[str, dict[int, tuple[tuple[str, int], ...]]]:
    """``_nvdisasm_chains`` per code section (``.text.<kernel>:``) of a listing."""
    parts = re.split(r"^\.text\.(\S+):$", listing, flags=re.M)
    return {name: _nvdisasm_chains(body) for name, body in zip(parts[1::2], parts[2::2])}


def test_kernels_with_subroutines_decode_as_nvdisasm_reads_them(tmp_path):
    """An nvcc build (the scenarios' binaries are NVRTC's): each kernel's table covers its section,
    the subroutines after its own code included."""
    tool, nvcc = _nvdisasm(), shutil.which("nvcc")
    if tool is None or nvcc is None:
        pytest.skip("needs nvcc and nvdisasm")
    (tmp_path / "k.cu").write_text(SUBROUTINES_CU)
    subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-lineinfo", "-O3", "-o", str(tmp_path / "k.cubin"),
                    str(tmp_path / "k.cu")], check=True, capture_output=True)
    image = (tmp_path / "k.cubin").read_bytes()
    listing = subprocess.run([tool, "-gi", "-c", str(tmp_path / "k.cubin")], capture_output=True, text=True,
                             check=True).stdout
    assert "CALL.REL.NOINC `($k$__internal_trig_reduction_slowpathd)" in listing
    expected = _sections_chains(listing)
    assert sorted(expected) == ["k", "k2"]
    maps = cubin_lines.line_maps(b"other bytes" + image)
    for kernel, chains in expected.items():
        (lines,) = maps[kernel]
        assert {pc: tuple((Path(f).name, n) for f, n in lines.chain(pc)) for pc in chains} == chains, kernel
    # the inlined call of twice() in k2: helper's call is charged to twice's line, inlined at k2's
    assert ("k.cu", 2) in {c[0] for c in expected["k2"].values() if len(c) == 2 and c[1] == ("k.cu", 10)}


def test_source_info_is_the_first_row_at_each_address(report_06, image_06):
    """What Nsight Compute's source_info answers is the table's first row at the address, for every
    instruction with counters: the check ncu_source makes before it uses the table."""
    (lines,) = cubin_lines.line_maps(image_06)["material_response"]
    action = ncu_report.load_report(str(report_06)).range_by_idx(0).action_by_idx(0)
    pcs = ncu_source._instances(action, "inst_executed")
    base = min(pcs)
    for pc in pcs:
        info = action.source_info(pc)
        assert (Path(lines.first(pc - base)[0]).name, lines.first(pc - base)[1]) == (Path(info.file_name()).name, info.line())
    assert action.source_info(base + 0x130).line() == CALL  # the switch's branch, as source_info has it


def test_other_bytes_and_cut_images_are_not_taken_for_binaries(image_06):
    noise = b"\x7fELF" + bytes(60)  # a header of no CUDA machine
    assert cubin_lines.elf_images(noise + image_06 + noise) == [image_06]
    assert cubin_lines.elf_images(b"abc" + image_06[: len(image_06) // 2]) == []  # cut short: no image
    assert cubin_lines.line_maps(b"no binary here") == {}


# --------------------------------------------------------------------------------------------
# Ingest
# --------------------------------------------------------------------------------------------


def test_the_switch_is_charged_to_its_line_inlined_at_the_call(profile_06):
    assert profile_06.source.meta["source_lines"] == {"0": "innermost"}
    switch = profile_06.sass.filter(pl.col("pc_offset").is_in(list(SWITCH_PCS)))
    assert switch.height == len(SWITCH_PCS)
    assert switch["line"].unique().to_list() == [SWITCH] and switch["call_line"].unique().to_list() == [CALL]
    loads = profile_06.sass.filter(pl.col("opcode") == "LDG")  # the kernel's own line: not inlined
    assert loads["line"].unique().to_list() == [CALL] and loads["call_line"].is_null().all()
    # every branch Nsight Compute counts as divergent is the switch's
    divergent = profile_06.sass.filter(pl.col("divergent_branches") > 0)
    assert divergent.height == 7 and divergent["line"].unique().to_list() == [SWITCH]


def test_the_shipped_scenario_06_trace_has_the_reports_lines(profile_06):
    saved = load(SCENARIO_06 / "ncu")
    assert saved.sass.drop("file_id", "call_file_id").equals(profile_06.sass.drop("file_id", "call_file_id"))


def _action(report: Path):
    return ncu_report.load_report(str(report)).range_by_idx(0).action_by_idx(0)


def test_a_line_table_that_disagrees_with_source_info_is_not_used(report_06, profile_06):
    action = _action(report_06)
    real = cubin_lines.line_maps(Path(report_06).read_bytes())
    (rows,) = [m.rows for m in real["material_response"]]
    shifted = [cubin_lines.Row(r.address, r.file, r.line + 1, r.context) for r in rows]  # off by one line
    for maps, status in (({"material_response": [cubin_lines.LineMap(shifted)]}, "disagrees"),
                         ({}, "was not found")):
        tables = ncu_source.SourceTables(line_maps=lambda m=maps: m)
        tables.add_launch(action, 0)
        assert status in tables.inline_status[0]
        sass = tables.frames()["sass"]
        assert sass.filter(pl.col("pc_offset") == 0x130)["line"].item() == CALL  # source_info's line kept
        assert sass["call_line"].is_null().all()
    # two candidates for one name: the one that agrees is taken
    tables = ncu_source.SourceTables(line_maps=lambda: {"material_response": [cubin_lines.LineMap(shifted),
                                                                               *real["material_response"]]})
    tables.add_launch(action, 0)
    assert tables.inline_status[0] == "innermost"
    assert tables.frames()["sass"].equals(profile_06.sass)


# --------------------------------------------------------------------------------------------
# Lines, findings, coach source
# --------------------------------------------------------------------------------------------


def test_the_switch_line_names_its_call_as_context(profile_06):
    lines = source.lines(profile_06, 0)
    switch = lines.filter(pl.col("line") == SWITCH).row(0, named=True)
    assert switch["inlined_at"] == [f"{MATERIALS}:{CALL}"]
    assert lines.filter(pl.col("line") == CALL)["inlined_at"].item() is None  # the kernel's own line
    top = next(f for f in diagnose(profile_06) if f.rule_id == "warp-divergence")
    assert [loc.where for loc in top.locations] == [f"{MATERIALS}:{SWITCH}"]
    assert top.locations[0].counter == "divergent_branches" and top.locations[0].share_pct == 100.0
    assert f"inlined at {MATERIALS}:{CALL}" in top.locations[0].note


def test_coach_source_ranks_by_the_leading_finding_or_by_samples(capsys):
    code, out, err = run_cli(["source", str(SCENARIO_06 / "ncu"), "--json", "--top", "3"], capsys)
    assert code == 0, err
    launch = json.loads(out)["launches"][0]
    assert launch["ranked_by"] == {"counter": "divergent_branches", "label": "divergent executions of the branch",
                                   "finding": "warp-divergence"}
    first = launch["lines"][0]
    assert (first["line"], first["inlined_at"], first["rank_share_pct"]) == (SWITCH, [f"{MATERIALS}:{CALL}"], 100.0)
    assert first["samples_pct"] < 1  # few samples: the warps' time is in the paths the switch picks
    code, out, err = run_cli(["source", str(SCENARIO_06 / "ncu"), "--json", "--top", "3", "--rank", "samples"], capsys)
    by_samples = json.loads(out)["launches"][0]
    assert by_samples["ranked_by"]["counter"] == "samples"
    assert by_samples["lines"][0]["line"] == 38 and by_samples["lines"][0]["samples_pct"] > 50  # case 0's sine
    code, out, err = run_cli(["source", str(SCENARIO_06 / "ncu"), "--rank", "stalls"], capsys)
    assert code != 0 and err.strip() == "coach: error: --rank: 'stalls' is not one of finding, samples"


def test_coach_source_prints_the_call_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["source", str(SCENARIO_06 / "ncu"), "--top", "1"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert all(len(l) <= 80 for l in lines)
    assert lines[1].strip() == "ranked by: warp-divergence (divergent executions of the branch)"
    assert lines[2].split()[1] == f"{MATERIALS}:{SWITCH}"
    assert f"inlined at {MATERIALS}:{CALL}" in out and "cause of: warp-divergence" in out


def test_recorded_scenarios_with_lines_all_use_the_binarys_table():
    """Every shipped Nsight Compute scenario recording whose kernels carry line information was read
    with the binary's table (its first rows agreed with source_info everywhere); the library kernels
    (cuBLAS, PyTorch's elementwise kernels) have none."""
    statuses = {}
    for n in range(1, 13):
        for variant in ("slow", "fixed"):
            folder = traces_dir() / "h200" / f"scenario-{n:02d}" / variant / "ncu"
            header = json.loads((folder / "coach-profile.json").read_text())
            statuses[(n, variant)] = set(header["source"]["meta"].get("source_lines", {}).values())
    assert all(statuses[(n, v)] == {"innermost"} for n in range(1, 10) for v in ("slow", "fixed")), statuses
    assert all(statuses[(n, "slow")] == {"no line information"} for n in (10, 11, 12)), statuses
    assert statuses[(11, "fixed")] == {"innermost"}  # the fused chain: a Triton kernel (fused.py), lines included


def test_lines_not_from_the_binary_say_so(capsys):
    """A profile whose lines are source_info's says in one line that inlined code may show at its
    call, and why: a saved profile from before (a ladder's), or a table that disagreed."""
    old = Path(__file__).parent / "data" / "profile_saved_source_info" / "ncu"  # saved 2026-12-02 (README there)
    code, out, err = run_cli(["source", str(old), "--json", "--top", "1"], capsys)
    assert code == 0, err
    notes = {l["lines_note"] for l in json.loads(out)["launches"] if l["lines"]}
    assert notes == {"lines as Nsight Compute's source_info gives them (saved before coach read inlined lines from "
                     "the binary: load the .ncu-rep itself): inlined code may show at the line calling it"}
    code, out, err = run_cli(["source", str(SCENARIO_06 / "ncu"), "--json", "--top", "1"], capsys)
    assert json.loads(out)["launches"][0]["lines_note"] is None
    from dataclasses import replace

    profile = load(SCENARIO_06 / "ncu")
    meta = {**profile.source.meta, "source_lines": {"0": "source_info: the binary's line table disagrees with it"}}
    disagreed = replace(profile, source=replace(profile.source, meta=meta))
    assert source.attribution(disagreed, 0) == ("lines as Nsight Compute's source_info gives them (the binary's line "
                                                "table disagrees with it): inlined code may show at the line calling it")

