"""Estimation drills: a number to work out on a whiteboard, graded by tolerance, with the worked solution.

Each kind of drill is a template with explicit parameters (so a test can pose exactly the example it
works by hand) and a sampler that picks parameters from a seeded random generator. Every answer is
computed from the hardware tables through ``coach.analyze`` (predictions, ceilings, collectives),
with datasheet numbers (not measured ceilings: an interview estimate starts from the datasheet), and
the worked solution names the datasheet each number comes from.

``single_gpu``  memory-op, gemm, bound, decode-floor, mfu, kv-cache
``parallel``    tensor-parallel, pipeline-bubble, data-parallel, moe-all-to-all, activation-memory,
                prefill, training-days
``base``        the ``Drill`` and its grading, shared by both
"""

from __future__ import annotations

import random
from typing import Callable

from coach.analyze import collectives, hardware
from coach.exercises.drills import parallel, single_gpu
from coach.exercises.drills.base import (BOUND_MARGIN, DECODE_MEMORY_SHARE, FLOOR_TOLERANCE, KV_TOLERANCE, MFU_TOLERANCE,
                                         Drill, DrillError, DrillResult, _datasheet)
from coach.exercises.drills.parallel import (activation_memory, data_parallel, moe_all_to_all, pipeline_bubble, prefill,
                                             tensor_parallel, training_days)
from coach.exercises.drills.single_gpu import MEMORY_OPS, MODELS, ModelConfig, bound, decode_floor, gemm, kv_cache, memory_op, mfu

SAMPLERS: dict[str, Callable[[random.Random, str | None], Drill]] = {**single_gpu.SAMPLERS, **parallel.SAMPLERS}
KINDS = tuple(SAMPLERS)
#: The quiz topic each kind trains (the same as ``Drill.topic``), for plans.
KIND_TOPICS = {"memory-op": "perf-model", "gemm": "tensor-cores", "bound": "perf-model", "decode-floor": "inference",
               "mfu": "training", "kv-cache": "inference", **parallel.KIND_TOPICS}
#: One line per kind, for help texts and the dashboard.
KIND_HELP = {
    "memory-op": "floor time of a softmax, LayerNorm, transpose or copy",
    "gemm": "floor time of a GEMM",
    "bound": "compute- or memory-bound, and the floor, from FLOPs and bytes",
    "decode-floor": "batch-1 decode tokens/s of a model on N GPUs",
    "mfu": "model FLOPs utilisation of a training run",
    "kv-cache": "KV-cache size of a real model",
    "tensor-parallel": "all-reduce time of Megatron tensor parallelism",
    "pipeline-bubble": "idle share of a pipeline, (p-1)/(m+p-1)",
    "data-parallel": "ring all-reduce of the gradients",
    "moe-all-to-all": "dispatch and combine all-to-all of an MoE layer",
    "activation-memory": "activations kept for the backward pass",
    "prefill": "time to the first token of a prompt",
    "training-days": "days to train from 6ND at a given MFU",
}


def kinds_for(gpu: str | None) -> tuple[str, ...]:
    """The kinds that can be posed on ``gpu`` (all kinds when None)."""
    if gpu is None or collectives.switched(gpu):
        return KINDS
    return tuple(k for k in KINDS if k not in parallel.NEEDS_SWITCHED)


def attempt(drill: Drill, seed: int | None, text: str, result: DrillResult):
    """The progress record of one graded drill (``coach.exercises.progress.Attempt``)."""
    from coach.exercises.progress import Attempt

    return Attempt(kind="drill", item=drill.id, topic=drill.topic, score=1.0 if result.correct else 0.0, max_score=1.0,
                   answer=text, details={"kind": drill.kind, "seed": seed, "answer": drill.answer,
                                         "unit": drill.unit.name, "given": result.given, "error": result.error})


def generate(kind: str | None = None, gpu: str | None = None, seed: int | None = None) -> Drill:
    """A drill of ``kind`` (any kind if None) on ``gpu`` (any suitable GPU if None), reproducible by ``seed``."""
    if kind is not None and kind not in SAMPLERS:
        raise DrillError(f"unknown drill kind '{kind}'; use one of {', '.join(KINDS)}")
    if gpu is not None:
        gpu = hardware.get(gpu).id
    rng = random.Random(seed)
    return SAMPLERS[kind or rng.choice(kinds_for(gpu))](rng, gpu)


__all__ = ["attempt", "BOUND_MARGIN", "DECODE_MEMORY_SHARE", "Drill", "DrillError", "DrillResult", "FLOOR_TOLERANCE",
           "KINDS", "KIND_HELP", "KIND_TOPICS", "KV_TOLERANCE", "MEMORY_OPS", "MFU_TOLERANCE", "MODELS", "ModelConfig",
           "SAMPLERS", "_datasheet", "activation_memory", "bound", "data_parallel", "decode_floor", "gemm", "generate",
           "kinds_for", "kv_cache", "memory_op", "mfu", "moe_all_to_all", "pipeline_bubble", "prefill", "tensor_parallel",
           "training_days"]
