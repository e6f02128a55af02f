"""ncu's text report (the terminal output without --csv), read through the details-page reader: the
synthetic reports of tests/data/ncu_text print the real H200 details export in the layouts of public
output (PROVENANCE.md there), so every number can be checked against the CSV it was printed from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose
from coach.errors import InputError
from coach.ingest import load
from coach.ingest.detect import detect


@pytest.fixture(scope="module")
def text_dir(data_dir):
    return data_dir / "ncu_text"


@pytest.fixture(scope="module")
def csv_profile(data_dir):
    return load(data_dir / "ncu_strided_copy" / "nvidia" / "details.csv")


def _same_metrics(a, b) -> pl.DataFrame:
    """Rows of either metric table that the other lacks or holds with another value or unit."""
    keys = ["launch_id", "metric"]
    joined = a.metrics.join(b.metrics, on=keys, how="full", suffix="_b", coalesce=True, nulls_equal=True)
    return joined.filter(~pl.col("value").eq_missing(pl.col("value_b")) | ~pl.col("unit").eq_missing(pl.col("unit_b"))
                         | ~pl.col("text").eq_missing(pl.col("text_b")))


def test_a_2025_text_report_reads_as_its_csv_export(text_dir, csv_profile):
    path = text_dir / "details_2025_layout_synthetic.txt"
    assert detect(path) == "ncu-text"
    p = load(path)
    assert p.source.format == "ncu-text" and p.launches.height == 2
    assert _same_metrics(p, csv_profile).height == 0  # the chart table's rows are not read twice
    assert p.launches.equals(csv_profile.launches.select(p.launches.columns))
    assert p.launches["kernel_name"].to_list() == ["copy_strided", "copy_coalesced"]
    assert p.launches["duration_ns"].to_list() == pytest.approx([1.18e6, 0.198e6], rel=1e-3)  # "ms" in the text
    first = lambda prof: [(f.rule_id, f.launch_id) for f in diagnose(prof)][:2]  # noqa: E731
    assert first(p) == first(csv_profile)


def test_a_2020_text_report_leaves_what_it_does_not_print_unknown(text_dir, csv_profile):
    p = load(text_dir / "details_2020_layout_synthetic.txt")
    assert _same_metrics(p, csv_profile).height == 0  # msecond, cycle/nsecond read as ms and GHz
    assert p.launches["grid_x"].is_null().all() and p.launches["device_id"].is_null().all()
    assert p.launches["grid_size"].to_list() == csv_profile.launches["grid_size"].to_list()  # from Launch Statistics
    assert diagnose(p)[0].rule_id == diagnose(csv_profile)[0].rule_id


def test_a_metrics_only_run_names_the_uncoalesced_loads_without_inventing_a_time(text_dir):
    p = load(text_dir / "metrics_only_synthetic.txt")
    assert p.launches["duration_ns"].is_null().all()
    found = [f for f in diagnose(p) if f.rule_id == "uncoalesced-global-access"]
    assert [(f.scope, f.details["sectors_per_request"]) for f in found] == [("copy_strided", 32.0)]
    assert found[0].estimated_saving_ns is None and "not estimated" in found[0].gain_model


def test_load_prints_a_missing_duration_as_missing_not_zero(text_dir):
    done = subprocess.run([sys.executable, "-m", "coach", "load", str(text_dir / "metrics_only_synthetic.txt")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("copy_")]
    assert len(rows) == 2 and all(" 0 ns" not in r and "nan" not in r and "not in report" in r for r in rows)


def test_a_report_cut_before_its_tables_fails_in_one_line(tmp_path):
    p = tmp_path / "cut.txt"
    p.write_text("[490] app@127.0.0.1\n  k(float *) (1, 1, 1)x(32, 1, 1), Context 1, Stream 7, Device 0, CC 9.0\n"
                 "    Section: GPU Speed Of Light Throughput\n")
    with pytest.raises(InputError) as info:
        load(p)
    assert "\n" not in str(info.value) and "no section table" in str(info.value)


def test_text_that_only_mentions_sections_is_not_taken_for_a_report(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("Section: GPU Speed Of Light Throughput\nDRAM Throughput 80%\n")
    with pytest.raises(InputError) as info:
        load(p)
    assert "not a profile coach reads" in str(info.value)


def test_a_print_summary_report_reads_one_launch_per_kernel_from_its_averages(text_dir, data_dir):
    """--print-summary per-kernel --details-all: raw metric names, Minimum / Maximum / Average columns."""
    p = load(text_dir / "summary_per_kernel_synthetic.txt")
    raw = load(data_dir / "ncu_strided_copy" / "nvidia" / "raw.csv")
    assert "average over the kernel's invocations" in p.source.meta["summary"]
    cols = ["kernel_name", "duration_ns", "sm_throughput_pct", "dram_throughput_pct", "memory_throughput_pct",
            "grid_size", "block_size", "registers_per_thread"]
    assert p.launches.select(cols).equals(raw.launches.select(cols))
    assert p.launches["waves_per_sm"].to_list() == pytest.approx(raw.launches["waves_per_sm"].to_list(), abs=0.005)
    # the strided copy at 80% of the DRAM peak (its sector counts are not in this summary)
    assert [(f.rule_id, f.title) for f in diagnose(p)][0] == ("speed-of-light", "DRAM-bandwidth-bound at 80% of peak")


def test_a_2025_print_summary_reads_as_the_details_it_averages(text_dir, csv_profile):
    """2023+ --print-summary: 'name (grid)x(block), Device 0, CC 9.0, Invocations 1', header between dashes."""
    p = load(text_dir / "summary_2025_layout_synthetic.txt")
    assert "summary" in p.source.meta and p.launches.height == 2
    assert _same_metrics(p, csv_profile).height == 0
    cols = ["kernel_name", "duration_ns", "grid_x", "block_x", "device_id", "dram_throughput_pct", "sm_throughput_pct"]
    assert p.launches.select(cols).equals(csv_profile.launches.select(cols))
    assert p.launches["stream_id"].is_null().all()  # a summary prints no stream


def test_a_metrics_only_pair_checks_the_coalescing_it_measured(text_dir, tmp_path):
    """The --metrics run's two launches as before/after files: the sectors per request fell 32 -> 4, which the
    coalesce fix predicts; its ideal (needs the access width), the DRAM bytes and the time are not in them."""
    from coach.analyze.diff import diff  # noqa: PLC0415

    text = (text_dir / "metrics_only_synthetic.txt").read_text()
    head, second = text.split("\n  copy_coalesced", 1)
    before, after = tmp_path / "before.txt", tmp_path / "after.txt"
    before.write_text(head + "\n")
    after.write_text(head.split("\n")[0] + "\n  copy_coalesced" + second)
    d = diff(load(before), load(after), fix="coalesce")
    assert d.fix_verdict == "matches where measured"
    checks = {r["metric"]: r for r in d.headline_checks().to_dicts()}
    assert checks["load_sectors_per_request"]["met"] is True
    assert (checks["load_sectors_per_request"]["before"], checks["load_sectors_per_request"]["after"]) == (32.0, 4.0)
    assert checks["duration_ns"]["met"] is None and checks["excess_load_sectors"]["met"] is None


# --------------------------------------------------------------------------------------------
# Rule results: the OPT / WRN / INF paragraphs under each section
# --------------------------------------------------------------------------------------------

#: Real ncu 2025.3.1 terminal output of one launch on an H200 (kernels/scan/trial-2026-12-03-rung10/README.txt):
#: an NVTX stack and a clock warning between the launch line and its first section, estimates on their own
#: line, results of one section parted by a dashed line, a URL cut where its line ends.
REAL_2025_TEXT = Path(__file__).resolve().parent.parent / "kernels" / "scan" / "trial-2026-12-03-rung10" / "r10stalls.txt"
RULE_COLUMNS = ["launch_id", "rule_id", "rule_name", "section_id", "severity", "message", "speedup_type", "speedup_pct"]
AS_CSV = [c for c in RULE_COLUMNS if c != "rule_name"]  # the CSV export names a rule by its id alone


def test_a_real_2025_text_report_gives_its_rule_results_with_their_estimates():
    assert detect(REAL_2025_TEXT) == "ncu-text"  # the NVTX stack keeps "Section:" 7 lines below the launch line
    p = load(REAL_2025_TEXT)
    assert p.launches["duration_ns"].to_list() == [200930.0]
    rules = p.rules.select(RULE_COLUMNS[:5] + RULE_COLUMNS[6:]).rows()
    assert rules == [
        (0, "SOLBottleneck", "Bottleneck", "SpeedOfLight", "warning", None, None),
        (0, "UncoalescedGlobalAccess", "Uncoalesced Global Accesses", "SourceCounters", "warning", "global", 1.793),
        (0, "UncoalescedSharedAccess", "Uncoalesced Shared Accesses", "SourceCounters", "warning", "global", 10.49),
    ]
    shared = p.rules["message"][2]
    # the paragraph's lines joined by a space, the URL ncu cut at the line's end joined back whole
    assert shared.startswith("This kernel has uncoalesced shared accesses resulting in a total of 2097152 excessive "
                             "wavefronts (10% of the total 20101673 wavefronts).")
    assert "Guide (https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#shared-memory-in-matrix-" \
           "multiplication-c-ab) has an example" in shared
    assert "  " not in shared and p.source.meta.get("rules_unrecognised") is None


def test_text_rule_results_equal_the_csv_export_and_the_report_they_were_printed_from(text_dir, csv_profile,
                                                                                    strided_ncu_rep):
    """The 2025 layout prints details.csv's 18 results with "Est. Speedup" / "Est. Local Speedup" lines; read
    back, they are the CSV's rows exactly, and the .ncu-rep's (whose links ncu_report gives as @url:...@ markup)."""
    text = load(text_dir / "details_2025_layout_synthetic.txt").rules
    assert text.height == 18
    assert text.select(AS_CSV).equals(csv_profile.rules.select(AS_CSV))
    rep = load(strided_ncu_rep).rules.filter(pl.col("message").fill_null("") != "")  # less a result with no message
    keys = ["launch_id", "rule_id", "rule_name", "section_id", "severity", "message", "speedup_type"]
    assert sorted(text.select(keys).rows()) == sorted(rep.select(keys).rows())
    both = text.join(rep, on=keys, nulls_equal=True)
    assert both.height == 18 and (both["speedup_pct"] - both["speedup_pct_right"]).abs().max() < 0.005  # CSV: 2 decimals
    assert both["speedup_pct"].is_null().eq(both["speedup_pct_right"].is_null()).all()


def test_rule_results_of_versions_without_estimates_have_none(text_dir, csv_profile):
    """2019.x-2021.1 layout: a result right under the table's closing dashes, no estimate line."""
    old = load(text_dir / "details_2020_layout_synthetic.txt").rules
    assert old.select(AS_CSV[:5]).equals(csv_profile.rules.select(AS_CSV[:5]))
    assert old["speedup_pct"].is_null().all() and old["speedup_type"].is_null().all()


