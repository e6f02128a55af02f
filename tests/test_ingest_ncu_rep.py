"""The .ncu-rep reader on the real H200 report (tests/data/ncu_strided_copy)."""

import polars as pl
import pytest

from coach.errors import InputError
from coach.ingest import load


@pytest.fixture(scope="module")
def prof(strided_ncu_rep):
    return load(strided_ncu_rep)


def test_two_launches_with_identity(prof):
    l = prof.launches.sort("launch_id")
    assert l["kernel_name"].to_list() == ["copy_strided", "copy_coalesced"]
    assert l["demangled_name"][0] == "copy_strided(const float *, float *, int, int)"
    assert l["mangled_name"][1] == "_Z14copy_coalescedPKfPfi"
    assert l["grid_size"].to_list() == [262144, 262144]
    assert l["block_size"].to_list() == [256, 256]
    assert l["registers_per_thread"].to_list() == [18, 16]


def test_numbers_from_the_recording(prof):
    l = prof.launches.sort("launch_id")
    # the strided gather: 1.18 ms and 4.29 GB read from DRAM to move 0.27 GB of useful data
    assert l["duration_ns"][0] == 1_179_872.0
    assert l["dram_read_bytes"][0] == 4_294_982_144.0
    assert l["duration_ns"][1] == 198_080.0
    # 32 sectors per request for the stride-33 gather; 4 (128 bytes per warp of floats) when coalesced
    per_req = (l["global_load_sectors"] / l["global_load_requests"]).to_list()
    assert per_req == [32.0, 4.0]


def test_long_metric_table_keeps_everything(prof):
    m = prof.metrics
    assert m.filter(pl.col("launch_id") == 0).height > 2000
    dur = m.filter((pl.col("launch_id") == 0) & (pl.col("metric") == "gpu__time_duration.sum"))
    assert dur["value"].item() == 1_179_872.0 and dur["unit"].item() == "ns"
    name = m.filter((pl.col("launch_id") == 0) & (pl.col("metric") == "device__attribute_display_name"))
    assert name["text"].item() == "NVIDIA H200" and name["value"].item() is None


def test_rule_results(prof):
    strided = prof.rules.filter(pl.col("launch_id") == 0)
    assert "UncoalescedGlobalAccess" in strided["rule_id"].to_list()
    row = strided.filter(pl.col("rule_id") == "UncoalescedGlobalAccess").row(0, named=True)
    assert row["severity"] == "warning" and row["speedup_pct"] > 0
    assert "UncoalescedGlobalAccess" not in prof.rules.filter(pl.col("launch_id") == 1)["rule_id"].to_list()


