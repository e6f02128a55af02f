"""Timeline rules: for each, a case where it must fire (the recorded trace where it has the problem,
otherwise a synthetic timeline built here), one where it must stay quiet, and one with optional
columns missing. Synthetic timelines name only the columns a test is about."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import polars as pl
import pytest
from test_timeline import synthetic_timeline

from coach.analyze.findings import Bottleneck
from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules import (
    RULES,
    allocator_churn,
    applicable,
    gpu_idle,
    host_sync,
    launch_bound,
    layout_copies,
    no_overlap,
    pageable_memcpy,
    run_all,
    transfer_bandwidth,
    warmup,
)
from coach.analyze.timeline_rules._shared import link_bytes_per_s, timeline_gpu
from coach.ingest import load
from coach.ingest.kineto import read
from coach.paths import traces_dir

US, MS = 1_000, 1_000_000
MIB64 = 64 << 20


@pytest.fixture(scope="module")
def kineto(softmax_kineto_json):
    return read(softmax_kineto_json)


def run(rule, tl, hardware=None):
    return rule.apply(TimelineAnalysis(tl), hardware)


def evidence(finding) -> dict:
    return {e.metric: e.value for e in finding.evidence}


def kernels(starts_us, ends_us, **extra):
    n = len(starts_us)
    return {"device_id": [0] * n, "stream_id": [7] * n, "start_ns": [s * US for s in starts_us],
            "end_ns": [e * US for e in ends_us], "name": ["k"] * n, **extra}


# --------------------------------------------------------------------------------------------
# The recorded trace, all rules together
# --------------------------------------------------------------------------------------------


def test_recorded_trace_ranking(kineto):
    findings = run_all(kineto)
    assert [f.rule_id for f in findings] == ["gpu-idle-gaps", "warmup-in-profile", "host-sync"]
    for f in findings:
        assert f.message and f.next_step and f.gain_model and f.evidence
        assert f.estimated_saving_ns > 0 and 0 < f.estimated_gain_pct <= 100
    json.dumps([f.to_dict() for f in findings], default=str)


def test_rule_declarations():
    ids = [r.SPEC.id for r in RULES]
    assert len(set(ids)) == len(ids) == 10
    for r in RULES:
        assert isinstance(r.SPEC.category, Bottleneck) and callable(r.apply)


def test_empty_timeline_has_no_findings():
    """Nothing fires; one note says the GPU side could not be checked, so "nothing found" is not read
    as a healthy GPU."""
    (note,) = run_all(synthetic_timeline())
    assert note.rule_id == "not-checked:capture" and "the trace records no GPU activity" in note.message


# --------------------------------------------------------------------------------------------
# GPU idle (HOST_BOUND / IDLE)
# --------------------------------------------------------------------------------------------


def test_idle_fires_host_bound_on_the_recorded_trace(kineto):
    [f] = run(gpu_idle, kineto)
    assert f.category == Bottleneck.HOST_BOUND and f.scope == "GPU 0"
    e = evidence(f)
    # five gaps between operations, minus the 8.94 ms module load inside the largest; the two that a
    # synchronisation returned into (550.6 us and 89.8 us, 434.4 us of it in CUDA calls) are host-sync's
    assert (e["idle_in_gaps_ns"], e["largest_gap_ns"]) == (19482684 - 550624 - 89760, 17021628)
    assert e["host_in_cuda_api_pct"] == pytest.approx(100 * (1869748 - 403710 - 30708) / (19482684 - 640384))
    assert f.estimated_saving_ns == 19482684 - 640384 - 3 * gpu_idle.MIN_GAP_NS
    assert "aten::sum" in f.message and "8.937 ms" in f.message
    assert "So are 2 gap(s) that followed a host synchronisation (640 us" in f.message


def _synchronised_steps(with_syncs: bool):
    """Ten 900 us kernels 1 ms apart; after each of the first nine the host waits in
    cudaStreamSynchronize (100 us to 905 us into the step), so each 100 us gap follows a sync."""
    starts = [i * 1000 for i in range(10)]
    tables = {"kernels": kernels(starts, [s + 900 for s in starts])}
    if with_syncs:
        tables["api"] = {"pid": [1] * 9, "tid": [1] * 9, "name": ["cudaStreamSynchronize"] * 9,
                         "start_ns": [(s + 100) * US for s in starts[:9]], "end_ns": [(s + 905) * US for s in starts[:9]]}
    return synthetic_timeline(**tables)


def test_idle_leaves_the_gaps_after_a_synchronisation_to_host_sync():
    tl = _synchronised_steps(with_syncs=True)
    assert run(gpu_idle, tl) == []
    [f] = run(host_sync, tl)
    assert f.estimated_saving_ns == 9 * (100 * US - host_sync.LAUNCH_LATENCY_NS)
    [f] = run(gpu_idle, _synchronised_steps(with_syncs=False))
    assert f.estimated_saving_ns == 9 * (100 * US - gpu_idle.MIN_GAP_NS) and "synchronisation" not in f.message


def _waiting_in_malloc(with_host_tables: bool):
    tables = {"kernels": kernels([0, 1000], [10, 1010])}
    if with_host_tables:
        tables["api"] = {"pid": [1], "tid": [1], "start_ns": [15 * US], "end_ns": [990 * US], "name": ["cudaMalloc"]}
        tables["nvtx"] = {"pid": [1], "tid": [1], "start_ns": [0], "end_ns": [1010 * US], "text": ["step"], "depth": [0]}
    return synthetic_timeline(**tables)


def test_idle_fires_when_a_cuda_call_holds_the_gpu():
    [f] = run(gpu_idle, _waiting_in_malloc(True))
    assert f.category == Bottleneck.IDLE and "cudaMalloc" in f.title and "inside step" in f.message
    assert evidence(f)["host_in_cuda_api_pct"] == pytest.approx(100 * 975 / 990)


def test_idle_without_api_or_nvtx_is_host_bound():
    [f] = run(gpu_idle, _waiting_in_malloc(False))
    assert f.category == Bottleneck.HOST_BOUND and evidence(f)["host_in_cuda_api_pct"] == 0


def test_idle_quiet_when_gaps_are_launch_latency():
    starts = [i * 105 for i in range(10)]  # 100 us kernels, 5 us apart
    assert run(gpu_idle, synthetic_timeline(kernels=kernels(starts, [s + 100 for s in starts]))) == []


# --------------------------------------------------------------------------------------------
# Launch-bound (LAUNCH)
# --------------------------------------------------------------------------------------------


def _launched(n: int, kernel_us: float, launch_us: float = 8, with_correlation: bool = True):
    starts = [i * launch_us for i in range(n)]
    k = kernels([s + 2 for s in starts], [s + 2 + kernel_us for s in starts])
    api = {"pid": [1] * n, "tid": [1] * n, "start_ns": [int(s * US) for s in starts],
           "end_ns": [int((s + launch_us) * US) for s in starts], "name": ["cudaLaunchKernel"] * n}
    if with_correlation:
        k["correlation_id"] = api["correlation_id"] = list(range(n))
    return synthetic_timeline(kernels=k, api=api)


def test_launch_bound_fires_on_tiny_kernels():
    [f] = run(launch_bound, _launched(40, kernel_us=2))
    e = evidence(f)
    assert (e["kernels_shorter_than_launch"], e["kernel_ns_median"], e["launch_ns_median"]) == (40, 2 * US, 8 * US)
    # the GPU waits 8 - 2 us before each kernel after the first
    assert f.estimated_saving_ns == 39 * 6 * US
    assert e["stretch_gpu_busy_pct"] == pytest.approx(100 * 80 / (39 * 8 + 4))


def test_launch_bound_quiet_when_a_read_back_separates_the_kernels():
    """Forty steps of one 2 us kernel, each read back with cudaStreamSynchronize and followed by 90 us
    of host work: every kernel is shorter than its 8 us launch and the GPU waits for each, but only
    because the host was blocked until the queue drained. The synchronisations are the finding, and
    the idle time is theirs alone."""
    starts = [i * 100 for i in range(40)]
    k = kernels([s + 2 for s in starts], [s + 4 for s in starts], correlation_id=list(range(40)))
    api = {"pid": [1] * 80, "tid": [1] * 80, "correlation_id": list(range(40)) + [None] * 40,
           "start_ns": [s * US for s in starts] + [(s + 8) * US for s in starts],
           "end_ns": [(s + 8) * US for s in starts] + [(s + 10) * US for s in starts],
           "name": ["cudaLaunchKernel"] * 40 + ["cudaStreamSynchronize"] * 40}
    tl = synthetic_timeline(kernels=k, api=api)
    assert run(launch_bound, tl) == [] and run(gpu_idle, tl) == []
    [f] = run(host_sync, tl)
    assert f.estimated_saving_ns == 39 * (98 * US - host_sync.LAUNCH_LATENCY_NS)
    assert [f.rule_id for f in run_all(tl)] == ["host-sync"]


def test_launch_bound_stretches_end_at_a_synchronisation():
    """Twenty 2 us kernels launched back to back by 8 us calls, with a 50 us cudaStreamSynchronize
    after the tenth: the eleventh starts on a queue the synchronisation drained (host-sync's gap), so
    the runs are the first ten and the last nine, and their waits are all that launch-bound claims."""
    calls = [i * 8 for i in range(10)] + [130 + i * 8 for i in range(10)]
    k = kernels([c + 2 for c in calls], [c + 4 for c in calls], correlation_id=list(range(20)))
    api = {"pid": [1] * 21, "tid": [1] * 21, "correlation_id": list(range(20)) + [None],
           "start_ns": [c * US for c in calls] + [80 * US], "end_ns": [(c + 8) * US for c in calls] + [130 * US],
           "name": ["cudaLaunchKernel"] * 20 + ["cudaStreamSynchronize"]}
    tl = synthetic_timeline(kernels=k, api=api)
    [f] = run(launch_bound, tl)
    assert evidence(f)["kernels_shorter_than_launch"] == 19 and len(f.details["stretches"]) == 2
    assert f.estimated_saving_ns == (9 + 8) * 6 * US
    [sync] = run(host_sync, tl)
    assert sync.estimated_saving_ns == (132 - 76) * US - host_sync.LAUNCH_LATENCY_NS


def test_idle_leaves_the_gaps_inside_a_launch_bound_stretch_to_launch_bound():
    """Forty 2 us kernels, each launched by a 20 us call: the 18 us gaps are longer than one launch
    latency, but they are waits for launches, claimed once, by launch-bound."""
    tl = _launched(40, kernel_us=2, launch_us=20)
    [f] = run(launch_bound, tl)
    assert f.estimated_saving_ns == 39 * 18 * US
    assert run(gpu_idle, tl) == []


def test_recorded_synchronised_loop_is_not_launch_bound():
    """Scenario 14's slow training loop on the H200 (traces/h200/scenario-14/slow/nsys): 3396 of its
    6000 kernels run shorter than their launch call, but the GPU waited for only 1464 of those (the
    rest ran from a queue, about 1 us apart), 583 of them right after one of the 1377
    synchronisations, and no eight of the other 881 come in a row. The loop's idle time is the
    synchronisations' and the host's, each gap claimed once."""
    tl = load(traces_dir() / "h200" / "scenario-14" / "slow" / "nsys")
    a = TimelineAnalysis(tl)
    shorter = a.launches.filter(pl.col("dur_ns") < pl.col("launch_ns"))
    waited = shorter.filter("waited_for_launch")
    released = host_sync.returned_into(a.gaps, host_sync.sync_points(a)).select("device_id", start_ns="end_ns")
    after_sync = waited.join(released, on=["device_id", "start_ns"])
    assert (a.launches.height, shorter.height, waited.height, after_sync.height) == (6000, 3396, 1464, 583)
    assert launch_bound.bound_launches(a).is_empty()
    findings = run_all(tl)
    assert [(f.rule_id, f.estimated_saving_ns) for f in findings] == [("host-sync", 76950988), ("gpu-idle-gaps", 70683021)]


def test_launch_bound_quiet_when_kernels_outlast_their_launch(kineto):
    assert run(launch_bound, _launched(40, kernel_us=100)) == []
    assert run(launch_bound, kineto) == []


def test_launch_bound_needs_correlation_ids():
    tl = _launched(40, kernel_us=2, with_correlation=False)
    assert not applicable(launch_bound.SPEC, tl)
    assert run(launch_bound, tl) == []


# --------------------------------------------------------------------------------------------
# Host synchronisation (HOST_SYNC)
# --------------------------------------------------------------------------------------------


def test_host_sync_fires_on_item_calls(kineto):
    [f] = run(host_sync, kineto)
    e = evidence(f)
    # the two gaps between operations a synchronisation returned into (550.6 us and 89.8 us); the last
    # cudaDeviceSynchronize returns into the capture's trailing edge, where no queue drained
    assert (e["sync_points"], e["scalar_reads"], e["host_blocked_ns"], e["gpu_idle_after_sync_ns"]) == (4, 3, 741870, 640384)
    assert f.estimated_saving_ns == 640384 - 2 * host_sync.LAUNCH_LATENCY_NS
    assert "3 x cudaStreamSynchronize, 1 x cudaDeviceSynchronize" in f.message


def test_host_sync_without_copy_sizes(kineto):
    tl = dataclasses.replace(kineto, memcpy=kineto.memcpy.with_columns(bytes=pl.lit(None, pl.Int64)))
    [f] = run(host_sync, tl)
    assert evidence(f)["scalar_reads"] == 0 and f.estimated_saving_ns == 620384


def test_host_sync_quiet_for_one_final_synchronize():
    starts = [i * 100 for i in range(10)]
    tl = synthetic_timeline(
        kernels=kernels(starts, [s + 100 for s in starts]),
        api={"pid": [1], "tid": [1], "start_ns": [50 * US], "end_ns": [1002 * US], "name": ["cudaDeviceSynchronize_v3020"]},
    )
    assert run(host_sync, tl) == []


# --------------------------------------------------------------------------------------------
# Pageable copies (PAGEABLE)
# --------------------------------------------------------------------------------------------


def _copies(kind, durations_ms, nbytes=MIB64, **memory):
    n = len(durations_ms)
    starts = [sum(durations_ms[:i]) * MS for i in range(n)]
    return {"device_id": [0] * n, "stream_id": [7] * n, "kind": [kind] * n, "bytes": [nbytes] * n,
            "start_ns": starts, "end_ns": [s + d * MS for s, d in zip(starts, durations_ms)],
            **{k: [v] * n for k, v in memory.items()}}


def test_pageable_fires_with_the_link_ceiling():
    tl = synthetic_timeline(memcpy=_copies("DtoH", [40, 40], pageable=True))
    [f] = run(pageable_memcpy, tl)
    assert f.estimated_saving_ns == pytest.approx(80 * MS - 2 * MIB64 / 64e9 * 1e9)
    assert evidence(f)["pageable_copy_bytes_per_s"] == pytest.approx(2 * MIB64 / 80e-3)
    [slower_link] = run(pageable_memcpy, tl, SimpleNamespace(name="Some GPU", pcie_bytes_per_s_per_direction=32e9))
    assert slower_link.estimated_saving_ns == pytest.approx(80 * MS - 2 * MIB64 / 32e9 * 1e9)
    assert any(e.source.startswith("Some GPU") for e in slower_link.evidence)


def test_pageable_from_memory_kinds_alone():
    [f] = run(pageable_memcpy, synthetic_timeline(memcpy=_copies("HtoD", [40], src_memory="pageable", dst_memory="device")))
    assert evidence(f)["pageable_copies"] == 1


def test_pageable_without_byte_counts_has_no_estimate():
    [f] = run(pageable_memcpy, synthetic_timeline(memcpy=_copies("DtoH", [40], nbytes=None, pageable=True)))
    assert f.estimated_saving_ns is None and evidence(f)["pageable_copy_bytes_per_s"] is None


def test_pageable_quiet(kineto):
    assert run(pageable_memcpy, kineto) == []  # the recorded copies are into pinned memory
    assert run(pageable_memcpy, synthetic_timeline(memcpy=_copies("DtoH", [40]))) == []  # memory unknown


# --------------------------------------------------------------------------------------------
# Copy/compute overlap (NO_OVERLAP)
# --------------------------------------------------------------------------------------------


def test_no_overlap_fires_on_one_stream():
    tl = synthetic_timeline(
        memcpy={"device_id": [0, 0], "stream_id": [7, 7], "kind": ["HtoD", "DtoH"], "start_ns": [0, 10 * MS],
                "end_ns": [5 * MS, 15 * MS]},
        kernels=kernels([5000], [10000]),
    )
    [f] = run(no_overlap, tl)
    assert f.estimated_saving_ns == 5 * MS and evidence(f)["hidden_pct"] == 0
    assert "share one stream" in f.message


def test_no_overlap_quiet_for_a_pipeline(kineto):
    # chunk i+1 copies on stream 2 while chunk i computes on stream 1
    tl = synthetic_timeline(
        memcpy={"device_id": [0] * 3, "stream_id": [2] * 3, "kind": ["HtoD"] * 3, "start_ns": [0, 5 * MS, 10 * MS],
                "end_ns": [5 * MS, 10 * MS, 15 * MS]},
        kernels={**kernels([5000, 10000, 15000], [10000, 15000, 20000]), "stream_id": [1] * 3},
    )
    assert run(no_overlap, tl) == []
    assert run(no_overlap, kineto) == []  # copies of 2 bytes: nothing to hide


def test_no_overlap_without_stream_ids():
    tl = synthetic_timeline(
        memcpy={"device_id": [0, 0], "kind": ["HtoD", "DtoH"], "start_ns": [0, 10 * MS], "end_ns": [5 * MS, 15 * MS]},
        kernels={"device_id": [0], "start_ns": [5 * MS], "end_ns": [10 * MS], "name": ["k"]},
    )
    [f] = run(no_overlap, tl)
    assert "one stream" not in f.message and evidence(f)["copy_streams"] == 0


# --------------------------------------------------------------------------------------------
# Link throughput (TRANSFER)
# --------------------------------------------------------------------------------------------


def test_transfer_fires_for_slow_pinned_copies():
    [f] = run(transfer_bandwidth, synthetic_timeline(memcpy=_copies("HtoD", [10], pageable=False)))
    assert f.scope == "HtoD" and f.estimated_saving_ns == pytest.approx(10 * MS - MIB64 / 64e9 * 1e9)
    assert evidence(f)["htod_bytes_per_s"] == pytest.approx(MIB64 / 10e-3)


def test_transfer_quiet():
    assert run(transfer_bandwidth, synthetic_timeline(memcpy=_copies("HtoD", [1.2], pageable=False))) == []  # 56 GB/s
    assert run(transfer_bandwidth, synthetic_timeline(memcpy=_copies("DtoH", [10], pageable=True))) == []  # pageable rule's
    assert run(transfer_bandwidth, synthetic_timeline(memcpy=_copies("HtoD", [10]))) == []  # memory kind unknown
    assert run(transfer_bandwidth, synthetic_timeline(memcpy=_copies("HtoD", [10], nbytes=4096, pageable=False))) == []


def test_transfer_against_the_given_gpu_link():
    slow_link = SimpleNamespace(name="Gen4 GPU", pcie_bytes_per_s_per_direction=16e9)
    tl = synthetic_timeline(memcpy=_copies("HtoD", [10], pageable=False))  # 6.7 GB/s: 42% of 16 GB/s
    [f] = run(transfer_bandwidth, tl, slow_link)
    assert evidence(f)["link_bytes_per_s"] == 16e9


def test_transfer_needs_byte_counts():
    assert not applicable(transfer_bandwidth.SPEC, synthetic_timeline(memcpy=_copies("HtoD", [10], nbytes=None)))


# --------------------------------------------------------------------------------------------
# Allocator churn (ALLOCATOR)
# --------------------------------------------------------------------------------------------


def _churn(alloc: str, free: str, pairs: int = 5):
    names, starts = [], []
    for i in range(pairs):
        names += [alloc, free]
        starts += [i * 10 * MS, i * 10 * MS + 5 * MS]
    return synthetic_timeline(
        api={"pid": [1] * len(names), "tid": [1] * len(names), "name": names, "start_ns": starts,
             "end_ns": [s + MS for s in starts]},
        kernels=kernels([i * 10_000 + 2_000 for i in range(pairs)], [i * 10_000 + 4_000 for i in range(pairs)]),
    )


def test_allocator_fires_on_malloc_free_pairs():
    [f] = run(allocator_churn, _churn("cudaMalloc_v3020", "cudaFree_v3020"))
    assert (evidence(f)["alloc_calls"], evidence(f)["free_calls"]) == (5, 5)
    assert f.estimated_saving_ns == 10 * MS and "serialise" in f.message


def test_allocator_names_the_release_threshold_for_stream_ordered_calls():
    [f] = run(allocator_churn, _churn("cudaMallocAsync", "cudaFreeAsync"))
    assert "release threshold" in f.message


def test_allocator_quiet(kineto):
    assert run(allocator_churn, kineto) == []  # two cudaMalloc calls while the caching allocator grows, no frees
    assert run(allocator_churn, _churn("cudaMalloc", "cudaFree", pairs=2)) == []


# --------------------------------------------------------------------------------------------
# One-time start-up costs (MEASUREMENT)
# --------------------------------------------------------------------------------------------


def test_warmup_fires_on_the_first_reduction(kineto):
    [f] = run(warmup, kineto)
    assert f.category == Bottleneck.MEASUREMENT and f.estimated_saving_ns == 8955736
    assert evidence(f)["module_load_calls"] == 0 and evidence(f)["longest_one_time_call_ns"] == 8955736


def test_warmup_counts_a_load_inside_a_launch_once():
    tl = synthetic_timeline(
        api={"pid": [1, 1, 1], "tid": [1, 1, 1], "correlation_id": [1, None, 2],
             "name": ["cudaLaunchKernel_v7000", "cuLibraryLoadData", "cudaLaunchKernel_v7000"],
             "start_ns": [0, 1 * MS, 10 * MS], "end_ns": [5 * MS, 4 * MS, 10 * MS + 8 * US]},
        kernels={**kernels([5010, 10010], [5020, 10020]), "correlation_id": [1, 2]},
    )
    [f] = run(warmup, tl)
    assert f.estimated_saving_ns == 5 * MS and evidence(f)["module_load_calls"] == 1


def _jit_compiled(with_load: bool):
    """A 1 ms kernel, then 800 ms of host time with no GPU work, the load of a run-time compiled
    module (or a query call), and a 1 ms kernel launched right after."""
    second = 802 * MS
    names = ["cudaLaunchKernel", "cuDeviceGetAttribute", "cuModuleLoadData" if with_load else "cuCtxGetCurrent",
             "cuLaunchKernelEx"]
    return synthetic_timeline(
        api={"pid": [1] * 4, "tid": [1] * 4, "correlation_id": [1, None, None, 2], "name": names,
             "start_ns": [0, 700 * MS, 801 * MS, second], "end_ns": [8 * US, 700 * MS + 2 * US, 801 * MS + 500 * US,
                                                                     second + 6 * US]},
        kernels={**kernels([10, (second + 10 * US) // US], [1010, (second + 1010 * US) // US]), "correlation_id": [1, 2]},
    )


def test_warmup_counts_run_time_compilation_before_a_module_load():
    [f] = run(warmup, _jit_compiled(with_load=True))
    # from the end of the first launch call to the start of the launch after the load
    assert f.estimated_saving_ns == 802 * MS - 8 * US
    assert evidence(f)["run_time_compile_ns"] == 802 * MS - 8 * US and evidence(f)["module_load_calls"] == 1
    assert "compilation and module loading" in f.title and "compiled at run time" in f.message
    assert run(gpu_idle, _jit_compiled(with_load=True)) == []  # the idle GPU waited for the compiler: set aside


def test_warmup_quiet_without_a_run_time_load():
    assert run(warmup, _jit_compiled(with_load=False)) == []
    [f] = run(gpu_idle, _jit_compiled(with_load=False))
    assert f.category == Bottleneck.HOST_BOUND


def test_warmup_quiet_for_fast_launches():
    assert run(warmup, _launched(40, kernel_us=100)) == []


def test_no_overlap_names_separate_streams_that_still_serialise():
    tl = synthetic_timeline(
        memcpy={"device_id": [0, 0], "stream_id": [2, 2], "kind": ["HtoD", "DtoH"], "start_ns": [0, 10 * MS],
                "end_ns": [5 * MS, 15 * MS]},
        kernels={**kernels([5000], [10000]), "stream_id": [1]},
    )
    [f] = run(no_overlap, tl)
    assert "Copies used 1 stream(s) and kernels 1." in f.message


def test_run_all_notes_rules_it_could_not_check():
    tl = synthetic_timeline(memcpy=_copies("HtoD", [10], nbytes=None, pageable=False))
    notes = [f for f in run_all(tl) if f.rule_id.startswith("not-checked:")]
    assert [f.rule_id for f in notes] == ["not-checked:transfer-bandwidth"]
    assert "no bytes" in notes[0].message


def test_run_all_takes_the_link_from_the_hardware_table(kineto):
    """The recorded trace's device is an H200: its datasheet entry gives the link rate."""
    rate, source = link_bytes_per_s(timeline_gpu(kineto.devices))
    assert rate == 64e9 and source.startswith("NVIDIA H200")
    assert timeline_gpu(synthetic_timeline().devices) is None


def test_no_overlap_measures_against_the_shorter_stage():
    """Copies of 10 ms and 1 ms of kernels, all under the copies: nothing more to hide."""
    tl = synthetic_timeline(
        memcpy={"device_id": [0], "stream_id": [2], "kind": ["HtoD"], "start_ns": [0], "end_ns": [10 * MS]},
        kernels={**kernels([2000], [3000]), "stream_id": [1]},
    )
    assert TimelineAnalysis(tl).overlap["overlap_pct"].item() == 10.0
    assert run(no_overlap, tl) == []


# --------------------------------------------------------------------------------------------
# Hidden layout copies (MEMORY_ACCESS)
# --------------------------------------------------------------------------------------------

COPY_SIGNATURE = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
                  "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
                  "{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, "
                  "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
                  "{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, "
                  "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
                  "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>("
                  "at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
                  "operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})")


