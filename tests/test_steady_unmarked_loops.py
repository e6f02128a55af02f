"""Finding a loop nobody marked (coach.analyze.timeline_rules._steady, "a repeating loop of kernels").

The recordings that mark their steps with NVTX ranges are the check: with the ranges taken out, the
loop found from the kernels alone must cover the marked steady steps and leave the start-up out.
Recordings with no loop (two launches, a six-call benchmark) must get no loop, and a program with two
launches no allocator-in-the-loop finding. Labelled synthetic sequences cover what no recording here
has: a kernel run more times a step than the old fixed lags looked at, a stray kernel inside the loop,
an epilogue after it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from coach.analyze.diagnose import diagnose, is_not_checked
from coach.analyze.timeline import TimelineAnalysis
from coach.analyze.timeline_rules import _steady, warmup
from coach.ingest import load

DATA = Path(__file__).resolve().parent / "data"
NSYS = DATA / "wild_nsys"


def unmarked(path: Path):
    """The recording with its NVTX ranges removed: (its loop found from the kernels, the marked window)."""
    tl = load(path)
    a = TimelineAnalysis(tl)
    marked = _steady.find(a, warmup.one_time_calls(a))
    bare = TimelineAnalysis(dataclasses.replace(tl, nvtx=tl.nvtx.clear()))
    found, source = _steady._kernel_loop(bare, warmup.one_time_calls(bare))
    return found, source, marked, a.window


# (recording, steps in the marked window, kernel periods found unmarked): a period is one repetition
# of the kernel pattern, a step where the step's kernels differ from its layers', a layer where they
# do not (eager decoding repeats one layer's fifteen kernels, tokens add none of their own)
MARKED = [
    ("host_python_bound", 21, 22), ("multiprocess_sync", 84, 88), ("healthy_gemm", 20, 22),
    ("compile_from_start", 9, 20), ("compile_steady", 10, 24), ("sdpa_math", 10, 12), ("sdpa_fused", 10, 12),
    ("decode_eager", 20, 368), ("nvtx_heavy", 9, 240),
]


@pytest.mark.parametrize("case,marked_steps,periods", MARKED, ids=[m[0] for m in MARKED])
def test_without_its_marks_a_recordings_loop_is_found_from_its_kernels(case, marked_steps, periods):
    found, source, marked, capture = unmarked(NSYS / f"{case}.sqlite")
    assert source == "a repeating loop of kernels" and marked.steps == marked_steps
    assert int(found["steps"].sum()) == periods
    both = marked.windows.join(found, on="pid", suffix="_kernels")
    assert both.height == marked.windows.height  # every process with marked steps has its loop found
    covered = ((pl.min_horizontal("end_ns", "end_ns_kernels") - pl.max_horizontal("start_ns", "start_ns_kernels"))
               / (pl.col("end_ns") - pl.col("start_ns")))
    assert both.select(covered.min()).item() > 0.97  # the marked steady steps lie in the loop found
    # and the start-up (module loading, compilation, set-up) is left out: the loop starts well after
    # the capture does
    assert both.select((pl.col("start_ns_kernels") - capture[0]).min()).item() > 1e8


def test_of_two_unmarked_loops_the_one_repeating_at_more_launches_is_taken():
    """decode_graph decodes eagerly (64 repetitions of its layer's kernels, 180 ms) and then replays
    a CUDA graph per token (22 launches; the twenty token ranges span 13 ms), which its NVTX ranges mark as the steady
    window. Without the marks nothing says which loop is meant; the eager one repeats at more launches
    and for longer, and is taken. The marks, where a program has them, decide."""
    found, _, marked, _ = unmarked(NSYS / "decode_graph.sqlite")
    assert int(found["steps"].sum()) == 64
    assert int(found["end_ns"].max()) <= marked.start_ns  # the eager loop, before the graph replays
    assert int(found["end_ns"].max() - found["start_ns"].min()) > marked.dur_ns


def test_where_it_takes_one_of_several_unmarked_loops_it_says_so():
    """decode_graph's eager loop is taken; the graph replays after it (and the loop before it) are not
    dropped in silence: the window's source says it chose one of the loops it found, and how to choose."""
    _, source, _, _ = unmarked(NSYS / "decode_graph.sqlite")
    assert source.startswith("a repeating loop of kernels (the one repeating at the most launches, of ")
    assert "of 2 loops found without marks" in source and "NVTX" in source  # not the 33 initialising launches
    _, single, _, _ = unmarked(NSYS / "healthy_gemm.sqlite")
    assert single == "a repeating loop of kernels"  # one loop: nothing to say


@pytest.mark.parametrize("path", [NSYS / "setup_allocs_once.sqlite", DATA / "joined_strided_copy" / "strided_copy.sqlite",
                                  DATA / "nsys_triton_softmax" / "triton_softmax.sqlite",
                                  DATA / "nsys_ranks" / "rank5.sqlite"],
                         ids=["two-launches", "two-kernels", "six-call-benchmark", "three-marked-steps"])
def test_no_loop_is_found_where_there_is_none(path):
    """Two launches, a benchmark of six calls, three steps of 46 launches: fewer than ten repetitions."""
    found, _, _, _ = unmarked(path)
    assert found is None


@pytest.mark.parametrize("path", [NSYS / "setup_allocs_once.sqlite", DATA / "joined_strided_copy" / "strided_copy.sqlite"],
                         ids=["setup-allocs-once", "strided-copy"])
def test_a_two_launch_program_gets_no_allocator_in_the_loop_finding(path):
    tl = load(path)
    assert tl.kernels.height == 2
    got = [f for f in diagnose(tl) if not is_not_checked(f)]
    assert "allocator-churn" not in {f.rule_id for f in got}
    assert all(f.scope != "start-up" for f in got)  # no loop, no steady window


def test_the_allocating_loop_is_still_found_and_leads():
    got = [f for f in diagnose(load(NSYS / "setup_allocs_loop.sqlite")) if not is_not_checked(f)]
    [start] = [f for f in got if f.scope == "start-up"]
    assert start.details["steady_window"]["steps"] == 50 and got[0].rule_id == "allocator-churn"


# --- synthetic launch sequences (kernel names as integers) ---------------------------------------

#: A step of 25 launches in which kernel 1 runs twelve times (more than the eight lags once looked at).
STEP = [0, 1, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7, 1, 8, 1, 9, 1, 10, 1, 11, 1, 12, 1, 13]
START_UP, EPILOGUE = [20, 21, 22], [30, 31, 32, 33]


def stretch(seq):
    return _steady.repeating_stretch(np.array(seq))


def test_a_kernel_run_twelve_times_a_step_gives_the_steps_period():
    assert stretch(START_UP + STEP * 12 + EPILOGUE) == (3, 3 + 12 * 25, 25)


def test_a_stray_kernel_between_steps_or_inside_one_keeps_one_loop():
    assert stretch(START_UP + STEP * 6 + [40] + STEP * 6 + EPILOGUE) == (3, 3 + 12 * 25 + 1, 25)
    inside = START_UP + STEP * 6 + STEP[:10] + [40] + STEP[11:] + STEP * 5 + EPILOGUE  # one kernel replaced
    assert stretch(inside) == (3, 3 + 12 * 25, 25)


def test_a_run_of_another_kernel_beside_the_loop_is_not_joined_to_it():
    """Two launches of one kernel and ten of another right after: the loop is the ten."""
    assert stretch([0, 1, 1] + [2] * 10 + [3, 4]) == (3, 13, 1)


def test_nine_repetitions_are_not_a_loop():
    assert stretch(START_UP + STEP * 9 + EPILOGUE) is None
    assert stretch(START_UP + STEP * 10 + EPILOGUE) == (3, 253, 25)


def test_a_sequence_without_repetition_has_no_loop():
    rng = np.random.default_rng(0)
    assert stretch(rng.integers(0, 20, 20_000)) is None
