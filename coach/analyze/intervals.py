"""Interval primitives over Polars frames of ``[start_ns, end_ns)`` rows, as sorted sweeps.

A timeline of millions of operations asks two questions of intervals again and again: what is the
union of these (``merge_intervals``), and which rows of one frame meet which of another
(``interval_join``). Both are answered here by sorting once and searching the sorted columns
(``search_sorted``, a running maximum, cumulative sums), so the cost is O((n + m) log(n + m)) plus the
number of pairs found, never the n x m of comparing every pair; memory is a few integer columns per
row and the pairs themselves.

Equality keys (``by``: a device, a host thread) never become a join. The rows are put in key order
and each key moved onto its own stretch of the time axis, so one sweep over the whole frame stays
inside each key: an interval of one key can neither merge with nor meet one of another.

The definitions (what counts as overlapping, which name a merged interval carries) are those of the
comparison-based implementation they replace; tests/test_intervals.py checks both against a
brute-force evaluation of the same predicates on random frames with ties, nesting and empty
intervals.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

_S, _E = "start_ns", "end_ns"


# --------------------------------------------------------------------------------------------
# Union
# --------------------------------------------------------------------------------------------


def merge_intervals(intervals: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Union of ``[start_ns, end_ns)`` intervals per ``by`` group: one row per merged interval with
    the ``by`` columns, ``start_ns``, ``end_ns``, ``ops``, the ``first``/``last`` operation names
    (when a ``name`` column is given: the first to start, and the first of those ending last) and
    ``dur_ns``. Sorts once; a new interval starts where the start passes the running maximum of
    earlier ends (touching intervals, one ending where the next starts, merge)."""
    named = "name" in intervals.columns
    s = intervals.select(*by, _S, _E, *(["name"] if named else []))
    if not _in_order(s, [*by, _S]):  # a timeline's GPU work comes sorted by device and start: no copy then
        s = s.sort(*by, _S, nulls_last=True)
    if s.is_empty() or not _well_formed(s):
        return _merge_by_group(s, by, named)
    n = s.height
    lo, stretch = _frame(s, s)
    lane = _lanes(by)
    swept = s.select(
        *by, _S, _E, *(["name"] if named else []),
        _shift=lane * stretch - lo,
    ).with_columns(_reach=(pl.col(_E) + pl.col("_shift")).cum_max())
    swept = swept.with_columns(
        _new=((pl.col(_S) + pl.col("_shift")) > pl.col("_reach").shift(1)).fill_null(True)
    ).with_columns(_group=pl.col("_new").cum_sum() - 1)
    firsts = swept["_new"].arg_true()
    lasts = pl.concat([firsts.slice(1) - 1, pl.Series([n - 1], dtype=firsts.dtype)]) if len(firsts) else firsts
    head = swept[firsts]
    tail = swept[lasts]
    out = head.select(*by, _S).with_columns(
        (tail["_reach"] - tail["_shift"]).alias(_E),
        (lasts - firsts + 1).cast(pl.UInt32).alias("ops"),
    )
    if named:
        ends = out[_E].gather(swept["_group"])
        # groups are contiguous and in order: the first row of each group's rows that end last
        ending_last = swept.select("_group", "name").filter(swept[_E] == ends).filter(
            pl.col("_group").ne_missing(pl.col("_group").shift(1)))
        out = out.with_columns(first=head["name"], last=ending_last["name"])
    return out.with_columns(dur_ns=pl.col(_E) - pl.col(_S))


def _merge_by_group(s: pl.DataFrame, by: list[str], named: bool) -> pl.DataFrame:
    """The same, group by group: for frames with missing times or an end before its start, where
    the running maximum of shifted ends does not separate the groups."""
    per = (lambda e: e.over(by)) if by else (lambda e: e)  # noqa: E731
    s = s.with_columns(
        _new=per(pl.col(_S) > pl.col(_E).cum_max().shift(1)).fill_null(True)
    ).with_columns(_group=per(pl.col("_new").cum_sum()))
    aggs = [pl.col(_S).min(), pl.col(_E).max(), pl.len().alias("ops")]
    if named:
        aggs += [pl.col("name").first().alias("first"), pl.col("name").sort_by(_E).last().alias("last")]
    return (
        s.group_by(*by, "_group", maintain_order=True)
        .agg(aggs)
        .drop("_group")
        .with_columns(dur_ns=pl.col(_E) - pl.col(_S))
    )


# --------------------------------------------------------------------------------------------
# Pairs
# --------------------------------------------------------------------------------------------


