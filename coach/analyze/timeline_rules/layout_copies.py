"""Hidden layout copies: GPU time spent only rearranging memory (MEMORY_ACCESS).

A non-contiguous tensor (after ``transpose``, ``permute``, slicing, or a channels-last/first
mismatch) that reaches an operator needing a contiguous one is copied first: ``.contiguous()``,
``.clone()``, ``.to(memory_format=...)`` or an implicit ``copy_``. Each copy reads and writes the
whole tensor and does no arithmetic. In PyTorch these are the TensorIterator copy kernels (their
signature names ``direct_copy_kernel_cuda``), Inductor's ``clone``/``copy`` kernels, and
device-to-device memcpys. Where the trace has operator ranges (a PyTorch-profiler trace), the
finding names the operators that launched them.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from coach.analyze.findings import Bottleneck, Evidence, Finding, RuleSpec
from coach.analyze.timeline import TimelineAnalysis, interval_join, with_launch_call
from coach.analyze.timeline_rules._shared import largest_group, nbytes, ns, reportable, share_pct, within_window

SPEC = RuleSpec(
    id="layout-copies",
    name="Hidden layout copies",
    category=Bottleneck.MEMORY_ACCESS,
    table="kernels",
    requires=("start_ns", "end_ns", "name"),
    optional=("demangled_name", "memcpy.kind", "nvtx.text"),
    doc="GPU time in kernels and device-to-device copies that only rearrange memory, and who launched them.",
)

# Kernels that only copy: PyTorch's TensorIterator copy (copy_, contiguous, clone, to), its older
# copy_kernel, and TorchInductor's generated clone / copy kernels (triton_poi_fused_clone_0, ...).
COPY_KERNELS = r"direct_copy_kernel|\bcopy_kernel\b|^triton_\w*?fused_(clone|_to_copy|copy)_\d+$"


def copies(a: TimelineAnalysis) -> pl.DataFrame:
    """The copy kernels and device-to-device memcpys, with ``what`` naming each."""
    kernels = a.timeline.kernels.with_columns(signature=pl.coalesce("demangled_name", "name"))
    copy_kernels = kernels.filter(pl.col("signature").str.contains(COPY_KERNELS)).select(
        "pid", "device_id", "correlation_id", "dur_ns", what="name")
    d2d = a.timeline.memcpy.filter(pl.col("kind") == "DtoD").select(
        "pid", "device_id", "correlation_id", "dur_ns", what=pl.lit("memcpy DtoD"))
    return pl.concat([copy_kernels, d2d])


def launching_operators(a: TimelineAnalysis, found: pl.DataFrame) -> pl.DataFrame:
    """For each copy, the outermost operator range (``cpu_op`` domain) around its launch call:
    ``operator``, ``copies``, ``dur_ns``, largest first; empty without operator ranges."""
    operators = a.timeline.nvtx.filter((pl.col("domain") == "cpu_op") & pl.col("end_ns").is_not_null())
    if operators.is_empty():
        return pl.DataFrame(schema={"operator": pl.Utf8, "copies": pl.UInt32, "dur_ns": pl.Int64})
    calls = with_launch_call(found, a.timeline.api).select(
        "pid", "tid", "correlation_id", "dur_ns", start_ns="api_start_ns", end_ns="api_end_ns")
    inside = interval_join(
        operators.select("pid", "tid", "start_ns", "end_ns", operator="text", op_depth="depth"),
        calls.rename({"correlation_id": "copy_id", "dur_ns": "copy_ns"}),
        "contains",
        by=["pid", "tid"],
    )
    return (
        inside.sort("op_depth").group_by("copy_id").agg(pl.col("operator").first(), pl.col("copy_ns").first())
        .group_by("operator").agg(copies=pl.len(), dur_ns=pl.col("copy_ns").sum())
        .sort("dur_ns", "operator", descending=[True, False])
    )


def apply(a: TimelineAnalysis, hardware: Any = None) -> list[Finding]:
    found = copies(a)
    if found.is_empty():
        return []
    copy_ns = int(found["dur_ns"].sum())
    if not reportable(copy_ns, a.window_ns):
        return []
    gpu_ns = int(a.utilisation["busy_ns"].sum())
    by_what = found.group_by("what").agg(n=pl.len(), ns=pl.col("dur_ns").sum()).sort("ns", descending=True)
    kinds = ", ".join(f"{n} x {what} ({ns(t)})" for what, n, t in by_what.iter_rows())
    operators = launching_operators(a, found)
    launched_by = ", ".join(f"{op} ({n}, {ns(t)})" for op, n, t in operators.head(3).iter_rows())
    d2d_bytes = a.timeline.memcpy.filter(pl.col("kind") == "DtoD")["bytes"].sum()
    message = (
        f"{found.height} copies that only rearrange memory took {ns(copy_ns)} of GPU time "
        f"({share_pct(copy_ns, gpu_ns):.1f}% of the GPU's busy time, {share_pct(copy_ns, a.window_ns):.1f}% of the "
        f"window): {kinds}."
        + (f" Device-to-device copies moved {nbytes(d2d_bytes)}." if d2d_bytes else "")
        + (f" Launched from {launched_by}." if launched_by else "")
        + " Each reads and writes the whole tensor and computes nothing."
    )
    return [Finding(
        rule_id=SPEC.id,
        category=SPEC.category,
        title=f"{found.height} hidden layout copies: {share_pct(copy_ns, gpu_ns):.0f}% of GPU time",
        message=message,
        next_step=("Find where a non-contiguous tensor meets an operator that needs a contiguous one (transpose, permute, "
                   "slicing, channels-last against channels-first) and keep one layout end to end: create tensors in the "
                   "layout their consumer reads, use views, or move the .contiguous() out of the loop; check the "
                   "consumer does not get slower reading strided memory instead."),
        evidence=(
            Evidence("layout_copy_ns", copy_ns, "ns", healthy="no copy kernels in the steady-state step",
                     source=a.timeline.source.tool),
            Evidence("layout_copies", found.height, "ops", source=a.timeline.source.tool),
            Evidence("layout_copy_share_of_gpu_pct", share_pct(copy_ns, gpu_ns), "%", source=a.timeline.source.tool),
        ),
        scope="timeline",
        estimated_gain_pct=share_pct(copy_ns, a.window_ns),
        # per GPU, the largest: copies on several GPUs run side by side (see largest_group)
        estimated_saving_ns=within_window(largest_group(found, "device_id", "dur_ns")[0], a.window_ns),
        gain_model="the copies' GPU time, which keeping the producer's layout removes; an upper bound if the consumer "
                   "then reads strided memory more slowly",
        details={"copies": by_what.to_dicts(), "launched_by": operators.to_dicts()},
    )]
