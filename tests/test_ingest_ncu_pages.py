"""Nsight Compute 2025.3.1's own pages of one H200 report (tests/data/ncu_pages_2025, README there): every
print variant that holds metrics per launch reads as the .ncu-rep it was printed from, and every page
that does not is refused in one line that names the page and what to print instead."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose
from coach.errors import InputError
from coach.ingest import load
from coach.ingest.detect import detect

RULE_KEYS = ["launch_id", "rule_id", "rule_name", "section_id", "severity", "message", "speedup_type"]
#: what a details page prints in the units ncu picks: three or four significant digits
DISPLAY_REL = 5e-3


@pytest.fixture(scope="module")
def pages(data_dir):
    return data_dir / "ncu_pages_2025"


@pytest.fixture(scope="module")
def report(pages):
    return load(pages / "basic.ncu-rep")


def _reported_rules(profile) -> list[tuple]:
    """The results that carry a message (a report also stores rules that ran and said nothing)."""
    return sorted(profile.rules.filter(pl.col("message").fill_null("") != "").select(RULE_KEYS).rows(), key=str)


@pytest.mark.parametrize("variant", ["details", "details_units_base", "details_metric_name", "details_label_name",
                                     "details_rule_details", "details_instances", "details_mangled"])
def test_each_details_print_reads_as_the_report(pages, report, variant):
    p = load(pages / "basic" / f"{variant}.txt")
    assert p.source.format == "ncu-text" and p.launches.height == 3
    assert sorted(p.rules.select(RULE_KEYS).rows(), key=str) == _reported_rules(report)  # 5 results, all recognised
    assert "rules_unrecognised" not in p.source.meta
    for column in ("duration_ns", "dram_throughput_pct", "sm_throughput_pct", "grid_size", "registers_per_thread",
                   "achieved_occupancy_pct"):
        assert p.launches[column].to_list() == pytest.approx(report.launches[column].to_list(), rel=DISPLAY_REL), column
    if variant == "details_units_base":  # in nanoseconds, whole: as the report holds them
        assert p.launches["duration_ns"].to_list() == report.launches["duration_ns"].to_list()
    names = p.launches["kernel_name"].to_list()
    if variant == "details_mangled":
        assert names == ["_Z14copy_coalescedPKfPfi", "_Z12copy_stridedPKfPfi", "_Z18transpose_conflictPKfPf"]
    else:
        assert names == report.launches["kernel_name"].to_list()


def test_rule_details_give_the_results_focus_metrics(pages, report):
    """--print-rule-details: the Key Performance Indicators under each result, a name too long for its
    column carried on to the next line, are the report's focus metrics."""
    def focus(profile):
        return (profile.rules.select("launch_id", "rule_id", "focus_metrics").explode("focus_metrics")
                .unnest("focus_metrics").drop_nulls("name").sort("launch_id", "rule_id", "name"))
    text, rep = focus(load(pages / "basic" / "details_rule_details.txt")), focus(report)
    assert text.height == rep.height == 6
    assert text.select("launch_id", "rule_id", "name", "info").equals(rep.select("launch_id", "rule_id", "name", "info"))
    assert (text["value"] - rep["value"]).abs().max() < 1e-6  # printed with six decimals
    assert "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed" in text["name"].to_list()  # was cut in two


def test_print_details_all_adds_header_rows_but_no_chart_rows(pages):
    """--print-details all: the sections' own tables, more rows of them, then the body's charts (under
    'Table Name :'), which are left out; what both prints hold has one value."""
    base = load(pages / "basic" / "details.txt").metrics.filter(pl.col("launch_id") == 0)
    full = load(pages / "basic" / "details_all.txt").metrics
    both = full.join(base, on=["launch_id", "metric"])
    assert both.height == base.height and both["value"].eq_missing(both["value_right"]).all()
    assert full.height > base.height
    assert not full["metric"].str.contains(r"\[%\]|Breakdown|Roofline/").any()  # no "Memory [%]" chart row