def test_device_row(prof):
    d = prof.devices.row(0, named=True)
    assert d["name"] == "NVIDIA H200" and d["sm_count"] == 132 and (d["cc_major"], d["cc_minor"]) == (9, 0)
    assert d["l2_bytes"] == 62_914_560
    # peak DRAM bandwidth from the tool's bytes/cycle x DRAM clock: the H200's 4.8 TB/s
    assert d["memory_bandwidth_bytes_per_s"] == pytest.approx(4.81e12, rel=0.01)


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "empty"])
def test_damaged_reports_give_one_line_errors(strided_ncu_rep, copy_to_tmp, damage):
    p = copy_to_tmp(strided_ncu_rep)
    data = p.read_bytes()
    if damage == "truncate":
        p.write_bytes(data[: len(data) // 3])
    elif damage == "corrupt":
        p.write_bytes(data[:64] + bytes(b ^ 0x5A for b in data[64:4096]) + data[4096:])
    else:
        p.write_bytes(b"")
    with pytest.raises(InputError) as err:
        load(p)
    msg = str(err.value)
    assert msg.startswith(str(p)) and "\n" not in msg


@pytest.mark.parametrize("where", [0.5, 0.85, 0.007])
def test_bytes_flipped_inside_the_report(strided_ncu_rep, copy_to_tmp, where):
    """Damage inside a record keeps the record chain intact, so only ncu_report sees it: in a launch's
    record (the middle of the file holds copy_strided's, the last fifth copy_coalesced's) it drops
    that launch's metrics; earlier, in the range record, every launch. Neither may pass as a report."""
    p = copy_to_tmp(strided_ncu_rep)
    data = bytearray(p.read_bytes())
    at = int(len(data) * where)
    data[at:at + 256] = bytes(b ^ 0x5A for b in data[at:at + 256])
    p.write_bytes(bytes(data))
    with pytest.raises(InputError) as err:
        load(p)
    msg = str(err.value)
    assert msg.startswith(str(p)) and "\n" not in msg and "damaged" in msg


def _fake_ncu(tmp_path, data_dir, exit_code=0):
    nvidia = data_dir / "ncu_strided_copy" / "nvidia"
    script = tmp_path / "ncu"
    script.write_text(
        "#!/bin/sh\n"
        f"[ {exit_code} -ne 0 ] && {{ echo '==ERROR== cannot open report' >&2; exit {exit_code}; }}\n"
        'case "$*" in\n'
        f'  *"--page raw"*) cat "{nvidia}/raw_base_units.csv" ;;\n'
        f'  *"--page details"*) cat "{nvidia}/details_base_units.csv" ;;\n'
        "esac\n"
    )
    script.chmod(0o755)
    return script


def test_without_ncu_report_the_ncu_command_exports_csv(strided_ncu_rep, data_dir, tmp_path, monkeypatch, prof):
    """Where ncu_report has no wheel (Linux aarch64), the report is read through `ncu --csv`."""
    from coach.ingest import ncu_rep

    monkeypatch.setattr(ncu_rep, "_import_ncu_report", lambda: None)
    monkeypatch.setenv("COACH_NCU", str(_fake_ncu(tmp_path, data_dir)))
    via_csv = load(strided_ncu_rep)
    assert via_csv.source.format == "ncu-rep" and "ncu --csv" in via_csv.source.meta["reader"]
    assert via_csv.launches["duration_ns"].to_list() == prof.launches.sort("launch_id")["duration_ns"].to_list()
    assert via_csv.launches["dram_read_bytes"].to_list() == prof.launches.sort("launch_id")["dram_read_bytes"].to_list()
    assert "UncoalescedGlobalAccess" in via_csv.rules.filter(pl.col("launch_id") == 0)["rule_id"].to_list()


def test_without_ncu_report_or_ncu_the_message_says_what_to_install(strided_ncu_rep, monkeypatch):
    from coach.errors import ToolError
    from coach.ingest import ncu_rep

    monkeypatch.setattr(ncu_rep, "_import_ncu_report", lambda: None)
    monkeypatch.setattr(ncu_rep, "_ncu_binary", lambda: None)
    with pytest.raises(ToolError, match="ncu_report"):
        load(strided_ncu_rep)


def test_ncu_export_failure_is_one_line(strided_ncu_rep, data_dir, tmp_path, monkeypatch):
    from coach.ingest import ncu_rep

    monkeypatch.setattr(ncu_rep, "_import_ncu_report", lambda: None)
    monkeypatch.setenv("COACH_NCU", str(_fake_ncu(tmp_path, data_dir, exit_code=1)))
    with pytest.raises(InputError, match="ncu could not export it .exit 1: ==ERROR== cannot open report"):
        load(strided_ncu_rep)


# Named instances of an instanced metric: the executed SASS opcodes (InstructionStats).

OPCODES = "sass__inst_executed_per_opcode"


def _opcodes(profile, launch_id: int) -> dict[str, int]:
    rows = profile.metrics.filter((pl.col("metric") == OPCODES) & (pl.col("launch_id") == launch_id)
                                  & pl.col("instance").is_not_null())
    return {op: int(v) for op, v in rows.select("instance", "value").iter_rows()}


def test_executed_opcodes_are_kept_one_row_each(prof):
    strided, coalesced = _opcodes(prof, 0), _opcodes(prof, 1)
    # 2^26 threads are 2,097,152 warps: each warp loads and stores once; the gather's index
    # arithmetic (I2F/F2I, MUFU for the division) is what the coalesced copy does not execute
    assert strided["LDG"] == strided["STG"] == coalesced["LDG"] == coalesced["STG"] == 2_097_152
    assert (strided["MUFU"], strided["I2F"], strided["F2I"], strided["IMAD"]) == (2_097_152, 2_097_152, 2_097_152, 18_874_368)
    assert len(strided) == 21 and len(coalesced) == 9 and "MUFU" not in coalesced
    # the instances add up to the aggregate, which is every executed warp-level instruction
    l = prof.launches.sort("launch_id")
    assert [sum(strided.values()), sum(coalesced.values())] == l["warp_inst_executed"].to_list() == [94_371_840, 33_554_432]
    aggregate = prof.metrics.filter((pl.col("metric") == OPCODES) & pl.col("instance").is_null()).sort("launch_id")
    assert aggregate["value"].to_list() == [94_371_840, 33_554_432]


def test_only_named_instances_are_kept(prof):
    m = prof.metrics
    instanced = m.filter(pl.col("instance").is_not_null())
    assert set(instanced["metric"]) == {OPCODES, f"{OPCODES}_category", f"{OPCODES}_with_modifier_all",
                                        f"{OPCODES}_with_modifier_selective", "sass__thread_inst_executed_per_opcode_category",
                                        "sass__thread_inst_executed_true_per_opcode",
                                        "sass__thread_inst_executed_true_per_opcode_with_modifier_all",
                                        "sass__thread_inst_executed_true_per_opcode_with_modifier_selective"}
    # per-PC counters (inst_executed: one instance per SASS address) keep their aggregate row only
    assert m.filter((pl.col("metric") == "inst_executed") & (pl.col("launch_id") == 0)).height == 1
    assert m.select("launch_id", "metric", "instance").is_unique().all()
    categories = instanced.filter((pl.col("metric") == f"{OPCODES}_category") & (pl.col("launch_id") == 1))
    assert dict(categories.select("instance", pl.col("value").cast(pl.Int64)).iter_rows()) == {
        "Load/Store": 12_582_912, "Integer": 8_388_608, "Uniform Datapath": 6_291_456, "Control": 4_194_304,
        "Miscellaneous": 2_097_152}


def test_executed_opcodes_of_a_triton_kernel(data_dir):
    """The Triton row softmax (--set full): floating-point work on the CUDA cores without one FMA,
    the exponentials on the special-function unit (MUFU), the row reductions through SHFL."""
    p = load(data_dir / "ncu_triton_softmax" / "triton_softmax.ncu-rep")
    ops = _opcodes(p, 0)
    assert (ops["FMUL"], ops["FADD"], ops["FMNMX"], ops["MUFU"], ops["SHFL"]) == (
        25_690_112, 10_223_616, 6_029_312, 4_456_448, 4_194_304)
    assert "FFMA" not in ops and "HMMA" not in ops and sum(ops.values()) == 77_332_480


def test_instances_survive_save_and_load(prof, tmp_path):
    from coach.model import save

    again = load(save(prof, tmp_path / "saved"))
    assert _opcodes(again, 0) == _opcodes(prof, 0)
    assert again.launches.height == 2


def test_the_recording_version_is_read_from_the_report(prof, data_dir):
    assert prof.source.tool_version == "2025.3.1.0"
    assert load(data_dir / "ncu_triton_softmax" / "triton_softmax.ncu-rep").source.tool_version == "2025.3.1.0"


def test_a_report_the_module_cannot_read_names_its_version(tmp_path, capfd):
    """Synthetic: one record holding an older version's process record and nothing ncu_report can parse."""
    import struct  # noqa: PLC0415

    payload = b"\x0a\x15Nsight Compute Target\x12\x2c2020.2.0.0 (build 28768563) (public-release)" + b"\xff" * 40
    path = tmp_path / "old.ncu-rep"
    path.write_bytes(b"NVR\x00" + bytes(6) + struct.pack("<I", len(payload)) + payload)
    with pytest.raises(InputError) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message and "recorded by Nsight Compute 2020.2.0.0" in message
    assert capfd.readouterr().err == ""  # the module's own protobuf logging stays off the terminal
