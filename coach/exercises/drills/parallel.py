"""Parallelism drills: what splitting a model over many GPUs costs, worked out as at a whiteboard.

Communication is costed by ``coach.analyze.collectives`` (bytes each GPU sends over its NVLink, at
half the datasheet's bidirectional figure in each direction); compute by the datasheet's dense
tensor peaks. Every number in a worked solution names its source.

Kinds, and the tolerance each is graded with:

``tensor-parallel``    the forward pass's all-reduce traffic of Megatron-style tensor parallelism:
                       two all-reduces of the b x s x h activations per layer (±20%)
``pipeline-bubble``    the idle share of a GPipe / 1F1B pipeline, (p-1)/(m+p-1) (±5%)
``data-parallel``      a ring all-reduce of the gradients, 2(n-1)/n x bytes / link bandwidth (±20%)
``moe-all-to-all``     an MoE layer's dispatch and combine all-to-alls under expert parallelism (±20%)
``activation-memory``  activations a transformer keeps for the backward pass, after Korthikanti et
                       al. (2022): s*b*h*(34 + 5*a*s/h) bytes per layer, over t with sequence
                       parallelism, without the 5as/h term under FlashAttention (±10%)
``prefill``            the compute floor of a prompt's prefill: 2*N*tokens plus causal attention (±20%)
``training-days``      days to train on D tokens from 6*N*D at a given MFU (±10%)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from coach.analyze import collectives, hardware
from coach.exercises.drills.base import (FLOOR_TOLERANCE, MFU_TOLERANCE, Drill, DrillError, _datasheet, _eng, _fmt,
                                         _gpu_name, _gpus_with, _roof_line, _time_unit)
from coach.exercises.quantity import Unit, unit

#: The pipeline bubble is exact arithmetic on two integers: ±5% allows rounding the fraction only.
BUBBLE_TOLERANCE = 0.05
#: Activation memory is exact arithmetic on the configuration; ±10% allows counting a layer norm or
#: the dropout masks slightly differently, not leaving out the attention scores.
ACTIVATION_TOLERANCE = 0.10
#: Training days is a ratio of numbers the question gives: ±10% allows rounding only.
DAYS_TOLERANCE = MFU_TOLERANCE
#: A board of this many GPUs is the premise of a drill on a GPU whose tables do not give the size of
#: its NVLink domain (HGX boards carry 8): the question states it as an assumption.
BOARD_GPUS = 8
SECONDS_PER_DAY = 86400
#: Weights may fill at most this share of the GPUs' memory in a prefill drill (as in decode drills).
PREFILL_MEMORY_SHARE = 0.8
BF16_BYTES = 2


@dataclass(frozen=True)
class Transformer:
    """A published dense transformer configuration."""

    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    source: str


#: GPT-3 sizes follow the 4h MLP that Korthikanti et al.'s activation count assumes; the Llama
#: models are used for prefill, where only N, L and h enter.
TRANSFORMERS = (
    Transformer("GPT-3 2.7B", 2.7e9, 32, 2560, 32, "Brown et al., Language Models are Few-Shot Learners (2020), Table 2.1"),
    Transformer("GPT-3 6.7B", 6.7e9, 32, 4096, 32, "Brown et al. (2020), Table 2.1"),
    Transformer("GPT-3 175B", 175e9, 96, 12288, 96, "Brown et al. (2020), Table 2.1"),
    Transformer("Llama-3-8B", 8e9, 32, 4096, 32, "Meta Llama 3 model card and config.json"),
    Transformer("Llama-3-70B", 70e9, 80, 8192, 64, "Meta Llama 3 model card and config.json"),
)
GPT3 = tuple(t for t in TRANSFORMERS if t.name.startswith("GPT-3"))


@dataclass(frozen=True)
class MoE:
    name: str
    hidden: int
    experts: int
    top_k: int
    source: str


MOES = (
    MoE("Mixtral-8x7B", 4096, 8, 2, "Jiang et al., Mixtral of Experts (2024), Table 1"),
    MoE("DeepSeek-V3", 7168, 256, 8, "DeepSeek-AI, DeepSeek-V3 Technical Report (2024), §4.2: 256 routed experts, 8 active"),
)


def transformer(name: str) -> Transformer:
    found = next((t for t in TRANSFORMERS if t.name == name), None)
    if found is None:
        raise DrillError(f"unknown model {name!r}; known: {', '.join(t.name for t in TRANSFORMERS)}")
    return found


def moe_model(name: str) -> MoE:
    found = next((m for m in MOES if m.name == name), None)
    if found is None:
        raise DrillError(f"unknown MoE model {name!r}; known: {', '.join(m.name for m in MOES)}")
    return found


def _link(gpu: str, n: int) -> tuple[collectives.Link, str]:
    """The GPU's link and the sentence that states the fabric the question assumes."""
    if not collectives.switched(gpu):
        raise DrillError(f"{_gpu_name(gpu)} is not on NVLink switches in the hardware tables: "
                         "a collective's floor over its links is not the simple bandwidth model")
    try:
        lnk = collectives.link(gpu)
    except collectives.CollectiveError as err:
        raise DrillError(str(err)) from None
    if lnk.domain_gpus and n > lnk.domain_gpus:
        raise DrillError(f"{n} GPUs do not fit one NVLink domain of {_gpu_name(gpu)} ({lnk.domain_gpus} GPUs)")
    return lnk, f"{n} x {_gpu_name(gpu)} on NVLink switches"


