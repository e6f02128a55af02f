"""The explorer's timeline: events flattened into lanes, merged below a pixel, zoom windows."""

from __future__ import annotations

import polars as pl
import pytest

from coach.app import timeline_view as tv
from coach.model import Source, make_timeline

SOURCE = Source("built-in-test.sqlite", "nsys-sqlite", "Nsight Systems")


def _kernels(spans: list[tuple[int, int]], stream: int = 7) -> pl.DataFrame:
    """Kernel rows naming only the columns the view reads (a builder for these tests, not a trace)."""
    return pl.DataFrame({"start_ns": [s for s, _ in spans], "end_ns": [e for _, e in spans],
                         "dur_ns": [e - s for s, e in spans], "device_id": [0] * len(spans),
                         "stream_id": [stream] * len(spans), "name": [f"k{i}" for i in range(len(spans))]})


def test_lanes_come_in_order_nvtx_api_then_streams():
    tl = make_timeline(
        SOURCE,
        kernels=pl.concat([_kernels([(100, 200)], stream=13), _kernels([(0, 50)], stream=7)]),
        memcpy=pl.DataFrame({"start_ns": [10], "end_ns": [20], "device_id": [0], "stream_id": [7], "kind": ["HtoD"],
                             "bytes": [4096]}),
        api=pl.DataFrame({"start_ns": [0], "end_ns": [5], "tid": [42], "name": ["cudaLaunchKernel"]}),
        nvtx=pl.DataFrame({"start_ns": [0, 1], "end_ns": [300, 2], "tid": [42, 42], "depth": [0, 1],
                           "text": ["step", "forward"]}),
    )
    ev = tv.events(tl)
    assert ev.lanes == ["NVTX · thread 42", "NVTX · thread 42 · level 1", "CUDA API · thread 42",
                        "GPU 0 · stream 7", "GPU 0 · stream 7 · memcpy", "GPU 0 · stream 13"]
    assert ev.gpu_span_ns == (0, 200)
    assert ev.count == 6 and ev.span_ns == (0, 300)


def test_neighbours_closer_than_a_pixel_merge_and_far_ones_do_not():
    ev = tv.events(make_timeline(SOURCE, kernels=_kernels([(0, 10), (11, 20), (25, 30), (1000, 1010)])))
    # 1010 ns over 101 px: 10 ns per pixel, so gaps of 1 and 5 ns merge, the 970 ns gap does not
    bars = tv.window(ev, 0, 1010, width_px=101)
    assert bars.select("start_ns", "end_ns", "events").rows() == [(0, 30, 3), (1000, 1010, 1)]
    assert bars["busy_pct"][0] == pytest.approx(100 * 24 / 30)
    # at one nanosecond per pixel every kernel is its own bar
    assert tv.window(ev, 0, 1010, width_px=1010).height == 4


def test_a_window_keeps_only_what_overlaps_it():
    ev = tv.events(make_timeline(SOURCE, kernels=_kernels([(0, 10), (100, 110), (200, 210)])))
    bars = tv.window(ev, 105, 150, width_px=1000)
    assert bars.select("start_ns", "end_ns", "name").rows() == [(100, 110, "k1")]


def test_bars_never_exceed_one_per_pixel_per_lane():
    n = 50_000
    starts = pl.int_range(0, n, eager=True) * 1_000  # a kernel every microsecond
    ev = tv.events(make_timeline(SOURCE, kernels=_kernels(list(zip(starts.to_list(), (starts + 400).to_list())))))
    fig, bars = tv.figure(ev, width_px=800)
    assert bars.height <= 800 and int(bars["events"].sum()) == n
    assert sum(len(t.y) for t in fig.data if t.meta != "lanes") == bars.height


def test_figure_has_labelled_time_axis_and_hover_text_in_words():
    ev = tv.events(make_timeline(SOURCE, kernels=_kernels([(0, 1_500_000), (2_000_000, 2_000_400)])))
    fig, _ = tv.figure(ev, 0, 2_000_400)
    assert fig.layout.xaxis.title.text == "time since capture start (ms)"
    assert list(fig.layout.xaxis.range) == [0.0, 2.0004]
    bars = next(t for t in fig.data if t.meta == "kernel")
    assert bars.hovertext[0] == "<b>k0</b><br>1.50 ms from 0 ns<br>click for details"


def test_an_empty_timeline_draws_an_empty_figure():
    fig, bars = tv.figure(tv.events(make_timeline(SOURCE)))
    assert not fig.data and bars.is_empty()


@pytest.mark.parametrize("relayout, window", [
    ({"xaxis.range[0]": 1.5, "xaxis.range[1]": 2.0}, (1_500_000, 2_000_000)),
    ({"xaxis.range": [0.25, 0.5]}, (250_000, 500_000)),
    ({"xaxis.autorange": True}, "all"),
    ({"autosize": True}, None),
    ({"xaxis.range[0]": 2.0, "xaxis.range[1]": 1.0}, None),
    (None, None),
])
def test_zoom_events_become_windows(relayout, window):
    assert tv.visible_window(relayout) == window


def test_the_recorded_nsys_export_draws_every_kind_of_lane(softmax_nsys_sqlite):
    from coach.ingest import load

    tl = load(softmax_nsys_sqlite)
    ev = tv.events(tl)
    assert ev.count == tl.kernels.height + tl.memcpy.height + tl.memset.height + tl.api.height + tl.nvtx.height
    fig, bars = tv.figure(ev, *ev.span_ns)
    assert {t.meta for t in fig.data} >= {"kernel", "api", "nvtx", "memset", "memcpy"}
    assert int(bars["events"].sum()) == ev.count
