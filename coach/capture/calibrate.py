"""Measure the ceilings of the GPU at hand in about a minute, and write them as JSON.

    python -m coach.capture.calibrate OUT.json

Datasheet peaks are what the silicon could do at its boost clock with perfect code; what a kernel
can reach is lower (the H200 copies at about 4.19 TB/s against 4.8 TB/s on its datasheet). Every
"% of ceiling" that coach prints is more honest against a measured ceiling, so this script measures
the ones that matter and ``coach.analyze.hardware`` reads its output next to the datasheet numbers:

- DRAM copy bandwidth: ``dst.copy_(src)``, counted as read + write bytes.
- DRAM read bandwidth: ``src.sum()``, counted as the bytes read.
- FP32 SIMT, TF32 and BF16 tensor matmul rates: cuBLAS through ``torch.matmul`` on 8192^3 random
  inputs (zeros would let the tensor cores idle at lower power and flatter the rate).
- Kernel launch latency: an empty Triton kernel launched back to back on a stream, and the same
  launches replayed from a CUDA graph.
- Load latency of L1, L2 and DRAM: one thread chasing pointers through buffers sized for each
  level (``coach.capture.latency``).

Timing uses ``triton.testing.do_bench`` (median; it clears the L2 before each repetition), and the
bandwidth tests rotate through buffers far larger than any L2, so no repetition is served from
cache. The launch test times many launches between two CUDA events.

This runs on the GPU machine, which has only the standard library, torch and triton: nothing here
imports Polars, Typer or Rich, and torch and triton are imported only when measuring, so the module
imports (and its argument parsing and JSON writing are tested) on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from coach.capture import latency as _latency

SCHEMA = "coach-calibration/1"

#: What is measured: name -> (unit, how it is counted). ``coach.analyze.hardware`` reads these names.
MEASUREMENTS: dict[str, tuple[str, str]] = {
    "dram_copy_bandwidth_bytes_per_s": ("byte/s", "device-to-device copy, read + write bytes"),
    "dram_read_bandwidth_bytes_per_s": ("byte/s", "read-only reduction (sum), bytes read"),
    "fp32_simt_matmul_flop_per_s": ("flop/s", "FP32 matmul with TF32 off (FMA pipe), 2*n^3 FLOPs"),
    "tf32_tensor_matmul_flop_per_s": ("flop/s", "TF32 tensor-core matmul, 2*n^3 FLOPs"),
    "bf16_tensor_matmul_flop_per_s": ("flop/s", "BF16 tensor-core matmul, 2*n^3 FLOPs"),
    "fp8_tensor_matmul_flop_per_s": ("flop/s", "FP8 e4m3 tensor-core matmul (torch._scaled_mm, per-tensor "
                                     "scales, bf16 out, fast accumulation), 2*n^3 FLOPs"),
    "launch_latency_s": ("s", "empty kernel launched back to back on one stream, per launch"),
    "graph_launch_latency_s": ("s", "the same empty kernels replayed from a CUDA graph, per kernel"),
    **{name: ("s", detail) for name, detail in _latency.DETAIL.items()},
}

# Sizes. A bandwidth buffer of 1 GiB is over 8x the largest L2 of any GPU in hardware/gpus (B200:
# 126 MB), and BUFFERS of them are rotated, so a repetition never finds its bytes in L2.
BANDWIDTH_BUFFER_BYTES = 1 << 30
BUFFERS = 3
# 8192^3 is large enough that cuBLAS runs at its steady-state rate on every GPU in the tables
# (1.1 TFLOP per call: at least ~1 ms even on a B200) and small enough to fit a 24 GB card.
MATMUL_N = 8192
# Launch latency: launches per timed batch. 2000 launches of ~2-5 us keep each batch near 10 ms,
# far above the event-timer resolution (about 0.5 us).
LAUNCHES = 2000
# do_bench budget per test (ms): long enough for tens of repetitions of every test.
WARMUP_MS = 200
REP_MS = 1000

Measure = Callable[[argparse.Namespace], Mapping[str, Mapping[str, Any]]]
Describe = Callable[[argparse.Namespace], Mapping[str, Any]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m coach.capture.calibrate",
        description="Measure copy and read bandwidth, FP32/TF32/BF16 matmul rates, launch latency and "
        "L1/L2/DRAM load latency on this GPU, and write them as JSON with provenance.",
    )
    parser.add_argument("out", type=Path, help="where to write the JSON (e.g. h200.json)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    parser.add_argument("--matmul-n", type=int, default=MATMUL_N, help=f"matmul size n for n^3 (default {MATMUL_N})")
    parser.add_argument("--buffer-bytes", type=int, default=BANDWIDTH_BUFFER_BYTES,
                        help=f"bytes per bandwidth buffer (default {BANDWIDTH_BUFFER_BYTES})")
    args = parser.parse_args(argv)
    if args.matmul_n <= 0 or args.buffer_bytes <= 0:
        parser.error("--matmul-n and --buffer-bytes must be positive")
    return args


def main(argv: list[str] | None = None, *, measure: Measure | None = None, describe: Describe | None = None) -> int:
    """Parse arguments, measure, and write the JSON. ``measure`` and ``describe`` replace the GPU work
    (tests pass fakes)."""
    args = parse_args(argv)
    started = time.monotonic()
    results = (measure or measure_on_gpu)(args)
    unknown = sorted(set(results) - set(MEASUREMENTS))
    if unknown:
        raise ValueError(f"unknown measurements: {unknown}")
    doc = {
        "schema": SCHEMA,
        "provenance": {
            **(describe or describe_gpu)(args),
            "command": shlex.join([sys.executable, "-m", "coach.capture.calibrate", *(argv if argv is not None else sys.argv[1:])]),
            "elapsed_s": round(time.monotonic() - started, 1),
        },
        "measurements": {name: {"unit": MEASUREMENTS[name][0], "detail": MEASUREMENTS[name][1], **dict(m)}
                         for name, m in results.items()},
    }
    write_json(args.out, doc)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """Write ``doc`` to ``path`` through a temporary file and a rename, so a crash leaves no half file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------------------