def _with_copies(operator_ranges: bool):
    """Per step: a contiguous() copy (300 us) then a matmul (600 us), three steps."""
    steps = [0, 1000, 2000]
    k = {"device_id": [0] * 6, "stream_id": [7] * 6, "correlation_id": [1, 2, 3, 4, 5, 6],
         "start_ns": [(s + d) * US for s in steps for d in (10, 320)],
         "end_ns": [(s + d) * US for s in steps for d in (310, 920)],
         "name": ["elementwise_kernel", "gemm"] * 3, "demangled_name": [COPY_SIGNATURE, "void gemm<float>(...)"] * 3}
    api = {"pid": [1] * 6, "tid": [1] * 6, "correlation_id": [1, 2, 3, 4, 5, 6], "name": ["cudaLaunchKernel"] * 6,
           "start_ns": [(s + d) * US for s in steps for d in (2, 5)], "end_ns": [(s + d) * US for s in steps for d in (4, 7)]}
    tables = {"kernels": k, "api": api}
    if operator_ranges:
        tables["nvtx"] = {"pid": [1] * 6, "tid": [1] * 6, "domain": ["cpu_op"] * 6, "depth": [0, 1] * 3,
                          "text": ["aten::contiguous", "aten::copy_"] * 3,
                          "start_ns": [int((s + d) * US) for s in steps for d in (1, 1.5)],
                          "end_ns": [int((s + d) * US) for s in steps for d in (4.5, 4.2)]}
    return synthetic_timeline(**tables)


