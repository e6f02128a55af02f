"""compute-sanitizer's text report and --xml file read into a SanitizerReport: each field the
spellings of several releases put in a different place, and bad input as one line.

The reports are hand-written parser fixtures (tests/data/sanitizer_synthetic/README.md says how),
not recordings: these tests check the reading, never a kernel.
"""

from __future__ import annotations

import pytest

from coach.errors import InputError
from coach.ingest import detect, load
from coach.ingest import sanitizer_common as g
from coach.ingest import sanitizer_text
from coach.model import save

SYNTH = __import__("pathlib").Path(__file__).parent / "data" / "sanitizer_synthetic"


def _rows(name: str):
    return load(SYNTH / name)


@pytest.mark.parametrize("name, fmt", [("memcheck_oob.txt", "sanitizer-text"), ("racecheck_legacy.txt", "sanitizer-text"),
                                       ("memcheck_clean.txt", "sanitizer-text"), ("memcheck_oob.xml", "sanitizer-xml")])
def test_detected_by_content(name, fmt, tmp_path):
    assert detect(SYNTH / name) == fmt
    renamed = tmp_path / "report.json"  # the name says nothing
    renamed.write_bytes((SYNTH / name).read_bytes())
    assert detect(renamed) == fmt


def test_memcheck_access_errors_2025_spelling():
    r = _rows("memcheck_oob.txt")
    first = r.records.row(0, named=True)
    assert (first["tool"], first["kind"], first["severity"], first["space"], first["access"], first["size_bytes"]) == \
        ("memcheck", "memory-access", "error", "global", "write", 4)
    assert first["function"] == "void stencil::apply<(int)5>(const float *, float *, int, int)"
    assert (first["kernel"], first["pc_offset"], first["file"], first["line"]) == ("stencil::apply", 0x2d0, "stencil.cu", 41)
    assert (first["thread_x"], first["thread_y"], first["thread_z"]) == (255, 0, 0)
    assert (first["block_x"], first["block_y"], first["block_z"]) == (15, 4095, 0)
    assert (first["address"], first["address_problem"]) == (0x7F10A4000000, "out of bounds")
    assert (first["allocation_address"], first["allocation_bytes"]) == (0x7F10A0000000, 67_108_864)  # "67,108,864"
    assert (first["allocation_relation"], first["allocation_distance_bytes"]) == ("after", 0)
    assert first["backtrace_at"] == "kernel launch time"
    assert first["host_function"] == "run_stencil"  # below libcuda and cudaLaunchKernel
    assert r.records["allocation_distance_bytes"].to_list()[:2] == [0, 4]
    api = r.records.row(2, named=True)
    assert (api["kind"], api["api_call"], api["api_error"], api["api_error_code"], api["api_message"]) == \
        ("api-error", "cudaDeviceSynchronize", "cudaErrorLaunchFailure", 719, "unspecified launch failure")
    frames = r.host_frames.filter(r.host_frames["record_id"] == 0)
    assert frames["function"].to_list() == [None, "cudaLaunchKernel", "run_stencil(float const*, float*, int, int)", "main"]
    assert frames["module"].to_list() == ["libcuda.so.1", "stencil", "stencil", "stencil"]
    s = r.summary.row(0, named=True)
    assert (s["tool"], s["errors"], s["errors_not_printed"], s["records"], s["complete"], s["target_error"]) == \
        ("memcheck", 259, 256, 3, True, True)
    assert s["program_lines"] == 2  # the program's own lines between the tool's


def test_memcheck_2022_spelling_and_old_device_frames():
    first = _rows("memcheck_2022.txt").records.row(0, named=True)
    assert (first["access"], first["size_bytes"], first["file"], first["line"]) == \
        ("read", 8, "/home/user/solver/src/gather.cu", 57)
    assert first["function"] == "gather_rows(double const*, int const*, double*, int)"
    assert first["kernel"] == "gather_kernel"  # the outermost device frame
    assert (first["allocation_relation"], first["allocation_distance_bytes"], first["allocation_bytes"]) == \
        ("before", 112, 8192)
    assert first["host_function"] == "Solver::gather"  # two-line frames: "Host Frame:NAME [0x..]" then "in MODULE"


