"""Which quiz topic a scenario or a version ladder trains, so that progress and plans speak of one set
of topics whatever was practised."""

from __future__ import annotations

from coach.analyze.findings import Bottleneck

#: The quiz topic whose questions cover each bottleneck class.
BOTTLENECK_TOPICS: dict[Bottleneck, str] = {
    Bottleneck.DRAM: "perf-model",
    Bottleneck.MEMORY_ACCESS: "coalescing",
    Bottleneck.CACHE: "perf-model",
    Bottleneck.SHARED_MEMORY: "shared-memory",
    Bottleneck.LOCAL_MEMORY: "execution-model",
    Bottleneck.FMA: "perf-model",
    Bottleneck.TENSOR: "tensor-cores",
    Bottleneck.SFU: "perf-model",
    Bottleneck.FP64: "execution-model",
    Bottleneck.DIVERGENCE: "execution-model",
    Bottleneck.ATOMICS: "atomics",
    Bottleneck.LATENCY: "perf-model",
    Bottleneck.OCCUPANCY: "perf-model",
    Bottleneck.TAIL: "perf-model",
    Bottleneck.LAUNCH: "streams",
    Bottleneck.IDLE: "profiling",
    Bottleneck.HOST_SYNC: "streams",
    Bottleneck.PAGEABLE: "streams",
    Bottleneck.NO_OVERLAP: "streams",
    Bottleneck.TRANSFER: "streams",
    Bottleneck.ALLOCATOR: "streams",
    Bottleneck.HOST_BOUND: "profiling",
    Bottleneck.MEASUREMENT: "profiling",
    Bottleneck.OTHER: "profiling",
}

#: Version ladders (kernels/<name>/) by the topic their rungs teach; others count as perf-model.
LADDER_TOPICS: dict[str, str] = {
    "reduction": "warp-level",
    "scan": "warp-level",
    "transpose": "shared-memory",
    "softmax": "perf-model",
    "layernorm": "perf-model",
    "gemv": "inference",
    "gemm": "tensor-cores",
    "matmul": "tensor-cores",
    "attention": "tensor-cores",
    "flash-attention": "tensor-cores",
}
DEFAULT_TOPIC = "perf-model"


def ladder_topic(name: str) -> str:
    return LADDER_TOPICS.get(name, DEFAULT_TOPIC)
