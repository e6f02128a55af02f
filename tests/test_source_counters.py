"""Source counters: per-instruction and per-line data of .ncu-rep reports, `coach source`, and the
lines findings point at.

Recorded data: tests/data/ncu_strided_copy (nvcc -lineinfo, --import-source yes: the text is in the
report) and the scenario-01 report kept in traces/ (NVRTC through CuPy: lines, no text).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from coach.analyze import source
from coach.analyze.diagnose import diagnose
from coach.ingest import load, ncu_source, source_text
from coach.paths import traces_dir
from cli_support import run_cli

ncu_report = pytest.importorskip("ncu_report")

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_01_REP = traces_dir() / "h200" / "scenario-01" / "slow" / "report.ncu-rep.xz"  # kept xz-compressed
PARTICLES = ROOT / "scenarios" / "scenario-01-aos-particles" / "particles.cu"


@pytest.fixture(scope="module")
def strided(strided_ncu_rep):
    return load(strided_ncu_rep)


@pytest.fixture(scope="module")
def particles():
    return load(SCENARIO_01_REP)


# --------------------------------------------------------------------------------------------
# Ingest
# --------------------------------------------------------------------------------------------


def test_per_instruction_counters_of_the_strided_gather(strided):
    s = strided.sass.filter(pl.col("launch_id") == 0)
    ldg = s.filter(pl.col("opcode") == "LDG").row(0, named=True)
    stg = s.filter(pl.col("opcode") == "STG").row(0, named=True)
    # stride 33: each warp-wide 4-byte load touches 32 sectors where 4 would do
    assert (ldg["pc_offset"], ldg["line"]) == (0x2D0, 4)
    assert ldg["l2_global_sectors"] == 67108864 and ldg["l2_global_sectors_ideal"] == 8388608
    assert ldg["l2_global_excess_sectors"] == 67108864 - 8388608
    assert ldg["warp_inst"] == 2097152 and ldg["thread_inst"] == 32 * 2097152
    assert stg["l2_global_excess_sectors"] == 0  # the store is coalesced
    assert stg["samples"] == 133466
    stalls = strided.stall_samples.filter((pl.col("launch_id") == 0) & (pl.col("pc_offset") == stg["pc_offset"]))
    assert dict(zip(stalls["reason"], stalls["samples"]))["long_scoreboard"] == 133382


def test_reason_samples_add_up_to_each_instructions_samples(strided, particles):
    for p in (strided, particles):
        summed = p.stall_samples.group_by("launch_id", "pc_offset").agg(pl.col("samples").sum().alias("by_reason"))
        both = p.sass.join(summed, on=["launch_id", "pc_offset"], how="left").with_columns(pl.col("by_reason").fill_null(0))
        assert (both["samples"].fill_null(0) == both["by_reason"]).all()


def test_only_instructions_with_a_counter_are_kept(strided):
    counters = [c for c in ncu_source.SASS if c not in ("launch_id", "pc_offset", "file_id", "line", "sass", "opcode")]
    any_counter = pl.any_horizontal([pl.col(c).fill_null(0) != 0 for c in counters])
    assert strided.sass.filter(~any_counter).is_empty()
    # copy_strided has 143 instructions, 47 of them executed or sampled; copy_coalesced 16 and 17
    assert strided.sass.group_by("launch_id").len().sort("launch_id")["len"].to_list() == [47, 17]


def test_embedded_source_text(strided, strided_ncu_rep):
    files = strided.source_files
    assert files.height == 1 and files["text_origin"][0] == "report"
    assert files["text"][0] == (strided_ncu_rep.parent / "copy_strided_vs_coalesced.cu").read_text()


def test_the_shares_agree_with_nvidias_source_markers(strided_ncu_rep, strided):
    """Nsight Compute's own CPIStall marker on the STG says '88.6% of all warp stalls'."""
    action = ncu_report.load_report(str(strided_ncu_rep)).range_by_idx(0).action_by_idx(0)
    marker = next(m for m in action.source_markers() if m["rule_identifier"] == "CPIStall" and m["kind"] == 0)
    share = float(re.search(r"responsible for ([\d.]+)%", marker["message"]).group(1))
    stg = source.instructions(strided, 0).filter(pl.col("opcode") == "STG").row(0, named=True)
    assert round(stg["samples_pct"], 1) == share


