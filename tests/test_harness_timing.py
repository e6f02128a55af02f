"""The scenario harness's timing (coach.capture.harness.time_cuda) on a simulated GPU: a host that
pays a cost per call it makes, and one stream that runs what it is given in order, no earlier than the
host hands it over. On it the traps scenario 20 teaches are reproduced (events around one call after
a synchronisation hold the host's launch latency) and the harness must not fall into them.

SYNTHETIC: every duration below is chosen for the test (the launch costs and kernel times are of the
order scenario 20's first recording showed, 40 us launches and a 258 us kernel), not measured.
"""

from __future__ import annotations

import io
import json
import math
import statistics
from contextlib import redirect_stdout

import pytest

from coach.capture import harness

MIB = 2**20


class SimEvent:
    def __init__(self, gpu: SimGPU):
        self.gpu, self.at = gpu, None

    def record(self) -> None:
        self.at = self.gpu.enqueue(self.gpu.event_host_ms, 0.0)

    def elapsed_time(self, end: SimEvent) -> float:
        assert self.at is not None and end.at is not None, "an event read before it was recorded"
        assert self.gpu.synced_to >= end.at, "an event read before the GPU reached it"
        return end.at - self.at


class SimGPU:
    """Times in ms. ``enqueue(host_ms, gpu_ms)``: the host spends host_ms issuing the work; the GPU
    starts it when it is free and the work has arrived, and finishes gpu_ms later."""

    def __init__(self, *, event_host_ms: float = 0.002, l2: int = 60 * MIB, read_bytes_per_ms: float = 4.2e9):
        self.host = 0.0
        self.free = 0.0
        self.synced_to = 0.0
        self.event_host_ms, self.l2, self.read_bytes_per_ms = event_host_ms, l2, read_bytes_per_ms
        self.log: list[str] = []

    def enqueue(self, host_ms: float, gpu_ms: float) -> float:
        self.host += host_ms
        start = max(self.free, self.host)
        self.free = start + gpu_ms
        return start if gpu_ms == 0 else self.free

    def kernel(self, host_ms: float, gpu_ms: float, name: str = "kernel"):
        def launch() -> None:
            self.enqueue(host_ms, gpu_ms)
            self.log.append(name)
        return launch

    # the harness's Device protocol
    def event(self) -> SimEvent:
        return SimEvent(self)

    def synchronize(self) -> None:
        self.host = max(self.host, self.free)
        self.synced_to = self.host
        self.log.append("sync")

    def now(self) -> float:
        return self.host / 1e3

    def l2_bytes(self) -> int:
        return self.l2

    def flusher(self, nbytes: int):
        return self.kernel(0.005, nbytes / self.read_bytes_per_ms, "flush")

    def spin(self, ms: float) -> None:
        self.enqueue(0.003, ms)
        self.log.append("spin")


def per_call_sync(fn, gpu: SimGPU, repeat: int) -> list[float]:
    """The first careful benchmark of scenario 20: events around each call, a synchronisation after it."""
    times = []
    for _ in range(repeat):
        start, end = gpu.event(), gpu.event()
        start.record()
        fn()
        end.record()
        gpu.synchronize()
        times.append(start.elapsed_time(end))
    return times


def test_batched_samples_hold_the_kernel_not_the_launch():
    gpu = SimGPU()
    softmax = gpu.kernel(host_ms=0.040, gpu_ms=0.258)
    timing = harness.time_cuda(softmax, warmup=3, repeat=20, calls_per_sample=10, footprint_bytes=2**32, device=gpu)
    assert statistics.median(timing.times_ms) == pytest.approx(0.258, rel=0.005)
    # the trap it avoids: every synchronised single-call sample pays the 40 us launch
    other = SimGPU()
    wrong = per_call_sync(other.kernel(0.040, 0.258), other, 5)
    assert statistics.median(wrong) == pytest.approx(0.298, rel=0.01)
    # one synchronisation after the warm-up calls and one at the end: none between samples
    syncs = [i for i, what in enumerate(gpu.log) if what == "sync"]
    assert len(syncs) == 3 + 1 and syncs[-1] == len(gpu.log) - 1
    assert timing.method == {"warmup": 3, "samples": 20, "range": "timed", "l2_bytes": 60 * MIB,
                             "footprint_bytes": 2**32, "method": "batched", "calls_per_sample": 10, "l2_flush": False}


