"""``coach calibrate``: measure the ceilings of the GPU at hand and keep them for every later analysis."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer

from coach.cli.main import app
from coach.cli.output import console, err_console
from coach.errors import CoachError


@app.command("calibrate")
def calibrate_cmd(
    out: Path = typer.Option(None, "--out", help="Where to write the JSON (default: the user's data folder, "
                                                 "$COACH_HOME or $XDG_DATA_HOME/coach, under calibration/<gpu>.json)."),
    device: int = typer.Option(0, "--device", min=0, help="CUDA device index."),
) -> None:
    """Measure this GPU's ceilings in about a minute: copy and read bandwidth, FP32, TF32 and BF16
    matmul rates, kernel launch latency. Every later "% of ceiling", roofline and prediction for this
    GPU then uses them next to the datasheet numbers.

    Runs `python -m coach.capture.calibrate` (torch and triton on an NVIDIA GPU) in this process.

    Examples:

        coach calibrate

        coach calibrate --out h200.json
    """
    from coach.capture import calibrate  # noqa: PLC0415 - standard library only until it measures
    from coach.paths import calibration_dir  # noqa: PLC0415

    name = _gpu_name(device)
    target = out if out is not None else calibration_dir() / f"{_slug(name)}.json"
    err_console.print(f"measuring the ceilings of {name} (device {device}), about a minute...")
    calibrate.main([str(target), "--device", str(device)])
    _summary(target)


def _gpu_name(device: int) -> str:
    """The CUDA device's name; a CoachError saying what is missing when there is no GPU to measure."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        raise CoachError("coach calibrate measures the GPU at hand and needs PyTorch with CUDA and triton "
                         "(pip install 'coach[gpu]'); without a GPU, coach uses the H200 ceilings shipped in "
                         "hardware/measured/") from None
    if not torch.cuda.is_available():
        raise CoachError("coach calibrate: no CUDA GPU is visible to PyTorch (torch.cuda.is_available() is False); "
                         "run it on the machine with the GPU, and copy the JSON it writes to calibration/ in your "
                         "coach data folder elsewhere")
    if device >= torch.cuda.device_count():
        raise CoachError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return str(torch.cuda.get_device_name(device))


def _slug(device_name: str) -> str:
    """A file name for a device: 'NVIDIA H200' -> 'h200'. The tables match calibrations by the device
    name inside the file, not by this name."""
    name = re.sub(r"^(nvidia|amd)\s+", "", device_name.strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"


def _summary(path: Path) -> None:
    doc = json.loads(path.read_text())
    prov = doc.get("provenance", {})
    console.print(f"[bold]{prov.get('gpu_name')}[/]: wrote {path} ({prov.get('elapsed_s')} s)")
    for name, m in doc.get("measurements", {}).items():
        value, unit = m.get("value"), m.get("unit")
        shown = (f"{value / 1e12:.3g} TB/s" if unit == "byte/s" else f"{value / 1e12:.3g} TFLOP/s" if unit == "flop/s"
                 else f"{value * 1e6:.3g} us" if unit == "s" else f"{value} {unit}")
        console.print(f"  {name}: {shown}", highlight=False)
