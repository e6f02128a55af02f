"""The correctness rules on compute-sanitizer reports: each names the class of bug, the line, and
the fix; their ranking; what a clean or cut-short report says; and coach load / diagnose on them.

Inputs are the hand-written fixtures of tests/data/sanitizer_synthetic (not recordings) and small
reports written in the tests, each built to make one rule fire or stay quiet.
"""

from __future__ import annotations

import pytest
from test_capture_support import flat, run_cli

from coach.analyze.diagnose import diagnose
from coach.analyze.findings import BugClass
from coach.analyze.sanitizer_rules import specs
from coach.ingest import load

SYNTH = __import__("pathlib").Path(__file__).parent / "data" / "sanitizer_synthetic"


def _findings(path):
    return diagnose(load(path))


def _report(tmp_path, *lines: str, name: str = "r.txt"):
    p = tmp_path / name
    p.write_text("".join(f"========= {ln}\n" for ln in ("COMPUTE-SANITIZER", *lines)))
    return _findings(p)


def _oob(distance: str, size: str = "4,096", problem: str = "out of bounds", relation: str = "after") -> list[str]:
    return ["Invalid __global__ write of size 4 bytes", "    at k(float *)+0x10 in k.cu:9",
            "    by thread (3,0,0) in block (1,0,0)", f"    Access to 0x7f0000001000 is {problem}",
            f"    and is {distance} bytes {relation} the nearest allocation at 0x7f0000000000 of size {size} bytes", "",
            "ERROR SUMMARY: 1 error"]


def test_every_rule_declares_itself():
    ids = [s.id for s in specs()]
    assert len(ids) == len(set(ids))
    assert {"out-of-bounds-access", "shared-memory-race", "uninitialized-read", "divergent-barrier", "asynchronous-error",
            "cuda-api-error", "device-fault", "memory-leak", "sanitizer-clean", "sanitizer-incomplete"} <= set(ids)


def test_out_of_bounds_then_the_api_error_it_caused():
    found = _findings(SYNTH / "memcheck_oob.txt")
    assert [f.rule_id for f in found] == ["out-of-bounds-access", "asynchronous-error"]
    oob, api = found
    assert oob.category is BugClass.OUT_OF_BOUNDS and oob.scope == "stencil::apply"
    assert oob.title == "Out-of-bounds global write at stencil.cu:41 in stencil::apply"
    assert oob.details["lines"] == [41] and oob.details["records"] == [0, 1]
    assert "2 threads made an invalid global write of 4 bytes" in oob.message
    assert "256 more errors were not printed" in oob.message
    assert "one element past the last" in oob.message and "invisible to memcheck" in oob.message
    assert oob.next_step.startswith("At stencil.cu:41: make the bound test the index the thread actually writes")
    assert "launched from run_stencil" in oob.next_step
    assert api.category is BugClass.ASYNC_ERROR
    assert api.title == "cudaDeviceSynchronize reports the fault of stencil::apply at stencil.cu:41, not its own"
    assert api.details["caused_by"] == 0 and api.estimated_saving_ns is None


@pytest.mark.parametrize("distance, relation, size, reading", [
    ("0", "after", "4,096", "one element past the last"),
    ("12", "after", "4,096", "a few elements out"),
    ("4", "before", "4,096", "a negative index"),
    ("3,987,713", "after", "4,096", "the index is garbage"),
    ("5,000", "after", "40,000,000", "a few elements out"),
])
def test_the_distance_says_what_kind_of_index(tmp_path, distance, relation, size, reading):
    found = _report(tmp_path, *_oob(distance, size, relation=relation))
    assert found[0].rule_id == "out-of-bounds-access" and reading in found[0].message


def test_misaligned_access(tmp_path):
    lines = ["Invalid __global__ read of size 16 bytes", "    at k(float4 *)+0x10 in k.cu:7",
             "    by thread (0,0,0) in block (0,0,0)", "    Address 0x7f0000000004 is misaligned",
             "    and is inside the nearest allocation at 0x7f0000000000 of size 64 bytes", "", "ERROR SUMMARY: 1 error"]
    f = _report(tmp_path, *lines)[0]
    assert f.category is BugClass.MISALIGNED and f.title == "Misaligned global read at k.cu:7 in k"
    assert "not a multiple of the 16-byte access" in f.message


