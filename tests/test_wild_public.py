"""Profiles written by others (tests/data/wild_public, PROVENANCE.md there): each loads, or fails in one
line that names what it is and the way out; what is read is read right."""

from __future__ import annotations

import os
import subprocess
import sys

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose
from coach.errors import InputError
from coach.ingest import load


@pytest.fixture(scope="module")
def public(data_dir):
    return data_dir / "wild_public"


#: file -> what the one-line refusal must say (AMD's profilers: named, with torch.profiler as the way out)
REFUSED = {
    "omniperf_vcopy_mi100_pmc_perf_0.csv": "a rocprof hardware-counter CSV",
    "omniperf_vcopy_mi200_timestamps.csv": "a rocprof kernel trace",
    "omniperf_vcopy_mi300a_timestamps.csv": "a rocprofv2 kernel trace",
    "omniperf_vcopy_mi300x_timestamps.csv": "a rocprofv2 kernel trace",
    "omniperf_axes1_mi200_timestamps_head.csv": "a rocprof kernel trace",
    "rocprofv3_kernel_trace.csv": "a rocprofv3 kernel trace",
    "rocprofv3_counter_collection.csv": "a rocprof hardware-counter CSV",
    "rocprofv3_memory_copy_trace.csv": "a rocprofv3 trace CSV",
}


#: ncu text reports of 2022 (Nsight Compute 2021.x-2022.1 layouts: a launch line with a date and no grid,
#: tables without a header row) from one person's CUDA training exercises: file -> (kernel, first finding's rule)
NCU_TEXT_2022 = {
    "cts_hw8_task1.profile": ("naive_cuda_transpose", "uncoalesced-global-access"),
    "cts_hw8_task1b.profile": ("naive_cuda_transpose", "uncoalesced-global-access"),
    "cts_hw8_task2.profile": ("smem_cuda_transpose", "shared-bank-conflicts"),
    "cts_hw8_task3.profile": ("smem_cuda_transpose", None),
    "cts_hw4_matrix_sums_metrics_rtx3070.output": ("row_sums", "uncoalesced-global-access"),
    "cts_hw4_matrix_sums_sections_rtx3070.output": ("row_sums", "speed-of-light"),
    "cts_hw3_vadd_160b_1024t_p40.profile.output": ("vadd", "speed-of-light"),
    "cts_hw3_vadd_1b_1t_p40.profile.output": ("vadd", None),
    "cts_hw5_atomic_red_rtx3070_head.output": ("atomic_red", "speed-of-light"),
}


#: Nsight Compute 2024 --metrics runs (an Ampere GPU) of a PyTorch graph-network's inference under an NVTX range:
#: the text report, and the CSV with ncu's NVTX columns and "Kernel Time" in place of the launch columns
GCN_2024 = ("ai4mat_gcn_torch_ncu_metrics_head.txt", "ai4mat_gcn_torch_ncu_nvtx_csv_head.txt")


#: PyTorch-profiler traces of CPU operators alone (no deviceProperties, no CUDA runtime): macOS Dec 2024, Windows Jan 2024
CPU_ONLY_TRACES = ("kineto_cpu_only_linear_step_excerpt.json", "kineto_cpu_only_resnet_windows_2024_excerpt.json")


def _fired(tl):
    return [f for f in diagnose(tl) if not f.rule_id.startswith("not-checked")]


