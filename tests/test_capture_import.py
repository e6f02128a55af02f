"""`coach record --import`: raw recordings into traces/ (Parquet via coach.model.save, results.json),
the evidence measured on the way, and bad raw folders refused without leaving anything behind."""

from __future__ import annotations

import json
import lzma
import os
import subprocess
from pathlib import Path

import pytest
from test_capture_support import build_raw_scenario_01, flat, run_cli

from coach import recordings, scenarios
from coach.errors import InputError
from coach.ingest import load

# Ceilings recorded on the H200 by coach.capture.calibrate (hardware/measured/h200.json), which the
# scenarios' models name with "measured:<measurement>".
COPY_BPS = 4.191160650465186e12
BF16_FLOPS = 683.0011648876456e12
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"



@pytest.fixture
def imported(tmp_path):
    raw = tmp_path / "raw"
    build_raw_scenario_01(raw)
    traces = tmp_path / "traces"
    lines = []
    done = recordings.import_raw(raw, traces, log=lines.append)
    return done, traces, lines


def test_import_writes_profiles_and_results(imported):
    done, traces, _ = imported
    assert [d.scenario for d in done] == ["scenario-01"]
    folder = traces / "h200" / "scenario-01"
    assert done[0].folder == folder
    assert done[0].size_bytes == recordings.folder_size(folder) > 0
    results = json.loads((folder / recordings.RESULTS_FILE).read_text())
    assert results["gpu"] == "NVIDIA H200" and results["gpu_slug"] == "h200"
    assert results["recorded_at"] == "2026-12-01T09:30:00+00:00"
    assert results["variants"]["slow"]["median_ms"] == 3.45 and results["variants"]["fixed"]["median_ms"] == 1.16
    assert results["speedup"] == pytest.approx(3.45 / 1.16)
    assert results["min_speedup"] == 2.0 and results["meets_min_speedup"] is True
    assert results["profiles"] == {v: {"ncu": f"{v}/ncu", "nsys": f"{v}/nsys"} for v in ("slow", "fixed")}
    slow = load(folder / "slow" / "ncu")
    assert slow.kind == "kernel-profile" and slow.launches["kernel_name"].to_list() == ["drift_x_aos"]
    assert slow.source.meta["provenance"]["gpu"]["name"] == "NVIDIA H200"
    assert slow.source.meta["scenario"] == "scenario-01" and slow.source.meta["variant"] == "slow"
    assert slow.source.meta["command"] == ["python", "particles.py", "--variant", "slow"]
    assert load(folder / "fixed" / "nsys").kernels.height == 3
    assert sorted(p.name for p in traces.iterdir()) == ["h200"]  # nothing half-written beside it


def test_import_measures_the_evidence(imported):
    done, _, lines = imported
    evidence = {e["name"]: e for e in done[0].results["evidence"]}
    assert list(evidence) == ["sectors_per_request", "bytes_per_sector_pct", "dram_read_gb", "dram_throughput_pct",
                              "kernel_ms"]
    assert (evidence["sectors_per_request"]["slow"], evidence["sectors_per_request"]["fixed"]) == (32.0, 4.0)
    assert evidence["bytes_per_sector_pct"]["fixed"] == 100.0
    assert evidence["dram_read_gb"]["slow"] == pytest.approx(12.9)
    assert evidence["kernel_ms"]["fixed"] == pytest.approx(1.16)
    assert all(e["moved_as_expected"] is True and e["slow_in_range"] is True for e in evidence.values())
    assert "scenario-01: evidence sectors_per_request: 32 -> 4 (down, as expected)" in lines


def test_placeholder_values(imported):
    done, _, _ = imported
    v = done[0].results["values"]
    useful = 3 * 402653184 * 4
    assert v["gpu_short"] == "H200" and v["recorded_date"] == "2026-12-01"
    assert v["useful_gb"] == pytest.approx(useful / 1e9)
    ceiling = scenarios.find("01").model.bytes_per_s  # the measured ceiling: at least the calibration
    assert ceiling >= COPY_BPS
    assert v["floor_ms"] == pytest.approx(useful / ceiling * 1e3)
    assert v["slow_moved_gb"] == pytest.approx(402653184 * 36 / 1e9)
    assert v["slow_gb_per_s"] == pytest.approx(useful / 3.45e-3 / 1e9)
    assert v["fixed_pct_of_floor"] == pytest.approx(useful / ceiling * 1e3 / 1.16 * 100)
    assert v["slow_sectors_per_request"] == 32.0 and v["speedup"] == pytest.approx(3.45 / 1.16)
    scenario = scenarios.find("01")
    text = scenarios.render(scenario.symptom, v)
    assert "takes 3.45 ms for 402,653,184 particles" in text and "{" not in text