class _OlderAction:
    """The recorded action as an older Nsight Compute would present it (synthetic in names, real in
    numbers): no ``derived__`` excess metrics but the earlier unprefixed name, no stall-reason group
    metric, no function-start metric, no ``_not_issued`` variants, no embedded text."""

    RENAMED = {"memory_l2_theoretical_sectors_global_excessive": "derived__memory_l2_theoretical_sectors_global_excessive"}
    DROPPED = ("derived__", "group:", "launch__function_pcs", "memory_l2_theoretical_sectors_global_ideal")

    def __init__(self, action):
        self._a = action

    def metric_names(self):
        names = [n for n in self._a.metric_names() if not n.startswith(self.DROPPED) and not n.endswith("_not_issued")]
        return tuple(names) + tuple(self.RENAMED)

    def metric_by_name(self, name):
        if name in self.RENAMED:
            return self._a.metric_by_name(self.RENAMED[name])
        return None if name.startswith(self.DROPPED) else self._a.metric_by_name(name)

    def source_info(self, pc):
        return self._a.source_info(pc)

    def sass_by_pc(self, pc):
        return self._a.sass_by_pc(pc)

    def source_files(self):
        return {k: "" for k in self._a.source_files()}


def test_older_metric_names_give_the_same_tables(strided_ncu_rep, strided):
    ctx = ncu_report.load_report(str(strided_ncu_rep))
    tables = ncu_source.SourceTables()
    for i in range(ctx.range_by_idx(0).num_actions()):
        tables.add_launch(_OlderAction(ctx.range_by_idx(0).action_by_idx(i)), i)
    old = tables.frames()
    new = strided.sass.drop("l2_global_sectors_ideal")
    # addresses from the lowest sampled or executed instruction: here the function's first
    assert old["sass"].drop("l2_global_sectors_ideal").equals(new)
    assert old["stall_samples"].sort(["launch_id", "pc_offset", "reason"]).equals(
        strided.stall_samples.sort(["launch_id", "pc_offset", "reason"]))
    assert old["source_files"]["text"].is_null().all()


class _WithoutSampleCount(_OlderAction):
    """Further back (synthetic in names, real in numbers): no ``smsp__pcsamp_sample_count``, no
    source_files or name methods on the action, and a source_info that raises (a binary without
    line information, as some module versions report it)."""

    DROPPED = (*_OlderAction.DROPPED, "smsp__pcsamp_sample_count")

    def source_info(self, pc):
        raise RuntimeError("no source correlation")

    def source_files(self):
        raise AttributeError("source_files")


def test_samples_are_the_sum_of_the_reasons_where_the_count_is_missing(strided_ncu_rep, strided):
    ctx = ncu_report.load_report(str(strided_ncu_rep))
    tables = ncu_source.SourceTables()
    for i in range(ctx.range_by_idx(0).num_actions()):
        tables.add_launch(_WithoutSampleCount(ctx.range_by_idx(0).action_by_idx(i)), i)
    old = tables.frames()["sass"]
    assert old["samples"].equals(strided.sass["samples"])
    assert old["line"].is_null().all() and tables.inline_status == {0: "no line information", 1: "no line information"}
    assert old.drop("file_id", "line", "l2_global_sectors_ideal").equals(
        strided.sass.drop("file_id", "line", "l2_global_sectors_ideal"))


def test_a_report_without_line_information_keeps_its_sass(strided):
    sass_only = replace(strided, sass=strided.sass.with_columns(pl.lit(None, pl.Int64).alias("file_id"),
                                                                pl.lit(None, pl.Int64).alias("line")))
    assert source.gap(sass_only, name="r.ncu-rep").startswith("SASS only in r.ncu-rep (no line information): build with -lineinfo")
    top = source.hot_instructions(sass_only, 0, 1).row(0, named=True)
    assert top["opcode"] == "STG" and top["top_reason"] == "long_scoreboard"


