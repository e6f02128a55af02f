"""Record one PyTorch-profiler trace per timeline situation, for the timeline rules' tests.

    python record_kineto_cases.py OUT_DIR

Each case runs a few warm-up steps outside the profiler, then profiles three steps, each inside
``record_function("stepN")``, and writes ``OUT_DIR/<case>.json.gz`` (``export_chrome_trace`` gzips
when the name ends in .gz). ``OUT_DIR/recording.json`` records the GPU, driver, CUDA, torch version,
command and date. Needs a CUDA GPU and torch; nothing else.

Cases and what each should show:
  launch_bound     300 element-wise ops on 1024 floats per step: kernels shorter than their launch
  item_in_loop     a small matmul step that reads the loss with .item() every step: host syncs
  pageable_copy    64 MiB device-to-host and host-to-device copies through pageable memory
  serial_copy      pinned copies and a kernel on one stream, one after the other: no overlap
  pipelined_copy   the same work in 4 chunks on two streams: copies overlap compute
  layout_copies    .t().contiguous() before each elementwise op on 4096x4096: copy kernels
  allocator_churn  fresh allocations every step with the caching allocator off (child process)
  sync_events      item_in_loop again with CUDA synchronisation events recorded (cuda_sync rows)
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

WARMUP_STEPS = 3
PROFILED_STEPS = 3
N = 1 << 24  # 64 MiB of float32


def main(out: Path) -> None:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    cases = {
        "launch_bound": launch_bound,
        "item_in_loop": item_in_loop,
        "pageable_copy": pageable_copy,
        "serial_copy": serial_copy,
        "pipelined_copy": pipelined_copy,
        "layout_copies": layout_copies,
    }
    for name, make_step in cases.items():
        profile(name, make_step(torch), out, torch)
    # the caching allocator reads its switch at start-up: a child process with it off
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    subprocess.run([sys.executable, __file__, "--allocator-churn", str(out)], check=True, env=env)
    write_provenance(out, torch)
    try:
        profile("sync_events", item_in_loop(torch), out, torch, sync_events=True)
    except (AttributeError, TypeError) as err:  # a torch without enable_cuda_sync_events
        print(f"sync_events not recorded: {err}", file=sys.stderr)


def profile(name: str, step, out: Path, torch, sync_events: bool = False) -> None:
    from torch.profiler import ProfilerActivity, record_function

    for _ in range(WARMUP_STEPS):
        step()
    torch.cuda.synchronize()
    kwargs = {}
    if sync_events:
        kwargs["experimental_config"] = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **kwargs) as prof:
        for i in range(PROFILED_STEPS):
            with record_function(f"step{i}"):
                step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(out / f"{name}.json.gz"))


def launch_bound(torch):
    x = torch.zeros(1024, device="cuda")

    def step():
        for _ in range(300):
            x.add_(1.0)
    return step


def item_in_loop(torch):
    a = torch.randn(1024, 1024, device="cuda")
    w = torch.randn(1024, 1024, device="cuda")

    def step():
        for _ in range(10):
            loss = (a @ w).square().mean()
            loss.item()
    return step


def pageable_copy(torch):
    d = torch.randn(N, device="cuda")
    h = torch.randn(N)  # pageable

    def step():
        d.copy_(h)
        h.copy_(d)
    return step


def serial_copy(torch):
    h_in = torch.randn(N).pin_memory()
    h_out = torch.empty(N).pin_memory()
    d = torch.empty(N, device="cuda")

    def step():
        d.copy_(h_in, non_blocking=True)
        compute(d)
        h_out.copy_(d, non_blocking=True)
        torch.cuda.current_stream().synchronize()
    return step


def pipelined_copy(torch, chunks: int = 4):
    h_in = torch.randn(N).pin_memory()
    h_out = torch.empty(N).pin_memory()
    d = torch.empty(N, device="cuda")
    copy, compute_stream = torch.cuda.Stream(), torch.cuda.Stream()
    size = N // chunks

    def step():
        loaded = []
        for c in range(chunks):
            sl = slice(c * size, (c + 1) * size)
            with torch.cuda.stream(copy):
                d[sl].copy_(h_in[sl], non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(copy)
            loaded.append((sl, ev))
        for sl, ev in loaded:
            compute_stream.wait_event(ev)
            with torch.cuda.stream(compute_stream):
                compute(d[sl])
                done = torch.cuda.Event()
                done.record(compute_stream)
            copy.wait_event(done)
            with torch.cuda.stream(copy):
                h_out[sl].copy_(d[sl], non_blocking=True)
        torch.cuda.synchronize()
    return step


def layout_copies(torch):
    x = torch.randn(4096, 4096, device="cuda")

    def step():
        for _ in range(4):
            y = x.t().contiguous()  # a copy kernel: the transpose is only a view until here
            y.mul_(2.0)
    return step


def compute(d) -> None:
    """About as long on the GPU as copying ``d`` both ways over PCIe: 24 passes over it in HBM."""
    for _ in range(12):
        d.mul_(1.0001).add_(0.5)


def allocator_churn(torch):
    def step():
        for _ in range(20):
            t = torch.empty(1 << 20, device="cuda")
            t.fill_(1.0)
            del t
    return step


def write_provenance(out: Path, torch) -> None:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current",
                          "--format=csv,noheader"], capture_output=True, text=True, check=False).stdout.strip()
    record = {
        "gpu": torch.cuda.get_device_name(0),
        "nvidia_smi": smi,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.date.today().isoformat(),
        "warmup_steps": WARMUP_STEPS,
        "profiled_steps": PROFILED_STEPS,
    }
    tmp = out / ".recording.json.tmp"
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(out / "recording.json")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--allocator-churn":
        import torch

        profile("allocator_churn", allocator_churn(torch), Path(sys.argv[2]), torch)
    elif len(sys.argv) == 2:
        main(Path(sys.argv[1]))
    else:
        sys.exit(__doc__)