def test_the_raw_page_reads_its_metrics_by_name(pages, report):
    p = load(pages / "basic" / "raw.txt")  # the first launch only
    assert p.launches.height == 1 and p.metrics.height > 500
    first = report.launches.filter(pl.col("launch_id") == 0)
    assert p.launches["dram_bytes"].is_null().item() and report.launches["dram_bytes"].is_null().all()  # basic: none
    for column in ("duration_ns", "dram_throughput_pct", "sm_throughput_pct", "achieved_occupancy_pct"):
        assert p.launches[column].item() == pytest.approx(first[column].item(), rel=DISPLAY_REL), column


@pytest.mark.parametrize("variant", ["summary_per_gpu", "summary_per_kernel"])
def test_the_summaries_read_one_launch_per_kernel(pages, report, variant):
    p = load(pages / "basic" / f"{variant}.txt")
    assert "summary" in p.source.meta and p.launches.height == 3
    assert p.launches["kernel_name"].to_list() == report.launches["kernel_name"].to_list()
    assert p.launches["device_id"].to_list() == [0, 0, 0]  # per-gpu: from the "Device 0, CC 9.0" line above
    assert p.launches["duration_ns"].to_list() == pytest.approx(report.launches["duration_ns"].to_list(), rel=DISPLAY_REL)


def test_the_full_set_text_gives_the_csv_exports_rules(pages):
    """--set full: 25 results, among them ncu's uncoalesced and bank-conflict ones with their estimates."""
    text, csv = load(pages / "full" / "details.txt"), load(pages / "full" / "csv_details.txt")
    keys = [k for k in RULE_KEYS if k != "rule_name"]  # the CSV names a rule by its id alone
    assert sorted(text.rules.select(keys).rows(), key=str) == sorted(csv.rules.select(keys).rows(), key=str)
    both = text.rules.join(csv.rules, on=keys, nulls_equal=True)
    assert both.height == 25 and ((both["speedup_pct"] - both["speedup_pct_right"]).abs() < 0.01).all()
    strided = text.rules.filter((pl.col("launch_id") == 1) & (pl.col("rule_id") == "UncoalescedGlobalAccess"))
    assert strided.select("severity", "speedup_type").row(0) == ("warning", "global")
    assert strided["message"].item().startswith("This kernel has uncoalesced global accesses resulting in a total of "
                                                "58720256 excessive sectors (78% of the total 75497472 sectors).")
    assert text.rules.filter((pl.col("launch_id") == 2) & (pl.col("rule_id") == "SharedMemoryConflicts")).height >= 1


def test_without_the_speed_of_light_the_root_check_says_what_it_needs(pages):
    p = load(pages / "subset" / "details.txt")
    assert p.rules.height == 8 and p.launches["sm_throughput_pct"].is_null().all()
    sol = [f for f in diagnose(p) if f.rule_id == "not-checked:speed-of-light"]
    assert len(sol) == 3 and all("sm__throughput" in f.message for f in sol)


def test_a_live_run_kept_with_its_program_output_reads(pages):
    p = load(pages / "live_basic.txt")
    assert detect(pages / "live_basic.txt") == "ncu-text"
    assert p.launches["kernel_name"].to_list() == ["copy_coalesced", "copy_strided", "transpose_conflict"]
    assert p.rules.height == 5 and p.rules["rule_id"].is_not_null().all()


@pytest.mark.parametrize(("variant", "reason"), [
    ("session", "is the session page of an ncu report"),
    ("csv_session", "is the session page of an ncu report"),
    ("source", "is the source page of an ncu report (--page source: SASS by address"),
    ("source_cuda", "is the source page of an ncu report (--page source: CUDA source by line"),
    ("csv_source", "is the source page of an ncu report"),
    ("summary_per_nvtx", "holds only the note ncu prints under a --print-summary, no kernel"),
    ("details_body", "holds only the sections' body tables"),
])
def test_pages_without_metrics_per_launch_are_refused_with_what_to_print(pages, variant, reason):
    path = pages / "basic" / f"{variant}.txt"
    with pytest.raises(InputError) as info:
        load(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: ") and reason in msg
    assert "--page details" in msg or "--print-details header" in msg or "--print-summary per-kernel" in msg


def test_coach_load_refuses_the_source_page_in_one_line(pages):
    done = subprocess.run([sys.executable, "-m", "coach", "load", str(pages / "basic" / "source.txt")],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "source page" in done.stderr
