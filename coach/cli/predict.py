"""``coach predict`` (floor time of some work on a GPU) and ``coach gpus`` (the hardware table)."""

from __future__ import annotations

from typing import Any, Optional

import typer

from coach.cli.main import app
from coach.errors import CoachError

predict_app = typer.Typer(no_args_is_help=False)
app.add_typer(predict_app, name="predict")

_GPU = typer.Option(None, "--gpu", help="GPU id, e.g. h100-sxm, h200, a100-sxm4-80gb (see `coach gpus`).")
_MEASURED = typer.Option(None, "--measured-ms", help="A measured time in milliseconds, to compare with the floor.")
_DATASHEET = typer.Option(False, "--datasheet", help="Use datasheet ceilings even where measured ones exist.")
_JSON = typer.Option(False, "--json", help="Write the result as JSON on stdout.")


class UsageError(CoachError):
    """A flag missing or wrong: the message names the flag and the fix."""


@predict_app.callback(invoke_without_command=True)
def predict_cmd(
    ctx: typer.Context,
    gpu: Optional[str] = _GPU,
    nbytes: Optional[float] = typer.Option(None, "--bytes", help="DRAM bytes moved (read + written), e.g. 8e9."),
    flops: float = typer.Option(0.0, "--flops", help="FLOPs of the work, e.g. 1e12, at --dtype's rate."),
    dtype: str = typer.Option("fp32", "--dtype", help="Precision of --flops: fp64, fp64_tensor, fp32, fp16_simt, tf32, bf16, fp16, fp8, int8."),
    measured_ms: Optional[float] = _MEASURED,
    datasheet: bool = _DATASHEET,
    as_json: bool = _JSON,
) -> None:
    """How fast should it run? The floor time of some work on a GPU.

    Each term (DRAM bytes / bandwidth, FLOPs / compute rate), which one dominates, the arithmetic
    intensity against the ridge point, and a measured time as "% of floor". Ceilings are the ones
    measured on the GPU where hardware/measured/ has them (--datasheet to use the datasheet's).

    Examples:

        coach predict --gpu h100-sxm --bytes 8e9 --flops 1e12 --dtype bf16

        coach predict --gpu h200 --bytes 5.4e8 --measured-ms 0.42 --json

        coach predict op softmax --rows 32768 --cols 4096 --dtype bf16 --gpu h200
    """
    if ctx.invoked_subcommand is not None:
        return
    from coach.analyze.hardware import PRECISION_FIELDS
    from coach.analyze.predict import Work

    if nbytes is None and not flops:
        raise UsageError("give --bytes and/or --flops (e.g. --bytes 8e9 --flops 1e12), or use `coach predict op NAME`")
    if dtype not in PRECISION_FIELDS:
        raise UsageError(f"--dtype: unknown precision '{dtype}'; use one of {', '.join(PRECISION_FIELDS)}")
    work = Work(bytes=nbytes or 0.0, flops={dtype: flops} if flops else {}, label="work entered on the command line")
    _show(work, gpu, measured_ms, datasheet, as_json)