def test_every_rule_result_in_the_recorded_reports_is_recognised_by_its_wording(data_dir):
    """The wording table names every message of the repository's H200 .ncu-rep reports (ncu 2025.3.1)
    as the report itself names it: rule id, rule name and section."""
    from coach.ingest.ncu_text import name_rules  # noqa: PLC0415

    reports = sorted(data_dir.rglob("*.ncu-rep"))
    assert len(reports) >= 5
    real = pl.concat([load(r).rules for r in reports]).filter(pl.col("message").fill_null("") != "")
    named = name_rules(real.select("message"))
    assert real.height > 50 and real["rule_id"].n_unique() >= 12
    assert named.select("rule_id", "rule_name", "section_id").equals(real.select("rule_id", "rule_name", "section_id"))


@pytest.mark.parametrize(("message", "rule_id"), [
    # synthetic: the wording of NVIDIA's own rule files (sections/*.py) and of public ncu text, numbers filled in
    ("This kernel grid is too small to fill the available resources on this device, resulting in only 0.4 full waves "
     "across all SMs. Look at Launch Statistics for more details.", "SOLBottleneck"),
    ("This kernel exhibits low compute throughput and memory bandwidth utilization relative to the peak performance "
     "of this device.", "SOLBottleneck"),
    ("The ratio of peak float (fp32) to double (fp64) performance on this device is 32:1.", "SOLFPRoofline"),
    ("The grid for this launch is configured to execute only 16 blocks, which is less than the GPU's 132 "
     "multiprocessors.", "LaunchConfiguration"),
    ("Threads are executed in groups of 32 threads called warps. This kernel launch is configured to execute 100 "
     "threads per block.", "LaunchConfiguration"),
    ("This kernel's theoretical occupancy (33.3%) is limited by the number of required registers.", "Occupancy"),
    ("On average each warp of this kernel spends 12.5 cycles being stalled waiting for sibling warps at a CTA "
     "barrier.", "CPIStallBarrier"),
    ("On average, each warp of this kernel spends 20.1 cycles being stalled waiting for a scoreboard dependency on an "
     "MIO operation (not to TEX or L1).", "CPIStall"),
    ("The memory access pattern for global loads from DRAM might not be optimal.", "MemoryCacheAccessPattern"),
    ("FP64 is the highest-utilized pipeline (91.0%) based on active cycles.", "HighPipeUtilization"),
    ("System memory backs 45.0% of the data in the L2 cache that was requested by L1TEX and had cache misses in L2.",
     "MemoryApertureUsage"),
    ("The optional metric dram__cycles_active.avg could not be found.", None),
])
def test_older_and_rarer_wordings_name_their_rule(message, rule_id):
    from coach.ingest.ncu_text import name_rules  # noqa: PLC0415

    assert name_rules(pl.DataFrame({"message": [message]}))["rule_id"].to_list() == [rule_id]


