"""What speed-up should a fix give? One gain model per bottleneck class, from the two profiles.

A bytes model (time follows DRAM bytes) cannot see a tail, divergence, idle tensor cores, launch or
host overhead, or serialised atomics: each class has its own first-principles model, named by the
fix in ``fixes.toml`` (``gain = "..."``) and computed here from the before profile and the fix's
design as the after profile shows it (its grid, its active lanes, its pipe, its occupancy limit).
``coach diff --talk`` and the exercises' "what speed-up do you expect?" both call ``estimate``, so
they give the same number for the same recordings.

Models (``MODELS``), each stated in words in its ``how``:

- ``bytes``: a bandwidth-bound kernel's time follows its DRAM bytes: bytes before / bytes after,
  capped by ``floor``.
- ``floor``: the fix removes what kept the kernel from its roof (conflicts, spills, serialised
  atomics, too few bytes in flight): at best the fixed kernel runs at its floor (its DRAM bytes at
  the measured ceiling, its FLOPs at the arithmetic ceilings): time before / floor after.
- ``waves``: with equal blocks a partial last wave costs a whole one: time per unit of work is
  ceil(waves) / waves; the ratio before / after.
- ``active-lanes``: a warp instruction costs the same with 4 lanes active as with 32: active lanes
  after / before, capped by ``floor``.
- ``pipe-peaks``: the same FLOPs on a faster pipe: the tensor-core rate over the FMA pipe's
  (measured ceilings, TF32 for FP32 inputs), capped by ``floor``.
- ``latency-hiding``: more resident warps hide more memory latency (Little's law): theoretical
  occupancy after / before, capped by ``floor``; an upper bound, since latency grows under load.
- ``batch``: one read of the weights serves a batch of B requests: B per call, for a call that stays
  bandwidth-bound (B x min(1, time before / floor after)); needs B.
- ``copy-rate``: copies from pinned memory run at the link's rate: the copy time at the PCIe rate
  instead of the pageable rate, added to the kernels' (or overlapped with them, where the after
  timeline overlaps its copies).
- ``overlap``: copies behind compute: (copies + kernels) / max(copies, kernels).
- ``host-sync``: without syncs, the host and the GPU overlap: window / max(GPU busy, host time
  outside the syncs).
- ``launch-overhead``: a launch-bound loop takes launches x launch cost: max(launches x cost, kernel
  time) before over after, with the GPU's measured launch latency.
- ``allocator``: the allocation calls leave the loop: window / (window - time in them).
- ``input-pipeline``: W workers prepare the input in parallel: the GPU's wait on the host's own
  work falls to 1/W of it: window / (window - host-work idle x (1 - 1/W)); needs W (without it,
  the bound of removing that wait entirely).
- ``amdahl``: the fix removes one part of the window (its ``saves`` component): window / (window - part).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import polars as pl

from coach.analyze.diff import PROFILE_PAIR, Diff, Fix, fixes
from coach.analyze.hardware import Ceilings, ceilings
from coach.analyze.kernel_metrics import WARP_SIZE, with_derived
from coach.analyze.kernel_rules._common import fmt_bytes, fmt_count, fmt_time
from coach.analyze.quantities import Waves, fmt_waves, gpu_of, kernel_floor
from coach.model import KernelProfile, Profile

#: Speed-up bands (upper bounds) for "what speed-up do you expect?": wide enough that a model and a
#: measurement of the same fix land in the same one, narrow enough that a wrong factor of 2-3 does not.
BANDS: tuple[tuple[float, str], ...] = ((1.2, "no real gain (under 1.2x)"), (2.0, "1.2x to 2x"), (5.0, "2x to 5x"),
                                        (20.0, "5x to 20x"), (math.inf, "more than 20x"))


def band(speedup: float) -> int:
    """The index of the band in ``BANDS`` that holds ``speedup``."""
    return next(i for i, (upper, _) in enumerate(BANDS) if speedup < upper)


@dataclass(frozen=True)
class GainEstimate:
    """A gain model's prediction: ``speedup`` (None where the model lacks an input), whether it is an
    ``upper_bound``, ``how`` (the working, with its numbers), and ``check``: what the after profile
    shows of the model's assumption (how far the fixed version is from its floor, the latency it
    met), the numbers to look at when the measurement misses the model."""

    model: str
    fix: str
    speedup: float | None
    how: str
    upper_bound: bool = False
    check: str = ""
    inputs: Mapping[str, float] = field(default_factory=dict)

    @property
    def band(self) -> int | None:
        return None if self.speedup is None else band(self.speedup)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "fix": self.fix, "speedup": self.speedup, "upper_bound": self.upper_bound,
                "how": self.how, "check": self.check, "inputs": dict(self.inputs)}


@dataclass
class _Case:
    d: Diff
    fix: Fix
    before: Profile
    after: Profile
    params: Mapping[str, float]

    def value(self, metric: str) -> tuple[float | None, float | None]:
        return self.d.values.get(metric, (None, None))

    # -- kernels: the headline pair's launch rows and the GPU's ceilings

    @functools.cached_property
    def rows(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The headline pair's before and after launch rows (``with_derived``); None for timelines and
        for a diff judged on the whole profile."""
        if self.d.kind != "kernel-profile" or self.d.pairs.is_empty() or self.d.headline.get("pair") == PROFILE_PAIR:
            return None, None
        pair = self.d.pairs.filter(pl.col("pair") == self.d.headline["pair"]).row(0, named=True)
        b, a = self.before, self.after
        assert isinstance(b, KernelProfile) and isinstance(a, KernelProfile)
        wb = with_derived(b.launches.filter(pl.col("launch_id") == pair["launch_id_before"]), b.devices)
        wa = with_derived(a.launches.filter(pl.col("launch_id") == pair["launch_id_after"]), a.devices)
        return wb.row(0, named=True), wa.row(0, named=True)

    @property
    def roofs(self) -> Ceilings | None:
        gpu = gpu_of(self.after.devices) or gpu_of(self.before.devices)
        return ceilings(gpu, True) if gpu is not None else None

    def floor_bound(self) -> tuple[float | None, str]:
        """Time before over the after kernel's floor (its DRAM bytes, FLOPs and special-function
        instructions at their ceilings): the most any fix that keeps the after kernel's work can give."""
        rb, ra = self.rows
        if rb is None or ra is None or not rb.get("duration_ns"):
            return None, ""
        gpu = gpu_of(self.after.devices)
        f = kernel_floor(ra, gpu, getattr(self.after, "metrics", None), bytes_from="dram")
        if f is None or not f.seconds:
            return None, ""
        s = rb["duration_ns"] * 1e-9 / f.seconds
        return s, (f"at best the fixed kernel runs at its floor, {fmt_time(f.seconds * 1e9)} ({f.dominant.text}): "
                   f"{fmt_time(rb['duration_ns'])} / {fmt_time(f.seconds * 1e9)} = {s:.3g}x")

    def after_vs_floor(self) -> str:
        rb, ra = self.rows
        if ra is None:
            return ""
        f = kernel_floor(ra, gpu_of(self.after.devices), getattr(self.after, "metrics", None), bytes_from="dram")
        if f is None or f.pct_of_floor is None:
            return ""
        return f"the fixed kernel runs at {f.pct_of_floor:.0f}% of its floor's speed ({f.dominant.name} bound)"


