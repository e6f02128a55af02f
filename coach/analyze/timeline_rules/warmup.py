"""One-time start-up costs inside the profiled window (MEASUREMENT).

With lazy loading (the default since CUDA 12.2) a module is loaded when one of its kernels is first
launched: the driver's ``cuLibraryLoadData``/``cuModuleLoad*`` calls, or a first launch call that
takes milliseconds instead of microseconds. A kernel compiled while the program runs (Triton,
TorchInductor, NVRTC through CuPy) is compiled on the host first, then loaded from memory with
``cuModuleLoadData``: that compilation is one-time host work as well. A profile that starts before
the program is warm measures those one-time costs as if they were part of every step, and the GPU
sits idle while they run. They are the measurement's problem, not the program's: the other rules set
them aside.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis, derived, merge_intervals
from coach.analyze.timeline_rules._shared import (LAUNCH_LATENCY_NS, largest_group, ns, reportable,
                                                  share_pct, within_window)

SPEC = RuleSpec(
    id="warmup-in-profile",
    name="One-time start-up costs inside the profile",
    category=Bottleneck.MEASUREMENT,
    table="api",
    requires=("name", "start_ns", "end_ns"),
    optional=("kernels.correlation_id",),
    doc="Module loading and slow first launches measured inside the profiled window.",
)

LOADING_CALLS = r"^(cu(Module|Library)Load|hipModuleLoad)"
# Code compiled at run time reaches the driver as an image in memory: Triton's launcher
# (backends/nvidia/driver.c), CuPy's RawModule and ElementwiseKernel (NVRTC) and TorchInductor (through
# Triton) load it with cuModuleLoadData(Ex). Kernels built ahead of time (PyTorch's own, cuBLAS) are
# registered fat binaries that lazy loading brings in with cuLibraryLoadData instead. Under Nsight
# Systems 2025.3 the loads of Triton 3.6's kernels (torch 2.11's Inductor, on the H200:
# tests/data/wild_nsys/compile_*.sqlite) are named cuModuleLoad, the load of a module file: code
# loaded from a file at run time, not a registered fat binary, is run-time code as well.
RUN_TIME_LOAD_CALLS = r"^(cu|hip)ModuleLoad(Data(Ex)?)?$"
COMPILE = "compiling before cuModuleLoadData"
# torch.compile's own phases, which the PyTorch profiler records as host ranges (torch/_dynamo's
# dynamo_timed): "entire_frame_compile" around a frame's whole compilation, "<step> (dynamo_timed)"
# inside it. A trace that starts before the first call holds them (tests/data/wild_kineto/
# compile_from_start.json.gz: 3.24 s of entire_frame_compile under torch 2.11); a warm one does not.
COMPILE_RANGES = r"^(entire_frame_compile|_compile\.compile_inner( \(dynamo_timed\))?)$"
TORCH_COMPILE = "torch.compile (Dynamo and Inductor)"

# A launch call ten times the steady-state cost (one launch latency, ~10 us on the H200) is not
# launch overhead. On a kernel's first launch it is module loading: the H200 recordings show first
# launches of 0.84-10.3 ms (tests/data/nsys_torch_softmax) and 8.96 ms (kineto_torch_softmax).
SLOW_FIRST_LAUNCH_NS = 10 * LAUNCH_LATENCY_NS


@derived
def one_time_calls(a: TimelineAnalysis) -> pl.DataFrame:
    """Module-loading calls, run-time compilation and slow first launches of each kernel: ``pid,
    tid, start_ns, end_ns, name``."""
    loads = (
        a.timeline.api.filter(a.api_matching(LOADING_CALLS))
        .select("pid", "tid", "start_ns", "end_ns", "name")
    )
    first_launches = (
        a.launches.sort("api_start_ns")
        .filter(pl.struct("pid", "name").is_first_distinct() & (pl.col("launch_ns") >= SLOW_FIRST_LAUNCH_NS))
        .select("pid", "tid", start_ns="api_start_ns", end_ns="api_end_ns", name="api_name")
    )
    nvtx = a.timeline.nvtx
    compiling = (nvtx.filter(pl.col("text").str.contains(COMPILE_RANGES))
                 .select("pid", "tid", "start_ns", "end_ns", name=pl.lit(TORCH_COMPILE))
                 if nvtx.height and "text" in nvtx.columns else loads.clear())
    return pl.concat([loads, run_time_compilation(a), first_launches, compiling], how="vertical_relaxed").sort("start_ns")


def run_time_compilation(a: TimelineAnalysis) -> pl.DataFrame:
    """For each load of run-time compiled code (``RUN_TIME_LOAD_CALLS``), the host time around it on
    its thread between the last call that issued GPU work before it and the first one after it: the
    compiler ran there (and the launcher was built), with no GPU work issued meanwhile. ``pid, tid,
    start_ns, end_ns, name``; a load with no issuing call before (after) it starts (ends) there."""
    loads = a.timeline.api.filter(a.api_matching(RUN_TIME_LOAD_CALLS)).select(
        "pid", "tid", "start_ns", "end_ns")
    if loads.is_empty():
        return pl.DataFrame(schema={"pid": pl.Int64, "tid": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
                                    "name": pl.Utf8})
    issuing = (
        a.issued  # with_launch_call(a.work, a.timeline.api), shared
        .select("pid", "tid", call_start_ns="api_start_ns", call_end_ns="api_end_ns")
        .unique()
        .filter(pl.col("tid").is_not_null())
    )
    before = issuing.select("pid", "tid", "call_end_ns").sort("call_end_ns")
    after = issuing.select("pid", "tid", "call_start_ns").sort("call_start_ns")
    return (
        loads.sort("start_ns")
        .join_asof(before, left_on="start_ns", right_on="call_end_ns", by=["pid", "tid"], strategy="backward",
                   check_sortedness=False)  # each side sorted by time; within a thread too
        .sort("end_ns")
        .join_asof(after, left_on="end_ns", right_on="call_start_ns", by=["pid", "tid"], strategy="forward",
                   check_sortedness=False)
        .select("pid", "tid", start_ns=pl.coalesce("call_end_ns", "start_ns"),
                end_ns=pl.coalesce("call_start_ns", "end_ns"), name=pl.lit(COMPILE))
    )


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    calls = one_time_calls(a)
    if calls.is_empty():
        return []
    # a runtime launch and the driver load inside it count once
    # per process, the largest: the processes of a multi-rank trace load their modules side by side
    saving_ns = within_window(largest_group(merge_intervals(calls, ["pid", "tid"]), "pid", "dur_ns")[0], a.window_ns)
    if not reportable(saving_ns, a.window_ns):
        return []
    return [_finding(a, calls, saving_ns)]


def start_up(a: TimelineAnalysis, steady: Any) -> list[Finding]:
    """The one-time work of a whole-program capture outside its steady window (``steady``, a
    ``coach.analyze.timeline_rules._steady.SteadyWindow``), reported apart from the window's findings:
    it makes no step faster, so it carries no saving and ranks after them."""
    calls = one_time_calls(a)
    bounds = steady.windows.select("pid", _lo="start_ns", _hi="end_ns")
    outside = (calls.join(bounds, on="pid", how="left", nulls_equal=True, maintain_order="left")
               .filter(pl.col("_lo").is_null() | (pl.col("end_ns") <= pl.col("_lo")) | (pl.col("start_ns") >= pl.col("_hi")))
               .drop("_lo", "_hi"))
    one_time_ns = largest_group(merge_intervals(outside, ["pid", "tid"]), "pid", "dur_ns")[0] if outside.height else 0.0
    return [_finding(a, outside, one_time_ns, steady)]


def steady_sentence(steady: Any) -> str:
    """"Steady window: 20 steps, 28.0 ms (NVTX ranges 'gemm#'); 274 ms of start-up before it and 154 ms after
    it left out", as the findings of a cropped capture and the start-up finding say it."""
    steps = f"{steady.steps} steps, " if steady.steps else ""
    procs = steady.windows.height
    where = f"{steady.source}" + (f", {procs} processes each in its own" if procs > 1 else "")
    after = f" and {ns(steady.after_ns)} after it" if steady.after_ns > 0 else ""
    n = steady.warm_steps
    warm = (f" (with the first {n} step{'s' if n > 1 else ''}, for the one-time work {'they hold' if n > 1 else 'it holds'})"
            if n else "")
    return (f"Steady window: {steps}{ns(steady.dur_ns)} ({where}); {ns(steady.before_ns)} of start-up before it{warm}"
            f"{after} left out")


