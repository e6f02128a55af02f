"""ncu CSV from other Nsight Compute versions and machines: a real public export from a Blackwell
GPU (tests/data/ncu_superbench_b200), synthetic older layouts built from the H200 exports
(tests/data/ncu_versions, see PROVENANCE.md there), and layouts coach cannot use."""

import re

import polars as pl
import pytest

from coach.errors import InputError
from coach.ingest import load
from coach.ingest.ncu_common import mappings
from coach.ingest.units import normalise

DURATION_NS = [1_179_872.0, 198_080.0]


@pytest.fixture(scope="module")
def versions(data_dir):
    return data_dir / "ncu_versions"


@pytest.fixture(scope="module")
def rep(strided_ncu_rep):
    return load(strided_ncu_rep)


# --------------------------------------------------------------------------------------------
# A real export from another machine: Blackwell, base units, program output before the table
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def blackwell(data_dir):
    return load(data_dir / "ncu_superbench_b200" / "cublaslt_ncu.log")


def test_public_blackwell_export_numbers(blackwell):
    l = blackwell.launches.row(0, named=True)
    assert l["kernel_name"].startswith("cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32")
    assert l["kernel_name"] == l["demangled_name"]  # printed without a parameter list
    assert (l["process_id"], l["process_name"]) == (371693, "cublaslt_gemm")
    assert (l["grid_x"], l["grid_y"], l["grid_z"], l["grid_size"]) == (9, 32, 1, 288)
    assert (l["block_x"], l["block_size"], l["registers_per_thread"]) == (384, 384, 168)
    assert (l["shared_mem_dynamic_bytes"], l["shared_mem_config_bytes"]) == (205_696, 233_472)
    assert l["duration_ns"] == 406_240.0
    assert l["sm_frequency_hz"] == pytest.approx(1_239_496_049.13)
    assert (l["dram_throughput_pct"], l["sm_throughput_pct"], l["memory_throughput_pct"]) == (0.74, 23.59, 21.68)
    assert (l["theoretical_occupancy_pct"], l["achieved_occupancy_pct"], l["sm_count"]) == (18.75, 15.53, 152.0)
    assert blackwell.devices.select("device_id", "cc_major", "cc_minor").row(0) == (0, 10, 0)


def test_public_blackwell_export_missing_evidence_is_null(blackwell):
    l = blackwell.launches
    for col in ["dram_read_bytes", "global_load_sectors", "stall_long_scoreboard", "tensor_pipe_active_pct", "fp32_fma_inst"]:
        assert l[col][0] is None, col


def test_public_blackwell_export_rules(blackwell):
    r = blackwell.rules
    assert r["rule_id"].to_list().count("WorkloadImbalance") == 4 and r.height == 8
    occ = r.filter(pl.col("rule_id") == "TheoreticalOccupancy").row(0, named=True)
    assert (occ["severity"], occ["speedup_type"], occ["speedup_pct"]) == ("warning", "local", 81.25)
    assert r.filter(pl.col("rule_id") == "SOLBottleneck")["speedup_pct"][0] is None


# --------------------------------------------------------------------------------------------
# Older layouts (synthetic, numbers from the H200 report)
# --------------------------------------------------------------------------------------------


def test_2020_details_layout(versions):
    p = load(versions / "details_2020_layout_synthetic.csv")
    l = p.launches
    assert l["kernel_name"].to_list() == ["copy_strided", "copy_coalesced"]
    assert l["duration_ns"].to_list() == DURATION_NS  # "Duration" in nsecond
    assert l["dram_throughput_pct"].to_list() == [80.39, 54.32]  # "SOL FB"
    assert l["memory_throughput_pct"].to_list() == [80.39, 54.32]  # "Memory [%]"
    assert l["sm_throughput_pct"].to_list() == [7.65, 40.64]  # "SM [%]"
    assert (l["l2_throughput_pct"][0], l["l1_throughput_pct"][0]) == (96.57, 14.43)  # "SOL L2", "SOL TEX"
    assert l["dram_frequency_hz"][0] == pytest.approx(3_199_420_502.11)  # "Memory Frequency" in cycle/second
    assert l["sm_cycles_elapsed"].to_list() == [2_335_800.0, 392_176.0]
    assert l["l1_hit_rate_pct"][0] == 0.0  # "L1 Hit Rate"
    # no launch-shape columns in this layout: the launch statistics still give the sizes
    assert l["grid_size"].to_list() == [262144, 262144] and l["grid_x"].null_count() == 2
    assert p.rules.height == 0 and p.devices.height == 0


