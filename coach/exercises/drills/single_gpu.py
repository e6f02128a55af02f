"""Single-GPU estimation drills: the floor time of a memory-bound op, a GEMM, a kernel given its
FLOPs and bytes; the decode floor, MFU and KV-cache size of a model.

Kinds, and the tolerance each is graded with:

``memory-op``     floor time of a softmax / LayerNorm / transpose / copy (±20%)
``gemm``          floor time of a GEMM (±20%)
``bound``         compute- or memory-bound, and the floor time, given FLOPs and bytes (±20%, and the
                  right bound)
``decode-floor``  batch-1 decode tokens/s of a model on N GPUs (±20%)
``mfu``           model FLOPs utilisation of a training run (±10%)
``kv-cache``      KV-cache size of a real model configuration (±5%)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from coach.analyze import hardware, predict
from coach.exercises.drills.base import (BOUND_MARGIN, DECODE_MEMORY_SHARE, FLOOR_TOLERANCE, KV_TOLERANCE, MFU_TOLERANCE,
                                         Drill, DrillError, _datasheet, _eng, _fmt, _gpu_name, _gpus_phrase, _gpus_with,
                                         _roof_line, _round2, _sci, _time_unit)
from coach.exercises.quantity import unit

# --------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------

MEMORY_OPS = ("softmax", "layernorm", "transpose", "copy")


def memory_op(op: str, rows: int, cols: int, dtype: str, gpu: str) -> Drill:
    """How long should a row-wise op over rows x cols take, at best?"""
    work = predict.copy(rows * cols, dtype) if op == "copy" else predict.OPS[op](rows, cols, dtype)
    p = predict.predict(work, _datasheet(gpu))
    t = _time_unit(p.floor_s)
    dram = next(term for term in p.terms if term.name == "dram")
    steps = [f"Bytes: {work.counted.split(';')[0]} = {_fmt(work.bytes)} B ({work.bytes / 1e9:.3g} GB).",
             f"{_gpu_name(gpu)} DRAM bandwidth: {_eng(dram.rate, 'B/s')} ({dram.source}).",
             f"Memory floor: {_fmt(work.bytes)} B / {_eng(dram.rate, 'B/s')} = {_fmt(dram.floor_s / t.factor)} {t.name}."]
    for term in p.terms:
        if term.name != "dram":
            steps.append(f"Arithmetic check: {_fmt(term.amount)} {term.name.upper()} FLOPs at {_eng(term.rate, 'FLOP/s')} "
                         f"= {_fmt(term.floor_s / t.factor)} {t.name}, far below the memory floor: memory-bound.")
    steps.append(f"Answer: about {_fmt(p.floor_s / t.factor)} {t.name}; a real kernel reaches some fraction of the datasheet bandwidth.")
    shape = f"{rows}x{cols}" if op != "copy" else f"{rows * cols:,} elements"
    what = {"softmax": "a row-wise softmax", "layernorm": "a LayerNorm (over rows)", "transpose": "an out-of-place transpose",
            "copy": "a device-to-device copy"}[op]
    return Drill(id=f"memory-op:{op}:{rows}x{cols}:{dtype}:{gpu}", kind="memory-op", topic="perf-model", gpu=gpu,
                 question=f"How long should {what} over {shape} {dtype} take on an {_gpu_name(gpu)}, at best? "
                          f"(answer in {t.name})",
                 answer=p.floor_s / t.factor, unit=t, tolerance=FLOOR_TOLERANCE, steps=tuple(steps), bound=None,
                 sources=(dram.ref,))


def gemm(m: int, n: int, k: int, dtype: str, gpu: str) -> Drill:
    """How long should an m x n x k GEMM take, at best?"""
    work = predict.gemm(m, n, k, dtype)
    p = predict.predict(work, _datasheet(gpu))
    t = _time_unit(p.floor_s)
    flop_term = next(term for term in p.terms if term.name != "dram")
    dram = next(term for term in p.terms if term.name == "dram")
    steps = [f"FLOPs: 2 x m x n x k = 2 x {m} x {n} x {k} = {_fmt(work.total_flops)}.",
             f"{_gpu_name(gpu)} dense {flop_term.name.upper()} tensor peak: {_eng(flop_term.rate, 'FLOP/s')} ({flop_term.source}).",
             f"Compute floor: {_fmt(work.total_flops)} / {_eng(flop_term.rate, 'FLOP/s')} = {_fmt(flop_term.floor_s / t.factor)} {t.name}.",
             f"Bytes (A and B read once, C written once): {work.counted.split(';')[0]} = {_fmt(work.bytes)} B; "
             f"at {_eng(dram.rate, 'B/s')} ({dram.source}) that is {_fmt(dram.floor_s / t.factor)} {t.name}.",
             f"The larger term sets the floor: {p.bound}-bound (intensity {_fmt(p.intensity_flop_per_byte)} FLOP/B "
             f"against a ridge of {_fmt(p.ridge_flop_per_byte)} FLOP/B).",
             f"Answer: about {_fmt(p.floor_s / t.factor)} {t.name}."]
    return Drill(id=f"gemm:{m}x{n}x{k}:{dtype}:{gpu}", kind="gemm", topic="tensor-cores", gpu=gpu,
                 question=f"How long should a {dtype} GEMM with M={m}, N={n}, K={k} take on an {_gpu_name(gpu)}, "
                          f"at best? (answer in {t.name})",
                 answer=p.floor_s / t.factor, unit=t, tolerance=FLOOR_TOLERANCE, steps=tuple(steps),
                 sources=(flop_term.ref, dram.ref))


def bound(flops: float, nbytes: float, precision: str, gpu: str) -> Drill:
    """Is a kernel with these FLOPs and bytes compute- or memory-bound, and what is its floor?"""
    work = predict.Work(bytes=nbytes, flops={precision: flops})
    p = predict.predict(work, _datasheet(gpu))
    t = _time_unit(p.floor_s)
    flop_term = next(term for term in p.terms if term.name != "dram")
    dram = next(term for term in p.terms if term.name == "dram")
    steps = [f"Arithmetic intensity: {_sci(flops)} FLOPs / {_sci(nbytes)} B = {_fmt(p.intensity_flop_per_byte)} FLOP/B.",
             f"{_gpu_name(gpu)}: {precision.upper()} peak {_eng(flop_term.rate, 'FLOP/s')} ({flop_term.source}); "
             f"DRAM {_eng(dram.rate, 'B/s')} ({dram.source}).",
             f"Ridge point: {_eng(flop_term.rate, 'FLOP/s')} / {_eng(dram.rate, 'B/s')} = {_fmt(p.ridge_flop_per_byte)} FLOP/B.",
             f"Intensity is {'above' if p.bound == 'compute' else 'below'} the ridge: {p.bound}-bound.",
             f"Terms: compute {_fmt(flop_term.floor_s / t.factor)} {t.name}, memory {_fmt(dram.floor_s / t.factor)} {t.name}; "
             f"the floor is the larger, {_fmt(p.floor_s / t.factor)} {t.name}."]
    return Drill(id=f"bound:{flops:.3g}:{nbytes:.3g}:{precision}:{gpu}", kind="bound", topic="perf-model", gpu=gpu,
                 question=f"A kernel performs {_sci(flops)} {precision.upper()} FLOPs and moves {_sci(nbytes)} bytes of DRAM "
                          f"traffic on an {_gpu_name(gpu)}. Is it compute- or memory-bound, and what is its floor time? "
                          f"(answer in {t.name}, and name the bound)",
                 answer=p.floor_s / t.factor, unit=t, tolerance=FLOOR_TOLERANCE, steps=tuple(steps), bound=p.bound,
                 sources=(flop_term.ref, dram.ref))


def decode_floor(params: float, bytes_per_weight: float, gpus: int, gpu: str, weights: str = "") -> Drill:
    """Batch-1 decode floor in tokens/s."""
    f = predict.decode_floor(params, bytes_per_weight, gpu, gpus=gpus, use_measured=False)
    dram = _datasheet(gpu).bandwidth["dram"]
    total = params * bytes_per_weight
    weights = weights or f"{bytes_per_weight:g}-byte"
    steps = [f"At batch 1 every weight is read once per token: {params / 1e9:g}e9 x {bytes_per_weight:g} B = {_fmt(total)} B "
             f"({total / 1e9:g} GB).",
             f"Split over {gpus} GPU{'s' if gpus > 1 else ''} (tensor parallel), each reads {_fmt(f.bytes_per_token_per_gpu)} B per token.",
             _roof_line(f"{_gpu_name(gpu)} DRAM bandwidth", dram, "B/s") + ".",
             f"Time per token >= {_fmt(f.bytes_per_token_per_gpu)} / {_eng(dram.value, 'B/s')} = {_fmt(f.seconds_per_token * 1e3)} ms.",
             f"Tokens/s <= 1 / {_fmt(f.seconds_per_token * 1e3)} ms = {_fmt(f.tokens_per_s)} (ignoring KV-cache reads, "
             "communication and launch gaps, which only lower it)."]
    return Drill(id=f"decode-floor:{params:g}:{bytes_per_weight:g}:{gpus}:{gpu}", kind="decode-floor", topic="inference",
                 gpu=gpu,
                 question=f"What is the decode floor in tokens/s for a {params / 1e9:g}B-parameter model with {weights} "
                          f"weights on {_gpus_phrase(gpus, gpu)} at batch 1?",
                 answer=f.tokens_per_s, unit=unit("tokens/s"), tolerance=FLOOR_TOLERANCE, steps=tuple(steps),
                 sources=(dram.ref,))


def mfu(params: float, tokens_per_s: float, gpus: int, gpu: str) -> Drill:
    """MFU of a BF16 training run from its throughput."""
    peak = _datasheet(gpu).compute["bf16"]
    if not peak.value:
        raise DrillError(f"{_gpu_name(gpu)} has no BF16 tensor peak in the hardware tables")
    model = 6 * params * tokens_per_s
    total = gpus * peak.value
    value = 100 * model / total
    steps = [f"Model FLOP/s = 6 x N x tokens/s = 6 x {params / 1e9:g}e9 x {_fmt(tokens_per_s)} = {_eng(model, 'FLOP/s')} "
             "(6ND: 2 FLOPs per parameter per token forward, 4 backward).",
             _roof_line(f"{_gpu_name(gpu)} dense BF16 tensor peak", peak, "FLOP/s") + "; not the 2:4-sparse figure.",
             f"Aggregate peak: {gpus} x {_eng(peak.value, 'FLOP/s')} = {_eng(total, 'FLOP/s')}.",
             f"MFU = {_eng(model, 'FLOP/s')} / {_eng(total, 'FLOP/s')} = {value:.1f}%."]
    return Drill(id=f"mfu:{params:g}:{tokens_per_s:g}:{gpus}:{gpu}", kind="mfu", topic="training", gpu=gpu,
                 question=f"A {params / 1e9:g}B-parameter model trains in BF16 on {_gpus_phrase(gpus, gpu)} "
                          f"at {_fmt(tokens_per_s)} tokens/s in total. What MFU does it get? (answer in %)",
                 answer=value, unit=unit("%"), tolerance=MFU_TOLERANCE, steps=tuple(steps), sources=(peak.ref,))


@dataclass(frozen=True)
class ModelConfig:
    name: str
    layers: int
    kv_heads: int
    head_dim: int
    source: str


#: Published configurations (attention layers, key/value heads, head dimension).
MODELS = (
    ModelConfig("Llama-2-7B", 32, 32, 128, "Touvron et al., Llama 2 (2023), and its config.json: no GQA at 7B"),
    ModelConfig("Llama-2-70B", 80, 8, 128, "Touvron et al., Llama 2 (2023): GQA with 8 KV heads at 70B"),
    ModelConfig("Llama-3-8B", 32, 8, 128, "Meta Llama 3 model card and config.json"),
    ModelConfig("Llama-3-70B", 80, 8, 128, "Meta Llama 3 model card and config.json"),
    ModelConfig("Mistral-7B", 32, 8, 128, "Jiang et al., Mistral 7B (2023), Table 1"),
)


def kv_cache(model: str, batch: int, seq: int, dtype: str = "bf16") -> Drill:
    """Size of the KV cache of a real model configuration."""
    cfg = next((c for c in MODELS if c.name == model), None)
    if cfg is None:
        raise DrillError(f"unknown model {model!r}; known: {', '.join(c.name for c in MODELS)}")
    size = predict.DTYPE_BYTES[dtype]
    per_token = 2 * cfg.layers * cfg.kv_heads * cfg.head_dim * size
    total = per_token * batch * seq
    steps = [f"{cfg.name}: {cfg.layers} layers, {cfg.kv_heads} key/value heads of dimension {cfg.head_dim} ({cfg.source}).",
             f"Per token: 2 (K and V) x {cfg.layers} x {cfg.kv_heads} x {cfg.head_dim} x {size} B = {_fmt(per_token)} B.",
             f"Tokens cached: {batch} x {seq} = {_fmt(batch * seq)}.",
             f"Total: {_fmt(per_token)} x {_fmt(batch * seq)} = {_fmt(total)} B = {total / 1e9:.4g} GB."]
    return Drill(id=f"kv-cache:{model}:{batch}:{seq}:{dtype}", kind="kv-cache", topic="inference", gpu="",
                 question=f"How large is the {dtype} KV cache of {cfg.name} for {batch} sequence{'s' if batch > 1 else ''} of {seq} tokens? (answer in GB)",
                 answer=total / 1e9, unit=unit("GB"), tolerance=KV_TOLERANCE, steps=tuple(steps), sources=(cfg.source,))


# --------------------------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------------------------


def _sample_memory_op(rng: random.Random, gpu: str | None) -> Drill:
    # softmax and LayerNorm count their FP32 arithmetic too: the GPU needs both numbers
    gpu = gpu or rng.choice(_gpus_with(lambda c: bool(c.bandwidth["dram"].value and c.compute["fp32"].value)))
    op = rng.choice(MEMORY_OPS)
    return memory_op(op, rng.choice((4096, 8192, 16384, 32768)), rng.choice((1024, 2048, 4096, 8192)),
                     rng.choice(("bf16", "fp16", "fp32")), gpu)


def _sample_gemm(rng: random.Random, gpu: str | None) -> Drill:
    gpu = gpu or rng.choice(_gpus_with(lambda c: bool(c.compute["bf16"].value)))
    m, n, k = rng.choice(((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (8192, 28672, 8192),
                          (4096, 14336, 4096), (2048, 8192, 8192)))
    dtypes = [d for d in ("bf16", "fp8", "tf32") if _datasheet(gpu).compute[d].value]
    return gemm(m, n, k, rng.choice(dtypes), gpu)


def _sample_bound(rng: random.Random, gpu: str | None) -> Drill:
    gpu = gpu or rng.choice(_gpus_with(lambda c: bool(c.compute["bf16"].value and c.bandwidth["dram"].value)))
    c = _datasheet(gpu)
    precision = "bf16" if c.compute["bf16"].value else "fp32"
    ridge = c.ridge_point(precision)
    while True:
        intensity = ridge * 10 ** rng.uniform(-1.3, 1.3)
        nbytes = _round2(10 ** rng.uniform(8, 10))
        flops = _round2(intensity * nbytes)
        if not (ridge / BOUND_MARGIN < flops / nbytes < ridge * BOUND_MARGIN):
            return bound(flops, nbytes, precision, gpu)


def _sample_decode(rng: random.Random, gpu: str | None) -> Drill:
    gpu = gpu or rng.choice(_gpus_with(lambda c: bool(c.bandwidth["dram"].value)))
    memory = hardware.get(gpu).dram_bytes
    params = rng.choice((7e9, 8e9, 13e9, 34e9, 70e9, 405e9))
    name, width = rng.choice((("BF16", 2.0), ("FP8", 1.0), ("INT4", 0.5)))
    fits = [n for n in (1, 2, 4, 8) if params * width <= DECODE_MEMORY_SHARE * n * memory]
    if not fits:
        return _sample_decode(rng, gpu)
    return decode_floor(params, width, rng.choice(fits), gpu, weights=name)


def _sample_mfu(rng: random.Random, gpu: str | None) -> Drill:
    gpu = gpu or rng.choice(_gpus_with(lambda c: bool(c.compute["bf16"].value)))
    params = rng.choice((1.3e9, 7e9, 13e9, 70e9))
    gpus = rng.choice((8, 16, 64, 256))
    peak = _datasheet(gpu).compute["bf16"].value
    tokens = _round2(rng.uniform(0.25, 0.6) * gpus * peak / (6 * params))
    return mfu(params, tokens, gpus, gpu)


def _sample_kv(rng: random.Random, gpu: str | None) -> Drill:
    return kv_cache(rng.choice(MODELS).name, rng.choice((1, 8, 16, 32, 64)), rng.choice((2048, 4096, 8192, 32768)))


SAMPLERS: dict[str, Callable[[random.Random, str | None], Drill]] = {
    "memory-op": _sample_memory_op,
    "gemm": _sample_gemm,
    "bound": _sample_bound,
    "decode-floor": _sample_decode,
    "mfu": _sample_mfu,
    "kv-cache": _sample_kv,
}