def _finding(a: TimelineAnalysis, calls: pl.DataFrame, saving_ns: float, steady: Any = None) -> Finding:
    calls = calls.with_columns(dur_ns=pl.col("end_ns") - pl.col("start_ns"))
    durations = calls["dur_ns"]
    by_name = calls.group_by("name").agg(n=pl.len(), ns=pl.col("dur_ns").sum()).sort("ns", descending=True)
    names = ", ".join(f"{n} x {name} ({ns(t)})" for name, n, t in by_name.iter_rows())
    compile_ns = int(calls.filter(pl.col("name").is_in([COMPILE, TORCH_COMPILE]))["dur_ns"].sum())
    what = "compilation and module loading" if compile_ns else "module loading"
    if steady is not None:
        lead = (f"{steady_sentence(steady)}, reported here as one-time work; the other findings are of the steady "
                f"window. The start-up holds " + (f"{names}: {ns(saving_ns)} of one-time {what}" if calls.height
                                                  else "no module loading or compilation coach can see") + ".")
        return Finding(
            rule_id=SPEC.id,
            category=SPEC.category,
            title=f"Start-up left out of the steady window: {ns(steady.before_ns)}"
                  + (f", {ns(saving_ns)} of it one-time {what}" if calls.height else ""),
            message=(lead + " It is paid once per run: no step gets faster without it, so it saves nothing in the "
                     "steady window; it matters for a short run's wall time only."),
            next_step=("Judge the loop by the steady window's findings. To shorten the start-up itself: cache compiled "
                       "kernels (TORCHINDUCTOR_CACHE_DIR, Triton's cache), load fewer modules (CUDA_MODULE_LOADING=LAZY, "
                       "the default since CUDA 12.2), and profile the loop alone with cudaProfilerStart/Stop and nsys "
                       "--capture-range=cudaProfilerApi."),
            evidence=(
                Evidence("start_up_ns", steady.before_ns, "ns", healthy="outside the steady window",
                         source=a.timeline.source.tool),
                Evidence("one_time_ns", saving_ns, "ns", healthy="0 inside the profiled steady state",
                         source=a.timeline.source.tool),
                Evidence("module_load_calls", int(by_name.filter(pl.col("name").str.contains(LOADING_CALLS))["n"].sum()),
                         "calls", healthy="0 after warm-up", source=a.timeline.source.tool),
                Evidence("run_time_compile_ns", compile_ns, "ns", healthy="0: kernels compiled (or loaded from the "
                         "compiler's cache) before the measured region", source=a.timeline.source.tool),
            ),
            scope="start-up",
            gain_model="none in the steady window: one-time work outside it; the steady state does not get faster",
            details={"calls": by_name.to_dicts(), "steady_window": steady_details(steady)},
        )
    return Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"The profile includes {ns(saving_ns)} of one-time {what}",
        message=(f"The profiled window includes one-time start-up work: {names}; {ns(saving_ns)} in all "
                 f"({share_pct(saving_ns, a.window_ns):.1f}% of the {ns(a.window_ns)} window). With lazy loading the first "
                 "launch of each kernel loads its module"
                 + ("; a kernel compiled at run time (Triton, torch.compile, NVRTC) is compiled on the host before its "
                    "module is loaded" if compile_ns else "")
                 + "; the GPU waits meanwhile, and a step that contains it is not a steady-state step."),
        next_step=("Warm up before measuring: run a few iterations first and profile after them (torch.profiler "
                   "schedule(wait=1, warmup=1, active=3), or cudaProfilerStart() after warm-up with nsys "
                   "--capture-range=cudaProfilerApi); time only steady-state iterations."),
        evidence=(
            Evidence("one_time_ns", saving_ns, "ns", healthy="0 inside the profiled steady state",
                     source=a.timeline.source.tool),
            Evidence("module_load_calls", int(by_name.filter(pl.col("name").str.contains(LOADING_CALLS))["n"].sum()),
                     "calls", healthy="0 after warm-up", source=a.timeline.source.tool),
            Evidence("longest_one_time_call_ns", float(durations.max()), "ns",
                     healthy=f"launch calls near one launch latency ({ns(LAUNCH_LATENCY_NS)})", threshold=SLOW_FIRST_LAUNCH_NS,
                     source=a.timeline.source.tool),
            Evidence("run_time_compile_ns", compile_ns, "ns", healthy="0: kernels compiled (or loaded from the "
                     "compiler's cache) before the measured region", source=a.timeline.source.tool),
        ),
        scope="timeline",
        estimated_gain_pct=share_pct(saving_ns, a.window_ns),
        estimated_saving_ns=saving_ns,
        gain_model=("time in module loading, run-time compilation and slow first launches, merged per host thread: "
                    "warming up moves it out of the measured region; the program's steady state does not get faster"),
        details={"calls": by_name.to_dicts()},
    )


def steady_details(steady: Any) -> dict[str, Any]:
    return {"source": steady.source, "steps": steady.steps, "warm_steps": steady.warm_steps, "start_ns": steady.start_ns, "end_ns": steady.end_ns,
            "dur_ns": steady.dur_ns, "start_up_ns": steady.before_ns, "after_ns": steady.after_ns,
            "capture_ns": steady.capture[1] - steady.capture[0], "processes": steady.windows.to_dicts()}
