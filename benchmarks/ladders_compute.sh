#!/usr/bin/env bash
# Re-measure the compute-bound ladders (issue 8) on the GPU machine in one call: every rung of
# matmul/fp32, matmul/bf16 and attention beside its library peers (cuBLAS FP32 with TF32 off, cuBLAS
# BF16, PyTorch SDPA), timed in the same run, at each of the ladder's sizes; then each ladder's main
# size under Nsight Compute (the sections of its ladder.toml, warm-up calls left out).
#
#     benchmarks/ladders_compute.sh OUT_DIR [LADDER...]
#
# The same as `python3 -m coach.capture.ladder run matmul/fp32 matmul/bf16 attention --ncu --out
# OUT_DIR` from the repository root. Writes OUT_DIR/<ladder>/results.json (results.<size>.json for
# its other sizes), OUT_DIR/<ladder>/ncu/<ladder>.ncu-rep, and OUT_DIR/summary.txt: the runner's table
# of every rung and peer (median time, TFLOP/s, % of the measured ceiling). Needs torch, triton, cupy
# and ncu (the gpu extra); PYTHON names the interpreter (default python3). The runner keeps the whole
# run within its time budget (--budget-s, 540 s): profiling starts only while time is left.
set -euo pipefail
out="${1:?usage: benchmarks/ladders_compute.sh OUT_DIR [LADDER...]}"
shift
ladders=("$@")
if [ ${#ladders[@]} -eq 0 ]; then
    ladders=(matmul/fp32 matmul/bf16 attention)
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$repo"
PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "${PYTHON:-python3}" -m coach.capture.ladder run "${ladders[@]}" \
    --ncu --out "$out" | tee "$out/summary.txt"