@predict_app.command("op")
def op_cmd(
    op: str = typer.Argument(..., help="copy, reduction, softmax, layernorm, transpose, gemm, gemv, attention or decode."),
    gpu: Optional[str] = _GPU,
    dtype: str = typer.Option("bf16", "--dtype", help="Element type: fp64, fp32, tf32, bf16, fp16, fp8, int8."),
    n: Optional[int] = typer.Option(None, "--n", help="Elements (copy, reduction); columns of the matrix (gemv, gemm)."),
    rows: Optional[int] = typer.Option(None, "--rows", help="Rows (softmax, layernorm, transpose)."),
    cols: Optional[int] = typer.Option(None, "--cols", help="Columns (softmax, layernorm, transpose)."),
    m: Optional[int] = typer.Option(None, "--m", help="Rows of the output (gemm, gemv)."),
    k: Optional[int] = typer.Option(None, "--k", help="Inner dimension (gemm)."),
    batch: int = typer.Option(1, "--batch", help="Batch (attention)."),
    heads: Optional[int] = typer.Option(None, "--heads", help="Heads (attention)."),
    seq: Optional[int] = typer.Option(None, "--seq", help="Query length (attention)."),
    seq_k: Optional[int] = typer.Option(None, "--seq-k", help="Key length (attention; default --seq)."),
    head_dim: Optional[int] = typer.Option(None, "--head-dim", help="Head dimension (attention)."),
    causal: bool = typer.Option(False, "--causal", help="Causal mask (attention)."),
    params: Optional[float] = typer.Option(None, "--params", help="Model parameters (decode), e.g. 70e9."),
    gpus: int = typer.Option(1, "--gpus", help="GPUs sharing the weights (decode)."),
    measured_ms: Optional[float] = _MEASURED,
    datasheet: bool = _DATASHEET,
    as_json: bool = _JSON,
) -> None:
    """The floor of a common operation (softmax, gemm, attention, decode...).

    Bytes and FLOPs are counted as an ideal fused kernel moves them: each input read once, each
    output written once. `decode` gives the batch-1 token rate of a model whose weights are read
    once per token.

    Examples:

        coach predict op softmax --rows 32768 --cols 4096 --dtype bf16 --gpu h200

        coach predict op gemm --m 8192 --n 8192 --k 8192 --dtype bf16 --gpu h100-sxm --measured-ms 1.6

        coach predict op attention --batch 4 --heads 32 --seq 4096 --head-dim 128 --causal --gpu h200

        coach predict op decode --params 70e9 --dtype bf16 --gpus 8 --gpu h200
    """
    from coach.analyze import predict as p

    needs: dict[str, tuple[str, ...]] = {
        "copy": ("n",), "reduction": ("n",), "softmax": ("rows", "cols"), "layernorm": ("rows", "cols"),
        "transpose": ("rows", "cols"), "gemm": ("m", "n", "k"), "gemv": ("m", "n"),
        "attention": ("heads", "seq", "head_dim"), "decode": ("params",),
    }
    if op not in needs:
        raise UsageError(f"unknown op '{op}'; use one of {', '.join(needs)}")
    given = {"n": n, "rows": rows, "cols": cols, "m": m, "k": k, "heads": heads, "seq": seq, "head_dim": head_dim,
             "params": params}
    absent = [f"--{name.replace('_', '-')}" for name in needs[op] if given[name] is None]
    if absent:
        raise UsageError(f"{op} needs {' and '.join(absent)}")
    if dtype not in p.DTYPE_BYTES:
        raise UsageError(f"--dtype: unknown type '{dtype}'; use one of {', '.join(p.DTYPE_BYTES)}")
    if op == "decode":
        _show_decode(p.decode_floor(params, p.DTYPE_BYTES[dtype], _gpu(gpu), gpus=gpus, use_measured=not datasheet),
                     as_json)
        return
    args: dict[str, Any] = {name: given[name] for name in needs[op]}
    if op == "attention":
        work = p.attention(batch, heads, seq, head_dim, seq_k=seq_k, causal=causal, dtype=dtype)  # type: ignore[arg-type]
    else:
        work = p.OPS[op](**args, dtype=dtype)
    _show(work, gpu, measured_ms, datasheet, as_json)


@app.command("gpus")
def gpus_cmd(
    gpu: Optional[str] = typer.Argument(None, help="Show one GPU in full, with the source of every value."),
    as_json: bool = _JSON,
) -> None:
    """List the GPUs coach knows, or show one with the source of every value.

    The list gives datasheet peaks (dense) and the date of measured ceilings where recorded;
    `coach gpus ID` shows every value of one GPU with its source, and its ceilings.

    Examples:

        coach gpus

        coach gpus h200

        coach gpus --json
    """
    from coach.analyze import hardware as hw
    from coach.cli.output import console, print_json

    if gpu is not None:
        g = _gpu(gpu)
        rows = [{"field": f, "value": g.value(f), "unit": unit, "origin": g.source(f).origin,
                 "source": g.source(f).describe()} for f, unit in hw.FIELDS.items()]
        roofs = hw.ceilings(g)
        if as_json:
            print_json({"id": g.id, "name": g.name, "compute_capability": g.compute_capability, "fields": rows,
                        "ceilings": roofs.frame().to_dicts()})
            return
        from rich.table import Table

        t = Table(title=f"{g.name} ({g.id})", show_lines=False)
        for col in ("field", "value", "origin", "source"):
            t.add_column(col, overflow="fold")
        for r in rows:
            t.add_row(r["field"], _num(r["value"]), r["origin"], r["source"])
        console.print(t)
        if roofs.measurements is not None:
            console.print(f"Measured ceilings: {roofs.measurements.describe()}")
        return
    table = hw.table()
    if as_json:
        print_json(table.to_dicts())
        return
    from coach.cli.output import fit_table

    rows = []
    for g in hw.gpus().values():
        m = hw.measured(g)
        rows.append([g.id, g.compute_capability or "-", _num(g.sm_count),
                     _num(g.dram_bandwidth_bytes_per_s, 1e12), _num(g.peak_fp32_flop_per_s, 1e12),
                     _num(g.peak_tf32_tensor_flop_per_s, 1e12), _num(g.peak_bf16_tensor_flop_per_s, 1e12),
                     _num(g.peak_fp8_tensor_flop_per_s, 1e12), _num(g.dram_bytes, 1e9), str(m.date)[:10] if m else ""])
    # an id is what --gpu takes: wrapped, never elided; the headers wrap at their spaces
    fit_table("GPUs (datasheet, dense peaks; TF/s: TFLOP/s)",
              [(c, "left" if c == "id" else "right") for c in ("id", "cc", "SMs", "DRAM TB/s", "FP32 TF/s", "TF32 TF/s",
                                                               "BF16 TF/s", "FP8 TF/s", "memory GB", "measured")],
              rows, names=tuple(range(10)), wrap=True, name_min=1, drop=("measured", "memory GB", "FP8 TF/s"))


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def _gpu(gpu_id: str | None) -> Any:
    from coach.analyze import hardware as hw

    if not gpu_id:
        raise UsageError(f"--gpu is required; use one of {', '.join(sorted(hw.gpus()))}")
    try:
        return hw.get(gpu_id)
    except hw.UnknownGPUError as err:
        raise UsageError(f"--gpu: unknown GPU '{gpu_id}'; use one of {', '.join(err.known)}") from None