# synthetic: a 2025-layout launch whose sections print results without a table above them, one result of a
# rule coach does not know (ncu's note on a missing optional metric) and one with a local estimate
_UNTABLED = """\
[77] app@127.0.0.1
  k(float *) (4, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- ------------
    Metric Name             Metric Unit Metric Value
    ----------------------- ----------- ------------
    Duration                         us         3.10
    ----------------------- ----------- ------------

    OPT   This kernel grid is too small to fill the available resources on this device, resulting in only 0.0 full
          waves across all SMs. Look at Launch Statistics for more details.

    Section: GPU and Memory Workload Distribution
    WRN   The optional metric dram__cycles_active.avg could not be found. Collecting it as an additional metric could
          enable the rule to provide more guidance.

    Section: Memory Workload Analysis Tables
    OPT   Est. Local Speedup: 84.6%
          The memory access pattern for global loads from DRAM might not be optimal. On average, only 4.9 of the 32
          bytes transmitted per sector are utilized by each thread.
"""


def test_results_without_a_table_and_unknown_rules_are_kept(tmp_path):
    path = tmp_path / "untabled.txt"
    path.write_text(_UNTABLED)
    p = load(path)
    assert p.rules.select("rule_id", "severity", "speedup_type", "speedup_pct").rows() == [
        ("SOLBottleneck", "warning", None, None), (None, "warning", None, None),
        ("MemoryCacheAccessPattern", "warning", "local", 84.6)]
    assert p.source.meta["rules_unrecognised"] == 1
    assert p.metrics.height == 1  # the results are not read as table rows
    assert all("None" not in (f.differs_from_ncu or "") for f in diagnose(p))


