"""The PyTorch-profiler (Kineto) reader: exact numbers from the recorded H200 trace, the legacy and
newest category names (small synthetic traces written by the tests, named so), and bad input."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from coach.errors import InputError
from coach.ingest import load
from coach.ingest.kineto import fields, nesting_depth, read, short_kernel_name
from coach.model import TIMELINE_TABLES

SOFTMAX = "cunn_SoftMaxForwardReg"
REDUCE = "reduce_kernel"


@pytest.fixture(scope="module")
def tl(softmax_kineto_json):
    return read(softmax_kineto_json)


# --------------------------------------------------------------------------------------------
# The recorded trace (torch 2.11 on an H200: 3 x softmax over 32768x4096 bf16, then .sum().item())
# --------------------------------------------------------------------------------------------


def test_tables_conform_to_the_model(tl):
    for name, schema in TIMELINE_TABLES.items():
        assert getattr(tl, name).schema == pl.Schema(schema), name


def test_counts(tl):
    assert {k: v.height for k, v in tl.tables().items()} == {
        "kernels": 6, "memcpy": 3, "memset": 3, "api": 21, "sync": 0, "nvtx": 21, "devices": 1,
    }


def test_kernels_exact(tl):
    k = tl.kernels
    assert k["name"].to_list() == [SOFTMAX, REDUCE] * 3
    assert k["dur_ns"].to_list() == [422112, 72256, 419328, 72672, 418785, 73120]
    # ts 5176727170783.525 us minus the trace start 5176727167677.169 us
    assert k["start_ns"][0] == 3106356
    assert k["correlation_id"].to_list() == [11, 35, 65, 83, 103, 121]
    assert set(k["pid"]) == {674} and set(k["device_id"]) == {0} and set(k["stream_id"]) == {7}
    first_softmax, first_reduce = k.row(0, named=True), k.row(1, named=True)
    assert (first_softmax["grid_x"], first_softmax["grid_y"], first_softmax["grid_z"]) == (32768, 1, 1)
    assert (first_softmax["block_x"], first_softmax["registers_per_thread"], first_softmax["shared_mem_bytes"]) == (1024, 30, 128)
    assert (first_reduce["grid_x"], first_reduce["grid_y"], first_reduce["block_x"]) == (1, 1024, 512)
    assert (first_reduce["registers_per_thread"], first_reduce["shared_mem_bytes"]) == (32, 2064)
    assert first_softmax["demangled_name"].startswith("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<c10::BFloat16")


def test_memcpy_and_memset(tl):
    m = tl.memcpy
    assert m["kind"].to_list() == ["DtoH"] * 3
    assert m["src_memory"].to_list() == ["device"] * 3 and m["dst_memory"].to_list() == ["pinned"] * 3
    assert m["pageable"].to_list() == [False] * 3
    assert m["bytes"].to_list() == [2, 2, 2]
    assert m["dur_ns"].to_list() == [2720, 1600, 1568]
    assert tl.memset["bytes"].to_list() == [4, 4, 4] and tl.memset["memory"].to_list() == ["device"] * 3


def test_api_calls(tl):
    counts = dict(tl.api.group_by("name").len().iter_rows())
    assert counts == {"cudaLaunchKernel": 6, "cudaStreamSynchronize": 3, "cudaMemsetAsync": 3, "cudaMemcpyAsync": 3,
                      "cudaMalloc": 2, "cudaStreamIsCapturing": 2, "cudaHostAlloc": 1, "cudaDeviceSynchronize": 1}
    assert set(tl.api["api"]) == {"runtime"}
    # the first reduction's launch paid for lazy module loading: 8.96 ms
    assert tl.api.filter(pl.col("correlation_id") == 35)["dur_ns"].item() == 8955736


def test_operator_ranges_become_nvtx_with_nesting(tl):
    n = tl.nvtx
    assert set(n["domain"]) == {"cpu_op"} and set(n["kind"]) == {"push_pop"}
    depth = dict(n.group_by("text").agg(pl.col("depth").unique().sort()).iter_rows())
    assert depth == {"aten::softmax": [0], "aten::_softmax": [1], "aten::sum": [0, 1], "aten::as_strided": [2],
                     "aten::item": [0], "aten::_local_scalar_dense": [1]}


def test_devices_and_source(tl):
    d = tl.devices.row(0, named=True)
    assert (d["name"], d["cc_major"], d["cc_minor"], d["sm_count"]) == ("NVIDIA H200", 9, 0, 132)
    assert (d["memory_bytes"], d["max_warps_per_sm"], d["shared_mem_per_sm_bytes"]) == (150109880320, 64, 233472)
    meta = tl.source.meta
    assert meta["base_time_ns"] == 1790857026000000000 and meta["trace_start_us"] == 5176727167677.169
    assert tl.source.format == "kineto-json" and tl.source.tool == "PyTorch profiler"


def test_invariants(tl):
    for name in ("kernels", "memcpy", "memset", "api", "nvtx"):
        df = getattr(tl, name)
        assert (df["start_ns"] >= 0).all(), name
        assert (df["end_ns"] - df["start_ns"] == df["dur_ns"]).all(), name


def test_gzipped_trace_reads_the_same(tl, softmax_kineto_json, tmp_path):
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(softmax_kineto_json.read_bytes()))
    again = load(gz)
    for name in TIMELINE_TABLES:
        assert getattr(again, name).equals(getattr(tl, name)), name


def test_short_names_match_nsight_systems(softmax_nsys_sqlite):
    """Every kernel of the nsys export: coach's short name of its demangled name is NVIDIA's own."""
    con = sqlite3.connect(f"file:{softmax_nsys_sqlite}?mode=ro", uri=True)
    pairs = set(con.execute("SELECT s.value, d.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                            "JOIN StringIds AS s ON s.id = k.shortName JOIN StringIds AS d ON d.id = k.demangledName"))
    con.close()
    assert len(pairs) == 5
    for short, demangled in pairs:
        assert short_kernel_name(demangled) == short
    assert short_kernel_name("triton_poi_fused_add_0") == "triton_poi_fused_add_0"


def test_mapping_table_is_consistent():
    f = fields()
    assert f.filter(pl.col("raw").is_duplicated() & pl.col("kind").is_duplicated()).group_by("kind", "raw").len().filter(
        pl.col("len") > 1).is_empty()
    assert set(f["kind"]) == {"category", "arg", "device", "copy_kind", "memory_kind", "sync_kind"}
    assert set(f.filter(pl.col("kind") == "arg")["dtype"]) <= {"int", "int_list", "str"}


# --------------------------------------------------------------------------------------------
# Other torch versions: synthetic traces, shaped as libkineto writes them
# --------------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, doc: object) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def test_synthetic_legacy_category_and_arg_names(tmp_path):
    """torch 1.8-era names: Kernel, Runtime, Memcpy, Operator (ProfilerStep#N in it), "external id";
    absolute microsecond timestamps and no baseTimeNanoseconds."""
    t = 1621401187223005.0
    doc = {"traceEvents": [
        _x("Operator", "ProfilerStep#3", t, 100, pid=42, tid=42),
        _x("Operator", "aten::add", t + 10, 20, pid=42, tid=42, **{"external id": 7}),
        _x("Runtime", "cudaLaunchKernel", t + 12, 5, pid=42, tid=42, correlation=9, **{"external id": 7}),
        _x("Kernel", "void add_kernel<float>(float*, int)", t + 30, 2, pid=0, tid="stream 7", device=0, stream=7,
           correlation=9, grid=[4, 1, 1], block=[256, 1, 1], **{"external id": 7, "registers per thread": 16}),
        _x("Runtime", "cudaMemcpyAsync", t + 40, 8, pid=42, tid=42, correlation=10),
        _x("Memcpy", "Memcpy HtoD (Pageable -> Device)", t + 45, 3, pid=0, tid="stream 7", device=0, stream=7,
           correlation=10, bytes=4096),
    ]}
    tl = read(_write(tmp_path, "synthetic_legacy.json", doc))
    assert tl.kernels.select("name", "start_ns", "dur_ns", "pid", "stream_id", "grid_x", "block_x", "registers_per_thread").row(0) == (
        "add_kernel", 30000, 2000, 42, 7, 4, 256, 16)
    assert tl.memcpy.select("kind", "src_memory", "dst_memory", "pageable", "bytes").row(0) == ("HtoD", "pageable", "device", True, 4096)
    assert tl.nvtx.select("text", "domain", "depth").rows() == [("ProfilerStep#3", "user_annotation", 0), ("aten::add", "cpu_op", 1)]
    assert tl.source.meta["trace_start_us"] == t and "base_time_ns" not in tl.source.meta


def test_synthetic_newest_categories(tmp_path):
    """cuda_sync records (enable_cuda_sync_events), cuda_driver launches, a peer copy, "inf" in an
    argument coach does not read, and the categories coach drops."""
    doc = {"baseTimeNanoseconds": 1700000000000000000, "traceEvents": [
        _x("user_annotation", "step", 0.0, 50.0, pid=5, tid=6),
        _x("cuda_driver", "cuLaunchKernel", 1.0, 2.0, pid=5, tid=6, correlation=3),
        _x("kernel", "triton_poi_fused_0", 4.0, 1.5, pid=0, tid=7, device=0, stream=7, correlation=3,
           **{"blocks per SM": "inf", "grid": [1, 1, 1], "block": [128, 1, 1]}),
        _x("cuda_runtime", "cudaStreamSynchronize", 6.0, 3.0, pid=5, tid=6, correlation=4),
        _x("cuda_sync", "Stream Sync", 6.5, 2.0, pid=0, tid=7, cuda_sync_kind="Stream Sync", stream=7, correlation=4,
           device=0, context=1),
        _x("cuda_runtime", "cudaDeviceSynchronize", 10.0, 1.0, pid=5, tid=6, correlation=5),
        _x("cuda_sync", "Context Sync", 10.2, 0.5, pid=0, tid=-1, cuda_sync_kind="Context Sync", stream=-1,
           correlation=5, device=0, context=1),
        _x("cuda_runtime", "cudaEventSynchronize", 12.0, 1.0, pid=5, tid=6, correlation=6),
        _x("cuda_sync", "Event Sync", 12.1, 0.5, pid=0, tid=7, cuda_sync_kind="Event Sync", wait_on_stream=7,
           wait_on_cuda_event_id=11, stream=7, correlation=6, device=0, context=1),
        _x("cuda_runtime", "cudaMemcpyPeerAsync", 14.0, 1.0, pid=5, tid=6, correlation=8),
        _x("gpu_memcpy", "Memcpy PtoP (Device -> Device)", 15.0, 4.0, pid=1, tid=9, fromDevice=0, inDevice=1,
           toDevice=1, fromContext=1, inContext=2, toContext=2, stream=9, correlation=8, bytes=1 << 20),
        _x("gpu_user_annotation", "step", 4.0, 1.5, pid=0, tid=7),
        _x("python_function", "train.py(10): main", 0.0, 50.0, pid=5, tid=6),
    ]}
    tl = read(_write(tmp_path, "synthetic_newest.json", doc))
    assert tl.api.select("name", "api").rows()[0] == ("cuLaunchKernel", "driver")
    assert tl.kernels.select("name", "pid", "start_ns", "dur_ns").row(0) == ("triton_poi_fused_0", 5, 4000, 1500)
    assert tl.sync.select("kind", "stream_id", "pid", "tid", "event_id").rows() == [
        ("stream", 7, 5, 6, None), ("context", None, 5, 6, None), ("event", 7, 5, 6, 11)]
    assert tl.memcpy.select("kind", "device_id", "context_id", "bytes").row(0) == ("PtoP", 1, 2, 1 << 20)
    assert tl.nvtx.select("text", "domain").rows() == [("step", "user_annotation")]
    assert tl.source.meta["base_time_ns"] == 1700000000000000000


def test_synthetic_cpu_only_trace_is_not_an_error(tmp_path):
    tl = read(_write(tmp_path, "synthetic_cpu_only.json", {"traceEvents": [_x("cpu_op", "aten::mm", 0.0, 5.0)]}))
    assert tl.kernels.is_empty() and tl.nvtx.height == 1 and tl.devices.is_empty()


# --------------------------------------------------------------------------------------------
# Bad input: one line each, naming the problem
# --------------------------------------------------------------------------------------------


def _one_line_error(path: Path) -> str:
    with pytest.raises(InputError) as err:
        load(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(str(path))
    return msg


def test_truncated_json(softmax_kineto_json, tmp_path):
    p = tmp_path / "truncated.json"
    p.write_bytes(softmax_kineto_json.read_bytes()[:12345])
    assert "truncated" in _one_line_error(p)


def test_not_json(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"traceEvents": [}')
    assert "not valid JSON" in _one_line_error(p)


@pytest.mark.parametrize("doc", [{"schemaVersion": 1}, [{"ph": "X"}], {"traceEvents": {"ph": "X"}}])
def test_json_that_is_not_a_trace(tmp_path, doc):
    assert "not a PyTorch-profiler trace" in _one_line_error(_write(tmp_path, "other.json", doc))


def test_damaged_gzip(softmax_kineto_json, tmp_path):
    p = tmp_path / "trace.json.gz"
    p.write_bytes(gzip.compress(softmax_kineto_json.read_bytes())[:2000])
    assert "damaged gzip" in _one_line_error(p)


@pytest.mark.parametrize("doc", [{"traceEvents": []}, {"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}]}])
def test_empty_trace(tmp_path, doc):
    assert "holds no trace events" in _one_line_error(_write(tmp_path, "empty.json", doc))


def test_events_of_another_shape(tmp_path):
    doc = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]}
    assert "shape coach does not read (event 0 (cat kernel): ts is \"soon\", not a number)" in _one_line_error(
        _write(tmp_path, "odd.json", doc))


def test_nesting_depth_edges():
    """Synthetic ranges: siblings touching, identical twins, a zero-length range at a parent's start,
    and a second thread."""
    ranges = pl.DataFrame({
        "pid": [1, 1, 1, 1, 1, 1, 1],
        "tid": [1, 1, 1, 1, 1, 1, 2],
        "start_ns": [0, 0, 0, 10, 10, 20, 5],
        "end_ns": [100, 10, 0, 20, 20, 30, 6],
    }).sort("pid", "tid", "start_ns", "end_ns", descending=[False, False, False, True])
    assert ranges.with_columns(depth=nesting_depth(ranges)).select("tid", "start_ns", "end_ns", "depth").rows() == [
        (1, 0, 100, 0), (1, 0, 10, 1), (1, 0, 0, 2), (1, 10, 20, 1), (1, 10, 20, 2), (1, 20, 30, 1), (2, 5, 6, 0)]


# --------------------------------------------------------------------------------------------
# Shapes from other writers (synthetic, named so): torch.compile launches, ROCm, odd argument shapes
# --------------------------------------------------------------------------------------------


def test_synthetic_inductor_grid_strings_are_read(tmp_path):
    """torch.compile (Inductor) records each Triton launch with its grid as text: "grid(100,)"."""
    doc = {"traceEvents": [
        _x("cpu_op", "triton_poi_fused_add_0", 0.0, 3.0, kernel_backend="triton", grid="grid(100,)", stream=0,
           num_warps=4),
        _x("cuda_driver", "cuLaunchKernel", 1.0, 1.0, correlation=3),
        _x("kernel", "triton_poi_fused_add_0", 4.0, 2.0, pid=0, tid=7, device=0, stream=7, correlation=3,
           grid="grid(4, 2, 1)", block=[128, 1, 1]),
        _x("cuda_driver", "cuLaunchKernel", 5.0, 1.0, correlation=4),
        _x("kernel", "triton_red_fused_sum_1", 8.0, 2.0, pid=0, tid=7, device=0, stream=7, correlation=4,
           grid="grid(s0,)", block=[128, 1, 1]),
    ]}
    tl = read(_write(tmp_path, "synthetic_inductor.json", doc))
    assert tl.kernels.select("name", "grid_x", "grid_y", "grid_z", "block_x").rows() == [
        ("triton_poi_fused_add_0", 4, 2, 1, 128), ("triton_red_fused_sum_1", None, None, None, 128)]
    assert tl.nvtx.select("text", "domain").row(0) == ("triton_poi_fused_add_0", "cpu_op")


def test_synthetic_rocm_trace(tmp_path):
    """A ROCm build of torch: HIP calls in cuda_runtime, AMD kernel names, copies named Host -> Device."""
    doc = {"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 205822885888,
                                 "computeMajor": 9, "computeMinor": 4, "numSms": 304, "warpSize": 64,
                                 "maxThreadsPerMultiprocessor": 2048}],
           "traceEvents": [
               _x("cuda_runtime", "hipMemcpyWithStream", 0.0, 30.0, correlation=1),
               _x("gpu_memcpy", "Memcpy HtoD (Host -> Device)", 5.0, 20.0, pid=0, tid=1, device=0, stream=0,
                  correlation=1, bytes=1 << 20),
               _x("cuda_runtime", "hipExtModuleLaunchKernel", 40.0, 5.0, correlation=2),
               _x("kernel", "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", 50.0, 100.0, pid=0, tid=1, device=0,
                  stream=0, correlation=2, grid=[1024, 1, 1], block=[256, 1, 1]),
           ]}
    tl = read(_write(tmp_path, "synthetic_rocm.json", doc))
    assert tl.api["name"].to_list() == ["hipMemcpyWithStream", "hipExtModuleLaunchKernel"]
    assert tl.memcpy.select("kind", "src_memory", "dst_memory", "pageable").row(0) == ("HtoD", "unknown", "device", False)
    assert tl.kernels.select("name", "pid", "dur_ns").row(0) == ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", 1, 100000)
    assert tl.devices.select("name", "sm_count", "max_warps_per_sm").row(0) == ("AMD Instinct MI300X", 304, 32)


def test_synthetic_array_where_a_number_was_expected_still_reads(tmp_path):
    doc = {"traceEvents": [_x("cuda_runtime", "cudaLaunchKernel", 0.0, 1.0, correlation=[5]),
                           _x("kernel", "k", 2.0, 1.0, pid=0, tid=7, device=0, stream=[7], correlation=5)]}
    tl = read(_write(tmp_path, "synthetic_arrays.json", doc))
    assert tl.kernels.select("stream_id", "correlation_id", "pid").row(0) == (7, 5, 1)


def test_synthetic_complete_events_without_ph(tmp_path):
    """Chrome-trace writers other than Kineto may leave ph out of complete events."""
    doc = {"traceEvents": [{"cat": "kernel", "name": "k", "ts": 2.0, "dur": 1.0, "pid": 0, "tid": 7,
                            "args": {"device": 0, "stream": 7}}]}
    assert read(_write(tmp_path, "synthetic_no_ph.json", doc)).kernels.height == 1


def test_the_odd_field_is_named(tmp_path):
    doc = {"traceEvents": [_x("kernel", "k", 1.0, 1.0, grid={"x": 1})]}
    assert "event 0 (cat kernel): args.grid is {\"x\": 1}" in _one_line_error(_write(tmp_path, "odd.json", doc))


def test_a_chrome_trace_of_another_tool_says_so(tmp_path):
    doc = {"traceEvents": [{"ph": "X", "name": "MatMul", "pid": 1, "tid": 2, "ts": 1.0, "dur": 3.0},
                           {"ph": "X", "cat": "Op", "name": "Add", "pid": 1, "tid": 2, "ts": 5.0, "dur": 1.0}]}
    message = _one_line_error(_write(tmp_path, "tf.trace.json", doc))
    assert "none of its 2 events has a category PyTorch's profiler writes" in message and "'Op'" in message


# --------------------------------------------------------------------------------------------
# A large trace read in pieces
# --------------------------------------------------------------------------------------------

RECORDED_CASES = sorted((Path(__file__).parent / "data" / "kineto_timeline_cases").glob("*.json.gz"))


@pytest.mark.parametrize("trace", RECORDED_CASES[:4], ids=lambda p: p.name)
def test_pieces_read_as_the_whole_document(trace):
    """The event array cut into pieces of 2 KB (hundreds of pieces on a recorded trace, written by
    the profiler over several lines per event) reads the same duration events and document as one
    read, each piece's events picked out on its own."""
    from coach.ingest import kineto

    raw = gzip.decompress(trace.read_bytes())
    pieces = kineto._parse_pieces(raw, piece_bytes=2048)
    assert pieces is not None
    whole = pl.read_json(raw, schema=kineto._file_schema())
    doc, events = pieces
    assert events.height > 100
    assert events.equals(whole.select(pl.col("traceEvents").explode()).unnest("traceEvents").filter(kineto._DURATION))
    assert doc.drop("traceEvents").equals(whole.drop("traceEvents"))


def test_a_cut_inside_a_string_falls_back_to_the_whole_read():
    """Synthetic: an event name holding '}, {' (where a cut would land inside a string) makes the
    piece before it unreadable, so the pieces give way to one read; the events are all there."""
    from coach.ingest import kineto

    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}" + ("}, {" * 400 if i == 5 else ""), "pid": 1, "tid": 1,
               "ts": float(i), "dur": 0.5, "args": {"External id": i}} for i in range(40)]
    raw = json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()
    assert kineto._parse_pieces(raw, piece_bytes=600) is None
    doc, read_events = kineto._parse(raw, Path("synthetic.json"))
    assert read_events["name"].to_list() == [e["name"] for e in events]