# On the GPU
# --------------------------------------------------------------------------------------------


def describe_gpu(args: argparse.Namespace) -> dict[str, Any]:
    """Provenance: GPU, driver, CUDA, library versions, clocks, date."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(args.device)
    smi = _nvidia_smi(args.device, "driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit")
    return {
        "gpu_name": props.name,
        "sm_count": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}",
        "memory_bytes": props.total_memory,
        "driver": smi.get("driver_version"),
        "sm_clock_mhz_at_start": smi.get("clocks.sm"),
        "sm_clock_max_mhz": smi.get("clocks.max.sm"),
        "memory_clock_mhz": smi.get("clocks.mem"),
        "power_limit_w": smi.get("power.limit"),
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "method": "triton.testing.do_bench median (L2 cleared per repetition) for bandwidth and matmul; "
                  "CUDA events around batches of launches for launch latency; pointer chasing, the slope "
                  "between two chain lengths, for load latency",
    }


def _nvidia_smi(device: int, fields: str) -> dict[str, str]:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={device}", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(zip(fields.split(","), (v.strip() for v in out.split(","))))


def measure_on_gpu(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    import torch

    torch.cuda.set_device(args.device)
    torch.manual_seed(0)
    results: dict[str, dict[str, Any]] = {}
    results.update(_bandwidth(torch, args.buffer_bytes))
    results.update(_matmuls(torch, args.matmul_n))
    results.update(_launch_latency(torch))
    results.update(_latency.measure(torch))
    return results


def _bench(fn: Callable[[], Any]) -> tuple[float, float, float]:
    """(p20, median, p80) of ``fn``'s time in seconds."""
    from triton.testing import do_bench

    p20, p50, p80 = do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, quantiles=[0.2, 0.5, 0.8])
    return p20 * 1e-3, p50 * 1e-3, p80 * 1e-3