def _link_step(gpu: str, lnk: collectives.Link) -> str:
    return (f"{_gpu_name(gpu)} NVLink: {_eng(lnk.bidirectional, 'B/s')} bidirectional ({lnk.source}), so "
            f"{_eng(lnk.bytes_per_s_per_direction, 'B/s')} each way.")


def _max_gpus(gpu: str) -> int:
    dom = hardware.get(gpu).nvlink_domain_gpus
    return dom or BOARD_GPUS


def _duration_unit(seconds: float) -> Unit:
    """us, ms or s: a prefill or an all-reduce can take seconds, unlike a single kernel."""
    return unit("s") if seconds >= 1 else _time_unit(seconds)


def _on(gpus: int, gpu: str) -> str:
    return f"one {_gpu_name(gpu)}" if gpus == 1 else f"{gpus} x {_gpu_name(gpu)}"


def _switched_gpus() -> list[str]:
    return sorted(g for g in hardware.gpus() if collectives.switched(g))


# --------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------


def tensor_parallel(layers: int, hidden: int, batch: int, seq: int, tp: int, gpu: str) -> Drill:
    """Forward all-reduce time of Megatron tensor parallelism over ``tp`` GPUs."""
    lnk, fabric = _link(gpu, tp)
    size = batch * seq * hidden * BF16_BYTES
    per_allreduce = collectives.ring_allreduce_bytes(size, tp)
    total = 2 * layers * per_allreduce
    t_s = collectives.seconds(total, lnk)
    t = _duration_unit(t_s)
    steps = (f"One all-reduce carries the layer's output activations: b x s x h x 2 B = {batch} x {seq} x {hidden} x 2 "
             f"= {_fmt(size)} B.",
             f"A ring all-reduce sends 2(t-1)/t of that from each GPU: 2 x {tp - 1}/{tp} x {_fmt(size)} = {_fmt(per_allreduce)} B.",
             f"Megatron's layer all-reduces twice in the forward pass (after attention, after the MLP): "
             f"2 x {layers} layers x {_fmt(per_allreduce)} = {_fmt(total)} B per GPU.",
             _link_step(gpu, lnk),
             f"Time >= {_fmt(total)} B / {_eng(lnk.bytes_per_s_per_direction, 'B/s')} = {_fmt(t_s / t.factor)} {t.name} "
             "(the backward pass does as much again; overlap with compute hides part of it).")
    return Drill(id=f"tensor-parallel:{layers}:{hidden}:{batch}:{seq}:{tp}:{gpu}", kind="tensor-parallel",
                 topic="training", gpu=gpu,
                 question=f"A {layers}-layer transformer with hidden size {hidden} runs Megatron-style tensor parallelism "
                          f"over {fabric}, batch {batch} x {seq} tokens, BF16 activations. How long does the forward "
                          f"pass's all-reduce traffic take at least? (answer in {t.name})",
                 answer=t_s / t.factor, unit=t, tolerance=FLOOR_TOLERANCE, steps=steps, sources=(lnk.source,))


