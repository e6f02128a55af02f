"""The ncu --csv reader on NVIDIA's own CSV exports of the H200 report (tests/data/ncu_strided_copy/nvidia),
checked against the .ncu-rep reader on the same report, and on damaged copies of those files."""

import random

import polars as pl
import pytest

from coach.errors import InputError
from coach.ingest import load
from coach.ingest import ncu_csv
from coach.model import LAUNCH_METRICS

RAW = ["raw.csv", "raw_base_units.csv", "raw_fp_base_units.csv"]
DETAILS = ["details.csv", "details_base_units.csv"]
DURATION_NS = [1_179_872.0, 198_080.0]  # copy_strided, copy_coalesced, from the .ncu-rep
DRAM_READ_BYTES = 4_294_982_144.0  # copy_strided


@pytest.fixture(scope="module")
def nvidia(data_dir):
    return data_dir / "ncu_strided_copy" / "nvidia"


@pytest.fixture(scope="module")
def rep(strided_ncu_rep):
    return load(strided_ncu_rep)


@pytest.fixture(scope="module")
def csv_profiles(nvidia):
    return {name: load(nvidia / name) for name in RAW + DETAILS}


def _close(a, b, rel, abs_):
    return a is None and b is None or (a is not None and b is not None and abs(a - b) <= max(abs_, rel * abs(a)))


# --------------------------------------------------------------------------------------------
# Raw pages: the same canonical numbers as the .ncu-rep
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", RAW)
def test_raw_page_identity(csv_profiles, rep, name):
    l = csv_profiles[name].launches
    assert csv_profiles[name].source.format == "ncu-csv" and csv_profiles[name].source.meta["page"] == "raw"
    assert l["kernel_name"].to_list() == ["copy_strided", "copy_coalesced"]
    for col in ["demangled_name", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "grid_size", "block_size",
                "registers_per_thread", "shared_mem_static_bytes", "shared_mem_dynamic_bytes", "shared_mem_config_bytes",
                "device_id", "context_id", "stream_id"]:
        assert l[col].to_list() == rep.launches[col].to_list(), col
    assert l["process_id"].to_list() == [490, 490] and l["process_name"][0] == "copy_strided_vs_coalesced"


@pytest.mark.parametrize("name", RAW)
def test_raw_page_canonical_metrics_match_the_report(csv_profiles, rep, name):
    l = csv_profiles[name].launches
    assert l["duration_ns"].to_list() == pytest.approx(DURATION_NS, rel=1e-9)
    # the display page prints 4.294982 Gbyte: a printed digit is 1,000 bytes
    tol = 500 if name == "raw.csv" else 0
    assert abs(l["dram_read_bytes"][0] - DRAM_READ_BYTES) <= tol
    # every canonical column the report fills, within the rounding of the printed digits: two
    # decimals for percentages and ratios, six significant digits on the display page
    for col in LAUNCH_METRICS:
        for a, b in zip(rep.launches[col].to_list(), l[col].to_list()):
            assert _close(a, b, rel=2e-6, abs_=0.0051), (col, a, b)


@pytest.mark.parametrize("name", RAW)
def test_sectors_per_request(csv_profiles, name):
    l = csv_profiles[name].launches
    # 32 sectors per request for the stride-33 gather, 4 (a warp's 128 bytes of floats) when coalesced
    assert (l["global_load_sectors"] / l["global_load_requests"]).to_list() == [32.0, 4.0]