def _rate(amount: float, times: tuple[float, float, float], **extra: Any) -> dict[str, Any]:
    """The rate at the median time, with the time quantiles it came from."""
    p20, p50, p80 = times
    return {"value": amount / p50, "median_s": p50, "p20_s": p20, "p80_s": p80, **extra}


def _rotating(fns: list[Callable[[], Any]]) -> Callable[[], Any]:
    cycle = itertools.cycle(fns)
    return lambda: next(cycle)()


def _bandwidth(torch: Any, nbytes: int) -> dict[str, dict[str, Any]]:
    n = nbytes // 4
    src = [torch.rand(n, device="cuda") for _ in range(BUFFERS)]
    dst = [torch.empty_like(s) for s in src]
    copy = _rotating([lambda s=s, d=d: d.copy_(s) for s, d in zip(src, dst)])
    read = _rotating([lambda s=s: s.sum() for s in src])
    out = {
        "dram_copy_bandwidth_bytes_per_s": _rate(2 * 4 * n, _bench(copy), bytes_per_call=2 * 4 * n, buffers=BUFFERS),
        "dram_read_bandwidth_bytes_per_s": _rate(4 * n, _bench(read), bytes_per_call=4 * n, buffers=BUFFERS),
    }
    del src, dst
    torch.cuda.empty_cache()
    return out


def _matmuls(torch: Any, n: int) -> dict[str, dict[str, Any]]:
    flops = 2 * n**3
    out: dict[str, dict[str, Any]] = {}
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        for name, dtype, tf32 in (
            ("fp32_simt_matmul_flop_per_s", torch.float32, False),
            ("tf32_tensor_matmul_flop_per_s", torch.float32, True),
            ("bf16_tensor_matmul_flop_per_s", torch.bfloat16, False),
        ):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            pairs = [(torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype))
                     for _ in range(2)]
            fn = _rotating([lambda a=a, b=b: torch.matmul(a, b) for a, b in pairs])
            out[name] = _rate(flops, _bench(fn), n=n, dtype=str(dtype), allow_tf32=tf32)
            del pairs
            torch.cuda.empty_cache()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    if torch.cuda.get_device_capability() >= (8, 9):  # FP8 tensor cores: Ada and Hopper on
        one = torch.ones((), device="cuda")
        pairs = [(torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn),
                  torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()) for _ in range(2)]  # B column-major
        fn = _rotating([lambda a=a, b=b: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                          use_fast_accum=True) for a, b in pairs])
        out["fp8_tensor_matmul_flop_per_s"] = _rate(flops, _bench(fn), n=n, dtype="torch.float8_e4m3fn")
        del pairs
        torch.cuda.empty_cache()
    return out


def _launch_latency(torch: Any) -> dict[str, dict[str, Any]]:
    import triton

    @triton.jit
    def _empty(x):  # noqa: ARG001 - the kernel does nothing on purpose
        pass

    x = torch.empty(1, device="cuda")
    _empty[(1,)](x)  # compile outside the timed region
    torch.cuda.synchronize()

    def timed_batch(launch: Callable[[], None]) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3 / LAUNCHES

    def stream_launches() -> None:
        for _ in range(LAUNCHES):
            _empty[(1,)](x)

    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        stream_launches()  # warm the launch path on the capture stream
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        stream_launches()
    graph.replay()
    torch.cuda.synchronize()

    out = {}
    for name, launch in (("launch_latency_s", stream_launches), ("graph_launch_latency_s", graph.replay)):
        samples = sorted(timed_batch(launch) for _ in range(11))
        out[name] = {"value": samples[len(samples) // 2], "min": samples[0], "max": samples[-1],
                     "launches_per_batch": LAUNCHES, "batches": len(samples)}
    return out


if __name__ == "__main__":
    sys.exit(main())