def test_2021_nvtx_details_layout(versions, rep):
    p = load(versions / "details_2021_layout_synthetic.csv")
    l = p.launches
    assert l["kernel_name"].to_list() == ["copy_strided", "copy_coalesced"]
    assert abs(l["duration_ns"][0] - DURATION_NS[0]) <= 5_000  # "1.18" msecond
    assert l["duration_ns"][1] == pytest.approx(DURATION_NS[1])  # "198.08" usecond
    assert l["sm_frequency_hz"][0] == pytest.approx(1.98e9)  # "1.98" cycle/nsecond
    assert l["nvtx_range"].null_count() == 2  # the NVTX columns are read, and empty here
    assert l["grid_size"].to_list() == [262144, 262144] and l["grid_x"].null_count() == 2
    # rule results without the speed-up columns: the same rules, speed-ups null
    from_rep = rep.rules.filter(pl.col("message") != "")
    assert sorted(p.rules.select("launch_id", "rule_id", "severity").rows()) == sorted(from_rep.select("launch_id", "rule_id", "severity").rows())
    assert p.rules["speedup_pct"].null_count() == p.rules.height == 18


def test_2020_metric_names_on_a_raw_page(versions, rep):
    """Older names reach the same canonical columns as the 2025 names the report holds."""
    l = load(versions / "raw_2020_names_synthetic.csv").launches
    r = rep.launches
    assert l["duration_ns"].to_list() == DURATION_NS
    assert l["dram_throughput_pct"].to_list() == [80.39, 54.32]  # dram__throughput
    # stalls as % of active warp cycles, back to warps per issued instruction
    for col in ["stall_long_scoreboard", "stall_short_scoreboard", "stall_drain", "stall_wait", "stall_selected"]:
        assert l[col].to_list() == pytest.approx(r[col].to_list(), abs=0.006), col
    assert l["stall_long_scoreboard"][0] == pytest.approx(150.29, abs=0.006)
    assert l["tensor_pipe_active_pct"].to_list() == [0.0, 0.0]  # sm__inst_executed_pipe_tensor_op_hmma
    # the instruction-issue form, where the pipe-cycles metric is absent (1.87 and 3.08 on the report)
    issue_fma = rep.metrics.filter(pl.col("metric") == "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active").sort("launch_id")
    assert l["fma_pipe_active_pct"].to_list() == pytest.approx(issue_fma["value"].to_list(), abs=0.006)
    assert l["global_load_requests"].to_list() == [2_097_152.0, 2_097_152.0]  # smsp__inst_executed_op_global_ld
    assert (l["global_load_sectors"] / l["global_load_requests"]).to_list() == [32.0, 4.0]
    assert l["shared_load_requests"].to_list() == [0.0, 0.0] and l["branch_divergent_targets"].to_list() == [0.0, 0.0]
    # what the older page does not carry stays null
    for col in ["l2_bytes", "l1_hit_rate_pct", "global_store_requests", "xu_pipe_active_pct"]:
        assert l[col].null_count() == 2, col


@pytest.mark.parametrize("name", ["raw_metrics_subset_synthetic.csv", "details_cli_metrics_synthetic.csv"])
def test_a_few_requested_metrics(versions, name):
    p = load(versions / name)
    l = p.launches
    assert l["duration_ns"].to_list() == pytest.approx(DURATION_NS)  # 1.179872 msecond
    assert abs(l["dram_read_bytes"][0] - 4_294_982_144) <= 500  # 4.294982 Gbyte
    assert l["dram_write_bytes"][0] == pytest.approx(269_253_376)  # 269.253376 Mbyte
    assert sorted(p.metrics["metric"].unique().to_list()) == ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]
    filled = [c for c in l.columns if l[c].null_count() < l.height]
    assert {"duration_ns", "dram_read_bytes", "dram_write_bytes", "dram_bytes"} <= set(filled)
    assert "sm_throughput_pct" not in filled and "stall_long_scoreboard" not in filled