def test_every_file_is_accounted_for(public):
    files = {p.name for p in public.iterdir() if p.name != "PROVENANCE.md"}
    assert files == {*REFUSED, *NCU_TEXT_2022, *GCN_2024, "nsys_stats_vector_add_a100_log.txt",
                     "rmsnorm_fused_t4_ncu.log", "dphpc_gemm_ncu_run.log", *CPU_ONLY_TRACES,
                     "dd2360_render_launch_failed_ncu.txt", "kineto_a100_fp16_gemm_2025.json",
                     "nvfuser_playground_randn_ncu_head.log", "ai4mat_ncu_query_metrics_ga104_head.txt", "dc_triton_ncu_query_metrics_excerpt.log", "hta_backward_thread_a100.json", "kineto_docs_before_fix_trace_h100.json",
                     "kineto_tb_plugin_v100_2021_excerpt.json"}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_amd_profiles_are_named_in_one_line(public, name):
    with pytest.raises(InputError) as info:
        load(public / name)
    message = str(info.value)
    assert "\n" not in message and REFUSED[name] in message and "torch.profiler" in message, message
    # a counter collection is not called a trace, nor another version's trace rocprofv3's
    assert "kernel trace" not in message or "trace" in REFUSED[name]
    assert "rocprofv3 kernel trace" not in message or name == "rocprofv3_kernel_trace.csv"