def pipeline_bubble(stages: int, microbatches: int) -> Drill:
    """The idle share of a pipeline of ``stages`` stages fed ``microbatches`` micro-batches."""
    if stages < 2 or microbatches < 1:
        raise DrillError("a pipeline needs at least 2 stages and 1 micro-batch")
    frac = (stages - 1) / (microbatches + stages - 1)
    steps = (f"Each stage idles p - 1 = {stages - 1} slots in all while the pipeline fills and drains (a slot: one "
             "micro-batch's forward and backward on one stage; GPipe and 1F1B alike).",
             f"The whole schedule lasts m + p - 1 = {microbatches} + {stages} - 1 = {microbatches + stages - 1} slots.",
             f"Bubble = (p-1)/(m+p-1) = {stages - 1}/{microbatches + stages - 1} = {100 * frac:.1f}% of the step.",
             f"More micro-batches shrink it: m = {4 * stages} would give {100 * (stages - 1) / (4 * stages + stages - 1):.1f}%; "
             "interleaved stages shrink it further at the cost of more communication.")
    return Drill(id=f"pipeline-bubble:{stages}:{microbatches}", kind="pipeline-bubble", topic="training", gpu="",
                 question=f"A model is split into p = {stages} pipeline stages and each step runs m = {microbatches} "
                          "micro-batches with a 1F1B schedule. What share of the step does each GPU sit idle in the "
                          "bubble? (answer in %)",
                 answer=100 * frac, unit=unit("%"), tolerance=BUBBLE_TOLERANCE, steps=steps,
                 sources=("Huang et al., GPipe (2019); Narayanan et al., Megatron-LM (2021), §2.2",))


def data_parallel(params: float, grad_bytes: int, gpus: int, gpu: str) -> Drill:
    """Ring all-reduce time of the gradients over ``gpus`` data-parallel GPUs."""
    lnk, fabric = _link(gpu, gpus)
    size = params * grad_bytes
    sent = collectives.ring_allreduce_bytes(size, gpus)
    t_s = collectives.seconds(sent, lnk)
    t = _duration_unit(t_s)
    dtype = {2: "BF16", 4: "FP32"}.get(grad_bytes, f"{grad_bytes}-byte")
    steps = (f"Gradient bytes: {params / 1e9:g}e9 x {grad_bytes} B = {_fmt(size)} B.",
             f"A ring all-reduce (reduce-scatter, then all-gather) sends 2(n-1)/n of them from each GPU: "
             f"2 x {gpus - 1}/{gpus} x {_fmt(size)} = {_fmt(sent)} B.",
             _link_step(gpu, lnk),
             f"Time >= {_fmt(sent)} B / {_eng(lnk.bytes_per_s_per_direction, 'B/s')} = {_fmt(t_s / t.factor)} {t.name} "
             "(NCCL's bus bandwidth reaches a fraction of the link; bucketing overlaps it with the backward pass).")
    return Drill(id=f"data-parallel:{params:g}:{grad_bytes}:{gpus}:{gpu}", kind="data-parallel", topic="training", gpu=gpu,
                 question=f"A {params / 1e9:g}B-parameter model trains data-parallel on {fabric}. How long does one "
                          f"ring all-reduce of its {dtype} gradients take at least? (answer in {t.name})",
                 answer=t_s / t.factor, unit=t, tolerance=FLOOR_TOLERANCE, steps=steps, sources=(lnk.source,))


