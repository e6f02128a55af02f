"""Each kernel rule on synthetic launches: one where it must fire, one where it must stay quiet, one
with its optional metrics missing.

Synthetic data: the launches below are built by hand (``launch(**columns)`` names only the columns a
case is about; every other canonical column is null), on a synthetic device row whose attributes
are those the recorded H200 report gives. No number here is a measurement.
"""

from __future__ import annotations

import polars as pl
import pytest

from coach.analyze.diagnose import is_not_checked
from coach.analyze.findings import Bottleneck
from coach.analyze.kernel_metrics import DERIVED, with_derived
from coach.analyze.kernel_rules import (PROFILE_RULES, RANKED_BY, RULES, TREE, diagnose_launch, ncu_metric_names,
                                        run_all, specs)
from coach.analyze.kernel_rules._common import KernelContext
from coach.analyze.kernel_rules.speed_of_light import verdict
from coach.model import DEVICES, LAUNCH_METRICS, LAUNCHES, Source, conform, make_kernel_profile

SYNTHETIC_DEVICE = {"device_id": 0, "name": "synthetic (H200 attributes)", "cc_major": 9, "cc_minor": 0,
                    "sm_count": 132, "memory_bandwidth_bytes_per_s": 4.8e12, "max_warps_per_sm": 64,
                    "registers_per_sm": 65536, "shared_mem_per_sm_bytes": 233472}


def launch(**columns) -> dict:
    """One synthetic launch: the named canonical columns, everything else null, derived columns added."""
    row = conform(pl.DataFrame([{"launch_id": 0, "kernel_name": "synthetic", "device_id": 0, **columns}]), LAUNCHES)
    return with_derived(row, conform(pl.DataFrame([SYNTHETIC_DEVICE]), DEVICES)).row(0, named=True)


def run(rule: str, **columns) -> list:
    row = launch(**columns)
    return RULES[rule].apply(row, KernelContext(verdict=verdict(row)))


RULES_FUSION = PROFILE_RULES["fusion"]


def model_profile(launches: pl.DataFrame):
    """Synthetic: a kernel profile holding ``launches`` (canonical columns only) on the synthetic device."""
    return make_kernel_profile(Source(path="synthetic.ncu-rep", format="ncu-rep", tool="Nsight Compute"),
                               launches=launches.select(list(LAUNCHES)), devices=pl.DataFrame([SYNTHETIC_DEVICE]))


MEMORY_BOUND = dict(duration_ns=1e6, sm_throughput_pct=10.0, memory_throughput_pct=85.0, dram_throughput_pct=85.0)