# --------------------------------------------------------------------------------------------
# Text as it arrives: Windows encodings, terminal codes, interleaved output, cut and broken files.
# Every variant below is synthetic: the 2025-layout report of tests/data/ncu_text, re-encoded or cut here.
# --------------------------------------------------------------------------------------------


def _same_profile(a, b) -> None:
    assert _same_metrics(a, b).height == 0
    assert a.launches.equals(b.launches)
    assert a.rules.equals(b.rules)


@pytest.fixture(scope="module")
def report_text(text_dir) -> str:
    return (text_dir / "details_2025_layout_synthetic.txt").read_text()


@pytest.fixture(scope="module")
def text_profile(text_dir):
    return load(text_dir / "details_2025_layout_synthetic.txt")


@pytest.mark.parametrize("variant", ["utf16_crlf", "crlf", "utf8_bom"])
def test_windows_encodings_and_line_ends_read_as_the_original(tmp_path, report_text, text_profile, variant):
    """PowerShell's `ncu ... > log.txt` writes UTF-16 LE with a byte-order mark and CRLF line ends;
    Notepad's "UTF-8 with BOM" a UTF-8 byte-order mark."""
    path = tmp_path / f"{variant}.txt"
    crlf = report_text.replace("\n", "\r\n")
    path.write_bytes({"utf16_crlf": b"\xff\xfe" + crlf.encode("utf-16-le"), "crlf": crlf.encode(),
                      "utf8_bom": b"\xef\xbb\xbf" + report_text[report_text.index("[490]"):].encode()}[variant])
    assert detect(path) == "ncu-text"
    p = load(path)
    _same_profile(p, text_profile)
    if variant == "utf8_bom":  # the process line right after the mark is read, not lost to it
        assert p.launches["process_name"].unique().to_list() == ["copy_strided_vs_coalesced"]


