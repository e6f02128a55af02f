"""The Nsight Systems SQLite reader on real exports (nsys 2025.3.2 of an H200 run, nsys 2022.4.2 of
a CPU-only NVTX program), cross-checked against NVIDIA's own ``nsys stats`` of the same files."""

from __future__ import annotations

import re

import polars as pl
import pytest

from coach.cli import main as coach_main
from coach.ingest import load, nsys_sqlite
from coach.model import TIMELINE_TABLES

NVIDIA = "nsys_torch_softmax/nvidia"


@pytest.fixture(scope="module")
def softmax(softmax_nsys_sqlite):
    return nsys_sqlite.read(softmax_nsys_sqlite)


@pytest.fixture(scope="module")
def cpu_2022(data_dir):
    return nsys_sqlite.read(data_dir / "nsys_nvtx_cpu_2022" / "nvtx_cpu.sqlite")


def _stats(data_dir, name: str) -> pl.DataFrame:
    return pl.read_csv(data_dir / NVIDIA / f"stats_{name}.csv")


def _unversioned(name: str) -> str:
    return re.sub(r"_v\d+$", "", name)


# --------------------------------------------------------------------------------------------
# nsys 2025.3.2 export of the H200 softmax run
# --------------------------------------------------------------------------------------------


def test_softmax_export_row_counts(softmax):
    counts = {name: df.height for name, df in softmax.tables().items()}
    assert counts == {"kernels": 11, "memcpy": 4, "memset": 1, "api": 64, "sync": 4, "nvtx": 3, "devices": 1}
    for name, df in softmax.tables().items():
        assert df.schema == pl.Schema(TIMELINE_TABLES[name])


def test_kernel_totals_match_nvidia_gpukernsum(softmax, data_dir):
    ours = (softmax.kernels.group_by("demangled_name")
            .agg(total=pl.col("dur_ns").sum(), n=pl.len(), lo=pl.col("dur_ns").min(), hi=pl.col("dur_ns").max())
            .sort("demangled_name"))
    theirs = (_stats(data_dir, "cuda_gpu_kern_sum")
              .select(demangled_name="Name", total="Total Time (ns)", n="Instances", lo="Min (ns)", hi="Max (ns)")
              .sort("demangled_name"))
    assert ours.rows() == theirs.cast(ours.schema).rows()
    assert ours["total"].sum() == 433888  # ns of GPU kernel time in the run


def test_kernel_rows_match_nvidia_gpu_trace(softmax, data_dir):
    trace = _stats(data_dir, "cuda_gpu_trace").filter(pl.col("GrdX").is_not_null())
    theirs = trace.select(start_ns="Start (ns)", dur_ns="Duration (ns)", correlation_id="CorrId", grid_x="GrdX",
                          grid_y="GrdY", grid_z="GrdZ", block_x="BlkX", block_y="BlkY", block_z="BlkZ",
                          registers_per_thread="Reg/Trd", stream_id="Strm", demangled_name="Name")
    ours = softmax.kernels.select(theirs.columns)
    assert ours.rows() == theirs.cast(ours.schema).rows()
    assert softmax.kernels["name"].unique().sort().to_list() == [
        "cunn_SoftMaxForwardReg", "distribution_elementwise_grid_stride_kernel", "reduce_kernel",
        "vectorized_elementwise_kernel"]
    assert set(softmax.kernels["pid"]) == {608}
    assert softmax.kernels["graph_id"].null_count() == 11


def test_api_totals_match_nvidia_cudaapisum(softmax, data_dir):
    ours = (softmax.api.group_by("name").agg(total=pl.col("dur_ns").sum(), n=pl.len(), lo=pl.col("dur_ns").min(),
                                             hi=pl.col("dur_ns").max()).sort("name"))
    theirs = (_stats(data_dir, "cuda_api_sum")
              .select(name=pl.col("Name").map_elements(_unversioned, return_dtype=pl.String), total="Total Time (ns)",
                      n="Num Calls", lo="Min (ns)", hi="Max (ns)")
              .sort("name"))
    assert ours.rows() == theirs.cast(ours.schema).rows()
    kinds = dict(softmax.api.group_by("api").len().rows())
    assert kinds == {"runtime": 42, "driver": 22}
    assert softmax.api.filter(pl.col("name").str.starts_with("cuda"))["api"].unique().to_list() == ["runtime"]
    assert set(softmax.api["tid"]) == {608} and set(softmax.api["return_code"]) == {0}


