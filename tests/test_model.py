import polars as pl
import pytest

from coach.ingest import load
from coach.ingest.detect import detect
from coach.model import KERNELS, LAUNCHES, Source, conform, make_timeline, save


def test_conform_fills_missing_columns_with_typed_nulls():
    df = conform(pl.DataFrame({"start_ns": [1], "end_ns": [5], "name": ["k"]}), KERNELS)
    assert df.columns == list(KERNELS)
    assert df.schema["grid_x"] == pl.Int64
    assert df["grid_x"].to_list() == [None]
    assert df["name"].to_list() == ["k"]


def test_conform_refuses_unknown_columns():
    with pytest.raises(ValueError, match="not in the canonical schema"):
        conform(pl.DataFrame({"kernel_nmae": ["typo"]}), LAUNCHES)


def test_save_and_load_round_trip(tmp_path):
    src = Source(path="x.sqlite", format="nsys-sqlite", tool="Nsight Systems", tool_version="2025.3",
                 meta={"gpu": "NVIDIA H200"})
    tl = make_timeline(src, kernels=pl.DataFrame({"start_ns": [10, 30], "end_ns": [20, 45], "dur_ns": [10, 15],
                                                  "name": ["a", "b"]}))
    save(tl, tmp_path / "saved")
    assert detect(tmp_path / "saved") == "coach-profile"
    back = load(tmp_path / "saved")
    assert back.kind == "timeline"
    assert back.kernels["dur_ns"].to_list() == [10, 15]
    assert back.source.meta["gpu"] == "NVIDIA H200"
    assert back.memcpy.height == 0 and back.memcpy.columns == tl.memcpy.columns
    assert back.span_ns == (10, 45)