def test_only_the_first_batch_can_hold_a_launch_latency():
    gpu = SimGPU()
    timing = harness.time_cuda(gpu.kernel(0.040, 0.258), warmup=2, repeat=5, calls_per_sample=10, device=gpu)
    first, *rest = timing.times_ms
    assert first == pytest.approx(0.258 + 0.040 / 10, rel=0.01)  # the queue was empty after the warm-up
    assert all(t == pytest.approx(0.258, rel=1e-9) for t in rest)


def test_calls_per_sample_from_the_fastest_warm_up_call():
    gpu = SimGPU()
    calls = iter([5.0, 1.0, 1.0] + [1.0] * 1000)  # the first call compiles: 5 ms

    def fn() -> None:
        gpu.enqueue(0.01, next(calls))

    timing = harness.time_cuda(fn, warmup=3, repeat=4, footprint_bytes=2**33, device=gpu)
    # the fastest warm-up call took ~1.01 ms of wall time (launch + kernel): 10 ms samples hold 10 calls
    assert timing.method["calls_per_sample"] == math.ceil(harness.TARGET_SAMPLE_MS / 1.01)
    tiny = SimGPU()
    assert harness.time_cuda(tiny.kernel(0.001, 0.002), warmup=1, repeat=2, device=tiny).method[
        "calls_per_sample"] == harness.MAX_CALLS_PER_SAMPLE
    none = SimGPU()
    assert harness.time_cuda(none.kernel(0.001, 1.0), warmup=0, repeat=2, device=none).method["calls_per_sample"] == 1


@pytest.mark.parametrize(("footprint", "flushed"), [
    (10 * MIB, True),              # fits in the L2
    (600 * MIB, True),             # 10x the L2: it could still hold a tenth of the call's bytes
    (20 * 60 * MIB + 1, False),    # beyond 20x the L2: under 5% could be warm
])
def test_flush_where_the_l2_could_hold_a_share_of_the_call(footprint, flushed):
    gpu = SimGPU()
    timing = harness.time_cuda(gpu.kernel(0.01, 0.5), warmup=1, repeat=3, footprint_bytes=footprint, device=gpu)
    assert timing.method["l2_flush"] is flushed
    assert ("flush" in gpu.log) is flushed


def test_flushed_samples_leave_the_flush_out():
    gpu = SimGPU()
    kernel = gpu.kernel(host_ms=0.020, gpu_ms=0.150)
    timing = harness.time_cuda(kernel, warmup=2, repeat=10, footprint_bytes=50 * MIB, device=gpu)
    flush_ms = 4 * 60 * MIB / gpu.read_bytes_per_ms
    assert all(t == pytest.approx(0.150, rel=1e-9) for t in timing.times_ms)
    m = timing.method
    assert (m["method"], m["calls_per_sample"], m["flush_bytes"]) == ("flushed", 1, 4 * 60 * MIB)
    assert m["flush_ms"] == pytest.approx(flush_ms, rel=1e-4)
    assert m["pre_queued"] is True and m["spin_ms"] == pytest.approx(10 * harness.SPIN_MS_PER_SAMPLE, rel=0.01)
    # the GPU held while every sample is queued, a flush before each, no synchronisation between them
    timed = gpu.log[len(gpu.log) - 1 - gpu.log[::-1].index("spin"):]
    assert timed == ["spin"] + ["flush", "kernel"] * 10 + ["sync"]


