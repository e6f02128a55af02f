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


def test_every_file_is_accounted_for(public):
    files = {p.name for p in public.iterdir() if p.name != "PROVENANCE.md"}
    assert files == {*REFUSED, "hta_backward_thread_a100.json", "kineto_docs_before_fix_trace_h100.json",
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