def test_terminal_colour_codes_are_dropped(tmp_path, report_text, text_profile):
    coloured = (report_text.replace("Section:", "\x1b[1mSection:\x1b[0m").replace("    OPT ", "    \x1b[33mOPT\x1b[0m ")
                .replace("copy_strided", "\x1b[32mcopy_strided\x1b[m").replace("80.39", "\x1b[1;31m80.39\x1b[0m"))
    assert coloured.count("\x1b[") > 50
    path = tmp_path / "coloured.log"
    path.write_text("\x1b]0;ncu\x07" + coloured)  # and a window title set on the way
    assert detect(path) == "ncu-text"
    _same_profile(load(path), text_profile)


def test_prof_lines_and_program_output_between_the_report_lines_are_skipped(tmp_path, report_text, text_profile):
    """A live run kept with 2>&1: ncu's ==PROF== lines land anywhere, even inside a table or a rule
    paragraph; the program's own lines come between launches."""
    lines = report_text.splitlines()
    prof = "==PROF== Profiling \"copy_coalesced\" - 1: 0%....50%....100% - 40 passes"
    mixed = []
    for i, line in enumerate(lines):
        mixed.append(line)
        if i % 7 == 3:
            mixed.append(prof)
        if line.startswith("  copy_coalesced"):  # the second launch's header: the program speaks before it
            mixed[-1:-1] = ["step 1: 0.198 ms", "checksum ok (2 kernels)"]
    assert sum(line == prof for line in mixed) > 40
    path = tmp_path / "live.txt"
    path.write_text("\n".join(mixed) + "\n")
    _same_profile(load(path), text_profile)


def test_a_file_cut_inside_a_table_reads_its_whole_rows_and_says_where_it_was_cut(tmp_path, report_text, text_profile):
    at = report_text.index("    Memory Throughput                          Tbyte/s")  # launch 0's Memory Workload Analysis
    cut = report_text[: at + len("    Memory Throughput                          Tbyte/s         3.")]  # inside "3.87"
    path = tmp_path / "cut.txt"
    path.write_text(cut)
    p = load(path)
    assert p.launches.height == 1 and p.launches["kernel_name"].to_list() == ["copy_strided"]
    assert "'Memory Workload Analysis' table of launch 0 (copy_strided" in p.source.meta["truncated"]
    sections = p.metrics.join(text_profile.metrics, on=["launch_id", "metric"], how="inner")
    assert sections.height == p.metrics.height  # every value read is one the whole file holds
    assert (sections["value"] == sections["value_right"]).all()
    whole = path.with_name("cut_at_line_end.txt")
    whole.write_text(report_text[: report_text.index("\n", at) + 1])  # cut after that row's line end: the row is whole
    q = load(whole)
    # the row cut inside "3.87" is the one left out: read whole, it adds one value, 3.87 TB/s
    extra = q.metrics.join(p.metrics, on=["launch_id", "metric"], how="anti")
    assert extra.height == 1 and extra["value"].to_list() == [pytest.approx(3.87e12)] and "truncated" in q.source.meta


