"""Reading what ``nsys recipe`` writes: the real outputs of Nsight Systems 2025.3.1 for the recorded
softmax report (tests/data/nsys_torch_softmax/nvidia/recipe_*), with canonical names and types."""

from __future__ import annotations

import polars as pl
import pytest

from coach.errors import CoachError, InputError
from coach.ingest.recipes import canonical, known_recipes, read_output, recipe, snake_case


@pytest.fixture(scope="module")
def nvidia(data_dir):
    return data_dir / "nsys_torch_softmax" / "nvidia"


def test_every_recorded_output_reads_with_canonical_columns(nvidia):
    read = 0
    for name in known_recipes():
        folder = nvidia / f"recipe_{name}"
        if not folder.is_dir():
            continue
        out = read_output(name, folder)
        read += 1
        assert out.reports == ("torch_softmax_nvtx",)
        assert out.table.columns[:2] == ["report", "rank"] and (out.table["rank"] == 0).all()
        assert all(c == snake_case(c) for c in out.table.columns), out.table.columns  # no display names left
    # cuda_memcpy_sync found no data in this report and wrote nothing (its log says so); gpu_gaps, run
    # with --gap 0 since the re-export of 2026-11-30, lists the report's 15 gaps
    assert read == 11
    assert "no data was found" in (nvidia / "recipe_cuda_memcpy_sync.log").read_text()


def test_multi_report_outputs_drop_pandas_row_index(data_dir):
    """Recipes over several reports concatenate per-report frames and pyarrow stores the pandas index
    as ``__index_level_0__`` (the recorded 8-rank outputs): not data, so not a column."""
    folder = data_dir / "nsys_ranks" / "nvidia" / "all" / "recipe_cuda_gpu_time_util_map"
    if not folder.is_dir():
        pytest.skip("no multi-report recipe outputs recorded")
    assert "__index_level_0__" in pl.read_parquet_schema(folder / "analysis.parquet")
    out = read_output("cuda_gpu_time_util_map", folder)
    assert out.table.columns == ["report", "rank", "bin_start_ns", "kernel_pct", "pid", "device_id"]
    assert out.reports == tuple(f"rank{r}" for r in range(8)) and out.table.height == 8 * 30


def test_kernel_summary(nvidia):
    t = read_output("cuda_gpu_kern_sum", nvidia / "recipe_cuda_gpu_kern_sum").table.sort("name")
    assert t.select("name", "count", "total_ns", "min_ns", "max_ns").rows() == [
        ("cunn_SoftMaxForwardReg", 3, 171136, 56256, 57824),
        ("distribution_elementwise_grid_stride_kernel", 1, 41280, 41280, 41280),
        ("reduce_kernel", 1, 26784, 26784, 26784),
        ("vectorized_elementwise_kernel", 6, 194688, 30752, 33696),
    ]
    assert t.schema["total_ns"] == pl.Int64 and t.schema["mean_ns"] == pl.Float64 and t["mean_ns"][0] == 57045.3


def test_sizes_are_in_bytes(nvidia):
    t = read_output("cuda_gpu_mem_size_sum", nvidia / "recipe_cuda_gpu_mem_size_sum").table
    row = t.filter(pl.col("name") == "CUDA_MEMCPY_KIND_DTOH").row(0, named=True)
    assert (row["count"], row["total_bytes"], row["max_bytes"]) == (4, 3 * 67108864 + 4, 67108864)
    assert "total_ns" not in t.columns


def test_traces_get_end_times_and_lower_case_memory_kinds(nvidia):
    copies = read_output("cuda_memcpy_async", nvidia / "recipe_cuda_memcpy_async").table.sort("start_ns")
    assert copies.select("start_ns", "dur_ns", "end_ns", "src_memory", "dst_memory", "bytes").row(0) == (
        4919249350, 44531408, 4919249350 + 44531408, "device", "pageable", 67108864)
    syncs = read_output("cuda_api_sync", nvidia / "recipe_cuda_api_sync").table
    assert syncs.height == 6
    assert set(syncs["api_name"]) == {"cudaDeviceSynchronize_v3020", "cudaStreamSynchronize_v3020"}
    assert (syncs["end_ns"] - syncs["start_ns"] == syncs["dur_ns"]).all()


def test_projection_trace_and_utilisation_map(nvidia):
    trace = read_output("nvtx_gpu_proj_trace", nvidia / "recipe_nvtx_gpu_proj_trace").table.sort("proj_start_ns")
    assert trace.select("text", "proj_start_ns", "proj_end_ns", "depth").row(0) == ("step0", 4847134335, 4963780758, 0)
    util = read_output("cuda_gpu_time_util_map", nvidia / "recipe_cuda_gpu_time_util_map").table.sort("bin_start_ns")
    assert util.height == 30 and util["bin_start_ns"][:2].to_list() == [0, 203734733]  # the session in 30 bins
    assert util.filter(pl.col("kernel_pct") > 0)["bin_start_ns"].to_list() == [4685898859, 4889633592]


def test_csv_outputs_read_the_same(nvidia, tmp_path):
    """Recipes write CSV instead of Parquet when asked to (--csv)."""
    folder = tmp_path / "out"
    folder.mkdir()
    for stem in ("rank_stats", "files"):
        pl.read_parquet(nvidia / "recipe_cuda_api_sum" / f"{stem}.parquet").write_csv(folder / f"{stem}.csv")
    from_csv = read_output("cuda_api_sum", folder)
    from_parquet = read_output("cuda_api_sum", nvidia / "recipe_cuda_api_sum")
    assert from_csv.reports == from_parquet.reports
    assert from_csv.table.select("name", "count", "total_ns").sort("name").equals(
        from_parquet.table.select("name", "count", "total_ns").sort("name"))


def test_unknown_columns_are_kept_in_snake_case():
    raw = pl.DataFrame({"Duration": [5], "Start": [10], "PID": [1], "Green Context ID": [None], "New Column (ns)": [3]})
    t = canonical(raw, recipe("cuda_api_sync"))
    assert t.columns == ["dur_ns", "start_ns", "pid", "green_context_id", "new_column_ns", "end_ns"]
    assert t["end_ns"].to_list() == [15]


def test_a_folder_that_is_not_an_output(tmp_path, nvidia):
    with pytest.raises(InputError, match="holds no rank_stats.parquet or rank_stats.csv"):
        read_output("cuda_gpu_kern_sum", tmp_path)
    with pytest.raises(InputError, match="is not a folder"):
        read_output("cuda_gpu_kern_sum", tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "analysis.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="analysis.parquet: is not a readable parquet table"):
        read_output("gpu_gaps", bad)


def test_unknown_recipe_names_the_known_ones():
    with pytest.raises(CoachError, match=r"does not read the output of recipe 'nccl_sum'; it reads: cuda_gpu_kern_sum"):
        recipe("nccl_sum")