def test_api_rows_match_nvidia_cuda_api_trace(softmax, data_dir):
    theirs = _stats(data_dir, "cuda_api_trace").select(start_ns="Start (ns)", dur_ns="Duration (ns)",
                                                       correlation_id="CorrID", pid="Pid", tid="Tid")
    assert softmax.api.select(theirs.columns).rows() == theirs.cast(pl.Int64).rows()


def test_memcpy_matches_nvidia_mem_sums_and_trace(softmax, data_dir):
    m = softmax.memcpy
    assert m["kind"].to_list() == ["DtoH"] * 4
    time_sum = _stats(data_dir, "cuda_gpu_mem_time_sum").filter(pl.col("Operation") == "[CUDA memcpy Device-to-Host]")
    assert m["dur_ns"].sum() == time_sum["Total Time (ns)"].item() == 128828339
    assert m.height == time_sum["Count"].item()
    size_sum = _stats(data_dir, "cuda_gpu_mem_size_sum").filter(pl.col("Operation") == "[CUDA memcpy Device-to-Host]")
    assert m["bytes"].sum() == 201326596
    assert round(m["bytes"].sum() / 1e6, 3) == size_sum["Total (MB)"].item()
    trace = (_stats(data_dir, "cuda_gpu_trace").filter(pl.col("Name") == "[CUDA memcpy Device-to-Host]")
             .select(correlation_id="CorrId", src="SrcMemKd", dst="DstMemKd"))
    ours = m.select("correlation_id", src=pl.col("src_memory"), dst=pl.col("dst_memory"))
    assert ours.rows() == trace.with_columns(pl.col("src", "dst").str.to_lowercase()).rows()
    # three 64 MiB copies into pageable memory (y.cpu()), then a 4-byte copy into pinned memory (.item())
    assert m["pageable"].to_list() == [True, True, True, False]
    assert m["bytes"].to_list() == [67108864, 67108864, 67108864, 4]


def test_memset_matches_nvidia(softmax, data_dir):
    theirs = _stats(data_dir, "cuda_gpu_mem_time_sum").filter(pl.col("Operation") == "[CUDA memset]")
    assert softmax.memset["dur_ns"].to_list() == [theirs["Total Time (ns)"].item()] == [1152]
    assert softmax.memset.select("bytes", "value", "memory").rows() == [(4, 0, "device")]


def test_sync_records_take_their_kind_and_thread_from_the_api_call(softmax):
    s = softmax.sync
    assert s["kind"].to_list() == ["stream"] * 4
    assert s["tid"].to_list() == [608] * 4 and s["event_id"].null_count() == 4
    calls = softmax.api.filter(pl.col("name") == "cudaStreamSynchronize")
    inside = s.join(calls.select("correlation_id", call_start="start_ns", call_end="end_ns"), on="correlation_id")
    assert inside.height == 4
    assert (inside["call_start"] <= inside["start_ns"]).all() and (inside["end_ns"] <= inside["call_end"]).all()


def test_nvtx_matches_nvidia_nvtx_sum(softmax, data_dir):
    n = softmax.nvtx
    assert n["text"].to_list() == ["step0", "step1", "step2"]
    assert n["depth"].to_list() == [0, 0, 0] and n["kind"].to_list() == ["push_pop"] * 3
    assert n["domain"].null_count() == 3 and set(n["tid"]) == {608}
    theirs = _stats(data_dir, "nvtx_sum").select(text=pl.col("Range").str.strip_prefix(":"), dur_ns="Total Time (ns)")
    assert n.select("text", "dur_ns").sort("text").rows() == theirs.sort("text").rows()
    assert n["dur_ns"].to_list() == [138114883, 48062263, 43857972]


def test_devices_row(softmax):
    d = softmax.devices.row(0, named=True)
    assert d["name"] == "NVIDIA H200" and d["sm_count"] == 132 and (d["cc_major"], d["cc_minor"]) == (9, 0)
    assert d["device_id"] == 0 and d["memory_bytes"] == 150109880320 and d["l2_bytes"] == 62914560
    assert d["memory_bandwidth_bytes_per_s"] == 4.814304e12 and d["sm_clock_hz"] == 1.98e9
    assert (d["max_warps_per_sm"], d["max_blocks_per_sm"], d["max_threads_per_block"]) == (64, 32, 1024)
    assert d["shared_mem_per_sm_bytes"] == 233472 and d["registers_per_sm"] == 65536


