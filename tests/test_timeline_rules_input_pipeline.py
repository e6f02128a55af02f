"""The input-pipeline rule on a DataLoader-fed training loop (tests/data/kineto_dataloader_synthetic,
synthetic traces in torch's event shapes): it fires first with num_workers=0 and names the DataLoader,
claims the gaps it measures (the GPU-idle rule leaves them out), and stays quiet with workers and on
traces without DataLoader ranges."""

from __future__ import annotations

import polars as pl
import pytest

from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules import gpu_idle, input_pipeline, run_all
from coach.ingest.kineto import read


@pytest.fixture(scope="module")
def folder(data_dir):
    return data_dir / "kineto_dataloader_synthetic"


@pytest.fixture(scope="module")
def starved(folder):
    return read(folder / "num_workers_0.json.gz")


def test_num_workers_0_is_the_top_finding_and_names_the_dataloader(starved):
    top = run_all(starved)[0]
    assert top.rule_id == "input-pipeline" and top.category == "host-bound"
    assert "DataLoader" in top.title and "num_workers=0" in top.title
    assert "num_workers" in top.next_step and "pin_memory" in top.next_step and "prefetch_factor" in top.next_step
    assert "aten::stack" in top.message
    assert top.details["iterator"] == "single-process"


def test_the_idle_time_is_the_gaps_spent_in_the_dataloader(starved):
    a = TimelineAnalysis(starved)
    [f] = input_pipeline.apply(a)
    between = a.gaps.filter(pl.col("position") == "between")
    claimed = input_pipeline.gaps_in_loader(a, between).filter("in_loader")
    # 7 gaps: before steps 1-7 (step 0's batch is loaded before the GPU's first operation)
    assert claimed.height == 7
    idle = {e.metric: e.value for e in f.evidence}["gpu_idle_in_dataloader_ns"]
    assert idle == claimed["loader_ns"].sum()
    assert f.estimated_saving_ns == pytest.approx(idle - 7 * input_pipeline.MIN_GAP_NS)
    assert f.estimated_saving_ns <= a.window_ns


def test_gpu_idle_leaves_the_dataloader_gaps_out(starved):
    a = TimelineAnalysis(starved)
    assert gpu_idle.steady_state_gaps(a).filter("in_loader").height == 7
    assert gpu_idle.apply(a) == []  # every long gap is the input pipeline's


def test_quiet_with_workers(folder):
    tl = read(folder / "num_workers_4.json.gz")
    assert input_pipeline.apply(TimelineAnalysis(tl)) == []
    assert "input-pipeline" not in [f.rule_id for f in run_all(tl)]


def test_quiet_without_dataloader_ranges(softmax_kineto_json):
    assert input_pipeline.apply(TimelineAnalysis(read(softmax_kineto_json))) == []