def _show(work: Any, gpu_id: str | None, measured_ms: float | None, datasheet: bool, as_json: bool) -> None:
    from coach.analyze.predict import predict
    from coach.cli.output import console, print_json

    if measured_ms is not None and measured_ms <= 0:
        raise UsageError("--measured-ms must be positive")
    result = predict(work, _gpu(gpu_id), measured_s=None if measured_ms is None else measured_ms * 1e-3,
                     use_measured=not datasheet)
    if as_json:
        print_json(result.to_dict())
        return
    from rich.table import Table

    t = Table(title=f"{work.label} on {result.gpu_name}")
    for col, justify in (("term", "left"), ("amount", "right"), ("ceiling", "right"), ("floor", "right"),
                         ("ceiling from", "left")):
        t.add_column(col, justify=justify, overflow="fold")
    for term in result.terms:
        amount = f"{term.amount:.4g} B" if term.unit == "byte" else f"{term.amount:.4g} FLOP"
        rate = f"{term.rate / 1e12:.4g} TB/s" if term.unit == "byte" else f"{term.rate / 1e12:.4g} TFLOP/s"
        mark = " <" if term is result.dominant else ""
        t.add_row(term.name + mark, amount, rate, _time(term.floor_s), f"{term.origin} ({term.ref})")
    console.print(t)
    if work.counted:
        console.print(f"Counted: {work.counted}")
    console.print(f"Floor: [bold]{_time(result.floor_s)}[/], {result.bound}-bound ({result.dominant.name} term dominates)")
    if result.intensity_flop_per_byte is not None and result.ridge_flop_per_byte is not None:
        side = "below" if result.intensity_flop_per_byte < result.ridge_flop_per_byte else "above"
        console.print(f"Arithmetic intensity {result.intensity_flop_per_byte:.3g} FLOP/B is {side} the ridge point "
                      f"{result.ridge_flop_per_byte:.3g} FLOP/B, where the compute roof meets DRAM bandwidth")
    if result.measured_s is not None:
        console.print(f"Measured {_time(result.measured_s)}: [bold]{result.pct_of_floor:.1f}% of floor[/] "
                      f"({result.achieved_bytes_per_s / 1e12:.3g} TB/s"
                      + (f", {result.achieved_flop_per_s / 1e12:.3g} TFLOP/s)" if result.work.total_flops else ")"))


def _show_decode(floor: Any, as_json: bool) -> None:
    from dataclasses import asdict

    from coach.cli.output import console, print_json

    if as_json:
        print_json({**asdict(floor), "tokens_per_s": floor.tokens_per_s})
        return
    console.print(f"{floor.params:.4g} parameters x {floor.bytes_per_weight:g} B on {floor.gpus} x {floor.gpu_id}: "
                  f"{floor.bytes_per_token_per_gpu / 1e9:.4g} GB per GPU per token at "
                  f"{floor.bandwidth_bytes_per_s / 1e12:.4g} TB/s ({floor.bandwidth_origin})")
    console.print(f"Decode floor at batch 1: [bold]{_time(floor.seconds_per_token)} per token, "
                  f"{floor.tokens_per_s:.1f} tokens/s[/]")


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def _num(value: float | None, scale: float = 1.0) -> str:
    return "-" if value is None else f"{value / scale:.4g}"