def test_racecheck_analysis_locations_and_hazards():
    r = _rows("racecheck_analysis.txt")
    rec = r.records.row(0, named=True)
    assert (rec["tool"], rec["kind"], rec["severity"], rec["access"], rec["kernel"], rec["line"], rec["hazard_count"]) == \
        ("racecheck", "shared-race", "error", "write", "blockReduce", 12, 108)
    locs = r.locations.select("role", "access", "line", "hazards").rows()
    assert locs == [("at", "write", 12, None), ("race", "read", 14, 96), ("race", "write", 12, 12)]
    s = r.summary.row(0, named=True)
    assert (s["tool"], s["hazards_displayed"], s["race_errors"], s["race_warnings"], s["errors"]) == \
        ("racecheck", 1, 1, 0, None)


def test_racecheck_hazard_reports_and_legacy_spelling():
    hz = _rows("racecheck_hazard.txt")
    assert hz.records["hazard_type"].to_list() == ["RAW", "WAW"]
    assert hz.records["severity"].to_list() == ["warning", "error"]
    assert hz.records["block_x"].to_list() == [0, 2]
    threads = hz.locations.filter(hz.locations["record_id"] == 0)
    assert threads.select("role", "access", "line", "thread_x").rows() == [("hazard", "write", 44, 35),
                                                                          ("hazard", "read", 56, 32)]
    legacy = _rows("racecheck_legacy.txt")
    rec = legacy.records.row(0, named=True)
    assert (rec["severity"], rec["access"], rec["file"], rec["line"], rec["kernel"], rec["hazard_count"]) == \
        ("warning", "read", "./race.cu", 4, "test", 8)


def test_initcheck_and_synccheck():
    init = _rows("initcheck.txt")
    assert init.records["kind"].to_list() == ["uninitialized-read", "uninitialized-read", "uninitialized-copy"]
    assert init.records["thread_x"].to_list()[:2] == [31, 32]
    copy = init.records.row(2, named=True)
    assert (copy["size_bytes"], copy["api_call"], copy["address"]) == (1024, "cudaMemcpy", 0x7F3C7EC00100)
    sync = _rows("synccheck.txt")
    assert sync.records["barrier_problem"].to_list() == ["divergent threads in block"] * 2 + ["invalid arguments"]
    # the access is in an outlined function; the kernel is the outermost device frame
    assert sync.records.row(0, named=True)["kernel"] == "myKernel"
    # a __syncwarp in a CUDA header: the record's line is the first frame in the application's code
    third = sync.records.row(2, named=True)
    assert (third["file"], third["line"], third["kernel"]) == ("illegal_syncwarp.cu", 48, "warpKernel")


def test_clean_and_cut_short_reports():
    clean = _rows("memcheck_clean.txt")
    assert clean.records.height == 0
    s = clean.summary.row(0, named=True)
    assert (s["tool"], s["errors"], s["complete"], s["program_lines"]) == (None, 0, True, 4)
    cut = _rows("memcheck_truncated.txt")
    s = cut.summary.row(0, named=True)
    assert (s["complete"], s["errors"], s["records"]) == (False, None, 1)
    assert cut.records.row(0, named=True)["allocation_distance_bytes"] == 3_987_713


def test_xml_reads_the_same_error_as_the_text():
    xml, text = _rows("memcheck_oob.xml"), _rows("memcheck_oob.txt")
    cols = ["kind", "space", "access", "size_bytes", "kernel", "file", "line", "thread_x", "block_y", "address"]
    assert xml.records.select(cols).row(0) == text.records.select(cols).row(0)
    api = xml.records.row(1, named=True)
    assert (api["kind"], api["api_call"], api["api_error"], api["api_error_code"]) == \
        ("api-error", "cudaDeviceSynchronize", "cudaErrorLaunchFailure", 719)
    assert xml.records.row(0, named=True)["backtrace_at"] == "kernel launch time"
    assert "where.line: 41" in xml.records.row(0, named=True)["text"]  # every leaf is kept