def moe_all_to_all(model: str, tokens_per_gpu: int, gpus: int, gpu: str) -> Drill:
    """Dispatch + combine all-to-all time of one MoE layer's forward pass under expert parallelism."""
    m = moe_model(model)
    lnk, fabric = _link(gpu, gpus)
    if m.experts % gpus:
        raise DrillError(f"{m.name}'s {m.experts} experts do not split evenly over {gpus} GPUs")
    copies = tokens_per_gpu * m.top_k * m.hidden * BF16_BYTES
    out = collectives.all_to_all_bytes(copies, gpus)
    total = 2 * out
    t_s = collectives.seconds(total, lnk)
    t = _duration_unit(t_s)
    steps = (f"{m.name}: hidden {m.hidden}, {m.experts} experts, top-{m.top_k} routing ({m.source}).",
             f"Dispatch sends each token's hidden vector to its {m.top_k} experts: {tokens_per_gpu} x {m.top_k} x {m.hidden} "
             f"x 2 B = {_fmt(copies)} B per GPU.",
             f"With {m.experts // gpus} expert{'s' if m.experts // gpus > 1 else ''} per GPU and even routing, "
             f"(n-1)/n of it leaves the GPU: {gpus - 1}/{gpus} x {_fmt(copies)} = {_fmt(out)} B.",
             f"Combine brings as much back: 2 x {_fmt(out)} = {_fmt(total)} B per GPU per MoE layer.",
             _link_step(gpu, lnk),
             f"Time >= {_fmt(total)} B / {_eng(lnk.bytes_per_s_per_direction, 'B/s')} = {_fmt(t_s / t.factor)} {t.name} "
             "(skewed routing makes the busiest GPU slower).")
    return Drill(id=f"moe-all-to-all:{model}:{tokens_per_gpu}:{gpus}:{gpu}", kind="moe-all-to-all", topic="inference",
                 gpu=gpu,
                 question=f"{m.name} runs expert-parallel over {fabric}; each GPU holds {tokens_per_gpu:,} tokens. "
                          "How long do one MoE layer's dispatch and combine all-to-alls take at least, with BF16 "
                          f"activations and even routing? (answer in {t.name})",
                 answer=t_s / t.factor, unit=t, tolerance=FLOOR_TOLERANCE, steps=steps, sources=(m.source, lnk.source))


def activation_memory(model: str, batch: int, seq: int, tp: int = 1, flash: bool = False) -> Drill:
    """Activation bytes per GPU that a training step keeps for the backward pass (no recomputation)."""
    cfg = transformer(model)
    base = seq * batch * cfg.hidden
    scores = 0.0 if flash else 5 * cfg.heads * seq / cfg.hidden
    per_layer = base * (34 + scores) / tp
    total = per_layer * cfg.layers
    split = f" / {tp} (tensor + sequence parallel)" if tp > 1 else ""
    steps = [f"{cfg.name}: {cfg.layers} layers, hidden {cfg.hidden}, {cfg.heads} heads ({cfg.source}).",
             "Per layer, 16-bit activations kept for the backward pass: s*b*h*(34 + 5*a*s/h) bytes (Korthikanti et al. "
             "2022, §4: 11sbh attention + 19sbh MLP + 4sbh layer norms, and 5as^2b for the attention scores, softmax "
             "and dropout).",
             f"s*b*h = {seq} x {batch} x {cfg.hidden} = {_fmt(base)}."]
    if flash:
        steps.append("FlashAttention never stores the s x s scores: the 5*a*s/h term drops, leaving 34.")
    else:
        steps.append(f"5*a*s/h = 5 x {cfg.heads} x {seq} / {cfg.hidden} = {scores:.4g}: the scores cost "
                     f"{scores / 34:.2g}x the rest.")
    steps += [f"Per layer: {_fmt(base)} x {34 + scores:.4g}{split} = {_fmt(per_layer)} B.",
              f"All layers: {cfg.layers} x {_fmt(per_layer)} = {_fmt(total)} B = {total / 1e9:.4g} GB per GPU "
              "(selective recomputation or pipeline stages cut it further)."]
    how = (f", tensor parallel t = {tp} with sequence parallelism" if tp > 1 else ", no model parallelism") + \
          (", FlashAttention" if flash else ", attention scores materialised")
    return Drill(id=f"activation-memory:{model}:{batch}:{seq}:{tp}:{int(flash)}", kind="activation-memory",
                 topic="training", gpu="",
                 question=f"How much activation memory does {cfg.name} keep per GPU for the backward pass at micro-batch "
                          f"{batch}, sequence {seq}{how}, without recomputation? (answer in GB)",
                 answer=total / 1e9, unit=unit("GB"), tolerance=ACTIVATION_TOLERANCE, steps=tuple(steps),
                 sources=("Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models (2022)",
                          cfg.source))


