"""ncu's text report (the terminal output without --csv), read through the details-page reader: the
synthetic reports of tests/data/ncu_text print the real H200 details export in the layouts of public
output (PROVENANCE.md there), so every number can be checked against the CSV it was printed from."""

from __future__ import annotations

import subprocess
import sys

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