def _capped(c: _Case, model: str, s: float | None, how: str, *, upper: bool = False, check: str = "",
            inputs: Mapping[str, float] | None = None) -> GainEstimate:
    bound, bound_how = c.floor_bound()
    if s is not None and bound is not None and bound < s:
        how = f"{how}; capped by the floor: {bound_how}"
        s, upper = bound, True
    return GainEstimate(model, c.fix.id, s, how, upper, check or c.after_vs_floor(), dict(inputs or {}))


# --------------------------------------------------------------------------------------------
# Kernel models
# --------------------------------------------------------------------------------------------


def _bytes(c: _Case) -> GainEstimate:
    metric = "total_dram_bytes" if c.fix.scope == "profile" else "dram_bytes"
    b, a = c.value(metric)
    if not b or not a:
        return GainEstimate("bytes", c.fix.id, None, "the profiles lack the DRAM bytes to predict from")
    s = b / a
    how = (f"a bandwidth-bound kernel's time follows its DRAM bytes: {fmt_bytes(b)} -> {fmt_bytes(a)}, "
           f"{s:.3g}x fewer")
    if c.fix.scope == "profile":
        return GainEstimate("bytes", c.fix.id, s, how, check="", inputs={"bytes_before": b, "bytes_after": a})
    return _capped(c, "bytes", s, how, inputs={"bytes_before": b, "bytes_after": a})


def _floor(c: _Case) -> GainEstimate:
    s, how = c.floor_bound()
    if s is None:
        return GainEstimate("floor", c.fix.id, None, "the after profile lacks the counts to put a floor under it")
    return GainEstimate("floor", c.fix.id, s, f"the fix removes what kept the kernel from its roof; {how}", True,
                        c.after_vs_floor())


