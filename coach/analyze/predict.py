"""How fast should it run? First-principles floors from bytes moved and FLOPs.

A kernel cannot finish before its DRAM traffic has crossed the memory bus, nor before its
arithmetic has gone through the units that do it. Each of these is a *term*: amount / ceiling.
The floor is the largest term (every unit is assumed to overlap perfectly with every other, so the
floor is a true lower bound), and the term that sets it says what bounds the work. A measured time
is then reported as "% of floor": 100% means the kernel runs at the floor, 25% that it takes four
times as long as the floor allows.

The op models below count the bytes and FLOPs of common operations the way a performance engineer
does on a whiteboard: each input read once and each output written once (what an ideal, fused
kernel moves), and the FLOPs that the operation needs. They are floors, not predictions of any
particular implementation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from coach.analyze.hardware import PRECISION_FIELDS, GPU, Ceiling, Ceilings, ceilings, get
from coach.errors import CoachError

#: Bytes per element of each data type.
DTYPE_BYTES: dict[str, int] = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

#: The compute ceiling a matrix multiply of each data type runs on (tensor cores from TF32 down;
#: FP64 and FP32 on the FMA pipe, which is what cuBLAS uses with TF32 off).
MATMUL_PRECISION: dict[str, str] = {"fp64": "fp64", "fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16",
                                    "fp8": "fp8", "int8": "int8"}

# FLOPs per element of the row-wise ops, counted on the FMA pipe in FP32 (how the kernels accumulate):
# softmax: max (1 compare), subtract the max (1), exp (1, on the special-function unit), sum (1),
# scale by 1/sum (1).
SOFTMAX_FLOP_PER_ELEMENT = 5
# LayerNorm: sum for the mean (1), subtract the mean (1), square and sum for the variance (2),
# multiply by 1/std (1), multiply by gamma (1), add beta (1).
LAYERNORM_FLOP_PER_ELEMENT = 7


class PredictionError(CoachError):
    """Work that cannot be predicted on this GPU (a precision it lacks, a negative size...)."""


@dataclass(frozen=True)
class Work:
    """What a piece of work must do: DRAM bytes (read + written) and FLOPs by precision
    (``coach.analyze.hardware.PRECISION_FIELDS`` keys)."""

    bytes: float
    flops: Mapping[str, float] = field(default_factory=dict)
    label: str = ""
    counted: str = ""  # how bytes and FLOPs were counted, in words

    def __post_init__(self) -> None:
        if self.bytes < 0 or any(v < 0 for v in self.flops.values()):
            raise PredictionError("bytes and FLOPs must not be negative")
        unknown = set(self.flops) - set(PRECISION_FIELDS)
        if unknown:
            raise PredictionError(f"unknown precision {sorted(unknown)}; known: {', '.join(PRECISION_FIELDS)}")

    @property
    def total_flops(self) -> float:
        return float(sum(self.flops.values()))

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity: FLOPs per DRAM byte."""
        return self.total_flops / self.bytes if self.bytes else None


@dataclass(frozen=True)
class Term:
    """One lower bound on the time: ``amount`` through a ``ceiling``."""

    name: str  # "dram" or a precision
    amount: float  # bytes or FLOPs
    unit: str  # "byte" or "flop"
    rate: float
    rate_unit: str
    origin: str  # where the ceiling comes from: measured, published, derived, ...
    source: str
    ref: str  # short form of the source
    floor_s: float


@dataclass(frozen=True)
class Prediction:
    gpu_id: str
    gpu_name: str
    work: Work
    terms: tuple[Term, ...]
    floor_s: float
    dominant: Term
    bound: str  # "memory" or "compute"
    intensity_flop_per_byte: float | None
    ridge_flop_per_byte: float | None  # of the largest compute term's precision against DRAM
    measured_s: float | None = None

    @property
    def pct_of_floor(self) -> float | None:
        """Floor time as a percentage of the measured time: 100 means running at the floor."""
        return None if not self.measured_s else 100.0 * self.floor_s / self.measured_s

    @property
    def achieved_bytes_per_s(self) -> float | None:
        return None if not self.measured_s else self.work.bytes / self.measured_s

    @property
    def achieved_flop_per_s(self) -> float | None:
        return None if not self.measured_s else self.work.total_flops / self.measured_s

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["work"] = {**asdict(self.work), "flops": dict(self.work.flops)}
        d.update(pct_of_floor=self.pct_of_floor, achieved_bytes_per_s=self.achieved_bytes_per_s,
                 achieved_flop_per_s=self.achieved_flop_per_s)
        return d