def test_evidence_that_does_not_move_is_reported(tmp_path):
    raw = tmp_path / "raw"
    folder = build_raw_scenario_01(raw)
    import polars as pl

    from coach.model import Source, make_kernel_profile, save

    same = pl.DataFrame({"launch_id": [0], "kernel_name": ["drift_x_soa"], "global_load_requests": [10.0],
                         "global_load_sectors": [320.0]})
    save(make_kernel_profile(Source("x.ncu-rep", "ncu-rep", "Nsight Compute"), launches=same), folder / "fixed.ncu2")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["variants"]["fixed"]["ncu"] = "fixed.ncu2"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    lines = []
    done = recordings.import_raw(raw, tmp_path / "traces", log=lines.append)
    evidence = {e["name"]: e for e in done[0].results["evidence"]}
    assert evidence["sectors_per_request"]["moved_as_expected"] is False
    assert evidence["dram_read_gb"]["fixed"] is None and evidence["dram_read_gb"]["moved_as_expected"] is None
    assert "scenario-01: evidence sectors_per_request: 32 -> 32 (down, NOT as expected)" in lines


@pytest.mark.parametrize("damage, message", [
    (lambda m, f: m.update(coach_raw_format=2), "has raw format 2; this coach imports format 1"),
    (lambda m, f: m.update(gpu="../h200"), "field 'gpu' must be a folder name like 'h200', not '../h200'"),
    (lambda m, f: m["variants"].pop("fixed"), "records no fixed variant"),
    (lambda m, f: (f / "slow.plain.json").write_text('{"ok": false}'), "records a run whose result check failed"),
    (lambda m, f: (f / "slow.plain.json").write_text("{truncated"), "is not valid JSON"),
    (lambda m, f: m.update(scenario="scenario-42"), "unknown scenario 'scenario-42'"),
    (lambda m, f: (f / "fixed.plain.json").write_text((f / "fixed.plain.json").read_text().replace('"launch"', '"batch"')),
     "fixed.plain.json: times one 'batch' where the slow variant times one 'launch': the speed-up compares times "
     "per the same unit of work"),
])
def test_bad_raw_folder_is_refused_and_nothing_is_written(tmp_path, damage, message):
    raw = tmp_path / "raw"
    folder = build_raw_scenario_01(raw)
    manifest = json.loads((folder / "manifest.json").read_text())
    damage(manifest, folder)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")) as exc:
        recordings.import_raw(raw, tmp_path / "traces")
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "traces" / "h200" / "scenario-01").exists()
    assert [p.name for p in tmp_path.rglob(".*")] == []


