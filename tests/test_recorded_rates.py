"""Which recorded rate counts toward which DRAM ceiling (coach.recorded_rates).

The copy ceiling reads and writes; the read ceiling only reads; read-only traffic needs no bus
turnarounds and can run faster than any copy. So a rate counts toward the copy ceiling only where its
traffic is known to be a mix of reads and writes, toward the read ceiling only where it is known to
be reads, and is listed as not used otherwise.

The kernel profiles in the first tests are synthetic: launches built by hand (the columns a case is
about, every other canonical column null) on a synthetic device. No number in them is a
measurement. The later tests read the H200 recording in traces/h200.
"""

from __future__ import annotations

import json
import re
import tomllib

import polars as pl
import pytest

from coach import best_rates, ladders, recorded_rates, scenarios
from coach.ingest import load
from coach.model import DEVICES, LAUNCHES, METRICS, Source, conform, make_kernel_profile
from coach.paths import kernels_dir, traces_dir
from coach.recorded_rates import ANY, COPY, READ

SYNTHETIC_DEVICE = {"device_id": 0, "name": "synthetic", "cc_major": 9, "cc_minor": 0, "sm_count": 132,
                    "memory_bandwidth_bytes_per_s": 4.8e12, "max_warps_per_sm": 64}


def synthetic_profile(*launches: dict, metrics: list[dict] | None = None):
    """Synthetic: a kernel profile of ``launches`` (canonical columns by name, the rest null)."""
    rows = [{"launch_id": i, "device_id": 0, **row} for i, row in enumerate(launches)]
    return make_kernel_profile(Source(path="synthetic.ncu-rep", format="ncu-rep", tool="Nsight Compute"),
                               launches=conform(pl.DataFrame(rows), LAUNCHES),
                               devices=conform(pl.DataFrame([SYNTHETIC_DEVICE]), DEVICES),
                               metrics=conform(pl.DataFrame(metrics), METRICS) if metrics else None)


def rates(profile) -> pl.DataFrame:
    return pl.DataFrame([{"why": None, **r} for r in recorded_rates.profile_rates(profile, "synthetic")],
                        schema=recorded_rates.SCHEMA)


# 1 ms launches moving 4 GB: 4 TB/s of DRAM traffic each.
MS, GB = 1e6, 1e9


def test_a_kernel_without_a_read_write_split_counts_toward_neither_ceiling():
    got = rates(synthetic_profile({"kernel_name": "unknown_split", "duration_ns": MS, "dram_bytes": 4 * GB}))
    assert got.filter(pl.col("why").is_null() & pl.col("measurement").is_in([COPY, READ])).height == 0
    # it counts toward the DRAM roof, whatever its mix
    (roof,) = got.filter(pl.col("why").is_null() & (pl.col("measurement") == ANY)).iter_rows(named=True)
    assert roof["value"] == pytest.approx(4e12) and roof["where"] == "synthetic unknown_split, its read/write split not counted"
    (row,) = got.filter(pl.col("why").is_not_null()).iter_rows(named=True)
    assert row["value"] == pytest.approx(4e12) and row["where"] == "synthetic unknown_split"
    assert row["why"].startswith("not checked: needs dram__bytes_read.sum and dram__bytes_write.sum")


def test_a_half_written_kernel_counts_toward_the_copy_ceiling_and_a_read_only_one_toward_the_read_ceiling():
    got = rates(synthetic_profile(
        {"kernel_name": "copy_like", "duration_ns": MS, "dram_bytes": 4 * GB, "dram_read_bytes": 2 * GB, "dram_write_bytes": 2 * GB},
        # the faster kernel writes 1% of its bytes: reads, which must not raise the copy ceiling
        {"kernel_name": "reads", "duration_ns": MS, "dram_bytes": 4.4 * GB, "dram_read_bytes": 4.356 * GB, "dram_write_bytes": 0.044 * GB},
    ))
    used = {r["measurement"]: r for r in got.filter(pl.col("why").is_null()).iter_rows(named=True)}
    assert used[COPY]["value"] == pytest.approx(4e12) and used[COPY]["where"].startswith("synthetic copy_like")
    assert used[READ]["value"] == pytest.approx(4.356e12)  # the bytes read, over the time
    assert used[READ]["where"].startswith("synthetic reads")
    # the DRAM roof: the faster kernel's read plus written bytes
    assert used[ANY]["value"] == pytest.approx(4.4e12) and used[ANY]["where"] == "synthetic reads, 1% of its DRAM bytes written"
    assert got.filter(pl.col("why").is_not_null()).height == 0


