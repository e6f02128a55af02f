"""Write the two synthetic PyTorch-profiler traces of this folder: a training loop fed by a DataLoader
with num_workers=0, and the same loop with worker processes.

    python tests/data/kineto_dataloader_synthetic/make_synthetic.py

SYNTHETIC: every time below is chosen here, not measured. The shape of each event (categories, names,
arguments) is the one torch 2.13's profiler writes: the DataLoader range
"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" as a user annotation holding the
collate function's cpu_op ranges (seen in a CPU-only trace of a DataLoader loop recorded on the
development machine), runtime launches and kernels linked by correlation ids as in the H200 trace of
tests/data/kineto_torch_softmax. The real recordings of the same situation come from
tests/programs/wild/dataloader_train.py (scripts/record-wild.sh).

Each of STEPS steps: the loop takes a batch from the DataLoader (LOAD_US on the main thread with
num_workers=0: aten::stack of the samples, then aten::to; WORKER_LOAD_US with workers, which only
take a ready batch from the queue), copies it to the GPU (COPY_US), and runs KERNELS kernels of
KERNEL_US each, back to back.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
PID, TID = 4242, 4242
STEPS = 8
LOAD_US = 9_000.0  # a batch prepared in the training process
WORKER_LOAD_US = 40.0  # a ready batch taken from the workers' queue
COPY_US = 150.0
KERNELS = 6
KERNEL_US = 300.0
LAUNCH_US = 6.0
GPU_LAG_US = 8.0  # a kernel starts this long after its launch call starts


def x(cat, name, ts, dur, pid=PID, tid=TID, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3),
            "args": args}


def trace(workers: bool) -> dict:
    events, t, corr = [], 1000.0, 1
    iterator = "_MultiProcessingDataLoaderIter" if workers else "_SingleProcessDataLoaderIter"
    gpu_free = 0.0
    for step in range(STEPS):
        load = WORKER_LOAD_US if workers else LOAD_US
        events.append(x("user_annotation", f"enumerate(DataLoader)#{iterator}.__next__", t, load))
        if not workers:  # the collate function runs in the loop's own process
            events.append(x("cpu_op", "aten::stack", t + 10, load * 0.8))
            events.append(x("cpu_op", "aten::cat", t + 12, load * 0.78))
            events.append(x("cpu_op", "aten::to", t + load * 0.82, load * 0.15))
        t += load
        step_start = t
        events.append(x("cuda_runtime", "cudaMemcpyAsync", t, 10.0, correlation=corr))
        start = max(t + GPU_LAG_US, gpu_free)
        events.append(x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", start, COPY_US, pid=0, tid=7, device=0,
                        stream=7, correlation=corr, bytes=1 << 22))
        gpu_free, corr, t = start + COPY_US, corr + 1, t + 12
        for k in range(KERNELS):
            events.append(x("cuda_runtime", "cudaLaunchKernel", t, LAUNCH_US, correlation=corr))
            start = max(t + GPU_LAG_US, gpu_free)
            events.append(x("kernel", f"void layer_kernel_{k}<float>(float*, int)", start, KERNEL_US, pid=0, tid=7,
                            device=0, stream=7, correlation=corr, grid=[1024, 1, 1], block=[256, 1, 1]))
            gpu_free, corr, t = start + KERNEL_US, corr + 1, t + LAUNCH_US + 2
        events.insert(len(events) - 2 * KERNELS - 2, x("user_annotation", f"step{step}", step_start, t - step_start))
        t += 20.0
    return {"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0, "numSms": 132,
                                  "totalGlobalMem": 150754820096, "maxThreadsPerMultiprocessor": 2048,
                                  "warpSize": 32}],
            "traceEvents": events}


def main() -> None:
    for name, workers in (("num_workers_0.json.gz", False), ("num_workers_4.json.gz", True)):
        with gzip.open(HERE / name, "wt") as fh:
            json.dump(trace(workers), fh)


if __name__ == "__main__":
    main()