def test_the_cli_refuses_with_exit_2_and_one_line(public):
    done = subprocess.run([sys.executable, "-m", "coach", "diagnose", str(public / "rocprofv3_counter_collection.csv")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1


def test_a_cutlass_gemm_on_the_backward_thread(public):
    tl = load(public / "hta_backward_thread_a100.json")
    (k,) = tl.kernels.iter_rows(named=True)
    assert k["dur_ns"] == 45_000 and k["stream_id"] == 7
    assert k["demangled_name"] == "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
    # one 45 us kernel: no rule has a case, and none is made up
    assert [f for f in diagnose(tl) if f.rule_id and not f.rule_id.startswith("not-checked")] == []
    out = subprocess.run([sys.executable, "-m", "coach", "load", str(public / "hta_backward_thread_a100.json")],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>" in out  # not the launcher's name alone
    said = subprocess.run([sys.executable, "-m", "coach", "diagnose", str(public / "hta_backward_thread_a100.json")],
                          capture_output=True, text=True).stdout
    assert "nothing found" in said


def test_library_launchers_are_shown_by_the_kernel_they_launch():
    """CUTLASS's launchers share one short name; the first template argument tells the kernels apart.
    (Signatures as Kineto and Nsight Systems print them; the SM90 one is shortened here.)"""
    from coach.analyze.names import LAUNCHER_ARG_CHARS, display_names  # noqa: PLC0415

    full = ["void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(T1::Params)",
            "void cutlass::Kernel2<cutlass_80_wmma_tensorop_h161616gemm_32x32_128x2_tn_align8>(T1::Params)",
            "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
            + "cutlass::gemm::collective::CollectiveMma<" * 3 + "X>>>>>(T1::Params)",
            "void at::native::reduce_kernel<512, 1>(int)", "Kernel"]
    labels = display_names(["Kernel", "Kernel2", "device_kernel", "reduce_kernel", "Kernel"], full)
    assert labels[:2] == ["Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>",
                          "Kernel2<cutlass_80_wmma_tensorop_h161616gemm_32x32_128x2_tn_align8>"]
    assert labels[2].startswith("device_kernel<GemmUniversal<tuple<int, int, int, int>, CollectiveMma<")
    assert len(labels[2]) == len("device_kernel<>") + LAUNCHER_ARG_CHARS and labels[2].endswith("…>")
    assert labels[3:] == ["reduce_kernel", "Kernel"]  # not a launcher; a launcher without its signature


def test_a_profiler_step_holds_the_work_other_threads_launch_in_it(public):
    """HTA's excerpt: the GEMM is launched from the autograd engine's thread (24922) while ProfilerStep#552
    is open on the main thread (3914). The step is the process's; a record_function range stays its thread's."""
    from coach.analyze.timeline import nvtx_projection  # noqa: PLC0415

    proj = {r["text"]: r for r in nvtx_projection(load(public / "hta_backward_thread_a100.json")).iter_rows(named=True)}
    assert proj["ProfilerStep#552"]["gpu_ops"] == 1 and proj["ProfilerStep#552"]["gpu_time_ns"] == 45_000
    assert proj["aten::mm"]["gpu_ops"] == 1  # on the launching thread, as before
    assert proj["## backward ##"]["gpu_ops"] == 0  # the main thread's own range: the launch was not its thread's


def test_libkinetos_own_writer_with_sync_events_and_string_pids(public):
    """String pids ("Spans", "Traces", ""), global instant events and cuda_sync rows with stream -1 beside one
    kernel: the kernel, its launch and the device are read; nothing is made of a 20 ns kernel."""
    tl = load(public / "kineto_docs_before_fix_trace_h100.json")
    assert tl.kernels.select("name", "dur_ns", "stream_id", "correlation_id").rows() == [("Kernel", 20, 1, 1)]
    assert tl.api["name"].to_list() == ["cudaLaunchKernel"]
    assert tl.devices.select("name", "sm_count", "cc_major").rows() == [("NVIDIA H100", 132, 9)]
    assert [f for f in diagnose(tl) if not f.rule_id.startswith("not-checked")] == []


def test_a_torch_1_8_trace_reads_its_devices_and_is_launch_bound(public):
    """computeProperties (cudaDeviceProp's field names) were not read: the V100 had no SM count. Its 1-3 us
    kernels each wait for a ~19 us cudaLaunchKernel: launch-bound, as a small model's step is."""
    tl = load(public / "kineto_tb_plugin_v100_2021_excerpt.json")
    assert tl.devices.select("name", "cc_major", "cc_minor", "sm_count", "max_warps_per_sm").rows() == [
        ("Tesla V100-DGXS-32GB", 7, 0, 80, 64)]
    assert tl.kernels.height == 8 and tl.api.filter(pl.col("name") == "cudaLaunchKernel").height == 8
    first = next(f for f in diagnose(tl) if not f.rule_id.startswith("not-checked"))
    assert first.rule_id == "launch-bound"
    evidence = {e.metric: e.value for e in first.evidence}
    assert evidence["kernel_ns_median"] == 1500 and evidence["launch_ns_median"] == 19000


@pytest.mark.parametrize("name", sorted(NCU_TEXT_2022))
def test_ncu_text_reports_of_2022_lead_with_their_known_problem(public, name):
    kernel, rule = NCU_TEXT_2022[name]
    tl = load(public / name)
    assert tl.launches["kernel_name"][0] == kernel
    fired = _fired(tl)
    assert (fired[0].rule_id if fired else None) == rule, [f.title for f in fired]


def test_a_metrics_run_without_a_duration_still_decides_from_its_counts(public):
    """A --metrics run of the sector and bank-conflict counters alone has no gpu__time_duration: the counts
    decide, the gain is not estimated (no saving made up). task1 reads its loads strided, task1b its stores;
    task2's transposing store into a [32][32] tile conflicts on 16.0 M of 18.1 M shared wavefronts."""
    load_side = _fired(load(public / "cts_hw8_task1.profile"))[0]
    assert load_side.title == "Uncoalesced global loads: 32 sectors per request, ideal 8"
    assert load_side.estimated_saving_ns is None and load_side.gain_model.startswith("not estimated")
    store_side = _fired(load(public / "cts_hw8_task1b.profile"))[0]
    assert store_side.title == "Uncoalesced global stores: 32 sectors per request, ideal 8"
    tl = load(public / "cts_hw8_task2.profile")
    (k,) = tl.launches.iter_rows(named=True)
    assert k["duration_ns"] is None and k["shared_bank_conflicts"] == 88 + 16_012_462
    assert k["shared_load_wavefronts"] + k["shared_store_wavefronts"] == 1_048_664 + 17_061_038
    (conflicts,) = [f for f in _fired(tl) if f.rule_id == "shared-bank-conflicts"]
    assert conflicts.title == "Shared-memory bank conflicts: 88% of wavefronts replayed"
    assert conflicts.estimated_saving_ns is None and "no duration" in conflicts.gain_model


def test_counted_conflicts_the_addresses_do_not_show_are_not_blamed(public):
    """The padded tile of task3: the hardware counts 241,690 store conflicts (10% of all shared wavefronts),
    the SASS-patched bytes per wavefront say every wavefront is full (100%), and the kernel takes what the
    conflicting task2 takes (0.784 against 0.783 ms, the author's Answer.md): no bank-conflict finding."""
    tl = load(public / "cts_hw8_task3.profile")
    (k,) = tl.launches.iter_rows(named=True)
    assert k["shared_bank_conflicts"] == 241_690 and k["shared_bytes_per_wavefront_pct"] == 100
    assert _fired(tl) == []
    # the same metric at 11.76% on task2 is shown beside the conflicts
    (conflicts,) = _fired(load(public / "cts_hw8_task2.profile"))
    assert {e.metric: e.value for e in conflicts.evidence}["shared_bytes_per_wavefront_pct"] == pytest.approx(11.76)


def test_2022_speed_of_light_labels_are_read(public):
    """'Memory [%]' and 'Compute (SM) [%]' (the 2021.x-2022.1 labels of the section) were not read: the
    speed-of-light rule fell back to the L1 alone. The row sums read strided (row per thread): memory-side,
    the L1 busiest at 72% with the DRAM at 23.5%, and with no sector counts in these sections the cause is
    not named (it was called L1-bound): the next step asks for them and points at access efficiency; the
    column sums stream at 93%."""
    tl = load(public / "cts_hw4_matrix_sums_sections_rtx3070.output")
    rows = tl.launches.select("kernel_name", "duration_ns", "sm_throughput_pct", "memory_throughput_pct",
                              "dram_throughput_pct", "grid_size", "block_size").rows()
    assert rows == [("row_sums", 11_970_000, 4.52, 72.28, 23.52, 64, 256),
                    ("column_sums", 3_020_000, 17.86, 92.97, 92.97, 64, 256)]
    assert not tl.source.meta.get("rules_unrecognised")  # "The kernel is utilizing greater than 80.0% ..."
    by_kernel = {}
    for f in _fired(tl):
        by_kernel.setdefault(f.scope, f)
    rows_top = by_kernel["row_sums"]
    assert rows_top.title == "Memory-side kernel at 72% of peak (L1 the busiest unit), below its roof: cause not checked"
    assert "L1-bound" not in rows_top.title and rows_top.details["cause"] == "not checked"
    assert "the L1 the busiest unit (L1 88.4% of its own peak, over its active cycles)" in rows_top.message
    assert "--section MemoryWorkloadAnalysis_Tables" in rows_top.next_step and "access pattern" in rows_top.next_step
    assert by_kernel["column_sums"].title == "DRAM-bandwidth-bound at 93% of peak"  # at its roof: the bound is measured
    # 64 blocks of 256 threads are 0.27 waves: the occupancy the grid leaves unfilled is the grid's, not blocks
    # finishing unevenly (what the message said)
    (occupancy,) = [f for f in _fired(tl) if f.rule_id == "occupancy-limit" and f.scope == "row_sums"]
    assert "the grid is 0.27 of a wave" in occupancy.message and "unevenly" not in occupancy.message.split("however")[0]


def test_a_pascal_report_with_unmeasured_values(public):
    """Nsight Compute on a Tesla P40 prints '(!) nan' for what it cannot measure there: those are missing, not
    0; the 1-thread launch (7.85 s) is left undecided rather than guessed, and the 160-block one is DRAM-bound."""
    one = load(public / "cts_hw3_vadd_1b_1t_p40.profile.output")
    (k,) = one.launches.iter_rows(named=True)
    assert k["duration_ns"] == 7.85e9 and k["sm_throughput_pct"] is None and k["memory_throughput_pct"] == 0.66
    assert _fired(one) == []
    said = subprocess.run([sys.executable, "-m", "coach", "diagnose", str(public / "cts_hw3_vadd_1b_1t_p40.profile.output")],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "vadd  7.85 s" in said and "None" not in said
    # the metric is in the report, as nan: said so, not that the report lacks it
    said = " ".join(f.message for f in diagnose(one))
    assert "Could not check speed of light (bound and distance to the roof): " \
           "sm__throughput.avg.pct_of_peak_sustained_elapsed (sm_throughput_pct) is in this report as nan: " \
           "Nsight Compute could not measure it on this GPU or launch." in said
    # Elapsed Cycles, SM Frequency, SM [%], SOL TEX and SOL L2 print "(!) nan"
    assert one.source.meta["unmeasured"]["0"] == ["sm_cycles_elapsed", "sm_frequency_hz", "sm_throughput_pct",
                                                  "l1_throughput_pct", "l2_throughput_pct"]
    shown = subprocess.run([sys.executable, "-m", "coach", "load", str(public / "cts_hw3_vadd_1b_1t_p40.profile.output")],
                           capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "None" not in shown and "90.56 MB/s" in shown  # the Memory Workload Analysis section's rate
    (bound,) = _fired(load(public / "cts_hw3_vadd_160b_1024t_p40.profile.output"))
    assert bound.title == "DRAM-bandwidth-bound at 83% of peak"


def test_a_pytorch_inference_of_microsecond_kernels(public):
    """Six kernels of 3.3-16.7 us under the NVTX range convLayer: durations, grids and occupancy read as
    printed; every launch under 10 us is called launch-bound, none is left without a finding."""
    tl = load(public / "ai4mat_gcn_torch_ncu_metrics_head.txt")
    assert tl.launches.select("kernel_name", "duration_ns", "grid_size", "block_size").rows() == [
        ("index_elementwise_kernel", 5980, 117, 128), ("CatArrayBatchedCopy", 6430, 276, 512),
        ("elementwise_kernel", 4320, 468, 128), ("ampere_sgemm_32x32_sliced1x4_tn", 16740, 120, 128),
        ("vectorized_elementwise_kernel", 3330, 1, 128), ("batch_norm_transform_input_channels_last_kernel", 6660, 16, 512)]
    fired = _fired(tl)
    short = {f.scope for f in fired if f.rule_id == "launch-bound"}
    assert short == {"index_elementwise_kernel", "CatArrayBatchedCopy", "elementwise_kernel",
                     "vectorized_elementwise_kernel", "batch_norm_transform_input_channels_last_kernel"}
    csv = load(public / "ai4mat_gcn_torch_ncu_nvtx_csv_head.txt")  # the same kernel in another run, as CSV
    (k,) = csv.launches.iter_rows(named=True)
    assert (k["kernel_name"], k["duration_ns"], k["grid_size"], k["sm_throughput_pct"]) == (
        "index_elementwise_kernel", 5824, 117, 12.14)


def test_microsecond_kernels_lead_with_the_launch_and_bound_the_roof_gap(public):
    """The root read 'Latency-bound ... saves ~5.3 us (88%)' first on a 6.0 us index kernel: the roof
    model's gap, which a kernel as short as a few launches (its throughputs low because it is short, the
    report without an SM count, stall reasons or memory tables) cannot support. Each kernel under 10 us
    leads with the launch finding, as Nsight Compute's rules lead with the launch configuration; the
    root's gap is kept for ranking but called an upper bound, never printed as a share of the time."""
    tl = load(public / "ai4mat_gcn_torch_ncu_metrics_head.txt")
    fired = _fired(tl)
    for launch_id in range(6):
        mine = [f for f in fired if f.launch_id == launch_id]
        root = next(f for f in mine if f.rule_id == "speed-of-light")
        assert root.details["cause"] == "not checked" and root.details["saving_upper_bound"]
        assert "upper bound, not an estimate" in root.gain_model and "Latency-bound" not in root.title
        if tl.launches["duration_ns"][launch_id] < 10_000:
            assert mine[0].rule_id == "launch-bound" and mine[0].details["launch_limit"] == "short-kernel"
            assert "a few launches' cost" in root.message
        else:  # the 16.7 us SGEMM: no launch finding, the regime leads
            assert mine[0] is root
    index = [f for f in fired if f.launch_id == 0]
    assert index[1].title == "Neither compute (11.9%) nor memory (6.5%) above 60% of peak: cause not checked"
    assert index[1].estimated_saving_ns == pytest.approx(5980 * (1 - 0.1186))
    said = subprocess.run([sys.executable, "-m", "coach", "diagnose", str(public / "ai4mat_gcn_torch_ncu_metrics_head.txt")],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "(88%)" not in said and "at most ~5.3 us (an upper bound, not an estimate)" in said
    assert "Could not check FP64 by accident" in said and "fP64" not in said  # a name's acronym kept
    head = said.split("index_elementwise_kernel", 1)[1]
    assert head.index("1. [launch-bound] Launch-bound: 6.0 us kernel") < head.index("2. [latency] Neither compute")


def test_the_terminal_log_of_nsys_profile_with_stats_names_its_report(public):
    """An nsys profile --stats=true run pasted from the terminal (A100, nsys 2023 or later), cut before
    'Generated:': its progress lines name the report it wrote, and its tables are called summaries."""
    with pytest.raises(InputError) as info:
        load(public / "nsys_stats_vector_add_a100_log.txt")
    message = str(info.value)
    assert "\n" not in message
    assert "wrote its report to a file (vector_add_profile_v3.nsys-rep)" in message
    assert "nsys stats summaries" in message


def test_a_grid_smaller_than_the_gpu_leads_over_the_latency_it_causes(public):
    """A fused RMSNorm's correctness run under ncu 2025 on a T4 (40 SMs): 3 blocks, 5.66 us, both halves
    near 1% of peak. The root says only 'latency'; the grid that leaves 37 SMs idle is what to change, as
    Nsight Compute's own rules say (SOLBottleneck: 'grid is too small', LaunchConfiguration 92.5%)."""
    tl = load(public / "rmsnorm_fused_t4_ncu.log")
    (k,) = tl.launches.iter_rows(named=True)
    assert (k["duration_ns"], k["grid_size"], k["block_size"], k["sm_count"]) == (5660, 3, 256, 40)
    first, second = _fired(tl)[:2]
    assert first.rule_id == "launch-bound" and first.title == "Launch-bound: tiny grid and 5.7 us kernel"
    assert first.estimated_saving_ns == pytest.approx(5660 * (1 - 3 / 40))
    assert second.rule_id == "speed-of-light" and second.category == "latency"


def test_the_log_of_an_ncu_run_that_wrote_a_report_names_it(public):
    with pytest.raises(InputError) as info:
        load(public / "dphpc_gemm_ncu_run.log")
    message = str(info.value)
    assert "\n" not in message
    assert "is the log of an ncu run that wrote its report to a file " \
           "(/home/nwadekar/dphpc/dphpc-gemm/ncu_analysis.ncu-rep)" in message


@pytest.mark.parametrize("name", CPU_ONLY_TRACES)
def test_a_cpu_only_pytorch_trace_says_how_to_record_the_gpu(public, name):
    """Read (operators as ranges, integer or fractional microseconds), and the way out given in
    torch.profiler's words, not nsys's --trace=cuda; the diagnosis says it could not check the GPU
    instead of a bare 'nothing found'."""
    tl = load(public / name)
    assert tl.kernels.is_empty() and tl.api.is_empty() and tl.nvtx.height > 0
    notes = diagnose(tl)
    assert [f.rule_id for f in notes] == ["not-checked:capture"]
    assert "ProfilerActivity.CUDA" in notes[0].message and "--trace=cuda" not in notes[0].message
    out = subprocess.run([sys.executable, "-m", "coach", "load", str(public / name)], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "200"}).stdout
    assert "No GPU activity recorded: the trace holds CPU operators only" in out and "--trace=cuda" not in out


def test_integer_microseconds_of_a_windows_trace(public):
    durations = dict(load(public / "kineto_cpu_only_resnet_windows_2024_excerpt.json").nvtx.select("text", "dur_ns").rows())
    assert durations["aten::max_pool2d"] == 36_621_000 and durations["aten::add_"] == 61_000
    fractional = dict(load(public / "kineto_cpu_only_linear_step_excerpt.json").nvtx.select("text", "dur_ns").rows())
    assert fractional["aten::cross_entropy_loss"] == 243_582


@pytest.mark.parametrize("name", ["ai4mat_ncu_query_metrics_ga104_head.txt", "dc_triton_ncu_query_metrics_excerpt.log"])
def test_the_list_of_metrics_ncu_can_collect_is_named(public, name):
    """ncu --query-metrics committed as if it were a profile: the 2020 base listing (GA104: name and
    description) and a --query-metrics-mode all listing (type and unit columns, one row per suffix)."""
    with pytest.raises(InputError) as info:
        load(public / name)
    message = str(info.value)
    assert "\n" not in message and "list of the metrics it can collect (ncu --query-metrics)" in message


def test_a_report_of_a_launch_that_failed_says_so(public):
    """ncu 2023.2 on a CC 8.9 GPU: the ray tracer's render launch failed under profiling (==ERROR==
    LaunchFailed, error code 9), and every section holds '(!) nan' or '(!) n/a'. It was refused as 'has
    none of the metrics coach analyses ... an unsupported Nsight Compute version': untrue."""
    with pytest.raises(InputError) as info:
        load(public / "dd2360_render_launch_failed_ncu.txt")
    message = str(info.value)
    assert "\n" not in message and "unsupported" not in message
    assert "holds no measured value: Nsight Compute printed every metric as nan or n/a" in message
    assert "(ncu printed: LaunchFailed; The application returned an error code (9))" in message


def test_a_healthy_gemm_loop_on_an_a100_is_left_alone(public):
    """Five fp16 cuBLAS GEMMs of 15.7 ms, launched back to back and waited for once (PyTorch 2.8-era
    trace, CUDA 12.8): the GPU is busy 99.9% of its window; nothing is made up."""
    from coach.analyze.timeline_summary import summarize_timeline  # noqa: PLC0415

    tl = load(public / "kineto_a100_fp16_gemm_2025.json")
    assert tl.kernels.height == 5 and tl.kernels["dur_ns"].sum() == 78_588_479
    assert tl.devices.select("name", "sm_count").rows() == [("NVIDIA A100-SXM4-80GB", 108)]
    (gpu,) = summarize_timeline(tl)["devices"].iter_rows(named=True)
    assert gpu["busy_pct"] > 99.8
    assert _fired(tl) == []


def test_a_partial_wave_counted_from_the_occupancy_limits(public):
    """ncu 2022 on an A100 (108 SMs, not printed): torch.randn's 864 blocks at 6 per SM print as 1.33 waves.
    The reader takes the SM count that puts the printed value within its rounding.
    The wave is 648 blocks and the tail 216 (864 / 1.33 would say 650 and 214); the finding leads, as
    Nsight Compute's LaunchConfiguration rule does."""
    tl = load(public / "nvfuser_playground_randn_ncu_head.log")
    (k,) = tl.launches.iter_rows(named=True)
    assert (k["grid_size"], k["blocks_limit_registers"], k["sm_throughput_pct"]) == (864, 6, 64.22)
    assert k["waves_per_sm"] == pytest.approx(864 / 648, rel=1e-12)  # printed 1.33
    first = _fired(tl)[0]
    assert first.rule_id == "tail-effect"
    assert "(216 blocks of 648)" in first.message and "One wave is 648 blocks; the grid has 864." in first.message
    assert first.estimated_saving_ns == pytest.approx(29_380 / 3)


def test_rows_indented_past_the_tables_top_line_are_read(public):
    """ncu of June 2022 printed each section's top dashed line at the section's indent and its rows and
    closing line two columns further in: cut at the top line's columns, every value was lost ('d 5.99'
    as a value, 'cycle/nsecon' as a unit) and a 30.51 ms atomic reduction at 0.9% of the SM found nothing."""
    tl = load(public / "cts_hw5_atomic_red_rtx3070_head.output")
    assert tl.launches.select("duration_ns", "sm_throughput_pct", "memory_throughput_pct", "grid_size",
                              "achieved_occupancy_pct").rows() == [(30_510_000, 0.88, 2.07, 32768, 80.71)]
    first = _fired(tl)[0]
    assert first.rule_id == "speed-of-light" and first.category == "latency"


def test_a_speed_of_light_only_report_states_the_regime_and_what_it_needs(public):
    """The atomic reduction's report holds the speed-of-light, launch and occupancy sections alone: no
    stall reasons, no memory tables, no source counters. It was called 'Latency-bound' with '98%' to
    save, though one atomicAdd per element on one address is contention, not too little work in flight
    (80.7% occupancy). With only the regime measured, the finding states it and calls no cause, its gap
    an upper bound, and a note names the sections that would name the cause."""
    tl = load(public / "cts_hw5_atomic_red_rtx3070_head.output")
    found = diagnose(tl)
    first = _fired(tl)[0]
    assert first.title == "Neither compute (0.9%) nor memory (2.1%) above 60% of peak: cause not checked"
    assert "latency-bound" not in (first.title + first.message).lower()
    assert first.details["cause"] == "not checked" and first.details["saving_upper_bound"]
    assert "ncu --section SpeedOfLight --section WarpStateStats" in first.next_step and "--set full" in first.next_step
    (note,) = [f for f in found if f.rule_id == "not-checked:speed-of-light"]
    assert note.message.startswith("Could not check what holds the kernel below its roof: the report has the "
                                   "speed-of-light throughputs, which give the regime, and none of the counters that "
                                   "name a cause; needs WarpStateStats (what the warps stall on) or "
                                   "MemoryWorkloadAnalysis_Tables")
    assert "SourceCounters" in note.message and "collect with ncu --section SpeedOfLight" in note.message
    said = subprocess.run([sys.executable, "-m", "coach", "diagnose", str(public / "cts_hw5_atomic_red_rtx3070_head.output")],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "(98%)" not in said and "at most ~29.88 ms (an upper bound, not an estimate)" in said
    # a unit at its roof is measured, not a cause guessed: the column sums keep their bound and estimate
    (rows, cols) = (next(f for f in _fired(load(public / "cts_hw4_matrix_sums_sections_rtx3070.output")) if f.scope == k)
                    for k in ("row_sums", "column_sums"))
    assert rows.details["cause"] == "not checked" and "cause" not in cols.details and "saving_upper_bound" not in cols.details


def test_without_the_access_width_no_ideal_is_printed_as_known(public):
    """A --metrics run of L1 load requests and sectors alone: the row sums read 32 sectors per request, which
    was printed 'ideal 16' (the widest access's) where these 4-byte float loads need 4. The width is not in
    the report: the finding gives the range, counts the excess against its top as a lower bound, and says
    what the 4-byte reading would be; the column sums (4 per request) are coalesced for any width."""
    tl = load(public / "cts_hw4_matrix_sums_metrics_rtx3070.output")
    (rows,) = [f for f in _fired(tl) if f.scope == "row_sums"]
    assert rows.title == "Uncoalesced global loads: 32 sectors per request, ideal 4 to 16 by access width (not in report)"
    assert "ideal 16" not in rows.title and rows.details["ideal_sectors_per_request"] is None
    assert rows.details["excess_sectors"] == 268_427_291 - 16 * 8_388_608 and rows.details["excess_is_lower_bound"]
    assert "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio" in rows.message
    assert "234.87M if the accesses are 4 bytes wide" in rows.message
    assert not [f for f in _fired(tl) if f.scope == "column_sums"]
