"""What a diff measures: the quantities it compares, with their labels and units, and how far a
change has to go to count as a movement.

Kernel profiles compare the canonical launch metrics and the quantities derived from them
(``coach.analyze.kernel_metrics``) per matched launch pair (``KERNEL_METRICS``), and totals over
every launch (``KERNEL_TOTALS``); timelines compare the quantities of ``TIMELINE_METRICS``
(computed in ``coach.analyze.diff.timelines``). The fix table (``fixes.toml``) names these.
"""

from __future__ import annotations

from coach.recordings import SAME_TOLERANCE

# A metric moved when it changed by more than 5%. Counts of sectors, requests and instructions are
# exact and repeat to the unit; durations and clocks of the same kernel on the same GPU repeat to
# within a few percent (clock boost and DRAM refresh vary between runs; the scenario harness sees the
# median of 20 runs stable to about a percent). A smaller change cannot be told from that noise.
NOISE = 0.05
# Two runs' clocks (SM, DRAM) differing by more than the noise make the durations incomparable on
# their own: a compute-bound kernel's time scales with its SM clock.
CLOCK_TOLERANCE = NOISE
# A metric a fix should leave alone ("same") may drift by the tolerance the scenario evidence allows
# (coach.recordings.SAME_TOLERANCE, 25%): "same" means not moved by a multiple.
SAME = SAME_TOLERANCE

#: Kernel metrics whose movement a diff reports: column -> (label, unit).
KERNEL_METRICS: dict[str, tuple[str, str]] = {
    "duration_ns": ("duration", "ns"),
    "dram_bytes": ("DRAM bytes", "byte"),
    "dram_read_bytes": ("DRAM bytes read", "byte"),
    "dram_write_bytes": ("DRAM bytes written", "byte"),
    "l2_bytes": ("L2 bytes", "byte"),
    "dram_bandwidth_bytes_per_s": ("DRAM bandwidth", "byte/s"),
    "dram_throughput_pct": ("DRAM throughput", "%"),
    "memory_throughput_pct": ("memory throughput", "%"),
    "sm_throughput_pct": ("SM throughput", "%"),
    "l2_throughput_pct": ("L2 throughput", "%"),
    "l1_throughput_pct": ("L1 throughput", "%"),
    "l2_hit_rate_pct": ("L2 hit rate", "%"),
    "load_sectors_per_request": ("global load sectors per request", "sector/request"),
    "store_sectors_per_request": ("global store sectors per request", "sector/request"),
    "ideal_load_sectors_per_request": ("ideal load sectors per request", "sector/request"),
    "excess_load_sectors": ("excess load sectors", "sector"),
    "excess_store_sectors": ("excess store sectors", "sector"),
    "global_load_requests": ("global load requests", "request"),
    "global_store_requests": ("global store requests", "request"),
    "global_load_sectors": ("global load sectors", "sector"),
    "global_store_sectors": ("global store sectors", "sector"),
    "shared_bank_conflicts": ("shared-memory bank conflicts", "conflict"),
    "wavefronts_per_shared_request": ("wavefronts per shared request", "wavefront/request"),
    "local_sectors": ("local-memory sectors", "sector"),
    "achieved_occupancy_pct": ("achieved occupancy", "%"),
    "theoretical_occupancy_pct": ("theoretical occupancy", "%"),
    "registers_per_thread": ("registers per thread", "register"),
    "warp_inst_executed": ("warp instructions", "inst"),
    "issue_active_pct": ("issue slots used", "%"),
    "thread_inst_per_warp_inst": ("active threads per instruction", "thread"),
    "branch_divergent_targets": ("divergent branch targets", "branch"),
    "fp64_inst": ("FP64 instructions", "inst"),
    "fp32_inst": ("FP32 instructions", "inst"),
    "flop": ("floating-point operations", "flop"),
    "tensor_pipe_active_pct": ("tensor pipe active", "%"),
    "global_atomic_requests": ("global atomic requests", "request"),
    "waves_per_sm": ("waves per SM", "wave"),
    "tail_idle_fraction": ("SM time idle in the last wave", "fraction"),
    "stall_long_scoreboard": ("long-scoreboard stalls per instruction", "cycle"),
    "warp_cycles_per_issued_inst": ("warp cycles per issued instruction", "cycle"),
    "arithmetic_intensity_flop_per_byte": ("arithmetic intensity", "flop/byte"),
}

#: The whole kernel profile, every launch on each side: ``pair`` -1 in the frames. Fixes that merge or
#: split kernels (fusion) are judged here, on totals, since their kernels do not pair one to one.
PROFILE_PAIR = -1
KERNEL_TOTALS: dict[str, tuple[str, str]] = {
    "total_launches": ("kernel launches (whole profile)", "kernel"),
    "total_duration_ns": ("kernel time (whole profile)", "ns"),
    "total_dram_bytes": ("DRAM bytes (whole profile)", "byte"),
}

#: Timeline quantities a diff compares (``coach.analyze.diff.timelines.timeline_metrics``):
#: name -> (label, unit).
TIMELINE_METRICS: dict[str, tuple[str, str]] = {
    "window_ns": ("end to end (first to last CUDA activity)", "ns"),
    "gpu_busy_pct": ("GPU busy", "%"),
    "gpu_idle_ns": ("GPU idle in the window", "ns"),
    "idle_host_ns": ("GPU idle while the host runs no CUDA call (host work)", "ns"),
    "kernel_count": ("kernels", "kernel"),
    "kernel_ns": ("kernel time", "ns"),
    "memcpy_count": ("copies", "copy"),
    "memcpy_ns": ("copy time", "ns"),
    "memcpy_bytes": ("bytes copied", "byte"),
    "memcpy_bytes_per_s": ("copy bandwidth", "byte/s"),
    "pageable_memcpy_count": ("copies through pageable memory", "copy"),
    "copy_compute_overlap_pct": ("host-device copy time overlapped by kernels", "%"),
    "copy_overlap_ns": ("host-device copy time under kernels", "ns"),
    "sync_calls": ("synchronising calls", "call"),
    "sync_ns": ("time in synchronising calls", "ns"),
    "launch_calls": ("kernel launch calls", "call"),
    "launch_ns": ("time in launch calls", "ns"),
    "alloc_calls": ("allocation calls", "call"),
    "alloc_ns": ("time in allocation and free calls", "ns"),
    "module_load_calls": ("module loads", "call"),
    "module_load_ns": ("time in module loads", "ns"),
    "layout_copy_ns": ("copy-only kernels and device-to-device copies", "ns"),
    "event_record_calls": ("CUDA events recorded", "call"),
    "timed_module_load_calls": ("module loads inside the timed regions (NVTX 'timed')", "call"),
    "timed_gpu_share_pct": ("GPU work's share of the time the timer measured", "%"),
}

#: The outcome a fix is for (the time), as opposed to the movements that show it was this fix.
OUTCOMES = ("duration_ns", "total_duration_ns", "window_ns")
VERDICTS = ("matches", "matches where measured", "partly", "does not match", "not measured", "not comparable")
