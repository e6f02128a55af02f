#!/usr/bin/env bash
# Record the roofline fixture on the GPU machine: kernels with known floating-point work in every
# precision the roofline separates (tests/programs/roofline_kernels.cu), under Nsight Compute's full
# set, which holds all its roofline sections; plus the naive and the tiled SGEMM alone, as the
# before/after pair for `coach roofline --compare`, and NVIDIA's own CSV views of all three.
#
#     scripts/record-roofline.sh OUT_DIR
#
# Needs nvcc, ncu and cuBLAS (CUDA 13 on the H200 machine). Writes OUT_DIR/roofline_kernels.ncu-rep,
# OUT_DIR/sgemm_naive.ncu-rep, OUT_DIR/sgemm_tiled.ncu-rep, OUT_DIR/nvidia/<report>/..., and
# OUT_DIR/provenance.txt (GPU, driver, tool versions, commands, date).
set -euo pipefail
out="${1:?usage: scripts/record-roofline.sh OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
repo="$(cd "$(dirname "$0")/.." && pwd)"
exe="$out/roofline_kernels"
build=(nvcc -arch=sm_90 -O3 -lineinfo -o "$exe" "$repo/tests/programs/roofline_kernels.cu" -lcublas)
ncu_all=(ncu --set full --import-source yes --clock-control none -f -o "$out/roofline_kernels" "$exe")

"${build[@]}"
"$exe"  # checks every result against the host; stops here on a mismatch
"${ncu_all[@]}"
for k in sgemm_naive sgemm_tiled; do
    ncu --set full --import-source yes --clock-control none -k "regex:^$k\$" -f -o "$out/$k" "$exe"
done
"$repo/scripts/export-nvidia-outputs.sh" "$out/nvidia" "$out"/*.ncu-rep
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
    echo "ncu: $(ncu --version | tail -1)"
    echo "nvcc: $(nvcc --version | tail -1)"
    echo "build: ${build[*]}"
    echo "profile: ${ncu_all[*]}"
    echo "profile (each of sgemm_naive, sgemm_tiled): ncu --set full --import-source yes --clock-control none -k regex:^NAME\$ -f -o OUT_DIR/NAME $exe"
} > "$out/provenance.txt"
rm -f "$exe"