# --------------------------------------------------------------------------------------------
# Lines
# --------------------------------------------------------------------------------------------


def test_hot_lines_of_the_strided_gather(strided):
    lines = source.lines(strided, 0)
    assert lines["samples_pct"].sum() == pytest.approx(100.0)
    top = lines.row(0, named=True)
    assert (top["file"], top["line"]) == ("copy_strided_vs_coalesced.cu", 4)
    assert top["text"] == "if (i < n) out[i] = in[(long)i*stride % n];"
    assert top["top_reasons"][0]["reason"] == "long_scoreboard"
    assert top["l2_global_excess_sectors"] == 58720256
    assert lines.filter(pl.col("line") == 3)["l2_global_sectors"][0] is None  # no memory access: not measured, not 0


def _as_cupy_named_it(particles):
    """The scenario-01 report as an NVRTC build without a #line directive names its source: CuPy's
    deleted temporary file, no text (the recording's own line table with that one column changed;
    the H200 recordings before 2026-12-02 looked like this)."""
    files = particles.source_files.with_columns(pl.lit("/tmp/tmp7x2k9q/9f1c.cubin.cu").alias("path"),
                                                pl.lit(None, dtype=pl.Utf8).alias("text"))
    return replace(particles, source_files=files)


def test_nvrtc_lines_are_matched_to_the_scenario_source(particles):
    # recorded: the build names particles.cu through a #line directive, and the text is found
    assert Path(particles.source_files["path"][0]).name == "particles.cu"
    assert source.gap(particles) is None
    top = source.lines(particles, 0).row(0, named=True)
    assert (top["file"], top["line"], top["text"]) == ("particles.cu", 24, "x_out[i] = p[i].x + dt * p[i].vx;")
    # without the directive: matched to the scenario's file by the kernel it defines
    nameless = _as_cupy_named_it(particles)
    assert source.gap(nameless, name="report.ncu-rep").startswith("no source text in report.ncu-rep (lines only)")
    filled = source_text.fill(nameless, source_text.search_folders(SCENARIO_01_REP, nameless))
    row = filled.source_files.row(0, named=True)
    assert row["local_path"] == "scenarios/scenario-01-aos-particles/particles.cu"
    assert "defines kernel drift_x_aos" in row["text_origin"]
    assert source.gap(filled) is None
    top = source.lines(filled, 0).row(0, named=True)
    assert (top["line"], top["text"]) == (24, "x_out[i] = p[i].x + dt * p[i].vx;")


def test_matching_needs_one_defining_file_long_enough(tmp_path, particles):
    particles = _as_cupy_named_it(particles)
    (tmp_path / "a.cu").write_text("\n" * 30 + 'extern "C" __global__ void drift_x_aos(int n) {}\n')
    assert source_text.fill(particles, [tmp_path]).source_files["text"][0] is not None
    (tmp_path / "b.cu").write_text("\n" * 30 + "__global__ void __launch_bounds__(256)\ndrift_x_aos(int n) {}\n")
    assert source_text.fill(particles, [tmp_path]).source_files["text"][0] is None  # two candidates: no guess
    short = tmp_path / "short"
    short.mkdir()
    (short / "c.cu").write_text('extern "C" __global__ void drift_x_aos(int n) {}\n')  # fewer lines than line 26
    assert source_text.fill(particles, [short]).source_files["text"][0] is None


def test_kernel_definitions():
    assert source_text.defines("extern \"C\" __global__ void __launch_bounds__(256)\nmaterial_response(int x)", "material_response")
    assert source_text.defines("@triton.jit\ndef softmax_kernel(x_ptr):", "softmax_kernel")
    assert not source_text.defines("__device__ float material_response(int x);", "material_response")
    assert not source_text.defines("__global__ void material_response_v2(int x)", "material_response")