def _waves(c: _Case) -> GainEstimate:
    wb, wa = c.value("waves_per_sm")
    if not wb or not wa:
        return GainEstimate("waves", c.fix.id, None, "the profiles lack the waves per SM")
    cost_b, cost_a = math.ceil(wb - 1e-12) / wb, math.ceil(wa - 1e-12) / wa
    s = cost_b / cost_a
    how = (f"with equal blocks a partial last wave costs a whole one, so the time per unit of work goes as "
           f"ceil(waves)/waves: {fmt_waves(wb)} waves cost {cost_b:.3g}, {fmt_waves(wa)} waves {cost_a:.3g}: "
           f"{s:.3g}x")
    rb, _ = c.rows
    last = Waves(wb, (rb or {}).get("grid_size"))
    blocks = last.blocks_in_last
    alone = f"{blocks} block{'s' if blocks != 1 else ''}" if blocks is not None else "a few blocks"
    check = (f"the model assumes blocks of equal length; in the slow grid the last wave is {alone} on an otherwise "
             f"idle GPU, and a block with its SM to itself runs faster than in a full wave, so the tail costs less "
             f"than a whole wave")
    return GainEstimate("waves", c.fix.id, s, how, True, check, {"waves_before": wb, "waves_after": wa})


def _lanes(c: _Case) -> GainEstimate:
    lb, la = c.value("thread_inst_per_warp_inst")
    if not lb:
        return GainEstimate("active-lanes", c.fix.id, None, "the profiles lack the active threads per instruction")
    la = la or float(WARP_SIZE)
    s = la / lb
    how = (f"a warp instruction takes the same issue slot with {lb:.1f} lanes active as with {la:.1f}: the same work "
           f"in {lb:.1f}/{la:.1f} of the instructions, {s:.3g}x")
    return _capped(c, "active-lanes", s, how, upper=True, inputs={"lanes_before": lb, "lanes_after": la})


def _pipes(c: _Case) -> GainEstimate:
    roofs = c.roofs
    rb, ra = c.rows
    if roofs is None or rb is None:
        return GainEstimate("pipe-peaks", c.fix.id, None, "no GPU ceilings to compare the pipes with")
    fp16 = (rb.get("fp16_inst") or 0) > (rb.get("fp32_inst") or 0)
    simt, tensor = ("fp16_simt", "fp16") if fp16 else ("fp32", "tf32")
    slow_rate, fast_rate = roofs.compute[simt], roofs.compute[tensor]
    if not slow_rate.value or not fast_rate.value:
        return GainEstimate("pipe-peaks", c.fix.id, None, f"the GPU's table lacks the {simt} or {tensor} rate")
    s = fast_rate.value / slow_rate.value
    how = (f"the same FLOPs on the tensor cores instead of the FMA pipe: {tensor.upper()} at "
           f"{fast_rate.value / 1e12:.3g} TFLOP/s against {simt.upper().replace('_SIMT', '')} at "
           f"{slow_rate.value / 1e12:.3g} TFLOP/s ({fast_rate.origin} ceilings): {s:.3g}x")
    return _capped(c, "pipe-peaks", s, how, inputs={"rate_before": slow_rate.value, "rate_after": fast_rate.value})


def _latency(c: _Case) -> GainEstimate:
    ob, oa = c.value("theoretical_occupancy_pct")
    if not ob or not oa:
        return GainEstimate("latency-hiding", c.fix.id, None, "the profiles lack the theoretical occupancy")
    s = oa / ob
    rb, ra = c.rows
    warps = (rb or {}).get("device_max_warps_per_sm")
    in_warps = (f"{ob / 100 * warps:.0f} -> {oa / 100 * warps:.0f} warps per SM" if warps
                else f"{ob:.1f}% -> {oa:.1f}% of the warp slots")
    how = (f"a latency-bound kernel's throughput goes as the warps that hide the latency (Little's law): "
           f"{in_warps}, {s:.3g}x, if each warp waits as long as before")
    lat_b, lat_a = c.value("stall_long_scoreboard")
    check = ""
    if lat_b and lat_a:
        check = (f"the wait per instruction on memory (long scoreboard) went {lat_b:.1f} -> {lat_a:.1f} cycles as "
                 f"more warps queued requests: corrected for it the warps give {s * lat_b / lat_a:.3g}x")
    return _capped(c, "latency-hiding", s, how, upper=True, check=check, inputs={"occupancy_before": ob, "occupancy_after": oa})