# --- older PyTorch profilers (synthetic traces in the shapes their exporters wrote) ---------------


def _legacy_events(t: float = 400.0) -> list[dict]:
    """torch 1.8-era events as torch_tb_profiler's tests show them: Kernel rows name their stream only
    in tid ("stream 7"), their args hold correlation, external id and device."""
    return [
        _x("Operator", "ProfilerStep#1", t, 400, pid=13721, tid="123", **{"External id": 1}),
        _x("Runtime", "cudaLaunchKernel", t + 55, 5, pid=13721, tid="123", correlation=40348, **{"external id": 1}),
        _x("Kernel", "void cunn_ClassNLLCriterion_updateGradInput_kernel<float>", t + 80, 15, pid=0, tid="stream 7",
           correlation=40348, device=0, **{"external id": 1}),
    ]


def test_a_legacy_kernel_without_a_stream_argument_takes_its_stream_from_tid(tmp_path):
    tl = read(_write(tmp_path, "legacy_stream_in_tid.json", {"schemaVersion": 1, "traceEvents": _legacy_events()}))
    assert tl.kernels.select("name", "stream_id", "device_id", "pid", "dur_ns").row(0) == (
        "cunn_ClassNLLCriterion_updateGradInput_kernel", 7, 0, 13721, 15000)