# rule -> (fires, stays quiet, optional metrics missing: (columns, fires?))
CASES: dict[str, tuple[dict, dict, tuple[dict, bool]]] = {
    "uncoalesced": (
        dict(MEMORY_BOUND, global_load_requests=1e3, global_load_sectors=32e3, global_load_bytes_per_sector=4.0,
             global_store_requests=1e3, global_store_sectors=4e3, global_store_bytes_per_sector=32.0),
        dict(MEMORY_BOUND, global_load_requests=1e3, global_load_sectors=4e3, global_load_bytes_per_sector=32.0),
        # no duration either (an `ncu --metrics` run of the two counters): the pattern is still named
        (dict(global_load_requests=1e3, global_load_sectors=32e3), True),
    ),
    "bank_conflicts": (
        dict(duration_ns=1e6, shared_bank_conflicts=3e6, shared_load_wavefronts=4e6, shared_store_wavefronts=0.0,
             shared_load_requests=1e6, shared_store_requests=0.0, l1_throughput_pct=90.0),
        dict(duration_ns=1e6, shared_bank_conflicts=1e4, shared_load_wavefronts=4e6, shared_store_wavefronts=0.0),
        (dict(shared_bank_conflicts=3e6, shared_load_wavefronts=4e6, shared_store_wavefronts=0.0), True),
    ),
    "local_memory": (
        dict(duration_ns=1e6, local_load_sectors=1e6, local_store_sectors=1e6, global_load_sectors=4e6,
             global_store_sectors=4e6, registers_per_thread=255),
        dict(duration_ns=1e6, local_load_sectors=0.0, local_store_sectors=0.0, global_load_sectors=4e6,
             global_store_sectors=4e6),
        (dict(local_load_sectors=1e6, local_store_sectors=1e6), True),
    ),
    "divergence": (
        dict(duration_ns=1e6, thread_inst_per_warp_inst=12.0, thread_inst_pred_on_per_warp_inst=10.0,
             branch_divergent_targets=5e5, sm_throughput_pct=50.0),
        dict(duration_ns=1e6, thread_inst_per_warp_inst=31.5, thread_inst_pred_on_per_warp_inst=30.0),
        (dict(duration_ns=1e6, thread_inst_per_warp_inst=12.0), True),
    ),
    "occupancy": (
        dict(duration_ns=1e6, theoretical_occupancy_pct=37.5, achieved_occupancy_pct=35.0, blocks_limit_registers=3.0,
             blocks_limit_shared_mem=32.0, blocks_limit_warps=8.0, blocks_limit_sm=32.0, block_size=256,
             registers_per_thread=80),
        dict(duration_ns=1e6, theoretical_occupancy_pct=100.0, achieved_occupancy_pct=95.0, blocks_limit_registers=8.0,
             blocks_limit_shared_mem=32.0, blocks_limit_warps=8.0, blocks_limit_sm=32.0),
        (dict(duration_ns=1e6, theoretical_occupancy_pct=37.5, blocks_limit_registers=3.0, blocks_limit_shared_mem=32.0,
              blocks_limit_warps=8.0, blocks_limit_sm=32.0), True),
    ),
    "warp_stalls": (
        dict(duration_ns=1e6, warp_cycles_per_issued_inst=40.0, stall_long_scoreboard=30.0, stall_barrier=2.0,
             issue_active_pct=20.0),
        dict(duration_ns=1e6, warp_cycles_per_issued_inst=40.0, stall_long_scoreboard=5.0, stall_barrier=2.0,
             issue_active_pct=20.0),
        (dict(duration_ns=1e6, warp_cycles_per_issued_inst=40.0, stall_long_scoreboard=30.0), True),
    ),
    "bytes_in_flight": (
        dict(duration_ns=2e5, sm_throughput_pct=20.0, memory_throughput_pct=50.0, dram_throughput_pct=50.0,
             dram_read_bytes=2.4e8, dram_bytes=4.8e8, stall_long_scoreboard=40.0, warp_cycles_per_issued_inst=50.0,
             warp_inst_executed=1.6e7, global_load_requests=1e6, sm_frequency_hz=2e9, achieved_occupancy_pct=70.0,
             sm_count=132),
        dict(duration_ns=2e5, sm_throughput_pct=20.0, memory_throughput_pct=90.0, dram_throughput_pct=90.0,
             dram_read_bytes=2.4e8),
        (dict(duration_ns=2e5, sm_throughput_pct=20.0, memory_throughput_pct=50.0, dram_throughput_pct=50.0,
              dram_read_bytes=2.4e8), True),
    ),
    "tensor_cores": (
        dict(duration_ns=1e6, tensor_pipe_active_pct=0.0, fma_pipe_active_pct=80.0, fp32_add_inst=1e8,
             fp32_mul_inst=0.0, fp32_fma_inst=9e8, fp16_add_inst=0.0, fp16_mul_inst=0.0, fp16_fma_inst=0.0),
        dict(duration_ns=1e6, tensor_pipe_active_pct=0.0, fma_pipe_active_pct=20.0),
        (dict(duration_ns=1e6, tensor_pipe_active_pct=0.0, fma_pipe_active_pct=80.0), True),
    ),
    "fp64": (
        dict(duration_ns=1e6, fp64_add_inst=1e6, fp64_mul_inst=0.0, fp64_fma_inst=1e6, fp32_add_inst=1e7,
             fp32_mul_inst=1e7, fp32_fma_inst=1e7, fp16_add_inst=0.0, fp16_mul_inst=0.0, fp16_fma_inst=0.0,
             fp64_pipe_active_pct=40.0),
        dict(duration_ns=1e6, fp64_add_inst=0.0, fp64_mul_inst=0.0, fp64_fma_inst=0.0, fp32_add_inst=1e7,
             fp32_mul_inst=1e7, fp32_fma_inst=1e7, fp16_add_inst=0.0, fp16_mul_inst=0.0, fp16_fma_inst=0.0),
        (dict(duration_ns=1e6, fp64_add_inst=1e6, fp64_mul_inst=0.0, fp64_fma_inst=1e6, fp32_add_inst=1e7,
              fp32_mul_inst=1e7, fp32_fma_inst=1e7, fp16_add_inst=0.0, fp16_mul_inst=0.0, fp16_fma_inst=0.0), True),
    ),
    "atomics": (
        dict(duration_ns=1e6, global_atomic_requests=5e5, global_load_requests=1e6, global_store_requests=0.0,
             l2_throughput_pct=75.0, dram_throughput_pct=10.0),
        dict(duration_ns=1e6, global_atomic_requests=0.0, global_load_requests=1e6, global_store_requests=1e6),
        (dict(duration_ns=1e6, global_atomic_requests=5e5, global_load_requests=1e6, global_store_requests=0.0), True),
    ),
    "tail_effect": (
        dict(duration_ns=1e6, waves_per_sm=1.05, grid_size=277),
        dict(duration_ns=1e6, waves_per_sm=248.24, grid_size=262144),
        (dict(duration_ns=1e6, waves_per_sm=2.1), True),
    ),
    "launch_bound": (
        dict(duration_ns=5e3, grid_size=66, sm_count=132),
        dict(duration_ns=2e5, grid_size=262144, sm_count=132),
        (dict(duration_ns=5e3, grid_size=1000), True),
    ),
}