def test_raw_long_table_keeps_every_metric(csv_profiles, rep):
    m = csv_profiles["raw_base_units.csv"].metrics
    assert m.filter(pl.col("launch_id") == 0).height == 2227  # every metric column of the page
    assert m["instance"].null_count() == m.height  # the raw page prints an instanced metric's aggregate only
    aggregates = rep.metrics.filter(pl.col("instance").is_null())
    both = aggregates.join(m, on=["launch_id", "metric"], suffix="_csv").filter(
        pl.col("value").is_not_null() & pl.col("value_csv").is_not_null())
    assert both.height > 4000
    off = both.filter((pl.col("value") - pl.col("value_csv")).abs() > pl.max_horizontal(pl.col("value").abs() * 1e-5, pl.lit(0.0051)))
    assert off.height == 0, off.head()
    name = m.filter((pl.col("launch_id") == 0) & (pl.col("metric") == "device__attribute_display_name"))
    assert name["text"].item() == "NVIDIA H200" and name["value"].item() is None
    dur = m.filter((pl.col("launch_id") == 0) & (pl.col("metric") == "gpu__time_duration.sum"))
    assert dur["value"].item() == 1_179_872.0 and dur["unit"].item() == "ns"


def test_display_units_are_normalised(csv_profiles):
    m = csv_profiles["raw.csv"].metrics.filter(pl.col("launch_id") == 0)
    get = {r["metric"]: (r["value"], r["unit"]) for r in m.iter_rows(named=True)}
    assert get["gpu__time_duration.sum"] == (pytest.approx(1_179_872.0), "ns")  # printed 1.179872 ms
    assert get["dram__cycles_elapsed.avg.per_second"] == (pytest.approx(3.199421e9), "hz")  # 3.199421 Ghz
    assert get["dram__bytes.sum.peak_sustained"] == (pytest.approx(1504.0), "byte/cycle")  # 1.504000 Kbyte/cycle
    # ncu writes the prefix on the denominator of this one: 2.614 %/Kbyte is 2,614 %/byte in base units
    assert get["derived__pct_occupancy_per_shared_mem_size"] == (pytest.approx(2614.0), "%/byte")


def test_raw_page_device_row(csv_profiles):
    d = csv_profiles["raw.csv"].devices.row(0, named=True)
    assert d["name"] == "NVIDIA H200" and d["sm_count"] == 132 and (d["cc_major"], d["cc_minor"]) == (9, 0)
    assert d["l2_bytes"] == 62_914_560
    # 1.504 Kbyte/cycle x 3.199421 Ghz: the H200's 4.8 TB/s
    assert d["memory_bandwidth_bytes_per_s"] == pytest.approx(4.81e12, rel=0.01)


# --------------------------------------------------------------------------------------------
# Details pages
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DETAILS)
def test_details_page_numbers(csv_profiles, name):
    p = csv_profiles[name]
    l = p.launches
    assert p.source.meta["page"] == "details"
    assert l["kernel_name"].to_list() == ["copy_strided", "copy_coalesced"]
    assert (l["grid_x"][0], l["block_x"][0], l["grid_size"][0], l["registers_per_thread"].to_list()) == (262144, 256, 262144, [18, 16])
    # details.csv prints "1.18 ms" and "198.08 us"; details_base_units.csv the nanoseconds
    tol = 5_000 if name == "details.csv" else 0
    assert abs(l["duration_ns"][0] - DURATION_NS[0]) <= tol and l["duration_ns"][1] == DURATION_NS[1]
    assert l["dram_throughput_pct"].to_list() == [80.39, 54.32]
    assert l["achieved_occupancy_pct"].to_list() == [81.78, 71.07]
    assert l["warp_cycles_per_issued_inst"].to_list() == [170.25, 68.11]
    # evidence the details page does not print stays null for the analysis to name
    for col in ["dram_read_bytes", "global_load_sectors", "global_load_requests", "stall_long_scoreboard", "l2_bytes"]:
        assert l[col].null_count() == 2, col
    m = p.metrics.filter(pl.col("launch_id") == 0)
    assert "GPU Speed Of Light Throughput/Duration" in m["metric"].to_list()
    assert m.filter(pl.col("metric") == "Launch Statistics/Function Cache Configuration")["text"].item() == "CachePreferNone"
    assert p.devices.select("device_id", "cc_major", "cc_minor").row(0) == (0, 9, 0)


