"""What torch.compile generates for the transpose peer: the Triton source, its launch configuration
and its compiled resources, printed on the GPU machine.

    python3 kernels/transpose/peer_inductor.py [--rows 16384] [--cols 16384]

It compiles the ladder's peer (``torch.compile(lambda x: x.t().contiguous())``) on an fp32 matrix,
prints the output code Inductor wrote (``torch._inductor.utils.run_and_get_code``), then, for every
Triton kernel Inductor loaded, the configurations it could choose from, the one it launched (block
sizes, num_warps, num_stages) and the compiled kernel's registers, spills and shared memory, and
finally the peer's median time by triton.testing.do_bench. Run it under Nsight Compute
(``ncu --kernel-name regex:triton -c 1 ...``) for the kernel's counters.
Needs a CUDA GPU, torch and triton; nothing is written.
"""

from __future__ import annotations

import argparse
import sys


def _describe_launcher(launcher) -> list[str]:
    lines = []
    config = getattr(launcher, "config", None)
    if config is not None:
        lines.append(f"  launched config: kwargs {getattr(config, 'kwargs', {})}, num_warps "
                     f"{getattr(config, 'num_warps', '?')}, num_stages {getattr(config, 'num_stages', '?')}")
    for name in ("n_regs", "n_spills", "shared"):
        value = getattr(launcher, name, None)
        if value is None and getattr(launcher, "bin", None) is not None:
            value = getattr(launcher.bin, name, None)
            if value is None and getattr(launcher.bin, "metadata", None) is not None:
                value = getattr(launcher.bin.metadata, name, None)
        if value is not None:
            lines.append(f"  {name}: {value}")
    return lines


def _autotuners():
    """Inductor's CachingAutotuner objects in the Python modules it has loaded."""
    from torch._inductor.codecache import PyCodeCache

    modules = getattr(PyCodeCache, "modules", None) or list(getattr(PyCodeCache, "cache", {}).values())
    for module in modules:
        for name, obj in vars(module).items():
            if hasattr(obj, "launchers") and hasattr(obj, "configs"):
                yield name, obj


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--cols", type=int, default=16384)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("peer_inductor.py: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    from torch._inductor.utils import run_and_get_code

    x = torch.randn(args.rows, args.cols, device="cuda", dtype=torch.float32)
    fn = torch.compile(lambda t: t.t().contiguous())
    out, sources = run_and_get_code(fn, x)
    torch.cuda.synchronize()
    if not torch.equal(out, x.t().contiguous()):
        print("peer_inductor.py: the compiled transpose does not match x.t().contiguous()", file=sys.stderr)
        return 1
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, x {args.rows} x {args.cols} fp32")
    for i, src in enumerate(sources):
        print(f"===== Inductor output code {i} =====")
        print(src)
    for name, tuner in _autotuners():
        print(f"===== {name} =====")
        print(f"  candidate configs ({len(tuner.configs)}):")
        for c in tuner.configs:
            print(f"    {getattr(c, 'kwargs', c)} num_warps {getattr(c, 'num_warps', '?')} "
                  f"num_stages {getattr(c, 'num_stages', '?')}")
        for launcher in tuner.launchers:
            print("\n".join(_describe_launcher(launcher)))
        meta = getattr(tuner, "triton_meta", None)
        if meta:
            print(f"  triton_meta: {meta}")
        heuristics = getattr(tuner, "inductor_meta", None)
        if heuristics:
            print(f"  inductor_meta: {heuristics}")
    import triton.testing

    ms = triton.testing.do_bench(lambda: fn(x), warmup=50, rep=300, return_mode="median")
    gbytes = 8 * args.rows * args.cols / 1e9
    print(f"do_bench median {ms * 1e3:.1f} us, {gbytes / ms / 1e3:.2f} TB/s (read + write)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