def test_every_rule_has_cases():
    assert set(CASES) | {"speed_of_light"} == set(RULES)
    assert {n for sub in TREE.values() for n in sub} == set(CASES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_fires(rule):
    found = run(rule, **CASES[rule][0])
    assert found, rule
    for f in found:
        assert f.rule_id == RULES[rule].SPEC.id
        assert f.evidence and f.next_step and f.gain_model and f.title
        assert f.estimated_gain_pct is None or 0 <= f.estimated_gain_pct <= 100


@pytest.mark.parametrize("rule", sorted(CASES))
def test_stays_quiet(rule):
    assert run(rule, **CASES[rule][1]) == []


#: optional columns a rule's case with its optional metrics missing still has: without them the rule
#: decides nothing (uncoalesced says it has no load requests; the FP64 share needs the FP16 counts)
DECIDES_FROM = {"uncoalesced": {"global_load_requests"}, "fp64": {"fp16_add_inst", "fp16_mul_inst", "fp16_fma_inst"}}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_optional_metrics_missing(rule):
    columns, fires = CASES[rule][2]
    assert not (set(columns) & set(RULES[rule].SPEC.optional)) - DECIDES_FROM.get(rule, set())
    found = run(rule, **columns)
    assert bool(found) == fires
    for f in found:
        assert all(e.value is not None for e in f.evidence)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_missing_required_metric_is_named(rule):
    spec = RULES[rule].SPEC
    gone = next((c for c in spec.requires if c != "duration_ns"), None)
    if gone is None:  # uncoalesced: its alternatives are tested in test_kernel_rules_fallbacks
        pytest.skip(f"{rule} requires no single column beyond the duration")
    columns = {k: v for k, v in CASES[rule][0].items() if k != gone}
    found, notes = diagnose_launch(launch(**columns))
    assert spec.id not in {f.rule_id for f in found}
    note = next(n for n in notes if n.rule_id == f"not-checked:{spec.id}")
    assert ncu_metric_names(gone) in note.message and gone in note.details["missing"][0]


def test_bank_conflict_note_names_the_ncu_metric():
    _, notes = diagnose_launch(launch(duration_ns=1e6, shared_load_wavefronts=4e6, shared_store_wavefronts=0.0))
    note = next(n for n in notes if n.rule_id == "not-checked:shared-bank-conflicts")
    assert note.message.startswith("Could not check shared-memory bank conflicts: "
                                   "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")


def test_degenerate_values_do_not_crash():
    # synthetic: every metric 0, then every metric huge; the rules must decide, not divide by zero
    for value in (0.0, 1e30):
        row = launch(**{c: value for c in LAUNCH_METRICS}, grid_size=1, block_size=1)
        found, notes = diagnose_launch(row)
        assert not notes and all(f.estimated_saving_ns is None or f.estimated_saving_ns >= 0 for f in found)


def test_specs_are_unique_and_documented():
    ids = [s.id for s in specs()]
    assert len(ids) == len(set(ids))
    # every rule declares what it reads: columns it needs, or alternatives one of which it needs
    # (uncoalesced access decides from sector counts alone; the duration only prices the finding)
    assert all((s.requires or s.requires_one_of) and s.doc and s.table == "launches" for s in specs())
    known = {*LAUNCHES, *DERIVED}
    assert all(c in known or c.startswith("device_") for s in specs() for c in (*s.requires, *s.optional))
    assert all(c in LAUNCHES for s in specs() for c in s.requires)  # what can be missing is what a report holds


# ---- numbers from the gain models ----------------------------------------------------------

def test_uncoalesced_numbers():
    (f,) = run("uncoalesced", **CASES["uncoalesced"][0])
    assert f.details["sectors_per_request"] == 32 and f.details["ideal_sectors_per_request"] == 4
    # memory-bound: all the time x 28k excess of 36k global sectors
    assert f.estimated_saving_ns == pytest.approx(1e6 * 28e3 / 36e3)


def test_uncoalesced_without_access_width_uses_the_widest_ideal():
    (f,) = run("uncoalesced", duration_ns=1e6, **CASES["uncoalesced"][2][0])
    # no ideal printed as if known: the range it lies in, the excess against its top a lower bound
    assert f.details["ideal_sectors_per_request"] is None and f.details["ideal_sectors_per_request_range"] == [4, 16]
    assert f.details["excess_is_lower_bound"] and "The access width is not in the report" in f.message
    assert f.title.endswith("ideal 4 to 16 by access width (not in report)") and "lower bound" in f.gain_model
    # not memory-bound by the root's verdict (no speed-of-light numbers): weight 1 (no share known)
    assert f.estimated_saving_ns == pytest.approx(1e6 * (32e3 - 16e3) / 32e3)
    # without the duration the same finding, its gain not estimated (not 0)
    (g,) = run("uncoalesced", **CASES["uncoalesced"][2][0])
    assert g.title == f.title and g.estimated_saving_ns is None and g.gain_model.startswith("not estimated")
    # 16 sectors per request with an unknown width is not flagged, 16-byte loads could be coalesced at 16,
    # but not passed either: 4-byte loads would touch 4x the sectors they need. The rule says it cannot decide.
    (note,) = run("uncoalesced", duration_ns=1e6, global_load_requests=1e3, global_load_sectors=16e3)
    assert note.rule_id == "not-checked:uncoalesced-global-access" and note.estimated_saving_ns is None
    assert note.details["needs"] == ["smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"]
    assert "16.0 sectors per request" in note.message and "4.0x the ideal for 4-byte" in note.message
    # 5 sectors per request is coalesced for any access of 4 bytes or more, whatever the width
    assert run("uncoalesced", duration_ns=1e6, global_load_requests=1e3, global_load_sectors=5e3) == []


def test_misaligned_but_contiguous_is_not_uncoalesced():
    # 5 sectors for 4 ideal: a 32-bit warp access straddling one more sector
    assert run("uncoalesced", duration_ns=1e6, global_load_requests=1e3, global_load_sectors=5e3,
               global_load_bytes_per_sector=25.6) == []


def test_bank_conflict_numbers():
    (f,) = run("bank_conflicts", **CASES["bank_conflicts"][0])
    assert f.details["wavefronts_per_request"] == 4.0 and f.details["conflict_fraction"] == 0.75
    assert f.estimated_saving_ns == pytest.approx(1e6 * 0.9 * 0.75)


def test_occupancy_names_the_limiter_and_the_register_budget():
    (f,) = run("occupancy", **CASES["occupancy"][0])
    assert f.details["limiters"] == ["registers"] and f.details["blocks_per_sm"] == 3
    # a 4th block of 256 threads fits in 65536 registers at 64 per thread
    assert "at 64 registers per thread or fewer (now 80)" in f.message


def test_occupancy_tiny_blocks():
    # 32-thread blocks: the SM's 32 block slots hold 32 warps of its 64
    (f,) = run("occupancy", duration_ns=1e6, theoretical_occupancy_pct=50.0, blocks_limit_registers=64.0,
               blocks_limit_shared_mem=64.0, blocks_limit_warps=64.0, blocks_limit_sm=32.0, block_size=32)
    assert f.details["limiters"] == ["blocks per SM"]
    assert "fill 32 of the SM's 64 warp slots" in f.message and f.next_step.startswith("Use bigger blocks")


def test_warp_stall_names_the_dominant_reason():
    (f,) = run("warp_stalls", **CASES["warp_stalls"][0])
    assert f.details["stall"] == "long scoreboard" and f.details["share"] == 0.75
    assert f.category == Bottleneck.LATENCY
    (g,) = run("warp_stalls", duration_ns=1e6, warp_cycles_per_issued_inst=40.0, stall_long_scoreboard=1.0,
               stall_mio_throttle=25.0)
    assert g.details["stall"] == "mio throttle" and g.category == Bottleneck.SHARED_MEMORY


def test_bytes_in_flight_littles_law():
    (f,) = run("bytes_in_flight", **CASES["bytes_in_flight"][0])
    # 40 cycles x 16 instructions per load at 2 GHz = 320 ns; 1.2 TB/s read x 320 ns / 132 SMs
    assert f.details["factor_needed"] == 2.0
    wait_ns = 40.0 * 16 / 2e9 * 1e9
    per_sm = 2.4e8 / 2e5 * 1e9 * wait_ns * 1e-9 / 132
    assert f.details["bytes_in_flight_per_thread"] == pytest.approx(per_sm / (0.7 * 64 * 32))
    assert f.details["needed_bytes_in_flight_per_sm"] == pytest.approx(4.8e12 * 0.5 * wait_ns * 1e-9 / 132)
    # capped at the root's gap: DRAM at peak saves half the time
    assert f.estimated_saving_ns == pytest.approx(1e5)


def test_bytes_in_flight_quiet_when_warps_are_not_waiting_on_memory():
    cols = dict(CASES["bytes_in_flight"][0], stall_long_scoreboard=5.0)
    assert run("bytes_in_flight", **cols) == []


def test_tensor_cores_underfed():
    (f,) = run("tensor_cores", duration_ns=1e6, tensor_pipe_active_pct=30.0, fma_pipe_active_pct=5.0)
    assert "underfed" in f.title and f.estimated_saving_ns == pytest.approx(7e5)


def test_fp64_cost_from_the_rate_table():
    (f,) = run("fp64", **CASES["fp64"][0])
    assert f.details["fp64_over_fp32"] == 0.5 and f.details["fp64_share"] == pytest.approx(2e6 / 3.2e7)
    assert f.estimated_saving_ns == pytest.approx(1e6 * 0.4 * 0.5)
    (g,) = run("fp64", **CASES["fp64"][2][0])
    assert g.estimated_saving_ns is None and "not estimated" in g.gain_model


def test_all_fp64_kernel_is_taken_as_intended():
    assert run("fp64", duration_ns=1e6, fp64_add_inst=1e7, fp64_mul_inst=0.0, fp64_fma_inst=1e7, fp32_add_inst=0.0,
               fp32_mul_inst=0.0, fp32_fma_inst=0.0, fp16_add_inst=0.0, fp16_mul_inst=0.0, fp16_fma_inst=0.0) == []


def test_atomics_contention_signature():
    (f,) = run("atomics", **CASES["atomics"][0])
    assert f.details["hot_lines"] is True and f.details["atomic_share"] == pytest.approx(1 / 3)
    (g,) = run("atomics", **CASES["atomics"][2][0])
    assert g.details["hot_lines"] is False


def test_contended_atomics_with_quiet_averages_rank_above_the_root():
    # a histogram into a few bins: one atomic per load, nothing busy (the hot lines sit in a few L2
    # slices), DRAM nearly idle; privatised, the kernel would stream its 1 GB in 0.21 ms
    cols = dict(duration_ns=2e7, global_atomic_requests=8e6, global_load_requests=8e6, global_store_requests=0.0,
                sm_throughput_pct=3.0, memory_throughput_pct=4.0, dram_throughput_pct=1.0, l2_throughput_pct=4.0,
                dram_bytes=1e9)
    found, _ = diagnose_launch(launch(**cols))
    top = found[0]
    assert top.rule_id == "atomics-contention" and top.details["hot_lines"] is True
    assert top.estimated_saving_ns == pytest.approx(2e7 - 1e9 / 4.8e12 * 1e9)
    root = next(f for f in found if f.rule_id == "speed-of-light")
    assert root.estimated_saving_ns == pytest.approx(2e7 * 0.96)
    assert root.estimated_saving_ns < top.estimated_saving_ns
    assert "no unit is above 60%" in top.message


def test_atomics_in_a_bandwidth_bound_kernel_are_not_contention():
    cols = dict(MEMORY_BOUND, global_atomic_requests=1e6, global_load_requests=1e6, global_store_requests=0.0,
                l2_throughput_pct=50.0)
    (f,) = run("atomics", **cols)
    assert f.details["hot_lines"] is False
    assert f.estimated_saving_ns == pytest.approx(1e6 * 1.0 * 0.5)  # memory-bound: weight 1 x share 1/2


def test_tail_effect_numbers():
    (f,) = run("tail_effect", **CASES["tail_effect"][0])
    # 1.05 waves take 2 wave-times: 0.95 of the second wave is idle
    assert f.estimated_saving_ns == pytest.approx(1e6 * 0.95 / 2)
    assert run("tail_effect", duration_ns=1e6, waves_per_sm=0.5) == []  # one partial wave: the small-grid rule's case


def test_launch_bound_cases():
    (f,) = run("launch_bound", **CASES["launch_bound"][0])
    assert f.details == {"small_grid": True, "short_kernel": True, "launch_limit": "small-grid"}
    assert f.estimated_saving_ns == pytest.approx(5e3 * 0.5)
    note, g = run("launch_bound", **CASES["launch_bound"][2][0])
    # a short kernel alone: no estimate (the launch cost lies outside it), a launch limit of its own kind
    assert g.details["small_grid"] is False and g.estimated_saving_ns is None and g.details["launch_limit"] == "short-kernel"
    # without an SM count the grid cannot be judged: a note says so beside the short-kernel finding
    assert is_not_checked(note) and note.details["needs"] == ["launch__sm_count", "device__attribute_multiprocessor_count"]


# ---- the root and the tree --------------------------------------------------------------------

@pytest.mark.parametrize(("columns", "category", "regime", "subtrees"), [
    (dict(sm_throughput_pct=10.0, memory_throughput_pct=85.0, dram_throughput_pct=85.0),
     Bottleneck.DRAM, "at-roof", {"memory", "launch"}),
    (dict(sm_throughput_pct=10.0, memory_throughput_pct=85.0, dram_throughput_pct=40.0, l1_throughput_pct=85.0,
          l2_throughput_pct=50.0), Bottleneck.CACHE, "at-roof", {"memory", "launch"}),
    (dict(sm_throughput_pct=90.0, memory_throughput_pct=20.0, fma_pipe_active_pct=88.0, tensor_pipe_active_pct=0.0),
     Bottleneck.FMA, "at-roof", {"compute", "launch"}),
    (dict(sm_throughput_pct=70.0, memory_throughput_pct=20.0, tensor_pipe_active_pct=65.0, fma_pipe_active_pct=5.0),
     Bottleneck.TENSOR, "below-roof", {"compute", "latency", "launch"}),
    (dict(sm_throughput_pct=30.0, memory_throughput_pct=25.0, dram_throughput_pct=25.0),
     Bottleneck.LATENCY, "latency", {"memory", "compute", "latency", "launch"}),
    (dict(sm_throughput_pct=40.0, memory_throughput_pct=54.0, dram_throughput_pct=54.0),
     Bottleneck.DRAM, "latency", {"memory", "latency", "launch"}),
])
def test_root_verdict(columns, category, regime, subtrees):
    (root,) = run("speed_of_light", duration_ns=1e6, **columns)
    assert (root.category, root.details["regime"], set(root.details["subtrees"])) == (category, regime, subtrees)


def test_root_gates_the_subtrees():
    # a compute-bound kernel at its roof: no memory causes are looked into, however bad the access
    cols = dict(CASES["uncoalesced"][0], sm_throughput_pct=90.0, memory_throughput_pct=20.0, dram_throughput_pct=20.0)
    found, _ = diagnose_launch(launch(**cols))
    assert "uncoalesced-global-access" not in {f.rule_id for f in found}
    found, _ = diagnose_launch(launch(**CASES["uncoalesced"][0]))
    assert [f.rule_id for f in found] == ["uncoalesced-global-access", "speed-of-light"]


def test_the_root_names_no_cause_that_no_rule_could_check():
    """The speed-of-light throughputs alone give the regime: the root says the cause is not checked and a
    note names the sections; one cause rule able to check (stall reasons here) and the root reads as before."""
    sol_only = dict(duration_ns=1e6, sm_throughput_pct=30.0, memory_throughput_pct=25.0, dram_throughput_pct=25.0)
    found, notes = diagnose_launch(launch(**sol_only))
    (root,) = [f for f in found if f.rule_id == "speed-of-light"]
    assert root.title.endswith("cause not checked") and root.details["cause"] == "not checked"
    assert root.details["saving_upper_bound"] and root.estimated_saving_ns == pytest.approx(1e6 * 0.7)
    (note,) = [n for n in notes if n.rule_id == "not-checked:speed-of-light"]
    assert "WarpStateStats" in note.message and note.details["needs"][0].startswith("WarpStateStats")
    found, notes = diagnose_launch(launch(**sol_only, warp_cycles_per_issued_inst=20.0, stall_long_scoreboard=2.0))
    (root,) = [f for f in found if f.rule_id == "speed-of-light"]
    assert root.title.startswith("Latency-bound") and "cause" not in root.details and "saving_upper_bound" not in root.details
    assert not [n for n in notes if n.rule_id == "not-checked:speed-of-light"]
    # at the roof the bound is measured: nothing to add
    found, notes = diagnose_launch(launch(duration_ns=1e6, sm_throughput_pct=10.0, memory_throughput_pct=90.0,
                                          dram_throughput_pct=90.0))
    assert found[0].title == "DRAM-bandwidth-bound at 90% of peak" and "cause" not in found[0].details


def test_a_short_kernel_in_the_latency_regime_leads_with_the_launch():
    found, _ = diagnose_launch(launch(duration_ns=5e3, grid_size=4096, sm_throughput_pct=30.0,
                                      memory_throughput_pct=25.0, dram_throughput_pct=25.0,
                                      warp_cycles_per_issued_inst=20.0, stall_long_scoreboard=2.0))
    assert found[0].rule_id == "launch-bound" and found[0].details[RANKED_BY] == pytest.approx(5e3 * 0.7)
    root = next(f for f in found if f.rule_id == "speed-of-light")
    assert "as short as a few launches" in root.details["saving_upper_bound"] and "cause" not in root.details
    # at 10 us or more, or with a unit at its roof, the order is the root's
    found, _ = diagnose_launch(launch(duration_ns=5e3, grid_size=4096, sm_throughput_pct=10.0,
                                      memory_throughput_pct=90.0, dram_throughput_pct=90.0))
    assert found[0].rule_id == "speed-of-light" and "saving_upper_bound" not in found[0].details


def test_in_the_latency_regime_causes_that_explain_the_gap_lead_the_root():
    # DRAM at 50%: below Nsight Compute's 60% latency mark, the root can only say "latency"
    found, _ = diagnose_launch(launch(**CASES["bytes_in_flight"][0]))
    ids = [f.rule_id for f in found]
    assert ids[:3] == ["too-few-bytes-in-flight", "warp-stalls", "speed-of-light"]
    assert found[0].estimated_saving_ns == found[1].estimated_saving_ns == found[2].estimated_saving_ns


def test_near_the_roof_the_root_leads_the_causes_it_ties():
    # DRAM at 70%: the bound is the story; the same causes, capped at the gap, follow it
    cols = dict(CASES["bytes_in_flight"][0], memory_throughput_pct=70.0, dram_throughput_pct=70.0)
    found, _ = diagnose_launch(launch(**cols))
    assert [f.rule_id for f in found][:3] == ["speed-of-light", "too-few-bytes-in-flight", "warp-stalls"]
    assert found[0].estimated_saving_ns == found[1].estimated_saving_ns == pytest.approx(2e5 * 0.3)


def test_without_the_root_every_subtree_runs():
    found, notes = diagnose_launch(launch(**{**CASES["tail_effect"][0], **CASES["divergence"][0]}))
    assert {"tail-effect", "warp-divergence"} <= {f.rule_id for f in found}
    assert "not-checked:speed-of-light" in {n.rule_id for n in notes}


def test_compare_with_ncu_names_its_lead():
    rules = [dict(rule_id="IssueSlotUtilization", severity="warning", title="", speedup_pct=20.0),
             dict(rule_id="HighPipeUtilization", severity="warning", title="", speedup_pct=95.0),
             dict(rule_id="UncoalescedGlobalAccess", severity="warning", title="", speedup_pct=77.0)]
    found, _ = diagnose_launch(launch(**CASES["uncoalesced"][0]), rules)
    assert found[0].ncu_rule == "UncoalescedGlobalAccess" and found[0].ncu_speedup_pct == 77.0
    assert found[0].differs_from_ncu.startswith("Nsight Compute leads with IssueSlotUtilization (20%)")
    found, _ = diagnose_launch(launch(**CASES["uncoalesced"][0]), rules[2:])
    assert found[0].differs_from_ncu is None  # its first warning is ours


# ---- rules over the whole profile: an unfused chain ------------------------------------------

N_BYTES = 1.0e9  # synthetic: each element-wise kernel reads one 1 GB tensor and writes another


def chain_launches(n: int = 4, changes: dict[int, dict] | None = None) -> pl.DataFrame:
    """Synthetic: n element-wise launches in a row, each reading N_BYTES and writing N_BYTES at 85% of
    DRAM peak; ``changes`` maps a launch index to the columns it has instead."""
    base = dict(kernel_name="vectorized_elementwise_kernel", device_id=0, stream_id=7, duration_ns=4.9e5,
                sm_throughput_pct=30.0, memory_throughput_pct=85.0, dram_throughput_pct=85.0,
                dram_read_bytes=N_BYTES, dram_write_bytes=N_BYTES, dram_bytes=2 * N_BYTES,
                global_load_sectors=N_BYTES / 32, global_store_sectors=N_BYTES / 32,
                global_load_bytes_per_sector=32.0, global_store_bytes_per_sector=32.0)
    rows = [{"launch_id": i, **base, **(changes or {}).get(i, {})} for i in range(n)]
    return with_derived(conform(pl.DataFrame(rows), LAUNCHES), conform(pl.DataFrame([SYNTHETIC_DEVICE]), DEVICES))


def test_unfused_chain_of_four():
    (f,) = RULES_FUSION.apply_profile(chain_launches())
    assert f.rule_id == "unfused-elementwise-chain" and f.category == Bottleneck.DRAM
    assert f.launch_id is None and f.scope == "4 kernels, launches 0-3"
    # 8 GB moved, 3 intermediates written and read back (6 GB): fused, 2 GB; 75% of 1.96 ms saved
    assert f.details["intermediate_bytes"] == 6 * N_BYTES and f.details["fused_bytes"] == 2 * N_BYTES
    assert f.estimated_saving_ns == pytest.approx(4 * 4.9e5 * 0.75)
    assert f.estimated_gain_pct == pytest.approx(75.0)


def test_unfused_chain_outranks_every_launch_of_it():
    launches = chain_launches()
    profile = model_profile(launches)
    found = run_all(profile)
    assert found[0].rule_id == "unfused-elementwise-chain"
    assert all(f.estimated_saving_ns < found[0].estimated_saving_ns for f in found[1:] if f.estimated_saving_ns)


@pytest.mark.parametrize("changes, expected", [
    ({}, [4]),
    ({2: dict(global_store_sectors=N_BYTES / 64, dram_write_bytes=N_BYTES / 2)}, [2]),  # a smaller output: no link either side
    ({1: dict(global_load_sectors=8 * N_BYTES / 32, global_load_bytes_per_sector=4.0)}, [2]),  # uncoalesced: not a link
    ({1: dict(sm_throughput_pct=90.0)}, [4]),  # the SM busy too: still a round trip through DRAM
    ({1: dict(memory_throughput_pct=45.0, dram_throughput_pct=45.0)}, [2]),  # not streaming: not a member
    ({2: dict(stream_id=8), 3: dict(stream_id=8)}, [2, 2]),  # another stream starts another chain
    ({1: dict(dram_throughput_pct=70.0, l1_throughput_pct=85.0), 3: dict(dram_throughput_pct=50.0)}, []),
])
def test_unfused_chain_membership(changes, expected):
    assert [f.details["kernels"] for f in RULES_FUSION.apply_profile(chain_launches(changes=changes))] == expected


def test_one_launch_is_no_chain():
    assert RULES_FUSION.apply_profile(chain_launches(1)) == []


def test_the_recorded_copies_are_no_chain(data_dir):
    # the strided copy moves 16x its useful bytes: its own problem, not a link in a chain
    from coach.ingest import load

    profile = load(data_dir / "ncu_strided_copy/copy_strided_vs_coalesced.ncu-rep")
    assert RULES_FUSION.apply_profile(with_derived(profile.launches, profile.devices)) == []


def test_a_tail_on_a_kernel_near_its_roof_is_capped_at_the_gap():
    # 1.3 waves on a DRAM-bound kernel at 78%: the last wave cannot save 35% of a kernel 22% from its floor
    cols = dict(duration_ns=1e6, waves_per_sm=1.3, grid_size=343, sm_throughput_pct=20.0,
                memory_throughput_pct=78.0, dram_throughput_pct=78.0)
    found, _ = diagnose_launch(launch(**cols))
    assert [f.rule_id for f in found][:2] == ["speed-of-light", "tail-effect"]
    assert found[1].estimated_saving_ns == found[0].estimated_saving_ns == pytest.approx(2.2e5)
    # the small-grid estimate likewise
    (g,) = run("launch_bound", duration_ns=1e6, grid_size=66, sm_count=132, sm_throughput_pct=20.0,
               memory_throughput_pct=78.0, dram_throughput_pct=78.0)
    assert g.estimated_saving_ns == pytest.approx(2.2e5)


# ---- launch-configuration limits ranked with the gap -------------------------------------------

# Synthetic: a latency-bound launch (both halves far below 60%) whose registers allow 2 blocks of
# 256 threads (25% theoretical occupancy), with warps waiting on memory 90% of the time.
REGISTER_LIMITED = dict(duration_ns=1e6, sm_throughput_pct=8.0, memory_throughput_pct=20.0, dram_throughput_pct=20.0,
                        theoretical_occupancy_pct=25.0, achieved_occupancy_pct=24.0, blocks_limit_registers=2.0,
                        blocks_limit_shared_mem=32.0, blocks_limit_warps=8.0, blocks_limit_sm=32.0, block_size=256,
                        registers_per_thread=72, warp_cycles_per_issued_inst=100.0, stall_long_scoreboard=90.0,
                        issue_active_pct=8.0)


def test_occupancy_limit_leads_in_the_latency_regime():
    found, _ = diagnose_launch(launch(**REGISTER_LIMITED))
    assert [f.rule_id for f in found][:3] == ["occupancy-limit", "warp-stalls", "speed-of-light"]
    occupancy, stalls, root = found[:3]
    # its own estimate is kept (time x (1 - 25%)), below the stall share's, which is capped at the 80% gap
    assert occupancy.estimated_saving_ns == pytest.approx(7.5e5)
    assert stalls.estimated_saving_ns == root.estimated_saving_ns == pytest.approx(8e5)
    assert occupancy.details[RANKED_BY] == root.estimated_saving_ns
    assert RANKED_BY not in root.details and RANKED_BY not in stalls.details


def test_occupancy_limit_is_ranked_by_its_estimate_near_the_roof_or_when_measured():
    # DRAM at 70%: near the roof the bound leads, and the occupancy finding keeps its (capped) estimate
    found, _ = diagnose_launch(launch(**dict(REGISTER_LIMITED, memory_throughput_pct=70.0, dram_throughput_pct=70.0)))
    assert found[0].rule_id == "speed-of-light" and not any(RANKED_BY in f.details for f in found)
    # achieved occupancy short of a full theoretical one is behaviour, not a launch setting
    cols = dict(REGISTER_LIMITED, theoretical_occupancy_pct=100.0, achieved_occupancy_pct=50.0, blocks_limit_registers=8.0)
    found, _ = diagnose_launch(launch(**cols))
    assert [f.rule_id for f in found][:3] == ["warp-stalls", "speed-of-light", "occupancy-limit"]
    assert not any(RANKED_BY in f.details for f in found)


def test_a_partial_wave_leads_a_compute_kernel_below_its_roof():
    # 1.0038 waves of compute-bound blocks: averaged over the idle tail the SMs are 64% busy, so the
    # partial wave's 49.8% is capped at the 36% gap, and it is what keeps the kernel from its roof
    cols = dict(duration_ns=1.5e6, sm_throughput_pct=64.0, memory_throughput_pct=2.0, waves_per_sm=265 / 264,
                grid_size=265)
    found, _ = diagnose_launch(launch(**cols))
    assert [f.rule_id for f in found][:2] == ["tail-effect", "speed-of-light"]
    assert found[0].estimated_saving_ns == found[1].estimated_saving_ns == pytest.approx(1.5e6 * 0.36)
    assert found[0].details[RANKED_BY] == pytest.approx(1.5e6 * 0.36)


def test_promotion_survives_the_ranking_across_launches():
    other = dict(REGISTER_LIMITED, theoretical_occupancy_pct=100.0, blocks_limit_registers=8.0, duration_ns=9.5e5)
    rows = pl.DataFrame([{"launch_id": 0, "kernel_name": "limited", "device_id": 0, **REGISTER_LIMITED},
                         {"launch_id": 1, "kernel_name": "other", "device_id": 0, **other}])
    found = [f for f in run_all(model_profile(conform(rows, LAUNCHES))) if not f.rule_id.startswith("not-checked")]
    # launch 0's occupancy finding ranks with its root's 800 us gap, ahead of launch 1's 760 us
    assert [(f.scope, f.rule_id) for f in found][:4] == [
        ("limited", "occupancy-limit"), ("limited", "warp-stalls"), ("limited", "speed-of-light"),
        ("other", "warp-stalls")]