def test_details_rules_match_the_report(csv_profiles, rep):
    rules = csv_profiles["details.csv"].rules
    assert rules.height == 18
    key = ["launch_id", "rule_id", "severity", "speedup_type"]
    from_rep = rep.rules.filter(pl.col("message") != "").with_columns(pl.col("speedup_pct").round(2))
    assert sorted(rules.select(*key, "speedup_pct").rows(), key=str) == sorted(from_rep.select(*key, "speedup_pct").rows(), key=str)
    unc = rules.filter(pl.col("rule_id") == "UncoalescedGlobalAccess")
    assert unc.select("launch_id", "section_id", "severity", "speedup_type", "speedup_pct").rows() == [
        (0, "SourceCounters", "warning", "global", 77.39)]
    assert "excessive sectors" in unc["message"][0]


def test_every_details_label_names_the_metric_nvidia_shows(nvidia, rep, csv_profiles):
    """ncu_details_names.csv, checked label by label: the details page prints under each label the
    value the report holds for the metric the table names (to the printed two decimals)."""
    names = pl.read_csv(ncu_csv.DETAILS_NAMES_FILE)
    page = csv_profiles["details_base_units.csv"].metrics.with_columns(
        pl.col("metric").str.splitn("/", 2).struct.rename_fields(["section", "name"])).unnest("metric")
    checked = (
        page.join(names, on=["section", "name"])
        .join(rep.metrics.select("launch_id", pl.col("metric"), pl.col("value").alias("rep_value"), pl.col("text").alias("rep_text")),
              on=["launch_id", "metric"], how="left")
    )
    assert checked.height == 162  # the 81 labels of the 2025.3 page on each of the two launches
    unknown = checked.filter(pl.col("rep_value").is_null() & pl.col("rep_text").is_null())
    assert unknown.height == 0, unknown.select("section", "name", "metric")
    bad = checked.filter(
        pl.when(pl.col("value").is_not_null())
        .then((pl.col("value") - pl.col("rep_value")).abs() > pl.max_horizontal(pl.col("rep_value").abs() * 2e-3, pl.lit(0.0051)))
        .otherwise(pl.col("text") != pl.col("rep_text"))
    )
    assert bad.height == 0, bad.select("section", "name", "metric", "value", "rep_value")


# --------------------------------------------------------------------------------------------
# As ncu prints it live: tool lines and program output around the table
# --------------------------------------------------------------------------------------------


def test_tool_lines_and_program_output_are_skipped(nvidia, tmp_path):
    p = tmp_path / "live.txt"
    p.write_bytes(
        b"==PROF== Connected to process 490 (/bin/copy_strided_vs_coalesced)\n"
        b"n = 67108864, stride = 33\n"
        + b"checksum 1.5e+07\n" * 500  # more program output than the first 4 KiB
        + b"==PROF== Profiling \"copy_strided\" - 0: 0%....50%....100% - 39 passes\n"
        + (nvidia / "raw.csv").read_bytes()
        + b"==WARNING== Found outstanding GPU clock reset, trying to revert...Success.\n"
    )
    prof = load(p)
    assert prof.launches["duration_ns"].to_list() == pytest.approx(DURATION_NS)
    assert prof.metrics.height == 4454


def test_windows_line_endings(nvidia, tmp_path):
    p = tmp_path / "crlf.csv"
    p.write_bytes(b"==PROF== Disconnected from process 490\r\n" + (nvidia / "details.csv").read_bytes().replace(b"\n", b"\r\n"))
    prof = load(p)
    assert prof.launches["demangled_name"][0] == "copy_strided(const float *, float *, int, int)"
    assert prof.launches["duration_ns"][1] == DURATION_NS[1] and prof.rules.height == 18
    assert not prof.rules["message"].str.ends_with("\r").any()


# --------------------------------------------------------------------------------------------
# Damaged and wrong input: one line naming the file, never a traceback
# --------------------------------------------------------------------------------------------