def test_saved_report_reads_back_identically(tmp_path):
    r = _rows("racecheck_analysis.txt")
    back = load(save(r, tmp_path / "saved"))
    assert back.kind == "sanitizer-report"
    for name, frame in r.tables().items():
        assert back.tables()[name].equals(frame), name


@pytest.mark.parametrize("text, problem", [
    ("", "is empty"),
    ("hello, world\n", "is not a profile coach reads"),
    ("========= just a line of equals\n", "is not a profile coach reads"),
])
def test_not_a_report(tmp_path, text, problem):
    p = tmp_path / "log.txt"
    p.write_text(text)
    with pytest.raises(InputError, match=problem):
        load(p)


@pytest.mark.parametrize("xml, problem", [
    ('<?xml version="1.0"?>\n<ComputeSanitizerOutput><record><kind>Api</kind>', "is not well-formed XML"),
    ('<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "b">]>\n<ComputeSanitizerOutput/>', "declares a DTD or entities"),
])
def test_bad_xml_is_one_line(tmp_path, xml, problem):
    p = tmp_path / "report.xml"
    p.write_text(xml)
    with pytest.raises(InputError, match=problem) as err:
        load(p)
    assert str(err.value).startswith(str(p)) and "\n" not in str(err.value)


def test_records_past_the_limit_are_counted_not_kept(monkeypatch):
    monkeypatch.setattr(sanitizer_text, "MAX_RECORDS", 1)
    s = _rows("memcheck_oob.txt").summary.row(0, named=True)
    assert (s["records"], s["records_dropped"]) == (1, 2)


def test_overlong_lines_are_cut(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("========= COMPUTE-SANITIZER\n" + "x" * 100_000 + "\n========= ERROR SUMMARY: 0 errors\n")
    assert load(p).summary.row(0, named=True)["errors"] == 0


@pytest.mark.parametrize("text, function, pc, file, line", [
    ("buggy::transpose_tile(const float *, float *, int)+0x1b0 in transpose.cu:31",
     "buggy::transpose_tile(const float *, float *, int)", 0x1B0, "transpose.cu", 31),
    ("unaligned_kernel():0x160 in memcheck_demo.cu:6", "unaligned_kernel()", 0x160, "memcheck_demo.cu", 6),
    ("0x00000170 in ./race.cu:4:test(int*, int*)", "test(int*, int*)", 0x170, "./race.cu", 4),
    ("0x00000020 in test(int*, int*)", "test(int*, int*)", 0x20, None, None),
    ("gather+0x110", "gather", 0x110, None, None),
    ("void k<(bool)0>(float *)+0x150 in cuda.cu:27 [4,194,304 hazards]", "void k<(bool)0>(float *)", 0x150, "cuda.cu", 27),
])
def test_location_spellings(text, function, pc, file, line):
    loc = g.location(text)
    assert (loc.function, loc.pc_offset, loc.file, loc.line) == (function, pc, file, line)


@pytest.mark.parametrize("function, qualified", [
    ("void buggy::transpose_tile<(bool)0>(const float *, float *, int)", "buggy::transpose_tile"),
    ("[clone myKernel(int *, int *)] outlineSync()", "outlineSync"),
    ("vernier::bench::<unnamed>::saxpyUnguarded(float, const float *, float *)", "vernier::bench::<unnamed>::saxpyUnguarded"),
    ("cub::DeviceRadixSortKernel<Policy, int>(int *, int)", "cub::DeviceRadixSortKernel"),
    ("main", "main"),
])
def test_names_are_shortened(function, qualified):
    assert g.qualified_name(function) == qualified
    assert g.short_name(function) == qualified.rsplit("::", 1)[-1]