def _batch(c: _Case) -> GainEstimate:
    batch = c.params.get("batch")
    if not batch:
        return GainEstimate("batch", c.fix.id, None, "the batch size is not in the profiles: the speed-up per request "
                            "is the batch size, for a call that stays bandwidth-bound")
    rb, ra = c.rows
    bound, _ = c.floor_bound()
    share = min(1.0, bound) if bound is not None else 1.0
    s = batch * share
    how = (f"one read of the weights serves {batch:.0f} requests instead of one; the batched call reads the same "
           f"{fmt_bytes((ra or {}).get('dram_bytes'))}, so it takes about as long as the single one did"
           + (f" (at best {share:.2f} of it, its floor)" if share < 1 else "") + f": {s:.3g}x per request")
    return GainEstimate("batch", c.fix.id, s, how, True, c.after_vs_floor(), {"batch": batch})


# --------------------------------------------------------------------------------------------
# Timeline models
# --------------------------------------------------------------------------------------------


def _pcie(c: _Case) -> tuple[float | None, str]:
    gpu = gpu_of(c.after.devices) or gpu_of(c.before.devices)
    if gpu is None or not gpu.pcie_bytes_per_s_per_direction:
        return None, ""
    return float(gpu.pcie_bytes_per_s_per_direction), gpu.source("pcie_bytes_per_s_per_direction").describe()


def _copy_rate(c: _Case) -> GainEstimate:
    (copy_b, _), (kern_b, _) = c.value("memcpy_ns"), c.value("kernel_ns")
    (rate_b, _), (_, overlap_a) = c.value("memcpy_bytes_per_s"), c.value("copy_compute_overlap_pct")
    link, src = _pcie(c)
    if not copy_b or not rate_b or link is None:
        return GainEstimate("copy-rate", c.fix.id, None, "the timeline lacks the copy rate or the GPU its PCIe rate")
    copy_a = copy_b * rate_b / link
    overlapped = (overlap_a or 0.0) >= 50.0
    after = max(copy_a, kern_b or 0.0) if overlapped else copy_a + (kern_b or 0.0)
    s = (copy_b + (kern_b or 0.0)) / after
    how = (f"pinned copies run at the link's rate: {rate_b / 1e9:.3g} GB/s from pageable memory, {link / 1e9:.3g} GB/s "
           f"over PCIe ({src}): the copies' {fmt_time(copy_b)} become {fmt_time(copy_a)}, "
           + (f"overlapped with the kernels' {fmt_time(kern_b)} (the fixed run overlaps its copies)" if overlapped
              else f"in series with the kernels' {fmt_time(kern_b)}")
           + f": {s:.3g}x on copies and kernels")
    return GainEstimate("copy-rate", c.fix.id, s, how, True, "", {"copy_ns": copy_b, "kernel_ns": kern_b or 0.0})


def _overlap(c: _Case) -> GainEstimate:
    (copy_b, _), (kern_b, _) = c.value("memcpy_ns"), c.value("kernel_ns")
    if not copy_b or not kern_b:
        return GainEstimate("overlap", c.fix.id, None, "the timeline has no copies or no kernels to overlap")
    s = (copy_b + kern_b) / max(copy_b, kern_b)
    how = (f"copies behind compute: {fmt_time(copy_b)} of copies and {fmt_time(kern_b)} of kernels in series take their "
           f"sum, overlapped the larger: {s:.3g}x at most")
    return GainEstimate("overlap", c.fix.id, s, how, True, "", {"copy_ns": copy_b, "kernel_ns": kern_b})


def _host_sync(c: _Case) -> GainEstimate:
    (window, _), (busy_pct, _), (sync, _) = c.value("window_ns"), c.value("gpu_busy_pct"), c.value("sync_ns")
    if not window or busy_pct is None or sync is None:
        return GainEstimate("host-sync", c.fix.id, None, "the timeline lacks the window, GPU busy time or sync time")
    busy = window * busy_pct / 100.0
    host = window - sync
    s = window / max(busy, host)
    how = (f"without the syncs the host runs ahead and the GPU works while the host prepares the next step: the "
           f"{fmt_time(window)} window shrinks to the longer of the GPU's {fmt_time(busy)} and the host's "
           f"{fmt_time(host)} outside the syncs: {s:.3g}x")
    return GainEstimate("host-sync", c.fix.id, s, how, False, "", {"window_ns": window, "sync_ns": sync})