def interval_join(left: pl.DataFrame, right: pl.DataFrame, how: Literal["overlap", "contains"],
                  by: list[str] | None = None) -> pl.DataFrame:
    """Pairs of rows whose intervals relate, with ``overlap_ns``.

    Both frames have ``start_ns`` and ``end_ns``; ``right``'s other columns must not clash with
    ``left``'s. ``how="overlap"``: the intervals share time (right start < left end and right end >
    left start). ``how="contains"``: the left interval contains the right one (right start >= left
    start and right end <= left end; ``overlap_ns`` is the right one's length). ``by`` columns must be
    equal on both sides (null matches nothing); a missing time matches nothing.

    The result has ``left``'s columns, then ``right``'s (less ``by``) with its times renamed
    ``right_start_ns`` and ``right_end_ns``, then ``overlap_ns``; rows in ``left``'s order, and for
    each left row its partners by start.
    """
    by = by or []
    right_columns = [c for c in right.columns if c not in by]
    a = left.select(_S, _E, *by).with_row_index("_i").filter(_present([_S, _E, *by]))
    b = right.select(_S, _E, *by).with_row_index("_j").filter(_present([_S, _E, *by]))
    if a.is_empty() or b.is_empty():
        return _pairs_schema(left, right, right_columns)
    if how == "contains" and not _well_formed(b):
        return _pairwise(left, right, how, by)
    if a.height * b.height <= SMALL_PAIRS:
        matched = _all_pairs(a, b, how, by)
    else:
        matched = _swept_pairs(a, b, how, by)
    left_rows = left[matched["_i"]]
    right_rows = right.select(right_columns)[matched["_j"]].rename({_S: "_rs", _E: "_re"})
    return (
        pl.concat([left_rows, right_rows], how="horizontal")
        .with_columns(overlap_ns=pl.min_horizontal(_E, "_re") - pl.max_horizontal(_S, "_rs"))
        .rename({"_rs": "right_start_ns", "_re": "right_end_ns"})
    )


#: Below this many candidate pairs (left rows x right rows) ``interval_join`` compares every pair: on
#: small frames (a report of a few hundred operations) the sweep's dozen steps cost more than the
#: comparisons they save. Both give the same pairs in the same order.
SMALL_PAIRS = 4096


def _all_pairs(a: pl.DataFrame, b: pl.DataFrame, how: str, by: list[str]) -> pl.DataFrame:
    """``_i, _j`` of the matching rows of ``a`` and ``b`` (``_i``/``_j``, times, ``by``; no missing
    value) by comparing every pair: by left row, then by right start (ties in right order)."""
    r = b.rename({_S: "_b0", _E: "_b1"})
    pairs = a.join(r, on=by, how="inner") if by else a.join(r, how="cross")
    if how == "overlap":
        keep = (pl.col("_b0") < pl.col(_E)) & (pl.col("_b1") > pl.col(_S))
    else:
        keep = (pl.col("_b0") >= pl.col(_S)) & (pl.col("_b1") <= pl.col(_E))
    return pairs.filter(keep).sort("_i", "_b0", "_j").select("_i", "_j")


def _swept_pairs(a: pl.DataFrame, b: pl.DataFrame, how: str, by: list[str]) -> pl.DataFrame:
    """``_all_pairs`` by a sorted sweep (see the module doc)."""
    lo, stretch = _frame(a, b)
    if by:
        keys = pl.concat([a.select(by), b.select(by)]).unique().with_row_index("_lane")
        a = a.join(keys, on=by, how="inner")
        b = b.join(keys, on=by, how="inner")
        shift = pl.col("_lane").cast(pl.Int64) * stretch - lo
    else:
        shift = pl.lit(-lo, pl.Int64)
    # sweep positions: a0/a1 of the left rows (in left order), b0/b1 of the right rows sorted by start
    a = a.select("_i", _a0=pl.col(_S) + shift, _a1=pl.col(_E) + shift).sort("_i")
    b = b.select("_j", _b0=pl.col(_S) + shift, _b1=pl.col(_E) + shift).sort("_b0", maintain_order=True)
    a0, a1, b0, b1 = a["_a0"], a["_a1"], b["_b0"], b["_b1"]
    if how == "overlap":
        # the right one starts inside the left one, or at its start (then it must also end after it) ...
        starts_inside = _ranges(pl.int_range(a.height, eager=True), b0.search_sorted(a0, "left"),
                                b0.search_sorted(a1, "left"))
        # ... or before it, ending after the left one's start: the left one starts inside the right one
        by_left_start = a.select("_a0", _pos=pl.int_range(pl.len())).sort("_a0", maintain_order=True)
        left_starts = by_left_start["_a0"]
        around = _ranges(pl.int_range(b.height, eager=True), left_starts.search_sorted(b0, "right"),
                         left_starts.search_sorted(b1, "left"))
        around = pl.DataFrame({"_li": by_left_start["_pos"].gather(around["_r"]), "_ri": around["_l"]})
        pairs = pl.concat([starts_inside.select(_li="_l", _ri="_r"), around.cast(pl.Int64)])
        keep = (pl.col("_b0") < pl.col("_a1")) & (pl.col("_b1") > pl.col("_a0"))
    else:
        pairs = _ranges(pl.int_range(a.height, eager=True), b0.search_sorted(a0, "left"),
                        b0.search_sorted(a1, "right")).select(_li="_l", _ri="_r")
        keep = (pl.col("_b0") >= pl.col("_a0")) & (pl.col("_b1") <= pl.col("_a1"))
    pairs = pairs.sort("_li", "_ri")
    return pl.concat([a[pairs["_li"]], b[pairs["_ri"]]], how="horizontal").filter(keep).select("_i", "_j")