def test_a_bare_array_of_events_reads_as_the_same_trace(tmp_path):
    """The Chrome trace format's array form (no enclosing object) holds the same events."""
    wrapped = read(_write(tmp_path, "wrapped.json", {"traceEvents": _legacy_events()}))
    bare = read(_write(tmp_path, "bare.json", _legacy_events()))
    for name in ("kernels", "api", "nvtx"):
        assert getattr(bare, name).equals(getattr(wrapped, name)), name


def test_a_pre_kineto_autograd_trace_fails_in_one_line_with_its_reason(tmp_path):
    """torch 1.7's export_chrome_trace: a bare array, X events without a category under "CPU functions"
    and "CUDA functions" (tid the device), flow arrows of category cpu_to_cuda between them. Before,
    coach said it was not a PyTorch-profiler trace at all."""
    t = 1600000000000.0
    events = [
        {"name": "aten::add", "ph": "X", "ts": t, "dur": 20.0, "tid": 1, "pid": "CPU functions", "args": {}},
        {"name": "aten::add", "ph": "s", "ts": t, "tid": 1, "pid": "CPU functions", "id": 0, "cat": "cpu_to_cuda",
         "args": {}},
        {"name": "add_kernel", "ph": "f", "ts": t + 30, "tid": 0, "pid": "CUDA functions", "id": 0, "cat": "cpu_to_cuda",
         "args": {}},
        {"name": "add_kernel", "ph": "X", "ts": t + 30, "dur": 5.0, "tid": 0, "pid": "CUDA functions", "args": {}},
    ]
    path = _write(tmp_path, "autograd_torch17.json", events)
    with pytest.raises(InputError) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message and "torch.autograd.profiler trace of torch 1.7 or older" in message
    assert "record it again with torch.profiler.profile" in message
