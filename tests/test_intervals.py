"""The interval primitives (coach.analyze.intervals) against plain evaluations of their definitions.

``interval_join`` is checked against a cross join filtered by the same predicates, and
``merge_intervals`` against the group-by-group union it replaced (kept as ``_merge_by_group`` for
frames the sweep does not take), on random frames built to hit the edges: equal starts and ends,
intervals nested several deep, empty (zero-length) intervals, touching intervals, missing times and
keys, and keys whose intervals interleave in time.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from coach.analyze.intervals import _merge_by_group, _pairwise, interval_join, merge_intervals


def random_intervals(rng: np.random.Generator, n: int, *, keys: int = 0, horizon: int = 60, longest: int = 25,
                     nulls: bool = False, names: bool = False) -> pl.DataFrame:
    start = rng.integers(0, horizon, n)
    # a third empty or very short, a few long enough to contain many others
    length = np.where(rng.random(n) < 0.3, rng.integers(0, 2, n), rng.integers(0, longest, n))
    cols: dict = {"start_ns": start, "end_ns": start + length}
    if keys:
        cols["k"] = rng.integers(0, keys, n)
        cols["t"] = rng.integers(0, 2, n)
    if names:
        cols["name"] = [f"op{i}" for i in range(n)]
    df = pl.DataFrame(cols)
    if nulls:
        df = df.with_columns(
            pl.when(pl.Series(rng.random(n) < 0.1)).then(None).otherwise(pl.col("start_ns")).alias("start_ns"),
            *([pl.when(pl.Series(rng.random(n) < 0.1)).then(None).otherwise(pl.col("k")).alias("k")] if keys else []),
        )
    return df


def brute_force(left: pl.DataFrame, right: pl.DataFrame, how: str, by: list[str]) -> pl.DataFrame:
    r = right.rename({"start_ns": "right_start_ns", "end_ns": "right_end_ns", **{c: f"{c}__r" for c in by}})
    pairs = left.join(r, how="cross")
    if how == "overlap":
        cond = (pl.col("right_start_ns") < pl.col("end_ns")) & (pl.col("right_end_ns") > pl.col("start_ns"))
    else:
        cond = (pl.col("right_start_ns") >= pl.col("start_ns")) & (pl.col("right_end_ns") <= pl.col("end_ns"))
    for c in by:
        cond = cond & (pl.col(c) == pl.col(f"{c}__r"))
    return (pairs.filter(cond.fill_null(False)).drop([f"{c}__r" for c in by])
            .with_columns(overlap_ns=pl.min_horizontal("end_ns", "right_end_ns")
                          - pl.max_horizontal("start_ns", "right_start_ns")))


def same_rows(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    key = got.columns
    assert got.sort(key, nulls_last=True).equals(want.select(key).sort(key, nulls_last=True))


@pytest.fixture(params=["sweep", "all pairs"])
def join_path(request, monkeypatch):
    """Each join test runs twice: every frame through the sorted sweep, then every frame through the
    comparison of all pairs that small frames take (``SMALL_PAIRS``)."""
    from coach.analyze import intervals

    monkeypatch.setattr(intervals, "SMALL_PAIRS", 0 if request.param == "sweep" else 10**12)
    return request.param


@pytest.mark.parametrize("how", ["overlap", "contains"])
@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_interval_join_finds_exactly_the_pairs_of_its_definition(how, keyed, seed, join_path):
    rng = np.random.default_rng(seed)
    by = ["k", "t"] if keyed else []
    left = random_intervals(rng, int(rng.integers(0, 40)), keys=3 if keyed else 0, nulls=seed % 3 == 0)
    left = left.with_columns(gap=pl.int_range(pl.len()))
    right = random_intervals(rng, int(rng.integers(0, 60)), keys=3 if keyed else 0, nulls=seed % 4 == 0)
    right = right.with_columns(call=pl.int_range(pl.len()) * 10)
    got = interval_join(left, right, how, by=by)
    same_rows(got, brute_force(left, right, how, by))
    # the same columns and types as the comparison-based join it replaces
    old = _pairwise(left, right, how, by) if left.height and right.height else got
    assert got.schema == old.schema
    # rows in the left frame's order, each left row's partners by start
    if got.height:
        order = got.with_columns(pos=pl.col("gap"))
        assert order["pos"].is_sorted()
        assert order.select((pl.col("right_start_ns").diff().over("gap").fill_null(0) >= 0).all()).item()


def test_interval_join_with_intervals_ending_before_they_start(join_path):
    """Malformed rows (an end before the start) are matched by the predicates as written, as before."""
    left = pl.DataFrame({"start_ns": [0, 20], "end_ns": [10, 15]})
    right = pl.DataFrame({"start_ns": [12, 2, 16], "end_ns": [5, 3, 30]})
    for how in ("overlap", "contains"):
        same_rows(interval_join(left, right, how), brute_force(left, right, how, []))


def test_interval_join_of_empty_frames_keeps_the_columns():
    left = pl.DataFrame({"start_ns": [1], "end_ns": [2], "gap": [0]})
    empty = pl.DataFrame(schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "name": pl.Utf8})
    got = interval_join(left, empty, "overlap")
    assert got.is_empty() and got.columns == ["start_ns", "end_ns", "gap", "right_start_ns", "right_end_ns", "name",
                                              "overlap_ns"]


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_merge_intervals_matches_the_group_by_group_union(keyed, seed):
    rng = np.random.default_rng(100 + seed)
    by = ["k", "t"] if keyed else []
    df = random_intervals(rng, int(rng.integers(1, 200)), keys=3 if keyed else 0, horizon=400, names=True)
    if keyed and seed % 2:  # null keys form a group of their own
        df = df.with_columns(pl.when(pl.col("k") == 0).then(None).otherwise(pl.col("k")).alias("k"))
    got = merge_intervals(df, by)
    want = _merge_by_group(df.sort(*by, "start_ns", nulls_last=True), by, True)
    assert got.schema == want.schema
    assert got.equals(want), (got, want)


def test_merge_intervals_union_is_the_covered_time():
    rng = np.random.default_rng(7)
    df = random_intervals(rng, 300, horizon=2000)
    covered = np.zeros(2100, dtype=bool)
    for s, e in df.iter_rows():
        covered[s:e] = True
    merged = merge_intervals(df, [])
    assert merged["dur_ns"].sum() == covered.sum()
    assert (merged["start_ns"].slice(1) > merged["end_ns"].slice(0, merged.height - 1)).all()  # disjoint, not touching


def test_merge_intervals_with_missing_times_takes_the_group_path():
    df = pl.DataFrame({"start_ns": [0, None, 5], "end_ns": [10, 3, 7], "d": [0, 0, 0]})
    assert merge_intervals(df, ["d"]).equals(_merge_by_group(df.sort("d", "start_ns", nulls_last=True), ["d"], False))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nulls", [False, True])
def test_covered_time_per_window_matches_the_summed_overlaps(seed, nulls):
    """``timeline._covered_in`` (cumulative sums over the per-thread union of calls) gives each
    window the time that summing ``interval_join``'s overlaps with that union gives it, on random
    calls with missing times and keys, empty and touching calls, and windows reaching past them."""
    from coach.analyze.timeline import _covered_in

    rng = np.random.default_rng(seed)
    calls = random_intervals(rng, 300, keys=3, nulls=nulls)
    union = merge_intervals(calls, ["k", "t"])
    start = rng.integers(-10, 90, 80)
    windows = pl.DataFrame({"start_ns": start, "end_ns": start + rng.integers(1, 30, 80)}).with_row_index("_gap")
    summed = interval_join(windows, union, "overlap").group_by("_gap").agg(api_ns=pl.col("overlap_ns").sum())

    def per_window(frame: pl.DataFrame) -> list[int]:
        return windows.select("_gap").join(frame, on="_gap", how="left").sort("_gap")["api_ns"].fill_null(0).to_list()

    got = per_window(_covered_in(windows, union, ["k", "t"]))
    assert got == per_window(summed)
    assert sum(got) > 0