def test_a_kernel_writing_a_tenth_of_its_bytes_is_neither_a_copy_nor_reads():
    got = rates(synthetic_profile(
        {"kernel_name": "mostly_reads", "duration_ns": MS, "dram_bytes": 4 * GB, "dram_read_bytes": 3.6 * GB, "dram_write_bytes": 0.4 * GB}))
    assert got.filter(pl.col("measurement").is_in([COPY, READ]) & pl.col("why").is_null()).height == 0
    assert "writes are 10% of its DRAM bytes" in got["why"].drop_nulls()[0]
    assert got.filter((pl.col("measurement") == ANY) & pl.col("why").is_null())["value"].to_list() == [pytest.approx(4e12)]


def test_a_split_counted_in_sectors_counts_as_bytes():
    """A report with dram__sectors_read.sum and dram__sectors_write.sum, not the byte counts: 32 bytes a sector."""
    metrics = [{"launch_id": 0, "metric": m, "value": v} for m, v in (
        ("gpu__time_duration.sum", MS), ("dram__bytes.sum", 4 * GB),
        ("dram__sectors_read.sum", 2 * GB / 32), ("dram__sectors_write.sum", 2 * GB / 32))]
    got = rates(synthetic_profile({"kernel_name": "sectors", "duration_ns": MS, "dram_bytes": 4 * GB}, metrics=metrics))
    (row,) = got.filter(pl.col("why").is_null() & (pl.col("measurement") == COPY)).iter_rows(named=True)
    assert row["value"] == pytest.approx(4e12)


def test_a_profile_with_only_the_rate_is_listed_at_that_rate():
    """Nsight Compute's Memory Throughput alone (dram__bytes.sum.per_second): the rate, not used."""
    metrics = [{"launch_id": 0, "metric": "gpu__time_duration.sum", "value": MS},
               {"launch_id": 0, "metric": "dram__bytes.sum.per_second", "value": 4.5e12}]
    got = rates(synthetic_profile({"kernel_name": "rate_only", "duration_ns": MS}, metrics=metrics))
    (row,) = got.filter(pl.col("why").is_not_null()).iter_rows(named=True)
    assert row["value"] == pytest.approx(4.5e12) and row["why"].startswith("not checked")
    (roof,) = got.filter(pl.col("why").is_null()).iter_rows(named=True)
    assert roof["measurement"] == ANY and roof["value"] == pytest.approx(4.5e12)


# --------------------------------------------------------------------------------------------
# The H200 recording
# --------------------------------------------------------------------------------------------

KERNELS = kernels_dir()


def _ladder_kernels(ceiling: str) -> set[str]:
    """The kernels of every rung of the ladders whose work model is ``ceiling``'s kind."""
    out: set[str] = set()
    for path in sorted((traces_dir() / "h200" / "ladders").rglob("results*.json")):
        res = ladders.load_results(path)
        if res.ceiling_name == ceiling:
            out |= {k for m in res.rungs for k in m.kernels}
    return out


def test_read_only_kernels_are_known():
    reads = _ladder_kernels(READ)
    assert {"reduce_vec4_grid_stride", "reduce_single_pass"} <= reads and not reads & _ladder_kernels(COPY)


def test_the_recorded_copy_ceiling_is_not_a_read_only_kernel():
    doc = best_rates.read("h200")
    entry = doc["rates"][COPY]
    where = entry["where"]
    # not a kernel of a ladder that only reads, nor scan's pass that reads the input and writes one
    # sum per tile (kernels/scan/NOTES.md), which held the copy ceiling at 4.48 TB/s before
    read_only = _ladder_kernels(READ) | {"scan07_tile_sums", "scan02_tile_sums", "scan01_tile_sums", "scan00_tile_sums"}
    assert not any(re.search(rf"\b{k}\b", where) for k in read_only), where
    m = re.fullmatch(r"Nsight Compute, (\S+) (\S+), (\d+)% of its DRAM bytes written", where)
    if m:  # the entry's own measured split
        profile = load(traces_dir() / "h200" / m[1])
        launches = profile.launches.filter(pl.col("kernel_name") == m[2])
        share = (launches["dram_write_bytes"] / (launches["dram_read_bytes"] + launches["dram_write_bytes"])).drop_nulls()
        assert share.len() and share.min() >= recorded_rates.COPY_WRITE_SHARE[0] and share.max() <= recorded_rates.COPY_WRITE_SHARE[1]
        assert int(m[3]) / 100 == pytest.approx(share.max(), abs=0.01) or int(m[3]) / 100 == pytest.approx(share.min(), abs=0.01)
    # as the file records it: 4.27 TB/s, below the 4.48 TB/s of scan's read-only pass
    assert entry["value"] < 4.478e12