def test_slow_launches_are_queued_before_the_gpu_reaches_them(capsys):
    """A launch slower than the flush and the kernel together (0.2 ms against 0.07): queued one by
    one, each sample would hold most of a launch; queued while the GPU spins, none does."""
    gpu = SimGPU()
    timing = harness.time_cuda(gpu.kernel(host_ms=0.2, gpu_ms=0.01), warmup=1, repeat=10, footprint_bytes=MIB,
                               device=gpu)
    assert timing.method["pre_queued"] is True
    assert all(t == pytest.approx(0.01, rel=1e-6) for t in timing.times_ms)
    assert capsys.readouterr().err == ""


def test_a_host_slower_than_the_spin_is_reported(capsys):
    gpu = SimGPU()
    timing = harness.time_cuda(gpu.kernel(host_ms=0.5, gpu_ms=0.01), warmup=1, repeat=10, footprint_bytes=MIB,
                               device=gpu)
    assert timing.method["pre_queued"] is False
    assert max(timing.times_ms) > 0.1  # and indeed some samples waited for their launch
    assert "a sample may hold launch latency" in capsys.readouterr().err


def test_launch_bound_steps_measure_the_host():
    """Scenario 13's lesson: 16 tiny kernels a step whose launches take longer than they run; queued
    back to back, the step costs what the host needs to launch it."""
    gpu = SimGPU()
    kernel = gpu.kernel(host_ms=0.006, gpu_ms=0.002)

    def step() -> None:
        for _ in range(16):
            kernel()

    timing = harness.time_steps(step, warmup=1, repeat=4, label="optimizer step", device=gpu)
    assert statistics.median(timing.times_ms) == pytest.approx(16 * 0.006, rel=0.05)  # and the events
    assert timing.method["calls_per_sample"] == 1 and timing.method["l2_flush"] is False


def test_a_synchronisation_inside_the_step_stays_in_its_time():
    """Scenario 14's lesson: a .item() per step drains the queue; the host's work after it runs while
    the GPU idles, and the step time holds it. Without it the host runs ahead."""
    def run(sync_inside: bool) -> float:
        gpu = SimGPU()
        work = gpu.kernel(host_ms=0.5, gpu_ms=1.0)
        host_after = gpu.kernel(host_ms=0.4, gpu_ms=0.0)

        def step() -> None:
            work()
            if sync_inside:
                gpu.synchronize()
            host_after()

        return statistics.median(harness.time_steps(step, warmup=1, repeat=5, label="epoch",
                                                    device=gpu).times_ms)

    assert run(True) == pytest.approx(1.0 + 0.4 + 0.5, rel=0.02)  # GPU, then the host's 0.9 ms, in series
    assert run(False) == pytest.approx(1.0, rel=0.02)  # the host's 0.9 ms hidden behind the 1 ms on the GPU


def test_the_result_line_keeps_the_method():
    timing = harness.Timing([2.0, 4.0, 3.0], {"method": "flushed", "l2_flush": True, "range": "layer",
                                              "footprint_bytes": 123, "calls_per_sample": 1})
    out = io.StringIO()
    with redirect_stdout(out):
        harness.emit(variant="slow", timing=timing.per(2, "token"), unit="token", rel_error=0.0, tolerance=1e-6, seed=1)
    line = json.loads(out.getvalue())
    assert line["times_ms"] == [1.0, 2.0, 1.5] and line["median_ms"] == 1.5
    assert line["timing"]["per"] == "token" and line["timing"]["per_call"] == 2
    assert (line["timer"], line["l2_flush"], line["working_set_bytes"], line["range"]) == ("cuda-events", True, 123,
                                                                                           "layer")
    with pytest.raises(TypeError, match="not both or neither"):
        harness.emit(variant="slow", times_ms=[1.0], timing=timing, unit="x", rel_error=0.0, tolerance=1.0, seed=1)
    with pytest.raises(ValueError, match="exclude each other"):
        harness.time_cuda(lambda: None, warmup=0, repeat=1, flush_l2=True, calls_per_sample=4, device=SimGPU())