def test_layout_copies_fire_and_name_the_operator():
    [f] = run(layout_copies, _with_copies(operator_ranges=True))
    assert f.estimated_saving_ns == 900 * US and evidence(f)["layout_copies"] == 3
    assert evidence(f)["layout_copy_share_of_gpu_pct"] == pytest.approx(100 * 900 / 2700)
    assert "aten::contiguous (3, 900 us)" in f.message


def test_layout_copies_without_operator_ranges():
    [f] = run(layout_copies, _with_copies(operator_ranges=False))
    assert "Launched from" not in f.message and f.details["launched_by"] == []


def test_layout_copies_quiet(kineto):
    assert run(layout_copies, kineto) == []


def test_allocator_quiet_without_a_loop():
    """Five buffers allocated, two kernels, five frees: five pairs, no loop (synthetic)."""
    names = ["cudaMalloc"] * 5 + ["cudaFree"] * 5
    starts = [i * MS for i in range(5)] + [20 * MS + i * MS for i in range(5)]
    tl = synthetic_timeline(
        api={"pid": [1] * 10, "tid": [1] * 10, "name": names, "start_ns": starts, "end_ns": [s + MS // 2 for s in starts]},
        kernels=kernels([6_000, 12_000], [10_000, 16_000]))
    assert run(allocator_churn, tl) == []


def test_gaps_spent_allocating_are_reported_by_gpu_idle_when_the_allocator_rule_stays_silent():
    """Five 0.6 ms gaps in a 100 ms window, each mostly a 0.35 ms cudaMalloc (synthetic): the allocator's
    calls are under the reporting share, so that rule is silent, and the gaps are GPU-idle's to report,
    not left to a finding nobody prints."""
    ks, ke, t = [], [], 0
    for _ in range(6):
        ks.append(t)
        ke.append(t + 16_000)
        t += 16_600
    names, starts, ends = [], [], []
    for end in ke[:5]:
        names += ["cudaMalloc", "cudaFree"]
        starts += [(end + 50) * US, (end + 450) * US]
        ends += [(end + 400) * US, (end + 460) * US]
    tl = synthetic_timeline(api={"pid": [1] * 10, "tid": [1] * 10, "name": names, "start_ns": starts, "end_ns": ends},
                            kernels=kernels(ks, ke))
    assert run(allocator_churn, tl) == []
    [f] = run(gpu_idle, tl)
    assert "cudaMalloc" in f.title and f.estimated_saving_ns == pytest.approx(5 * (600 * US - gpu_idle.MIN_GAP_NS))


def test_allocator_counts_the_places_it_allocates_between_launches():
    [f] = run(allocator_churn, _churn("cudaMalloc", "cudaFree", pairs=5))
    assert evidence(f)["allocations_between_launches"] == 4  # the first allocation precedes the first kernel
