"""Every trace recorded on the H200 for the readers and the analysis (tests/data/*/PROVENANCE.md):
exact numbers from the recordings, and the finding a GPU performance engineer would name first."""

from __future__ import annotations

import polars as pl
import pytest

from coach.analyze.diagnose import diagnose
from coach.analyze.findings import Bottleneck
from coach.ingest import load


def first_finding(profile):
    ranked = [f for f in diagnose(profile) if f.estimated_saving_ns is not None]
    return ranked[0]


def test_triton_softmax_kernel_profile(data_dir):
    p = load(data_dir / "ncu_triton_softmax" / "triton_softmax.ncu-rep")
    k = p.launches.row(0, named=True)
    assert p.launches.height == 1 and k["kernel_name"] == "softmax_kernel"
    assert (k["grid_size"], k["block_size"], k["registers_per_thread"]) == (32768, 256, 34)
    assert k["duration_ns"] == 259_456.0
    # one read and one write of 32768 x 4096 fp32 (536,870,912 bytes each), as the bytes model says
    assert k["dram_read_bytes"] == 536_880_640.0 and k["dram_write_bytes"] == 512_095_744.0
    assert k["dram_throughput_pct"] == pytest.approx(84.028, abs=1e-3)
    top = first_finding(p)
    assert top.rule_id == "speed-of-light" and top.category == Bottleneck.DRAM
    assert not any(f.rule_id == "uncoalesced-global-access" for f in diagnose(p))


def test_triton_softmax_timeline_is_dominated_by_compilation(data_dir):
    t = load(data_dir / "nsys_triton_softmax" / "triton_softmax.sqlite")
    assert (t.kernels.height, t.memcpy.height, t.api.height) == (22, 1, 76)
    top = first_finding(t)
    # the program runs the kernel six times: the JIT compile and module loading are the profile
    assert top.rule_id == "warmup-in-profile" and top.estimated_saving_ns > 1e9


def test_four_stream_pipeline(data_dir):
    t = load(data_dir / "nsys_torch_multistream" / "torch_multistream.sqlite")
    copies = t.memcpy.group_by("kind", "pageable").agg(n=pl.len(), bytes=pl.col("bytes").sum()).sort("kind", "pageable")
    assert copies.rows() == [("DtoH", False, 25, 805_306_372), ("HtoD", False, 26, 872_415_232),
                             ("HtoD", True, 3, 100_663_296)]  # one pageable copy per step
    assert t.kernels["stream_id"].unique().sort().to_list() == [7, 13, 17, 21, 25]  # default + four streams
    assert t.nvtx.height == 27 and set(t.nvtx.filter(pl.col("depth") == 0)["text"]) == {"step0", "step1", "step2"}
    # the GPU is busy 0.6% of a 6.35 s capture whose start-up dominates: the first thing to say
    assert first_finding(t).rule_id == "warmup-in-profile"


def test_every_kind_of_sync(data_dir):
    t = load(data_dir / "nsys_torch_sync_kinds" / "torch_sync_kinds.sqlite")
    assert t.sync.height == 7
    assert first_finding(t).rule_id == "host-sync"