def test_source_carries_tool_version_and_provenance(softmax, softmax_nsys_sqlite):
    src = softmax.source
    assert (src.format, src.tool, src.tool_version) == ("nsys-sqlite", "Nsight Systems", "2025.3.2.0")
    assert src.path == str(softmax_nsys_sqlite)
    assert src.meta["export"]["EXPORT_SCHEMA_VERSION"] == "3.20.3"
    assert src.meta["capture"]["CAPTURE_EVENT_TYPE"] == ["NvtxEvents", "Cuda"]
    assert src.meta["session_start_epoch_ns"] == 1796033736966575826
    assert src.meta["session_start_utc"] == "2026-11-30T10:15:36"
    assert src.meta["system_NvDriverVersion"] == "580.159.04" and src.meta["system_CudaDriverVersion"] == "13000"


def test_load_dispatches_sqlite_exports(softmax_nsys_sqlite):
    tl = load(softmax_nsys_sqlite)
    assert tl.kind == "timeline" and tl.kernels.height == 11
    assert tl.span_ns == (4660432773, 5097435438)


# --------------------------------------------------------------------------------------------
# nsys 2022.4.2 export of a CPU-only NVTX program (no CUDA tables)
# --------------------------------------------------------------------------------------------


def test_2022_export_without_cuda_gives_empty_typed_tables(cpu_2022):
    for name in ("kernels", "memcpy", "memset", "api", "sync", "devices"):
        table = getattr(cpu_2022, name)
        assert table.height == 0 and table.schema == pl.Schema(TIMELINE_TABLES[name])
    assert cpu_2022.source.tool_version == "2022.4.2.1"
    assert cpu_2022.source.meta["export"]["EXPORT_SCHEMA_VERSION"] == "3.0.0"
    assert "capture" not in cpu_2022.source.meta  # nsys 2022.4 has no META_DATA_CAPTURE
    assert cpu_2022.span_ns is None


def test_2022_nvtx_kinds_texts_domains_and_depths(cpu_2022):
    rows = cpu_2022.nvtx.select("text", "kind", "domain", "depth").rows()
    assert rows == [
        ("outer", "push_pop", None, 0),
        ("middle", "push_pop", None, 1),
        ("inner", "push_pop", None, 2),
        ("checkpoint", "mark", None, 3),
        ("handoff", "start_end", None, None),
        ("worker", "push_pop", None, 0),
        ("worker-inner", "push_pop", None, 1),
        ("registered-range", "push_pop", "coach-demo", 1),  # text from textId -> StringIds
        ("bytes-\ufffd\ufffd-end", "push_pop", None, 1),  # the program passed bytes ff fe
    ]
    mark = cpu_2022.nvtx.filter(pl.col("kind") == "mark")
    assert mark["end_ns"].null_count() == 1 and mark["dur_ns"].null_count() == 1
    main_thread, worker = sorted(set(cpu_2022.nvtx["tid"]))
    assert set(cpu_2022.nvtx["pid"]) == {main_thread}  # the main thread's id is the process id
    assert cpu_2022.nvtx.filter(pl.col("text").str.starts_with("worker"))["tid"].unique().to_list() == [worker]


def test_2022_nvtx_matches_nvidia_pptrace_levels(cpu_2022, data_dir):
    nvidia = data_dir / "nsys_nvtx_cpu_2022" / "nvidia"
    pptrace = pl.read_csv(nvidia / "stats_nvtxpptrace.csv").select(
        text="Name", start_ns="Start (ns)", end_ns="End (ns)", dur_ns="Duration (ns)", pid="PID", tid="TID",
        depth="Lvl")
    ours = cpu_2022.nvtx.join(pptrace.select("text"), on="text").select(pptrace.columns)
    assert ours.sort("start_ns").rows() == pptrace.sort("start_ns").rows()
    totals = pl.read_csv(nvidia / "stats_nvtxsum.csv").select(text="Range", dur_ns="Total Time (ns)")
    assert cpu_2022.nvtx.join(totals.select("text"), on="text").select("text", "dur_ns").sort("text").rows() == \
        totals.sort("text").rows()


def test_coach_load_summarises_a_cuda_less_export(data_dir, capsys):
    coach_main(["load", str(data_dir / "nsys_nvtx_cpu_2022" / "nvtx_cpu.sqlite")])
    out = capsys.readouterr().out
    assert "No GPU activity recorded (was it profiled with --trace=cuda?)" in out and "Kernels by time" not in out
    assert "NVTX ranges" in out and "worker-inner" in out
