#!/usr/bin/env bash
# Record tests/data/nsys_torch_sync_kinds/torch_sync_kinds.py under Nsight Systems on a GPU
# machine: the report, its SQLite export, and NVIDIA's own analyses of it.
#
#     scripts/record-nsys-sync-kinds.sh OUT_DIR
#
# Needs nsys on PATH (see scripts/nsys-env.sh) and Python with torch ($PYTHON, default python3).
# Writes OUT_DIR/torch_sync_kinds.{nsys-rep,sqlite}, OUT_DIR/nsys_version.txt,
# OUT_DIR/nvidia-smi.txt and OUT_DIR/nvidia/ (scripts/export-nvidia-outputs.sh).
set -euo pipefail
out="${1:?usage: scripts/record-nsys-sync-kinds.sh OUT_DIR}"
python="${PYTHON:-python3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$here/tests/data/nsys_torch_sync_kinds/torch_sync_kinds.py" "$work/"
cd "$work"
nsys --version > "$out/nsys_version.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/nvidia-smi.txt" || true
"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" >> "$out/nvidia-smi.txt"
nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --cuda-graph-trace=node \
    --force-overwrite true --output torch_sync_kinds "$python" torch_sync_kinds.py
nsys export --type sqlite --force-overwrite true --output torch_sync_kinds.sqlite torch_sync_kinds.nsys-rep
cp torch_sync_kinds.nsys-rep torch_sync_kinds.sqlite "$out/"
"$here/scripts/export-nvidia-outputs.sh" "$work/ref" "$work/torch_sync_kinds.nsys-rep"
rm -rf "$out/nvidia"
mv "$work/ref/torch_sync_kinds" "$out/nvidia"
echo "wrote $out"