def predict(work: Work, gpu: GPU | str | Ceilings, *, measured_s: float | None = None,
            use_measured: bool = True) -> Prediction:
    """The floor time of ``work`` on ``gpu``, which term sets it, and how a measured time compares.

    ``use_measured`` takes the GPU's measured ceilings where hardware/measured/ has them (pass
    ``Ceilings`` to choose others). Raises ``PredictionError`` for a precision the GPU lacks.
    """
    roofs = gpu if isinstance(gpu, Ceilings) else ceilings(get(gpu) if isinstance(gpu, str) else gpu, use_measured)
    if measured_s is not None and measured_s <= 0:
        raise PredictionError("the measured time must be positive")
    terms = []
    if work.bytes:
        terms.append(_term("dram", work.bytes, "byte", roofs.bandwidth["dram"], roofs.gpu))
    for precision, amount in work.flops.items():
        if amount:
            terms.append(_term(precision, amount, "flop", roofs.compute[precision], roofs.gpu))
    if not terms:
        raise PredictionError("nothing to predict: give bytes or FLOPs")
    dominant = max(terms, key=lambda t: t.floor_s)
    compute_terms = [t for t in terms if t.name != "dram"]
    main_compute = max(compute_terms, key=lambda t: t.floor_s) if compute_terms else None
    return Prediction(
        gpu_id=roofs.gpu.id,
        gpu_name=roofs.gpu.name,
        work=work,
        terms=tuple(terms),
        floor_s=dominant.floor_s,
        dominant=dominant,
        bound="memory" if dominant.name == "dram" else "compute",
        intensity_flop_per_byte=work.intensity,
        ridge_flop_per_byte=roofs.ridge_point(main_compute.name) if main_compute else None,
        measured_s=measured_s,
    )


def _term(name: str, amount: float, unit: str, roof: Ceiling, gpu: GPU) -> Term:
    if not roof.value:
        what = "DRAM bandwidth" if name == "dram" else f"{name} compute rate"
        raise PredictionError(f"{gpu.name} has no {what} ({roof.source})")
    return Term(name=name, amount=float(amount), unit=unit, rate=roof.value, rate_unit=roof.unit,
                origin=roof.origin, source=roof.source, ref=roof.ref, floor_s=amount / roof.value)


# --------------------------------------------------------------------------------------------
# Bytes and FLOPs of common operations
# --------------------------------------------------------------------------------------------


def _size(dtype: str) -> int:
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise PredictionError(f"unknown dtype '{dtype}'; known: {', '.join(DTYPE_BYTES)}") from None


def _positive(**sizes: int) -> None:
    bad = [k for k, v in sizes.items() if v is None or v <= 0]
    if bad:
        raise PredictionError(f"{', '.join(bad)} must be positive")


def copy(n: int, dtype: str = "fp32") -> Work:
    """``dst = src`` over ``n`` elements: read n, write n."""
    _positive(n=n)
    s = _size(dtype)
    return Work(bytes=2 * n * s, label=f"copy {n} {dtype}", counted=f"2 x {n} x {s} B (read + write)")


def reduction(n: int, dtype: str = "fp32") -> Work:
    """Sum of ``n`` elements: read n, write one; n adds, accumulated in FP32."""
    _positive(n=n)
    s = _size(dtype)
    return Work(bytes=n * s + s, flops={"fp32": float(n)}, label=f"sum of {n} {dtype}",
                counted=f"{n} x {s} B read + {s} B written; {n} FP32 adds")


def softmax(rows: int, cols: int, dtype: str = "bf16") -> Work:
    """Row-wise softmax: each element read once and written once (a fused, one-pass kernel)."""
    _positive(rows=rows, cols=cols)
    s, n = _size(dtype), rows * cols
    return Work(bytes=2 * n * s, flops={"fp32": float(SOFTMAX_FLOP_PER_ELEMENT * n)},
                label=f"softmax {rows}x{cols} {dtype}",
                counted=f"2 x {rows} x {cols} x {s} B (read + write); {SOFTMAX_FLOP_PER_ELEMENT} FP32 FLOPs per element")


def layernorm(rows: int, cols: int, dtype: str = "bf16") -> Work:
    """Row-wise LayerNorm: each element read and written once, plus gamma and beta (cols each)."""
    _positive(rows=rows, cols=cols)
    s, n = _size(dtype), rows * cols
    return Work(bytes=2 * n * s + 2 * cols * s, flops={"fp32": float(LAYERNORM_FLOP_PER_ELEMENT * n)},
                label=f"layernorm {rows}x{cols} {dtype}",
                counted=f"2 x {rows} x {cols} x {s} B + gamma and beta 2 x {cols} x {s} B; "
                        f"{LAYERNORM_FLOP_PER_ELEMENT} FP32 FLOPs per element")


def transpose(rows: int, cols: int, dtype: str = "fp32") -> Work:
    """Out-of-place transpose: read and write every element once."""
    _positive(rows=rows, cols=cols)
    s = _size(dtype)
    return Work(bytes=2 * rows * cols * s, label=f"transpose {rows}x{cols} {dtype}",
                counted=f"2 x {rows} x {cols} x {s} B (read + write)")


