"""The joined timeline + kernel view (`coach join`).

The recorded Nsight Compute report (tests/data/ncu_strided_copy) is joined with timelines built in the
test (SYNTHETIC: kernel rows with the report's own names and launch configurations, durations chosen
for the test), and with the recorded Nsight Systems export of another program (nothing may match).
Recordings of one program under both tools are joined too: tests/data/joined_strided_copy, and each
scenario whose slow variant traces/ holds under both (scenario-01 at least).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_capture_support import run_cli

from coach import recordings, scenarios
from coach.analyze.joined import join
from coach.errors import CoachError
from coach.ingest import load
from coach.model import Source, make_timeline

DATA = Path(__file__).parent / "data"
NCU = DATA / "ncu_strided_copy" / "copy_strided_vs_coalesced.ncu-rep"
NSYS = DATA / "nsys_torch_softmax" / "torch_softmax_nvtx.sqlite"
JOINED = DATA / "joined_strided_copy"


@pytest.fixture(scope="module")
def report():
    return load(NCU)


def timeline_synthetic(report, runs: list[tuple[str, int, str | None]]):
    """A SYNTHETIC timeline: one kernel row per (name, duration_ns, demangled name), back to back, all
    with the report's launch configuration (grid 262144, block 256)."""
    rows, t = [], 0
    for name, dur, demangled in runs:
        rows.append({"start_ns": t, "end_ns": t + dur, "dur_ns": dur, "name": name, "demangled_name": demangled,
                     "grid_x": 262144, "grid_y": 1, "grid_z": 1, "block_x": 256, "block_y": 1, "block_z": 1,
                     "device_id": 0, "stream_id": 7})
        t += dur + 1000
    return make_timeline(Source("timeline_synthetic", "nsys-sqlite", "Nsight Systems"), kernels=pl.DataFrame(rows),
                         devices=report.devices)


def test_dominant_kernels_with_their_bound(report):
    tl = timeline_synthetic(report, [("copy_strided", 1_200_000, None), ("copy_coalesced", 200_000, None)] * 3)
    j = join(tl, report)
    k = {r["name"]: r for r in j.kernels.to_dicts()}
    assert j.kernels["name"].to_list() == ["copy_strided", "copy_coalesced"]  # largest total first
    assert j.kernels["time_pct"].sum() == pytest.approx(100.0)
    assert (k["copy_strided"]["launches"], k["copy_strided"]["profiled"], k["copy_strided"]["launch_id"]) == (3, 1, 0)
    assert k["copy_strided"]["bound"] == "DRAM (memory)" and k["copy_strided"]["regime"] == "at-roof"
    assert k["copy_strided"]["top_rule"] == "uncoalesced-global-access"
    assert k["copy_strided"]["ncu_ns"] == 1179872.0  # the report's own duration
    assert k["copy_coalesced"]["regime"] == "latency" and k["copy_coalesced"]["busiest_pct"] == pytest.approx(54.3193, abs=1e-3)
    # invocation order: the first launch of each kernel is the profiled one
    matched = j.launches.filter(pl.col("launch_id").is_not_null())
    assert matched["start_ns"].to_list() == [0, 1_201_000]
    assert j.unmatched.is_empty()


def test_unprofiled_kernels_and_signature_fallback(report):
    demangled = report.launches.filter(pl.col("kernel_name") == "copy_strided")["demangled_name"][0]
    tl = timeline_synthetic(report, [("strided_alias", 1_000_000, demangled), ("other", 5_000, None)])
    j = join(tl, report)
    k = {r["name"]: r for r in j.kernels.to_dicts()}
    assert k["strided_alias"]["launch_id"] == 0  # matched by its demangled signature
    assert k["other"]["profiled"] == 0 and k["other"]["bound"] is None
    assert j.unmatched["name"].to_list() == ["copy_coalesced"]


def test_another_programs_timeline_matches_nothing(report):
    j = join(load(NSYS), report)
    assert j.kernels["profiled"].sum() == 0
    assert sorted(j.unmatched["name"]) == ["copy_coalesced", "copy_strided"]
    assert j.kernels["name"][0] == "vectorized_elementwise_kernel"  # 6 launches, 194.7 us: the largest total


def test_wrong_kinds(report):
    with pytest.raises(CoachError, match="takes a timeline"):
        join(report, report)


def test_cli_json(capsys):
    code, out, _ = run_cli(["join", str(NSYS), str(NCU), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert len(data["kernels"]) == 4 and len(data["unmatched"]) == 2
    code, out, _ = run_cli(["join", str(NSYS), str(NCU)], capsys)
    assert code == 0 and "Profiled but not on this timeline" in out


def test_recorded_program_under_both_tools():
    nsys, ncu = JOINED / "strided_copy.sqlite", JOINED / "strided_copy_ncu"  # a saved coach profile of the .ncu-rep
    if not nsys.exists() or not ncu.exists():
        pytest.skip("record it with scripts/record-hygiene.sh (needs the H200)")
    j = join(load(nsys), load(ncu))
    assert j.unmatched.is_empty()
    assert set(j.kernels.filter(pl.col("profiled") > 0)["name"]) == {"copy_strided", "copy_coalesced"}
    matched = j.launches.filter(pl.col("launch_id").is_not_null())
    # the same launch measured twice: the durations agree to within the replay's cache flush and clocks
    assert ((matched["ncu_ns"] / matched["nsys_ns"] - 1).abs() < 0.5).all()
    assert j.kernels.filter(pl.col("name") == "copy_strided")["top_rule"][0] == "uncoalesced-global-access"


def _recorded_under_both_tools() -> list:
    """The scenarios whose slow variant is recorded under Nsight Systems and Nsight Compute (read
    from each recording's results.json, without loading a profile)."""
    both = []
    for scenario in scenarios.all_scenarios():
        gpus = recordings.recorded_gpus(scenario.id)
        if not gpus:
            continue
        folder = recordings.traces_dir() / gpus[0] / scenario.id
        slow = (json.loads((folder / recordings.RESULTS_FILE).read_text()).get("profiles") or {}).get("slow") or {}
        if slow.get("nsys") and slow.get("ncu"):
            both.append(scenario)
    return both


BOTH_TOOLS = _recorded_under_both_tools()


def test_a_scenario_is_recorded_under_both_tools():
    """scenario-01's slow variant was recorded under both (traces/h200/scenario-01/slow/{nsys,ncu}):
    the joined view runs on at least that one real recording."""
    assert "scenario-01" in [s.id for s in BOTH_TOOLS]


@pytest.mark.parametrize("scenario", BOTH_TOOLS, ids=lambda s: s.id)
def test_recorded_scenario_joins(scenario):
    rec = recordings.open_recording(scenario)
    nsys, ncu = rec.profile("slow", "nsys"), rec.profile("slow", "ncu")
    assert nsys is not None and ncu is not None
    j = join(nsys, ncu)
    assert j.unmatched.is_empty(), j.unmatched
    assert j.kernels["profiled"].sum() == ncu.launches.height