def test_raw_folder_without_recordings(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no recorded scenarios"):
        recordings.import_raw(tmp_path / "empty", tmp_path / "traces")


def test_cli_import_reports_sizes(tmp_path, capsys):
    raw = tmp_path / "raw"
    build_raw_scenario_01(raw)
    code, out, err = run_cli(["record", "--import", str(raw), "--traces", str(tmp_path / "traces")], capsys)
    assert code == 0, err
    total = recordings.folder_size(tmp_path / "traces")
    size = recordings.folder_size(tmp_path / "traces" / "h200" / "scenario-01")
    assert flat(out) == (f"scenario-01 {size / 1e6:.2f} MB speed-up 2.97x "
                         f"{tmp_path / 'traces'}: {total / 1e6:.2f} MB in all (budget 40 MB)")
    code, _, err = run_cli(["record", "01", "--import", str(raw)], capsys)
    assert code == 2 and "--import converts a recording" in err


def test_kept_ncu_report_when_the_reader_exists(tmp_path, strided_ncu_rep):
    pytest.importorskip("coach.ingest.ncu_rep")
    raw = tmp_path / "raw"
    folder = build_raw_scenario_01(raw)
    (folder / "slow.ncu-rep").write_bytes(strided_ncu_rep.read_bytes())
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["variants"]["slow"]["ncu"] = "slow.ncu-rep"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    done = recordings.import_raw(raw, tmp_path / "traces")
    assert done[0].results["profiles"]["slow"]["ncu_rep"] == "slow/report.ncu-rep.xz"
    kept = done[0].folder / "slow" / "report.ncu-rep.xz"
    assert kept.stat().st_size < strided_ncu_rep.stat().st_size / 4  # xz packs a report to under a quarter
    assert lzma.decompress(kept.read_bytes()) == strided_ncu_rep.read_bytes()
    # read back as a report file, through the recording
    rec = recordings.open_recording(scenarios.find("01"), tmp_path / "traces")
    path = rec.ncu_report("slow")
    assert path.suffix == ".ncu-rep" and path.read_bytes() == strided_ncu_rep.read_bytes()
    assert rec.ncu_report("slow") == path  # unpacked once
    assert load(path).launches.height == load(strided_ncu_rep).launches.height
    assert rec.ncu_report("fixed") is None  # the fake recording has no fixed report
    kept.write_bytes(kept.read_bytes()[:1000])  # truncated
    with pytest.raises(InputError, match="is not a complete xz-compressed report"):
        recordings.Recording(rec.scenario, rec.folder, rec.results).ncu_report("slow")


def test_import_from_packed_parts(tmp_path):
    """A recording packed by scripts/pack-recording.sh, split into parts, imports as the folder does;
    a missing part is named."""
    raw = tmp_path / "out"
    build_raw_scenario_01(raw / "scenarios")
    packed = tmp_path / "packed"
    (raw / "scenarios" / "padding.bin").write_bytes(os.urandom(2 * 2**20 + 5))
    done = subprocess.run(["bash", str(SCRIPTS / "pack-recording.sh"), str(raw / "scenarios"), str(packed),
                           "batch7a-scenarios", "1"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    parts = sorted(p.name for p in packed.iterdir())
    assert parts == ["batch7a-scenarios.tgz.0", "batch7a-scenarios.tgz.1", "batch7a-scenarios.tgz.2"]
    assert all((packed / p).stat().st_size <= 2**20 for p in parts)
    lines = []
    imported = recordings.import_raw(packed, tmp_path / "traces", log=lines.append)
    assert [i.scenario for i in imported] == ["scenario-01"]
    assert imported[0].results["variants"]["slow"]["median_ms"] == 3.45
    assert any(line.startswith("unpacked batch7a-scenarios.tgz from") for line in lines)
    (packed / "batch7a-scenarios.tgz.1").unlink()
    with pytest.raises(InputError, match="numbered parts from 0 with none missing"):
        recordings.import_raw(packed, tmp_path / "traces2")
    (packed / "batch7a-scenarios.tgz.1").write_bytes(b"")
    with pytest.raises(InputError, match="cannot be unpacked from 3 parts"):
        recordings.import_raw(packed, tmp_path / "traces2")
    assert not (tmp_path / "traces2").exists()


def test_measure_on_a_real_nsys_export(softmax_nsys_sqlite):
    """Evidence values on the recorded H200 export agree with the same sums taken in SQL."""
    pytest.importorskip("coach.ingest.nsys_sqlite")
    import sqlite3

    timeline = load(softmax_nsys_sqlite)
    scenario = scenarios.find("15")
    con = sqlite3.connect(softmax_nsys_sqlite)
    # copyKind 2: device to host; memory kind 0: pageable (ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND)
    copied, took, pageable = con.execute("SELECT SUM(bytes), SUM(end - start), AVG(srcKind = 0 OR dstKind = 0) "
                                         "FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 2").fetchone()
    longest = con.execute("SELECT MAX(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                          "ON s.id = r.nameId WHERE s.value LIKE 'cudaMemcpyAsync%'").fetchone()[0]
    con.close()

    def ev(**fields):
        base = dict(name="x", label="x", per=None, agg="sum", where=(), kernel=None, direction="down",
                    slow_range=None, scale=1.0, unit="")
        return scenarios.Evidence(**{**base, **fields})

    dtoh = (("kind", "DtoH"),)
    assert pageable == 0.75  # three 64 MiB copies to pageable memory, one 4-byte copy to pinned memory
    assert recordings.measure(scenario, ev(table="memcpy", metric="pageable", agg="mean", where=dtoh), timeline) == 0.75
    assert recordings.measure(scenario, ev(table="memcpy", metric="bytes", per="dur_ns", where=dtoh), timeline) == \
        pytest.approx(copied / took)
    assert recordings.measure(scenario, ev(table="memcpy", metric="bytes", where=(("kind", "HtoD"),)), timeline) is None
    assert recordings.measure(scenario, ev(table="api", metric="dur_ns", agg="max", kernel="^cudaMemcpyAsync",
                                           scale=1e-6), timeline) == pytest.approx(longest * 1e-6)
    assert recordings.measure(scenario, ev(table="kernels", metric="dur_ns", agg="count"), timeline) == 11
    # a kernel expression matches the signature too: three of the six vectorized_elementwise_kernel
    # launches multiply (the other three add)
    assert recordings.measure(scenario, ev(table="kernels", metric="dur_ns", agg="count",
                                           kernel="MulFunctor"), timeline) == 3
    assert recordings.measure(scenario, ev(table="kernels", metric="dur_ns", agg="count",
                                           kernel="^vectorized_elementwise_kernel$"), timeline) == 6
    with pytest.raises(InputError, match="'bytez' is not a column of the canonical memcpy table"):
        recordings.measure(scenario, ev(table="memcpy", metric="bytez"), timeline)