# --------------------------------------------------------------------------------------------
# Layouts coach cannot use: one line saying what is missing
# --------------------------------------------------------------------------------------------

_IDENT = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream"'
_ROW = '"0","1","app","host","k(float *)","1","7"'


@pytest.mark.parametrize("text, words", [
    (f'{_IDENT},"Launch Count","Notes"\n{_ROW},"1","x"\n', ["unknown ncu CSV layout"]),
    (f'{_IDENT},"Section Name","Metric Unit","Metric Value"\n{_ROW},"Occupancy","%","50"\n', ["details", "'Metric Name'"]),
    (f'{_IDENT},"smsp__future_counter.sum","xbar__other.avg"\n"","","","","","","","",""\n{_ROW},"1","2"\n',
     ["none of the metrics coach analyses"]),
    (f'{_IDENT},"gpu__time_duration.sum"\n"","","","","","","","ns"\n', ["no profiled kernel launches"]),
])
def test_unusable_layouts(tmp_path, text, words):
    p = tmp_path / "export.csv"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        load(p)
    msg = str(err.value)
    assert msg.startswith(str(p)) and "\n" not in msg
    for w in words:
        assert w in msg, msg


# --------------------------------------------------------------------------------------------
# The mapping data and the unit spellings of older versions
# --------------------------------------------------------------------------------------------


def test_every_mapping_alternative_names_metrics():
    """Each alternative is a sum of products that name at least one metric, and every name parses as
    one (a stray operator or space would leave a name no report can hold)."""
    for m in mappings():
        for alt in m.alternatives:
            assert alt and all(t.metrics for t in alt), m.column
            assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]*", x) for t in alt for x in t.metrics), m.column


@pytest.mark.parametrize("unit, expected", [
    ("nsecond", ("ns", 1.0)), ("usecond", ("ns", 1e3)), ("msecond", ("ns", 1e6)), ("us", ("ns", 1e3)),
    ("cycle/second", ("hz", 1.0)), ("cycle/usecond", ("hz", 1e6)), ("cycle/nsecond", ("hz", 1e9)), ("Ghz", ("hz", 1e9)),
    ("Gbyte/second", ("byte/s", 1e9)), ("Tbyte/s", ("byte/s", 1e12)), ("Kbyte/block", ("byte/block", 1e3)),
    ("warp/cycle", ("warp/cycle", 1.0)), ("%/Kbyte", ("%/byte", 1e3)),
])
def test_unit_spellings(unit, expected):
    assert normalise(unit) == expected


def test_a_per_kernel_summary_reads_one_launch_per_kernel(data_dir, tmp_path):
    """Synthetic: NVIDIA's recorded details page of the strided copy rearranged as ncu --csv
    --print-summary per-kernel prints it (no ID column; Invocations; Minimum, Maximum, Average)."""
    import polars as pl  # noqa: PLC0415

    from coach.ingest import load  # noqa: PLC0415

    details = pl.read_csv(data_dir / "ncu_strided_copy" / "nvidia" / "details.csv", infer_schema=False)
    details = details.filter(pl.col("Rule Name").fill_null("") == "")
    keep = ["Process ID", "Process Name", "Host Name", "Kernel Name", "Block Size", "Grid Size", "Device", "CC"]
    summary = details.select(*keep, pl.lit("1").alias("Invocations"), "Section Name", "Metric Name", "Metric Unit",
                             *(pl.col("Metric Value").alias(c) for c in ("Minimum", "Maximum", "Average")))
    path = tmp_path / "summary.csv"
    path.write_text("==PROF== Disconnected from process 490\n" + summary.write_csv(quote_style="always"))
    profile = load(path)
    reference = load(data_dir / "ncu_strided_copy" / "nvidia" / "details.csv")
    assert profile.source.meta["page"] == "summary"
    assert profile.launches.select("kernel_name", "duration_ns").rows() == \
        reference.launches.select("kernel_name", "duration_ns").rows()