def test_the_fast_read_only_passes_are_listed_as_not_checked():
    """Reduction rung 04's kernel (its profile holds only dram__bytes.sum.per_second) and scan's
    tile-sum pass are faster than either ceiling: listed, with what they need, not used."""
    doc = best_rates.read("h200")
    listed = {e["where"]: e for e in doc["not_used"]}
    for where in ("Nsight Compute, ladders/reduction/ncu reduce_vec4_grid_stride", "Nsight Compute, ladders/scan/ncu scan07_tile_sums"):
        assert listed[where]["why"].startswith("not checked: needs dram__bytes_read.sum and dram__bytes_write.sum")
        assert listed[where]["value"] > max(doc["rates"][COPY]["value"], doc["rates"][READ]["value"])
    # the reduction profile's rate is its Memory Throughput as recorded
    metrics = pl.read_parquet(traces_dir() / "h200" / "ladders" / "reduction" / "ncu" / "metrics.parquet")
    launches = pl.read_parquet(traces_dir() / "h200" / "ladders" / "reduction" / "ncu" / "launches.parquet")
    ids = launches.filter(pl.col("kernel_name") == "reduce_vec4_grid_stride")["launch_id"]
    rate = metrics.filter(pl.col("launch_id").is_in(ids.to_list()) & (pl.col("metric") == "dram__bytes.sum.per_second"))["value"].max()
    assert listed["Nsight Compute, ladders/reduction/ncu reduce_vec4_grid_stride"]["value"] == pytest.approx(rate, rel=1e-9)