def test_races_name_the_write_and_the_read():
    f = _findings(SYNTH / "racecheck_analysis.txt")[0]
    assert (f.rule_id, f.category) == ("shared-memory-race", BugClass.SHARED_RACE)
    assert f.title == "Shared-memory race in blockReduce: written at reduce.cu:12, read at reduce.cu:14 with no barrier between"
    assert f.details["write_lines"] == [12] and f.details["read_lines"] == [14] and f.details["lines"] == [12, 14]
    assert "108 byte-level hazards" in f.message and "threads of different warps" in f.message
    assert f.next_step.startswith("Put __syncthreads() after the writes at reduce.cu:12 and before the reads at reduce.cu:14")


def test_warp_level_races_want_syncwarp_and_write_write_races_one_writer():
    found = _findings(SYNTH / "racecheck_hazard.txt")
    assert [f.details["severity"] for f in found] == ["error", "warning"]  # the error ranks first
    waw, warp = found
    assert waw.title == "Shared-memory write-write race in WAW at raceWAW.cu:20"
    assert "one thread write" in waw.next_step and "barrier does not decide" in waw.next_step
    assert warp.next_step.startswith("Put __syncwarp() after the writes at warp_error.cu:44")
    assert "has not been guaranteed since Volta" in warp.message


def test_uninitialised_reads_and_copies():
    read, copy = _findings(SYNTH / "initcheck.txt")
    assert read.title == "Read of uninitialised global memory at memset_error.cu:41 in vectorAdd"
    assert read.details["lines"] == [41] and "2 threads read global memory" in read.message
    assert "cudaMemset(ptr, 0, bytes)" in read.next_step
    assert copy.title == "cudaMemcpy copies uninitialised bytes in main" and copy.details["rank"] > read.details["rank"]


def test_divergent_barriers_name_the_caller():
    block, warp = _findings(SYNTH / "synccheck.txt")
    assert block.title == "Barrier reached by part of the block at test.cu:42 in myKernel"
    assert "called from myKernel at test.cu:60" in block.message and "2 threads in 1 block" in block.message
    assert "out of the condition" in block.next_step
    assert warp.title == "__syncwarp() with a mask that leaves out a calling thread, at illegal_syncwarp.cu:48 in warpKernel"


def test_a_sticky_error_with_no_device_record_says_how_to_find_the_kernel(tmp_path):
    f = _report(tmp_path, 'Program hit cudaErrorIllegalAddress (error 700) due to "an illegal memory access was '
                          'encountered" on CUDA API call to cudaMemcpy.', "    Saved host backtrace up to driver entry "
                          "point at error", "        Host Frame: main [0x9a9e] in embed", "", "ERROR SUMMARY: 1 error")[0]
    assert (f.rule_id, f.scope) == ("asynchronous-error", "main")
    assert f.title == "cudaMemcpy returned cudaErrorIllegalAddress: a kernel failed before it"
    assert "CUDA_LAUNCH_BLOCKING=1" in f.next_step and "compute-sanitizer --tool memcheck" in f.next_step


def test_an_api_error_of_its_own(tmp_path):
    f = _report(tmp_path, 'Program hit cudaErrorMemoryAllocation (error 2) due to "out of memory" on CUDA API call '
                          "to cudaMalloc.", "", "ERROR SUMMARY: 1 error")[0]
    assert (f.rule_id, f.title) == ("cuda-api-error", "cudaMalloc failed: cudaErrorMemoryAllocation")


