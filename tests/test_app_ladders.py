"""The Ladders page and its results format (kernels/<op>/results.json).

No ladder is recorded yet, so these tests write a synthetic results file: it checks the reader and
the page, and its numbers are not measurements.
"""

from __future__ import annotations

import json

import pytest
from app_support import dispatch

from coach.app import Settings, create_app
from coach.app.ladder_results import discover, read
from coach.errors import InputError

SYNTHETIC = {
    "ladder": "reduction",
    "title": "Sum of 2^28 fp32 values (synthetic test data)",
    "gpu": "NVIDIA H200",
    "provenance": {"note": "synthetic, for the reader's tests"},
    "rungs": [
        {"rung": "00_naive", "title": "one atomic per element", "reason": "the simplest correct kernel",
         "prediction": "atomics serialise", "time_s": 0.004, "bytes": 1073741824, "flops": 268435456},
        {"rung": "01_tree", "title": "shared-memory tree", "reason": "one atomic per block",
         "prediction": "bandwidth-bound", "predicted_time_s": 0.00025, "time_s": 0.0005, "bytes": 1073741824,
         "flops": 268435456, "note": "tail of the tree idles most threads"},
    ],
}


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "reduction").mkdir()
    (tmp_path / "reduction" / "results.json").write_text(json.dumps(SYNTHETIC))
    return tmp_path


def test_results_are_read_with_speedups(kernels):
    [path] = discover(kernels)
    lad = read(path)
    assert [r.rung for r in lad.rungs] == ["00_naive", "01_tree"]
    assert lad.speedups() == [None, pytest.approx(8.0)]
    assert lad.rungs[1].bytes_per_s == pytest.approx(1073741824 / 0.0005)
    assert lad.rungs[0].intensity == pytest.approx(0.25)


@pytest.mark.parametrize("broken, problem", [
    ({"ladder": "x", "title": "t", "gpu": "g"}, "has no 'rungs'"),
    ({**SYNTHETIC, "rungs": []}, "'rungs' must be a non-empty list"),
    ({**SYNTHETIC, "rungs": [{"rung": "a", "bytes": 1}]}, "rung 0: missing or bad field"),
    ({**SYNTHETIC, "rungs": [{"rung": "a", "bytes": 1, "time_s": 0}]}, "rung 0: time_s must be positive"),
])
def test_a_broken_results_file_is_one_line(tmp_path, broken, problem):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(InputError, match=problem):
        read(path)


def test_the_page_shows_each_rung_with_reason_prediction_and_measurement(kernels):
    app = create_app(Settings(kernels_dir=kernels, traces_dir=kernels, walkthroughs=lambda: []))
    page = json.dumps(dispatch(app, "..page.children", {"url.pathname": "/ladders", "url.search": ""}))
    for text in ("Sum of 2^28 fp32 values (synthetic test data)", "one atomic per block", "bandwidth-bound",
                 "tail of the tree idles most threads", "8\\u00d7", "250 \\u00b5s", "500 \\u00b5s",
                 "speed-up (\\u00d7)", "arithmetic intensity (FLOP per DRAM byte)"):
        assert text in page, text
    home = json.dumps(dispatch(app, "..page.children", {"url.pathname": "/", "url.search": ""}))
    assert "8\\u00d7 from first rung to last on the NVIDIA H200" in home


def test_a_broken_ladder_shows_its_error_in_the_page(kernels):
    (kernels / "scan").mkdir()
    (kernels / "scan" / "results.json").write_text("{not json")
    app = create_app(Settings(kernels_dir=kernels, traces_dir=kernels, walkthroughs=lambda: []))
    page = json.dumps(dispatch(app, "..page.children", {"url.pathname": "/ladders", "url.search": ""}))
    assert "results.json: cannot be read as JSON" in page and "one atomic per block" in page