def test_a_trimmed_metrics_table_without_the_id_column_says_so(tmp_path):
    """Synthetic, in the shape public tools keep of ncu's CSV (the kernel, section, metric, unit and value
    columns; units register/thread and Kbyte/block): it holds ncu's metrics but not the ID column that
    tells launches apart, which is the reason it does not load (before: "is not a profile coach reads")."""
    p = tmp_path / "trimmed.csv"
    p.write_text('"Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
                 '"k","GPU Speed Of Light Throughput","Duration","ms","76.30"\n'
                 '"k","Launch Statistics","Registers Per Thread","register/thread","34"\n'
                 '"k","Launch Statistics","Dynamic Shared Memory Per Block","Kbyte/block","4.10"\n')
    with pytest.raises(InputError) as err:
        load(p)
    msg = str(err.value)
    assert msg.startswith(str(p)) and "\n" not in msg
    assert 'without ncu\'s "ID" column' in msg and "ncu --csv --page details" in msg


# --------------------------------------------------------------------------------------------
# Sections coach does not know (synthetic rows added to the real H200 details page)
# --------------------------------------------------------------------------------------------


def test_sections_coach_does_not_know_are_kept_named_and_change_nothing(data_dir, tmp_path):
    """Synthetic: the real H200 details page with rows of sections coach has no names for: the Tile
    section of Nsight Compute 2025.4 (its labels here made up), a made-up Workload Distribution with a
    unit coach does not know, and an unknown label in a known section. They are kept in the metric
    table, the kernels and the diagnosis do not change, and the summary names the sections."""
    import csv  # noqa: PLC0415

    from coach.analyze.diagnose import diagnose  # noqa: PLC0415
    from coach.analyze.kernel_summary import summarize_kernels  # noqa: PLC0415

    src = data_dir / "ncu_strided_copy" / "nvidia" / "details.csv"
    rows = list(csv.reader(src.open(newline="")))
    header = rows[0]
    col = {name: header.index(name) for name in ("Section Name", "Metric Name", "Metric Unit", "Metric Value")}
    firsts = {r[0]: r for r in reversed(rows[1:])}
    added = []
    for base in firsts.values():
        for section, name, unit, value in (("Tile", "Tile Pipe Throughput", "%", "12.5"), ("Tile", "Tile Shape", "", "(64, 64, 1)"),
                                           ("Workload Distribution", "SM Active Cycles Imbalance", "tile/cycle", "3.2"),
                                           ("GPU Speed Of Light Throughput", "Future Throughput Metric", "%", "42.0")):
            row = ["" if h.startswith(("Rule", "Estimated")) else v for h, v in zip(header, base)]
            row[col["Section Name"]], row[col["Metric Name"]], row[col["Metric Unit"]], row[col["Metric Value"]] = \
                section, name, unit, value
            added.append(row)
    path = tmp_path / "details_with_unknown_sections.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows + added)
    got, reference = load(path), load(src)
    assert got.launches.equals(reference.launches)
    assert got.metrics.height == reference.metrics.height + len(added)
    tile = got.metrics.filter(pl.col("metric") == "Tile/Tile Pipe Throughput")
    assert tile["value"].to_list() == [12.5] * len(firsts)
    assert [f.rule_id for f in diagnose(got)] == [f.rule_id for f in diagnose(reference)]
    assert got.source.meta["unread_sections"] == ["PM Sampling", "Tile", "Workload Distribution"]
    assert reference.source.meta["unread_sections"] == ["PM Sampling"]  # recorded by ncu 2025.3 with --set full
    notes = summarize_kernels(got)["notes"]
    assert len(notes) == 1 and "Sections coach does not read: PM Sampling, Tile, Workload Distribution" in notes[0]