def gemm(m: int, n: int, k: int, dtype: str = "bf16") -> Work:
    """C[m,n] = A[m,k] @ B[k,n]: 2mnk FLOPs; A and B read once and C written once (the minimum)."""
    _positive(m=m, n=n, k=k)
    s = _size(dtype)
    return Work(bytes=s * (m * k + k * n + m * n), flops={MATMUL_PRECISION[dtype]: 2.0 * m * n * k},
                label=f"gemm {m}x{n}x{k} {dtype}",
                counted=f"{s} B x ({m}x{k} + {k}x{n} + {m}x{n}); 2 x {m} x {n} x {k} FLOPs")


def gemv(m: int, n: int, dtype: str = "bf16") -> Work:
    """y[m] = A[m,n] @ x[n] (batch 1): the matrix is read once; 2mn FLOPs on the FMA pipe in FP32."""
    _positive(m=m, n=n)
    s = _size(dtype)
    return Work(bytes=s * (m * n + n + m), flops={"fp32": 2.0 * m * n}, label=f"gemv {m}x{n} {dtype}",
                counted=f"{s} B x ({m}x{n} + {n} + {m}); 2 x {m} x {n} FP32 FLOPs")


def causal_fraction(seq_q: int, seq_k: int) -> float:
    """Share of the (seq_q x seq_k) score matrix a causal mask keeps, queries aligned to the end of
    the keys: query i sees seq_k - seq_q + i + 1 keys."""
    if seq_q > seq_k:
        raise PredictionError("causal attention needs seq_q <= seq_k")
    kept = seq_q * (seq_k - seq_q) + seq_q * (seq_q + 1) / 2
    return kept / (seq_q * seq_k)


def attention(batch: int, heads: int, seq_q: int, head_dim: int, *, seq_k: int | None = None,
              causal: bool = False, dtype: str = "bf16") -> Work:
    """Attention forward, as a fused (flash) kernel: Q, K, V read once and O written once;
    4 x batch x heads x seq_q x seq_k x head_dim FLOPs (QK^T and PV), times the causal fraction."""
    seq_k = seq_q if seq_k is None else seq_k
    _positive(batch=batch, heads=heads, seq_q=seq_q, seq_k=seq_k, head_dim=head_dim)
    s = _size(dtype)
    keep = causal_fraction(seq_q, seq_k) if causal else 1.0
    flops = 4.0 * batch * heads * seq_q * seq_k * head_dim * keep
    return Work(bytes=s * batch * heads * head_dim * (2 * seq_q + 2 * seq_k),
                flops={MATMUL_PRECISION[dtype]: flops},
                label=f"attention b{batch} h{heads} sq{seq_q} sk{seq_k} d{head_dim}{' causal' if causal else ''} {dtype}",
                counted=f"{s} B x {batch} x {heads} x {head_dim} x (2 x {seq_q} + 2 x {seq_k}); "
                        f"4 x b x h x sq x sk x d FLOPs{f' x {keep:.4f} (causal)' if causal else ''}")


@dataclass(frozen=True)
class DecodeFloor:
    """The memory floor of batch-1 decoding: every weight is read once per token."""

    gpu_id: str
    params: float
    bytes_per_weight: float
    gpus: int
    bytes_per_token_per_gpu: float
    bandwidth_bytes_per_s: float
    bandwidth_origin: str
    seconds_per_token: float

    @property
    def tokens_per_s(self) -> float:
        return 1.0 / self.seconds_per_token


def decode_floor(params: float, bytes_per_weight: float, gpu: GPU | str, *, gpus: int = 1,
                 kv_cache_bytes: float = 0.0, use_measured: bool = True) -> DecodeFloor:
    """Tokens per second at batch 1 for a model of ``params`` weights at ``bytes_per_weight`` bytes,
    split evenly over ``gpus`` GPUs (tensor parallel) that read their shares at the same time:
    time per token = (params x bytes_per_weight + kv_cache_bytes) / (gpus x DRAM bandwidth).
    Interconnect time and compute are ignored: at batch 1 both are far below the weight reads."""
    if params <= 0 or bytes_per_weight <= 0 or gpus <= 0 or kv_cache_bytes < 0:
        raise PredictionError("params, bytes per weight and GPU count must be positive")
    roofs = ceilings(get(gpu) if isinstance(gpu, str) else gpu, use_measured)
    dram = roofs.bandwidth["dram"]
    if not dram.value:
        raise PredictionError(f"{roofs.gpu.name} has no DRAM bandwidth: {dram.source}")
    per_gpu = (params * bytes_per_weight + kv_cache_bytes) / gpus
    return DecodeFloor(gpu_id=roofs.gpu.id, params=params, bytes_per_weight=bytes_per_weight, gpus=gpus,
                       bytes_per_token_per_gpu=per_gpu, bandwidth_bytes_per_s=dram.value,
                       bandwidth_origin=dram.origin, seconds_per_token=per_gpu / dram.value)


#: Op models by the name the CLI uses.
OPS = {"copy": copy, "reduction": reduction, "softmax": softmax, "layernorm": layernorm, "transpose": transpose,
       "gemm": gemm, "gemv": gemv, "attention": attention}