def prefill(model: str, prompt: int, batch: int, gpus: int, gpu: str) -> Drill:
    """The floor time of a BF16 prefill of ``batch`` prompts of ``prompt`` tokens on ``gpus`` GPUs."""
    cfg = transformer(model)
    roofs = _datasheet(gpu)
    peak, dram = roofs.compute["bf16"], roofs.bandwidth["dram"]
    if not peak.value or not dram.value:
        raise DrillError(f"{_gpu_name(gpu)} lacks a BF16 tensor peak or a DRAM bandwidth in the hardware tables")
    tokens = prompt * batch
    weights = 2 * cfg.params * tokens
    attention = 2 * cfg.layers * prompt**2 * cfg.hidden * batch
    flops = weights + attention
    compute_s = flops / (gpus * peak.value)
    memory_s = cfg.params * BF16_BYTES / (gpus * dram.value)
    t_s = max(compute_s, memory_s)
    t = _duration_unit(t_s)
    steps = (f"{cfg.name}: N = {cfg.params / 1e9:g}e9 parameters, {cfg.layers} layers, hidden {cfg.hidden} ({cfg.source}).",
             f"Weight matmuls: 2 x N x tokens = 2 x {cfg.params / 1e9:g}e9 x {tokens:,} = {_eng(weights, 'FLOP')}.",
             f"Causal attention (QK^T and PV, half the s x s square): 2 x L x s^2 x h x b = 2 x {cfg.layers} x {prompt}^2 x "
             f"{cfg.hidden} x {batch} = {_eng(attention, 'FLOP')}.",
             _roof_line(f"{_gpu_name(gpu)} dense BF16 tensor peak", peak, "FLOP/s")
             + (f"; x {gpus} GPUs." if gpus > 1 else "."),
             f"Compute floor: {_eng(flops, 'FLOP')} / {_eng(gpus * peak.value, 'FLOP/s')} = {_fmt(compute_s / t.factor)} {t.name}.",
             f"Weights read once: {_fmt(cfg.params * BF16_BYTES)} B / ({gpus} x {_eng(dram.value, 'B/s')}) = "
             f"{_fmt(memory_s / t.factor)} {t.name}: {'far below' if memory_s < compute_s / 3 else 'against'} the compute "
             f"floor, so prefill is {'compute' if compute_s >= memory_s else 'memory'}-bound.",
             f"Answer: about {_fmt(t_s / t.factor)} {t.name} to the first token (tensor-parallel all-reduces and "
             "launch gaps only add).")
    return Drill(id=f"prefill:{model}:{prompt}:{batch}:{gpus}:{gpu}", kind="prefill", topic="inference", gpu=gpu,
                 question=f"How long does a BF16 prefill of {batch} prompt{'s' if batch > 1 else ''} of {prompt:,} tokens "
                          f"take on {cfg.name} {'on' if gpus == 1 else 'split over'} {_on(gpus, gpu)}, at best? (answer in {t.name})",
                 answer=t_s / t.factor, unit=t, tolerance=FLOOR_TOLERANCE, steps=steps, sources=(peak.ref, dram.ref))


def training_days(params: float, tokens: float, gpus: int, mfu_pct: float, gpu: str) -> Drill:
    """Days to train ``params`` on ``tokens`` with ``gpus`` GPUs at ``mfu_pct`` % MFU, from 6ND."""
    peak = _datasheet(gpu).compute["bf16"]
    if not peak.value:
        raise DrillError(f"{_gpu_name(gpu)} has no BF16 tensor peak in the hardware tables")
    flops = 6 * params * tokens
    rate = gpus * peak.value * mfu_pct / 100
    days = flops / rate / SECONDS_PER_DAY
    steps = (f"Training FLOPs = 6 x N x D = 6 x {params / 1e9:g}e9 x {tokens / 1e12:g}e12 = {flops:.3e} "
             "(2 per parameter per token forward, 4 backward).",
             _roof_line(f"{_gpu_name(gpu)} dense BF16 tensor peak", peak, "FLOP/s") + ".",
             f"Sustained rate: {gpus} x {_eng(peak.value, 'FLOP/s')} x {mfu_pct:g}% = {_eng(rate, 'FLOP/s')}.",
             f"Time: {flops:.3e} / {_eng(rate, 'FLOP/s')} = {_fmt(flops / rate)} s = {_fmt(days)} days "
             "(restarts and evaluation add to it).")
    return Drill(id=f"training-days:{params:g}:{tokens:g}:{gpus}:{mfu_pct:g}:{gpu}", kind="training-days", topic="training",
                 gpu=gpu,
                 question=f"How many days does it take to train a {params / 1e9:g}B-parameter model on {tokens / 1e12:g}T "
                          f"tokens with {gpus:,} x {_gpu_name(gpu)} at {mfu_pct:g}% MFU (BF16)? (answer in days)",
                 answer=days, unit=unit("days"), tolerance=DAYS_TOLERANCE, steps=steps, sources=(peak.ref,))