def _pairwise(left: pl.DataFrame, right: pl.DataFrame, how: str, by: list[str]) -> pl.DataFrame:
    """The same pairs by comparing intervals (Polars' inequality join): for a right frame with an end
    before its start, whose start the sweep cannot bound by the left end."""
    lo, stretch = _frame(left.filter(_present([_S, _E])), right.filter(_present([_S, _E])))
    if by:
        keys = pl.concat([left.select(by), right.select(by)]).drop_nulls().unique().with_row_index("_lane")
        left = left.join(keys, on=by, how="inner")
        right = right.join(keys, on=by, how="inner").drop(by)
    shift = (pl.col("_lane").cast(pl.Int64) * stretch - lo) if by else pl.lit(-lo, pl.Int64)
    a = left.with_columns(_a0=pl.col(_S) + shift, _a1=pl.col(_E) + shift)
    b = right.rename({_S: "_rs", _E: "_re"}).with_columns(_b0=pl.col("_rs") + shift, _b1=pl.col("_re") + shift)
    if by:
        a, b = a.drop("_lane"), b.drop("_lane")
    if how == "overlap":
        pairs = a.join_where(b, pl.col("_b0") < pl.col("_a1"), pl.col("_b1") > pl.col("_a0"))
    else:
        pairs = a.join_where(b, pl.col("_b0") >= pl.col("_a0"), pl.col("_b1") <= pl.col("_a1"))
    return pairs.with_columns(
        overlap_ns=pl.min_horizontal(_E, "_re") - pl.max_horizontal(_S, "_rs")
    ).drop("_a0", "_a1", "_b0", "_b1").rename({"_rs": "right_start_ns", "_re": "right_end_ns"})


def _ranges(rows: pl.Series, lo: pl.Series, hi: pl.Series) -> pl.DataFrame:
    """``(_l, _r)`` for every row ``_l`` and every ``_r`` in ``[lo, hi)`` of that row."""
    spans = pl.DataFrame({"_l": rows.cast(pl.Int64), "_lo": lo.cast(pl.Int64), "_hi": hi.cast(pl.Int64)})
    return (spans.filter(pl.col("_hi") > pl.col("_lo"))
            .select("_l", _r=pl.int_ranges("_lo", "_hi", dtype=pl.Int64))
            .explode("_r"))


def _pairs_schema(left: pl.DataFrame, right: pl.DataFrame, right_columns: list[str]) -> pl.DataFrame:
    names = {_S: "right_start_ns", _E: "right_end_ns"}
    schema = {**left.schema, **{names.get(c, c): right.schema[c] for c in right_columns}, "overlap_ns": pl.Int64}
    return pl.DataFrame(schema=schema)


# --------------------------------------------------------------------------------------------
# Shared
# --------------------------------------------------------------------------------------------


def _in_order(frame: pl.DataFrame, columns: list[str]) -> bool:
    """Whether ``frame`` is sorted by ``columns`` (ascending, lexicographic), with no missing value in them."""
    if frame.height < 2:
        return frame.select(pl.any_horizontal(pl.col(c).is_null() for c in columns).any()).item() is not True
    nulls = frame.select(pl.sum_horizontal(pl.col(c).null_count() for c in columns)).item()
    if nulls:
        return False
    ahead, tied = pl.lit(False), pl.lit(True)  # row i after row i - 1 on an earlier column / equal so far
    for c in columns:
        step = pl.col(c) > pl.col(c).shift(1)
        back = pl.col(c) < pl.col(c).shift(1)
        ahead, tied = ahead | (tied & step), tied & ~step & ~back
    return bool(frame.select((ahead | tied).slice(1).all()).item())


def _present(columns: list[str]) -> pl.Expr:
    return pl.all_horizontal(pl.col(c).is_not_null() for c in columns)


def _well_formed(s: pl.DataFrame) -> bool:
    """No missing time and no end before its start (what the one-sweep union relies on)."""
    if s.is_empty():
        return True
    row = s.select(nulls=pl.col(_S).null_count() + pl.col(_E).null_count(),
                   backwards=(pl.col(_E) < pl.col(_S)).sum()).row(0)
    return row == (0, 0)


def _frame(a: pl.DataFrame, b: pl.DataFrame) -> tuple[int, int]:
    """The earliest start over both frames, and a stretch of time longer than everything in them:
    key k's rows are moved to ``k * stretch - lo`` onwards, past every row of the keys before it."""
    lo = min(int(a[_S].min()), int(b[_S].min()))
    hi = max(int(a[_E].max()), int(b[_E].max()), int(a[_S].max()), int(b[_S].max()))
    return lo, hi - lo + 1


def _lanes(by: list[str]) -> pl.Expr:
    """On rows sorted by ``by``: 0 for the first key, then one more at each change of key (nulls a
    key of their own)."""
    if not by:
        return pl.lit(0, pl.Int64)
    changed = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in by)
    return changed.fill_null(False).cast(pl.Int64).cum_sum()