SPLIT = re.compile(r"\(([\d.]+) (KiB|MiB|GiB|bytes?) read, ([\d.]+) (KiB|MiB|GiB|bytes?) written")
UNIT = {"byte": 1, "bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


@pytest.mark.parametrize("name", ladders.ladder_names())
def test_a_ladder_naming_a_dram_ceiling_moves_that_ceilings_traffic(name):
    """A ladder's rates count toward the ceiling it names: a copy ladder's size says it reads and
    writes alike, a read ladder's that it writes (almost) nothing."""
    spec = tomllib.loads((KERNELS / name / "ladder.toml").read_text())
    if spec["ceiling"] not in (COPY, READ):
        return
    m = SPLIT.search(spec["size"])
    if spec["ceiling"] == COPY:
        assert m, (name, spec["size"])
        read, written = float(m[1]) * UNIT[m[2]], float(m[3]) * UNIT[m[4]]
        assert recorded_rates.dram_kind(written / (read + written)) == COPY, (name, spec["size"])
    else:
        assert "read" in spec["size"], (name, spec["size"])
        if m:
            read, written = float(m[1]) * UNIT[m[2]], float(m[3]) * UNIT[m[4]]
            assert recorded_rates.dram_kind(written / (read + written)) == READ, (name, spec["size"])


def test_a_scenario_rate_counts_toward_the_ceiling_its_model_traffic_is_of():
    got = recorded_rates.recorded("h200").filter(pl.col("where").str.starts_with("scenario-"))
    # scenario 12 reads the weights of a GEMV: its rate is a read rate, though its floor names the copy ceiling
    s12 = got.filter(pl.col("where").str.starts_with("scenario-12 slow") & pl.col("measurement").is_in([COPY, READ]))
    assert s12["measurement"].to_list() == [READ] and s12["why"].to_list() == [None]
    assert scenarios.find("12").model.bytes_ceiling_name == COPY
    # scenario 03 writes a fifth of its bytes: neither
    s03 = got.filter(pl.col("where").str.starts_with("scenario-03 ") & (pl.col("measurement") != ANY))
    assert s03.height == 2 and all("writes are 20% of the model's bytes" in w for w in s03["why"])
    # ... which still counts toward the DRAM roof, whatever the mix
    roof = got.filter(pl.col("where").str.starts_with("scenario-03 ") & (pl.col("measurement") == ANY))
    assert roof["value"].sort().to_list() == s03["value"].sort().to_list() and roof["why"].null_count() == 2
    # scenario 11 reads one tensor and writes one: a copy
    s11 = got.filter(pl.col("where").str.starts_with("scenario-11 fixed") & (pl.col("measurement") != ANY))
    assert s11["measurement"].to_list() == [COPY] and s11["why"].to_list() == [None]


def test_the_best_rates_file_lists_what_it_did_not_use():
    kept = json.loads(best_rates.path_for("h200").read_text())
    fresh = recorded_rates.collect("h200")
    assert kept["not_used"] == fresh["not_used"] and kept["not_used"]
    assert best_rates.read("h200")["not_used"] == kept["not_used"]


# --------------------------------------------------------------------------------------------
# The DRAM roof: the attainable DRAM bandwidth, whatever the mix
# --------------------------------------------------------------------------------------------


def _recorded_dram_rates() -> pl.DataFrame:
    """Every DRAM rate recorded on the H200: each Nsight Compute launch's DRAM bytes over its
    duration (every saved kernel profile under traces/h200), and each ladder rung's and peer's rate
    against a DRAM ceiling."""
    from coach.analyze.kernel_metrics import with_derived

    base = traces_dir() / "h200"
    frames = []
    for meta in sorted(base.rglob("coach-profile.json")):
        if json.loads(meta.read_text()).get("kind") != "kernel-profile":
            continue
        profile = load(meta.parent)
        wide = with_derived(recorded_rates._with_metric_columns(profile), profile.devices)
        frames.append(wide.select(pl.col("dram_bandwidth_bytes_per_s").alias("value"),
                                  pl.lit(str(meta.parent.relative_to(base))).alias("where")).drop_nulls())
    ladder_rows = [{"value": float(r["value"]), "where": r["where"]} for r in
                   recorded_rates.recorded("h200").filter(pl.col("where").str.starts_with("ladder ")
                                                         & pl.col("measurement").is_in([COPY, READ])).iter_rows(named=True)]
    frames.append(pl.DataFrame(ladder_rows, schema={"value": pl.Float64, "where": pl.Utf8}))
    return pl.concat(frames)


def test_no_recorded_dram_rate_exceeds_the_dram_roof():
    from coach.analyze import hardware

    every = _recorded_dram_rates()
    assert every.height > 100  # the profiles and the ladders were read
    roof = hardware.ceilings("h200").bandwidth["dram"]
    fastest = every.sort("value", descending=True).row(0, named=True)
    assert fastest["value"] <= roof.value, fastest
    # the roof is that rate, and its source says so: a kernel of no known mix raised it past both ceilings
    assert roof.value == pytest.approx(fastest["value"], rel=1e-9)
    assert "the DRAM roof raised to the best DRAM rate of any read/write mix" in roof.source
    assert "reduce_vec4_grid_stride" in roof.source
    assert roof.value <= hardware.get("h200").value("dram_bandwidth_bytes_per_s")  # not above the datasheet


def test_the_copy_and_read_ceilings_are_their_own_entries():
    from coach.analyze import hardware

    doc = best_rates.read("h200")
    gpu = hardware.get("h200")
    m = hardware.catalog().measured["h200"]
    roof = hardware.ceilings("h200").bandwidth["dram"].value
    for key in (COPY, READ):
        value, _ = hardware.measured_ceiling(gpu, m, key)
        assert value == doc["rates"][key]["value"] < roof, key
    assert doc["rates"][ANY]["value"] == roof


def test_a_users_calibration_is_not_raised_to_the_dram_roof(tmp_path):
    from coach.analyze import hardware

    shipped = hardware.catalog().measured["h200"]
    own = tmp_path / "h200.json"
    own.write_text(shipped.path.read_text())
    c = hardware.ceilings("h200", own).bandwidth["dram"]
    calibrated = max(v for k, v in shipped.values.items() if k in (COPY, READ))
    assert c.value == calibrated < best_rates.read("h200")["rates"][ANY]["value"]
    assert "raised" not in c.source