def _fails(path, *words):
    with pytest.raises(InputError) as err:
        load(path)
    msg = str(err.value)
    assert msg.startswith(str(path)) and "\n" not in msg
    for w in words:
        assert w in msg, msg
    return msg


def test_truncated_inside_a_value(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "raw.csv")
    data = p.read_bytes()
    cut = data.index(b'"copy_coalesced(') + 10  # inside the kernel-name field of the last row
    p.write_bytes(data[:cut])
    _fails(p, "truncated")


def test_truncated_between_fields(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "raw.csv")
    data = p.read_bytes()
    cut = data.rindex(b'","', 0, len(data) - 1000) + 1  # right after a closing quote in the last row
    p.write_bytes(data[:cut] + b"\n")
    _fails(p, "line 4", "fewer fields")


def test_details_truncated_mid_row(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "details.csv")
    data = p.read_bytes()
    cut = data.rindex(b'"Avg. Divergent Branches"') + len(b'"Avg. Divergent Branches"')
    p.write_bytes(data[:cut])
    _fails(p, "fewer fields")


def test_row_with_an_extra_field(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "raw.csv")
    lines = p.read_bytes().split(b"\n")
    lines[2] += b',"1"'
    p.write_bytes(b"\n".join(lines))
    _fails(p, "more fields than the header")


def test_row_with_a_missing_field(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "raw.csv")
    lines = p.read_bytes().split(b"\n")
    lines[3] = lines[3].rsplit(b",", 1)[0]
    p.write_bytes(b"\n".join(lines))
    _fails(p, "line 4", "fewer fields")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_bytes(b"")
    _fails(p, "empty")
    with pytest.raises(InputError, match="empty"):
        ncu_csv.read(p)


def test_a_csv_that_is_not_from_ncu(tmp_path):
    p = tmp_path / "table.csv"
    p.write_text('"ID","Name","Value"\n"1","x","2"\n')
    _fails(p, "not a profile")
    with pytest.raises(InputError, match="not an ncu CSV export"):
        ncu_csv.read(p)


def test_garbage_bytes(tmp_path):
    p = tmp_path / "garbage.csv"
    p.write_bytes(random.Random(0).randbytes(8192))
    _fails(p)


def test_binary_data_inside_the_table(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "details.csv")
    data = p.read_bytes()
    p.write_bytes(data[:5000] + random.Random(1).randbytes(2000).replace(b"\n", b"") + b"\x00" + data[5000:])
    _fails(p, "NUL")


def test_two_exports_joined_together(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "raw.csv")
    p.write_bytes(p.read_bytes() * 2)
    _fails(p, "line 5", "launch ID")


def test_decimal_comma_locale_is_refused(nvidia, copy_to_tmp):
    p = copy_to_tmp(nvidia / "details.csv")
    p.write_bytes(p.read_bytes().replace(b'"80.39"', b'"80,39"'))
    _fails(p, "decimal comma", "LC_ALL=C")


def test_non_utf8_kernel_name_loads_with_replacement(nvidia, copy_to_tmp):
    """A stray byte in a name does not spoil the measurements: the name keeps a visible U+FFFD."""
    p = copy_to_tmp(nvidia / "raw.csv")
    p.write_bytes(p.read_bytes().replace(b'"copy_strided(', b'"copy_str\xe9ided('))
    prof = load(p)
    assert prof.launches["kernel_name"][0] == "copy_str\ufffdided"
    assert prof.launches["duration_ns"].to_list() == pytest.approx(DURATION_NS)
    assert "UTF-8" in prof.source.meta["text"]


def test_huge_file_is_refused_before_reading(nvidia, tmp_path):
    p = tmp_path / "huge.csv"
    with p.open("wb") as fh:
        fh.write((nvidia / "raw.csv").read_bytes())
        fh.truncate(ncu_csv.MAX_CSV_BYTES + 1)  # sparse: the size is real, nothing is written
    _fails(p, "MiB", "-k/-c")
