"""Check the hand-written wgmma/TMA rungs (07-10) on the GPU before the ladder runner times them.

    python3 kernels/matmul/bf16/check_wgmma.py [RUNG_KEY...]

For each rung: build it as the runner does (NVRTC through CuPy, the runner's options), print its
registers, spills and SASS counts (HGMMA, UTMALDG, USETMAXREG); then structured products whose
wrong elements say which operand path is wrong (A = I: C must equal B; B = I: C must equal A, with
entries that name their own row or column); then random products at three sizes against a float64
reference and torch.matmul; then the time at 8192^3 beside torch.matmul (cuBLAS), with the tensor maps' L2 promotion at
problem.py's setting, at the other of 128 / 256 bytes, and at problem.py's again. Needs torch, cupy
and triton (the GPU machine's python3); run it under `timeout`, a deadlocked kernel never returns.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from coach.capture.ladder import Context, CupyBuild, _use_torch_stream  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNGS = {key: "sm_90a" for key in ("07_wgmma_tma", "08_wgmma_specialized", "09_wgmma_cluster", "10_wgmma_tma_store")}


def _problem():
    spec = importlib.util.spec_from_file_location("mmbf16_problem", HERE / "problem.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def say(*a):
    print(*a, flush=True)


def structured(run, n: int) -> bool:
    """A = I with B's entries naming their column (then their row), and B = I likewise for A:
    every element of C is a small integer that bf16 holds exactly, so C must match bit for bit."""
    eye = torch.eye(n, device="cuda", dtype=torch.bfloat16)
    idx = torch.arange(n, device="cuda") % 256
    col = idx.repeat(n, 1).to(torch.bfloat16)  # [i][j] = j % 256
    row = col.t().contiguous()  # [i][j] = i % 256
    ok = True
    for label, a, b, want in (("A=I, B[i][j]=j", eye, col, col), ("A=I, B[i][j]=i", eye, row, row),
                              ("B=I, A[i][j]=j", col, eye, col), ("B=I, A[i][j]=i", row, eye, row)):
        got = run(a.contiguous(), b.contiguous())
        bad = (got.float() != want.float()).nonzero()
        if len(bad):
            ok = False
            samples = ", ".join(f"C[{i}][{j}]={got[i, j].item():g} (want {want[i, j].item():g})" for i, j in bad[:6].tolist())
            say(f"  {label}: {len(bad)} of {n * n} wrong; {samples}")
        else:
            say(f"  {label}: exact")
    return ok


def random_check(run, m: int, n: int, k: int, kind: str) -> bool:
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    draw = torch.rand if kind == "uniform" else torch.randn
    a = draw(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = draw(k, n, device="cuda", generator=g).to(torch.bfloat16)
    got = run(a, b).double()
    ref = a.double() @ b.double()
    cublas = (a @ b).double()
    rel = float((got - ref).norm() / ref.norm())
    rel_cublas = float((cublas - ref).norm() / ref.norm())
    nan = int(torch.isnan(got).sum())
    ok = nan == 0 and rel <= 1e-2
    msg = f"  {kind} {m} x {n} x {k}: rel err {rel:.3e} (cuBLAS {rel_cublas:.3e}), NaN {nan}: {'ok' if ok else 'WRONG'}"
    if not ok:  # which parts of the tile are wrong: by row within the 128-row tile, column within 256
        err = ((got - ref).abs() > 0.05 * ref.abs().mean() + 1e-3).float()
        by_row = err.reshape(m // 128, 128, n).mean(dim=(0, 2))
        by_col = err.reshape(m, n // 256, 256).mean(dim=(0, 1))
        msg += (f"\n    wrong fraction by tile row (8-row groups): {[round(x, 2) for x in by_row.reshape(16, 8).mean(1).tolist()]}"
                f"\n    by tile column (32-col groups): {[round(x, 2) for x in by_col.reshape(8, 32).mean(1).tolist()]}")
    say(msg)
    del a, b, got, ref, cublas
    return ok


def main(keys: list[str]) -> int:
    from triton.testing import do_bench

    problem = _problem()
    _use_torch_stream(torch)
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    failed = 0
    for key in keys:
        say(f"== {key}")
        try:
            build = CupyBuild(HERE / f"{key}.cu", arch=RUNGS[key], include=ROOT / "kernels" / "common")
        except Exception as err:  # noqa: BLE001 - report and go on to the next rung
            say(f"  build failed: {type(err).__name__}: {err}")
            failed += 1
            continue
        say(f"  NVRTC options {' '.join(build.options)}; resources {build.resources}")
        try:
            hist = build.sass()
            for name, ops in hist.get("kernels", hist).items():
                if isinstance(ops, dict):
                    keep = {op: n for op, n in ops.items() if op.split(".")[0] in ("HGMMA", "UTMALDG", "USETMAXREG", "HMMA", "SYNCS", "WARPGROUP")}
                    say(f"  SASS {name}: {keep}")
        except Exception as err:  # noqa: BLE001
            say(f"  SASS not read: {err}")
        ctx = Context(torch, "cuda", sm_count, build)
        launch = problem.LAUNCH[key]

        def run(a, b, launch=launch, ctx=ctx):
            c = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=torch.bfloat16)
            launch(ctx, {"a": a, "b": b}, {"c": c})
            torch.cuda.synchronize()
            return c

        try:
            ok = structured(run, 256)
            for m, n, k in ((384, 512, 256), (1024, 768, 1024), (8192, 8192, 8192)):
                ok = random_check(run, m, n, k, "uniform") and ok
            ok = random_check(run, 8192, 8192, 8192, "normal") and ok
        except Exception as err:  # noqa: BLE001 - a launch error or a fault: say it in one line
            say(f"  failed: {type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}")
            return 1
        if not ok:
            failed += 1
            continue
        size = problem.SIZES["h200"]
        g = torch.Generator(device="cuda").manual_seed(1)
        sets = [problem.inputs("normal", device="cuda", generator=g, **size) for _ in range(2)]
        outs = [problem.outputs(device="cuda", **size) for _ in range(2)]
        flops = problem.flops(**size)
        state = {"i": 0}

        def call(state=state):
            i = state["i"] = (state["i"] + 1) % 2
            launch(ctx, sets[i], outs[i])

        def peer(state=state):
            i = state["i"] = (state["i"] + 1) % 2
            torch.matmul(sets[i]["a"], sets[i]["b"])

        t_cublas = do_bench(peer, warmup=50, rep=300)
        default = problem.L2_PROMOTION
        for promotion in (default, 3 if default != 3 else 2, default):  # A/B/A: the tensor maps' L2 promotion
            problem.L2_PROMOTION = promotion
            problem._MAPS.clear()
            t_rung = do_bench(call, warmup=50, rep=300)
            say(f"  8192^3, L2 promotion {64 << (promotion - 1)} B: {t_rung * 1e3:.1f} us = {flops / t_rung / 1e9:.1f} TFLOP/s; "
                f"cuBLAS {t_cublas * 1e3:.1f} us = {flops / t_cublas / 1e9:.1f} TFLOP/s; ratio {t_cublas / t_rung:.3f}")
        problem.L2_PROMOTION = default
        problem._MAPS.clear()
        del sets, outs
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(RUNGS)))