# --------------------------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------------------------


def test_uncoalesced_finding_points_at_the_gather(strided):
    found = [f for f in diagnose(strided) if f.rule_id == "uncoalesced-global-access"]
    assert [f.launch_id for f in found] == [0]
    (loc,) = found[0].locations
    assert (loc.where, loc.line, loc.opcodes) == ("copy_strided_vs_coalesced.cu:4", 4, ("LDG",))
    assert loc.counter == "l2_global_excess_sectors" and loc.value == 58720256 and loc.share_pct == 100.0


def test_findings_about_the_launch_configuration_carry_no_line(strided):
    for f in diagnose(strided):
        if f.category in ("tail-effect", "launch-bound") or f.rule_id.startswith("not-checked:"):
            assert f.locations == ()


def test_a_profile_without_source_counters_gives_findings_without_lines(strided):
    from coach.model import SASS, empty

    bare = replace(strided, sass=empty(SASS))
    assert all(f.locations == () for f in diagnose(bare))


def test_warp_stall_finding_points_at_the_lines_of_its_reason(strided):
    stalls = [f for f in diagnose(strided) if f.rule_id == "warp-stalls" and f.launch_id == 1]
    assert stalls and stalls[0].locations[0].counter == "long_scoreboard_samples"
    assert stalls[0].locations[0].where == "copy_strided_vs_coalesced.cu:8"


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def test_coach_source_at_80_columns(strided_ncu_rep, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["source", str(strided_ncu_rep), "--kernel", "copy_strided", "--top", "2", "--sass"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert all(len(l) <= 80 for l in lines)
    assert lines[0].startswith("copy_strided  launch 0  (150,583 warp samples)")
    # ranked by the leading finding's counter: the uncoalesced gather's excess sectors
    assert lines[1].strip() == "ranked by: uncoalesced-global-access (L2 sectors beyond a coalesced access)"
    assert lines[2].split() == ["91.7%", "copy_strided_vs_coalesced.cu:4", "long", "scoreboard", "97%"]
    assert "global: 58.7M L2 sectors beyond a coalesced access (4.5x the ideal)" in out
    assert "cause of: uncoalesced-global-access" in out
    assert re.search(r"\+0x0300 STG\.E desc\[UR6\]\[R2\.64\], R7\s+88\.6% long scoreboard", out)
    assert "copy_coalesced" not in out


def test_coach_source_json_matches_the_line_table(strided_ncu_rep, strided, capsys):
    code, out, _ = run_cli(["source", str(strided_ncu_rep), "--json", "--top", "0"], capsys)
    data = json.loads(out)
    first = data["launches"][0]["lines"][0]
    table = source.lines(strided, 0)
    assert first["where"] == "copy_strided_vs_coalesced.cu:4" and first["samples"] == table["samples"][0]
    assert len(data["launches"][0]["lines"]) == table.height
    assert "uncoalesced-global-access" in first["findings"]


def test_coach_source_on_a_report_without_source_counters(capsys):
    saved = ROOT / "tests" / "data" / "wild_ncu" / "memory_patterns.basic.ncu-rep"  # --set basic: no SourceCounters
    code, out, err = run_cli(["source", str(saved)], capsys)
    assert code != 0 and out == ""
    assert err.strip() == (f"coach: error: no source counters in {saved}: profile with ncu --set full "
                           "(or --section SourceCounters) --import-source yes and build with -lineinfo")
    assert len(err.strip().splitlines()) == 1


def test_coach_source_says_in_one_line_what_a_report_without_lines_or_text_needs(tmp_path, particles, capsys,
                                                                                 monkeypatch):
    """Counters but no line table (a cuBLAS kernel, scenario 12): the SASS, and what to rebuild
    with; lines but no text (scenario 01 as an NVRTC build without its file name): the lines, and
    what to re-record with. Each note is one line of the JSON and of the terminal."""
    from coach.model import save

    monkeypatch.setenv("COLUMNS", "400")
    sass_only = traces_dir() / "h200" / "scenario-12" / "slow" / "ncu"
    code, out, err = run_cli(["source", str(sass_only), "--json"], capsys)
    assert code == 0, err
    (launch,) = json.loads(out)["launches"]
    assert launch["note"] == f"SASS only in scenario-12/slow/ncu (no line information): {source.NEED_LINEINFO}"
    assert launch["lines"] == [] and launch["instructions"]
    code, out, _ = run_cli(["source", str(sass_only), "--top", "1"], capsys)
    assert out.splitlines()[1].strip() == launch["note"]
    textless = save(_as_cupy_named_it(particles), tmp_path / "r" / "slow" / "ncu")
    code, out, err = run_cli(["source", str(textless), "--json"], capsys)
    assert code == 0, err
    (launch,) = json.loads(out)["launches"]
    assert launch["note"] == f"no source text in r/slow/ncu (lines only): {source.NEED_TEXT}"
    assert launch["lines"][0]["line"] == 24 and launch["lines"][0]["text"] is None
    code, out, _ = run_cli(["source", str(textless), "--top", "1"], capsys)
    assert out.splitlines()[1].strip() == launch["note"]


def test_coach_diagnose_shows_the_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(["diagnose", str(SCENARIO_01_REP), "--top", "1"], capsys)
    assert code == 0
    assert "at particles.cu:24  x_out[i] = p[i].x + dt * p[i].vx;" in " ".join(out.split("\n"))
    code, out, _ = run_cli(["diagnose", str(SCENARIO_01_REP), "--json"], capsys)
    top = json.loads(out)["kernels"][0]["findings"][0]
    assert top["rule_id"] == "uncoalesced-global-access"
    assert [loc["where"] for loc in top["locations"]] == ["particles.cu:24"]


# --------------------------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------------------------


def test_import_writes_the_source_tables_with_the_scenarios_text(tmp_path):
    from test_capture_support import build_raw_scenario_01

    from coach import recordings, scenarios

    folder = build_raw_scenario_01(tmp_path / "raw")
    (folder / "slow.ncu-rep").write_bytes(SCENARIO_01_REP.read_bytes())
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["variants"]["slow"]["ncu"] = "slow.ncu-rep"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    done = recordings.import_raw(tmp_path / "raw", tmp_path / "traces")
    saved = load(done[0].folder / "slow" / "ncu")
    assert saved.sass.height == 24 and saved.stall_samples.height == 82
    assert saved.source_files["text"][0] == PARTICLES.read_text()
    assert saved.source_files["text_origin"][0] == "report"  # recorded with --import-source yes: carried in the report
    assert source.lines(saved, 0).row(0, named=True)["line"] == 24
    # a report without the text (an NVRTC build named after CuPy's temporary file) is matched at import
    nameless = recordings.with_scenario_sources(_as_cupy_named_it(load(SCENARIO_01_REP)), scenarios.find("scenario-01"))
    assert nameless.source_files["local_path"][0] == "scenarios/scenario-01-aos-particles/particles.cu"
    assert nameless.source_files["text"][0] == PARTICLES.read_text()


def test_shipped_scenario_01_trace_carries_the_source_tables(particles):
    saved = load(traces_dir() / "h200" / "scenario-01" / "slow" / "ncu")
    assert saved.sass.drop("file_id").equals(particles.sass.drop("file_id"))
    assert saved.source_files["text"][0] == PARTICLES.read_text()


def test_a_kept_xz_report_loads_and_a_truncated_one_says_so(tmp_path, particles):
    """traces/ keeps full reports xz-compressed: `load` unpacks them (the profile is the report's);
    a truncated one is a one-line error naming the file given."""
    from coach.errors import InputError

    assert particles.launches.height > 0 and source.has_counters(particles)
    cut = tmp_path / "cut.ncu-rep.xz"
    cut.write_bytes(SCENARIO_01_REP.read_bytes()[:4096])
    with pytest.raises(InputError, match=r"cut\.ncu-rep\.xz: is xz-compressed but cannot be unpacked"):
        load(cut)