def _launches(c: _Case) -> GainEstimate:
    (lb, la), (kb, ka) = c.value("launch_calls"), c.value("kernel_ns")
    roofs = c.roofs
    latency = roofs.launch.get("stream") if roofs is not None else None
    if not lb or not la or kb is None or ka is None:
        return GainEstimate("launch-overhead", c.fix.id, None, "the timelines lack the launch calls or kernel time")
    window, _ = c.value("window_ns")
    cost = latency.value if latency is not None and latency.value else (window / lb if window else None)
    if not cost:
        return GainEstimate("launch-overhead", c.fix.id, None, "no launch cost to count with")
    what = (f"{cost * 1e6:.3g} us per launch ({latency.origin})" if latency is not None
            else f"{cost * 1e6:.3g} us per launch (the before window over its launches)")
    t_b, t_a = max(lb * cost * 1e9, kb), max(la * cost * 1e9, ka)
    s = t_b / t_a
    how = (f"a launch-bound loop takes its launches times the launch cost, {what}: {fmt_count(lb)} launches "
           f"({fmt_time(t_b)}) -> {fmt_count(la)} ({fmt_time(t_a)}), or the kernels' own time where that is longer: {s:.3g}x")
    window_a = c.value("window_ns")[1]
    check = (f"the fixed run spends {fmt_time(window_a / la)} of host time per launch, against the "
             f"{cost * 1e6:.3g} us of an empty launch" if window_a else "")
    return GainEstimate("launch-overhead", c.fix.id, s, how, False, check, {"launches_before": lb, "launches_after": la})


def _amdahl_part(c: _Case, model: str, metric: str, words: str) -> GainEstimate:
    (window, _), (part, _) = c.value("window_ns"), c.value(metric)
    if not window or part is None:
        return GainEstimate(model, c.fix.id, None, f"the timeline lacks the {words}")
    s = window / (window - part) if part < window else math.inf
    how = (f"the fix removes the {words}, {fmt_time(part)} of the {fmt_time(window)} window (Amdahl's law): {s:.3g}x")
    return GainEstimate(model, c.fix.id, s, how, False, "", {"window_ns": window, "part_ns": part})


def _allocator(c: _Case) -> GainEstimate:
    return _amdahl_part(c, "allocator", "alloc_ns", "time in allocation and free calls")


def _amdahl(c: _Case) -> GainEstimate:
    metric = c.fix.saves or "gpu_idle_ns"
    from coach.analyze.diff.metrics import TIMELINE_METRICS  # noqa: PLC0415

    return _amdahl_part(c, "amdahl", metric, TIMELINE_METRICS.get(metric, (metric, ""))[0])


def _input(c: _Case) -> GainEstimate:
    (window, _), (idle, _) = c.value("window_ns"), c.value("idle_host_ns")
    if not window or idle is None:
        return GainEstimate("input-pipeline", c.fix.id, None, "the timeline lacks the GPU's idle time")
    workers = c.params.get("workers")
    cut = idle * (1 - 1 / workers) if workers else idle
    s = window / (window - cut) if cut < window else math.inf
    share = f"{workers:.0f} workers cut it to 1/{workers:.0f}" if workers else "removing it entirely"
    how = (f"the GPU waits {fmt_time(idle)} of the {fmt_time(window)} window while the host builds batches; "
           f"{share}: {s:.3g}x")
    return GainEstimate("input-pipeline", c.fix.id, s, how, True, "", {"window_ns": window, "idle_host_ns": idle})


MODELS: dict[str, Callable[[_Case], GainEstimate]] = {
    "bytes": _bytes, "floor": _floor, "waves": _waves, "active-lanes": _lanes, "pipe-peaks": _pipes,
    "latency-hiding": _latency, "batch": _batch, "copy-rate": _copy_rate, "overlap": _overlap, "host-sync": _host_sync,
    "launch-overhead": _launches, "allocator": _allocator, "amdahl": _amdahl, "input-pipeline": _input,
}


def estimate(d: Diff, before: Profile, after: Profile, fix: str | None = None,
             params: Mapping[str, float] | None = None) -> GainEstimate | None:
    """The gain model's prediction for ``fix`` (default: the fix the diff credits) on these two
    profiles; None where no fix is credited, the profiles are not comparable, or the fix has no
    gain model. ``params`` gives what profiles cannot (``batch``, ``workers``)."""
    if d.not_comparable:
        return None
    fix_id = fix or d.credited
    if fix_id is None or fix_id not in fixes():
        return None
    fx = fixes()[fix_id]
    if fx.gain is None or fx.gain not in MODELS:
        return None
    return MODELS[fx.gain](_Case(d, fx, before, after, dict(params or {})))


__all__ = ["BANDS", "MODELS", "GainEstimate", "band", "estimate"]
