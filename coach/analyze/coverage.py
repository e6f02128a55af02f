"""What a timeline is missing that its own records say should be there.

A trace can be readable and still incomplete: the runtime calls that launch kernels are there, but the
GPU records of those kernels are not (CUPTI's activity buffers were not flushed, GPU tracing was off,
or the profiler stopped before the work completed); or a table of a layout coach does not know was
left out. Every rule and summary over such a trace would be silently wrong about the GPU, so this is
said first, in one sentence each, by ``coach load`` and by the diagnosis (as a not-checked note).

    from coach.analyze.coverage import timeline_gaps
    for sentence in timeline_gaps(timeline): ...
"""

from __future__ import annotations

import polars as pl

from coach.model import Timeline

#: Calls that put work on the GPU (runtime, driver and HIP names, as nsys and Kineto record them). One
#: of them without any GPU record means the GPU side of the trace is missing.
GPU_WORK_CALLS = (r"^(cuda|hip)(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|Memcpy|Memset|ModuleLaunchKernel"
                  r"|ExtModuleLaunchKernel|ExtLaunchKernel)|^cu(LaunchKernel|LaunchCooperativeKernel|GraphLaunch"
                  r"|Memcpy|Memset)")


def api_without_gpu_records(tl: Timeline) -> bool:
    """The trace has CUDA API calls but not one kernel, copy or memset record."""
    return tl.api.height > 0 and tl.kernels.height + tl.memcpy.height + tl.memset.height == 0


def no_gpu_activity(source_format: str) -> str:
    """What a timeline without one GPU record says, in the words of the profiler that wrote it: nsys's
    --trace flag for an Nsight Systems export, torch.profiler's activities for a PyTorch trace (a trace
    of CPU operators alone: profiled without ProfilerActivity.CUDA, or on a machine without a GPU)."""
    if source_format == "kineto-json":
        return ("No GPU activity recorded: the trace holds CPU operators only (was it profiled with "
                "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], on a machine with a GPU?)")
    return "No GPU activity recorded (was it profiled with --trace=cuda?)"


def timeline_gaps(tl: Timeline) -> list[str]:
    """One sentence per way ``tl`` is incomplete; empty for a complete trace."""
    out = []
    if api_without_gpu_records(tl):
        issued = tl.api.filter(pl.col("name").fill_null("").str.contains(GPU_WORK_CALLS)).height
        out.append(f"The trace holds {tl.api.height:,} CUDA API calls ({issued:,} of them launches or copies) but no "
                   "kernel, copy or memset records: the GPU side was not captured (GPU tracing off, or its activity "
                   "buffers not flushed before the profiler stopped), so nothing about the GPU can be measured; "
                   "profile again with nsys --trace=cuda, or torch.profiler with ProfilerActivity.CUDA, and let the "
                   "program synchronise before the profile ends.")
    for table, why in dict(tl.source.meta.get("unread", {})).items():
        out.append(f"The {table} table was left out: {why}; an export layout coach does not know.")
    if tl.source.meta.get("schema_newer"):
        out.append(str(tl.source.meta["schema_newer"]))
    for table, what in dict(tl.source.meta.get("assumed", {})).items():
        out.append(f"The export's {table} {what}, and the kinds read from it may be wrong.")
    return out