@pytest.mark.parametrize("tool_line, title, leaves", [
    ("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)", "Clean under racecheck", "races through global"),
    ("ERROR SUMMARY: 0 errors", "Clean: no errors reported", "does not say which tool ran"),
])
def test_clean_reports_say_what_they_do_not_rule_out(tmp_path, tool_line, title, leaves):
    (f,) = _report(tmp_path, tool_line)
    assert (f.rule_id, f.category, f.title) == ("sanitizer-clean", BugClass.CLEAN, title)
    assert leaves in f.message and "float64 reference" in f.message


def test_a_cut_short_report_is_read_and_flagged():
    found = _findings(SYNTH / "memcheck_truncated.txt")
    assert [f.rule_id for f in found] == ["out-of-bounds-access", "sanitizer-incomplete"]
    assert "the index is garbage" in found[0].message and "no loose bound reaches that far" in found[0].message


def test_leaks_and_the_tools_own_errors(tmp_path):
    found = _report(tmp_path, "Leaked 1,024 bytes at 0x7879c0800000", "    Saved host backtrace up to driver entry "
                    "point at allocation time", "        Host Frame: cudaMalloc [0x56624] in app",
                    "        Host Frame: load_weights() [0xae5c] in app", "",
                    "Error: No attachable process found. compute-sanitizer timed-out.",
                    "LEAK SUMMARY: 1024 bytes leaked in 1 allocations", "ERROR SUMMARY: 1 error")
    assert [f.rule_id for f in found] == ["memory-leak", "sanitizer-run-error"]
    assert found[0].title == "1,024 bytes of device memory leaked" and "load_weights" in found[0].message


def test_cli_diagnose_and_load_on_a_report(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(["diagnose", str(SYNTH / "racecheck_analysis.txt")], capsys)
    assert code == 0, err
    text = flat(out)
    assert "(sanitizer-report)" in text and "1. [shared-memory-race] Shared-memory race in blockReduce" in text
    assert "next: Put __syncthreads() after the writes at reduce.cu:12" in text
    code, out, err = run_cli(["load", str(SYNTH / "memcheck_oob.txt")], capsys)
    assert code == 0, err
    text = flat(out)
    assert "compute-sanitizer memcheck: 259 errors, 256 not printed" in text
    assert "invalid access" in text and "stencil.cu:41" in text and "cudaErrorLaunchFailure (719)" in text
    code, out, err = run_cli(["load", "--json", str(SYNTH / "memcheck_clean.txt")], capsys)
    assert code == 0 and '"kind": "sanitizer-report"' in out and '"rule_id": "sanitizer-clean"' in out


def test_a_failing_program_with_no_record_is_still_clean(tmp_path):
    """--check-exit-code (the default) may count the program's own non-zero exit as the one error."""
    (f,) = _report(tmp_path, "Target application returned an error", "ERROR SUMMARY: 1 error")
    assert f.rule_id == "sanitizer-clean" and "the one error the summary counts" in f.message
    found = _report(tmp_path, "Target application returned an error", "ERROR SUMMARY: 2 errors", name="two.txt")
    assert [x.rule_id for x in found] == ["sanitizer-incomplete"]  # a second error is not the exit code's
    assert found[0].title == "The summary counts 2 errors the report does not print"


def test_the_dashboard_refuses_a_sanitizer_report_in_one_line(tmp_path):
    import base64

    from coach.app.uploads import read_upload
    from coach.errors import InputError

    data = base64.b64encode((SYNTH / "memcheck_clean.txt").read_bytes()).decode()
    with pytest.raises(InputError, match=r"^memcheck\.log: is a compute-sanitizer report: the dashboard shows profiles"):
        read_upload(f"data:text/plain;base64,{data}", "memcheck.log", tmp_path, 10_000_000)
    assert not any(tmp_path.rglob("*.log"))  # the upload is not left behind


def test_brackets_in_messages_survive_the_terminal(capsys, monkeypatch):
    """Messages quote code (x[tid] += x[tid + s]); the CLI must not read it as markup."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(["diagnose", str(SYNTH / "synccheck.txt")], capsys)
    assert code == 0, err
    assert "if (tid < s) x[tid] += x[tid + s]; __syncthreads();" in flat(out)