# --------------------------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------------------------


def _pick_switched(rng: random.Random, gpu: str | None) -> str:
    if gpu is not None:
        return gpu
    return rng.choice(_switched_gpus())


def _gpu_counts(gpu: str, choices: tuple[int, ...]) -> list[int]:
    return [n for n in choices if n <= _max_gpus(gpu)] or [2]


def _sample_tp(rng: random.Random, gpu: str | None) -> Drill:
    gpu = _pick_switched(rng, gpu)
    cfg = rng.choice([t for t in TRANSFORMERS if t.params >= 6e9])
    return tensor_parallel(cfg.layers, cfg.hidden, rng.choice((1, 2, 4, 8)), rng.choice((2048, 4096, 8192)),
                           rng.choice(_gpu_counts(gpu, (2, 4, 8))), gpu)


def _sample_bubble(rng: random.Random, gpu: str | None) -> Drill:
    return pipeline_bubble(rng.choice((2, 4, 8, 16)), rng.choice((4, 8, 16, 32, 64)))


def _sample_dp(rng: random.Random, gpu: str | None) -> Drill:
    gpu = _pick_switched(rng, gpu)
    return data_parallel(rng.choice((1.3e9, 7e9, 8e9, 13e9, 70e9)), rng.choice((2, 4)),
                         rng.choice(_gpu_counts(gpu, (4, 8, 16, 32, 72))), gpu)


def _sample_moe(rng: random.Random, gpu: str | None) -> Drill:
    gpu = _pick_switched(rng, gpu)
    m = rng.choice(MOES)
    counts = [n for n in _gpu_counts(gpu, (2, 4, 8, 16, 32, 64)) if m.experts % n == 0]
    return moe_all_to_all(m.name, rng.choice((2048, 4096, 8192, 16384)), rng.choice(counts), gpu)


def _sample_activations(rng: random.Random, gpu: str | None) -> Drill:
    cfg = rng.choice(GPT3)
    return activation_memory(cfg.name, rng.choice((1, 2, 4)), rng.choice((2048, 4096, 8192)), rng.choice((1, 2, 4, 8)),
                             rng.random() < 0.5)


def _sample_prefill(rng: random.Random, gpu: str | None) -> Drill:
    gpu = gpu or rng.choice(_gpus_with(lambda c: bool(c.compute["bf16"].value and c.bandwidth["dram"].value)))
    memory = hardware.get(gpu).dram_bytes or 0

    def fits(cfg: Transformer) -> list[int]:
        return [n for n in (1, 2, 4, 8) if cfg.params * BF16_BYTES <= PREFILL_MEMORY_SHARE * n * memory]

    cfg = rng.choice([t for t in TRANSFORMERS if fits(t)] or [min(TRANSFORMERS, key=lambda t: t.params)])
    return prefill(cfg.name, rng.choice((1024, 2048, 4096, 8192, 32768)), rng.choice((1, 4, 16)), rng.choice(fits(cfg) or [8]), gpu)


def _sample_days(rng: random.Random, gpu: str | None) -> Drill:
    # thousands of GPUs train on NVLink-switched boards: the GPUs of such systems
    gpu = gpu or rng.choice([g for g in _switched_gpus() if _datasheet(g).compute["bf16"].value])
    return training_days(rng.choice((7e9, 13e9, 70e9, 175e9, 405e9)), rng.choice((1e12, 2e12, 15e12)),
                         rng.choice((256, 1024, 2048, 16384)), rng.choice((30, 35, 40, 45, 50)), gpu)


SAMPLERS: dict[str, Callable[[random.Random, str | None], Drill]] = {
    "tensor-parallel": _sample_tp,
    "pipeline-bubble": _sample_bubble,
    "data-parallel": _sample_dp,
    "moe-all-to-all": _sample_moe,
    "activation-memory": _sample_activations,
    "prefill": _sample_prefill,
    "training-days": _sample_days,
}
KIND_TOPICS = {"tensor-parallel": "training", "pipeline-bubble": "training", "data-parallel": "training",
               "moe-all-to-all": "inference", "activation-memory": "training", "prefill": "inference",
               "training-days": "training"}
#: Kinds that need a GPU on NVLink switches (``--gpu`` must name one).
NEEDS_SWITCHED = ("tensor-parallel", "data-parallel", "moe-all-to-all")