def test_coach_load_and_diagnose_say_a_file_is_cut_short(tmp_path, report_text):
    path = tmp_path / "cut.txt"
    path.write_text(report_text[: len(report_text) // 3])
    for command in ("load", "diagnose"):
        done = subprocess.run([sys.executable, "-m", "coach", command, str(path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "cut short" in " ".join(done.stdout.split()), done.stdout


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "is empty"),
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8, "holds binary data, not text"),
    (b"NVR\x00" + b"\x07" * 100, "truncated or damaged"),  # a report saved under a .txt name
    (b"\xff\xfe" + "notes about the run\r\n".encode("utf-16-le"), "is not a profile coach reads"),
])
@pytest.mark.parametrize("command", ["load", "diagnose"])
def test_an_unreadable_txt_fails_in_one_line_naming_the_file_and_why(tmp_path, content, reason, command):
    path = tmp_path / "report.txt"
    path.write_bytes(content)
    done = subprocess.run([sys.executable, "-m", "coach", command, str(path)], capture_output=True, text=True)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and reason in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_the_log_of_a_run_that_wrote_its_report_elsewhere_names_the_report(data_dir):
    """Real: what ncu printed while recording tests/data/wild_ncu (ncu 2025.3.1, -o)."""
    log = data_dir / "wild_logs" / "ncu-memory_patterns.basic.log"
    with pytest.raises(InputError) as info:
        load(log)
    msg = str(info.value)
    assert "\n" not in msg and "wrote its report to a file (/tmp/rec/wild/ncu/memory_patterns.basic.ncu-rep)" in msg


@pytest.mark.parametrize(("log", "reason"), [
    # synthetic: ncu's own wording of the two commonest empty runs, as public logs quote it
    ("==PROF== Connected to process 664418 (/work/app)\nresult 79.0\n==ERROR== ERR_NVGPUCTRPERM - The user does not "
     "have permission to access NVIDIA GPU Performance Counters on the target device 0.\n"
     "==WARNING== No kernels were profiled.\n", "ncu reported: ERR_NVGPUCTRPERM - The user does not have permission"),
    ("==PROF== Connected to process 664418 (/work/app)\n==PROF== Disconnected from process 664418\n"
     "==WARNING== No kernels were profiled.\nAvailable Kernels:\n1. wmma_cxx_kernel\n2. wmma_inline_ptx_stub\n",
     "profiled no kernel"),
])
def test_the_log_of_a_run_that_profiled_nothing_says_what_ncu_said(tmp_path, log, reason):
    path = tmp_path / "ncu.log"
    path.write_text(log)
    with pytest.raises(InputError) as info:
        load(path)
    assert "\n" not in str(info.value) and reason in str(info.value)


@pytest.mark.parametrize("log", ["nsys-healthy_gemm.log", "nsys-setup_allocs_once.log"])
def test_the_log_of_an_nsys_run_names_its_report_even_after_a_json_line(data_dir, log):
    """Real: what nsys printed while recording tests/data/wild_nsys (the Python programs print one JSON
    line first, which made the log pass for a JSON trace)."""
    with pytest.raises(InputError) as info:
        load(data_dir / "wild_logs" / log)
    msg = str(info.value)
    stem = log.removeprefix("nsys-").removesuffix(".log")
    assert "\n" not in msg and f"wrote its report to a file (/tmp/rec/wild/nsys/{stem}.nsys-rep)" in msg
