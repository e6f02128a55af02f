#!/usr/bin/env bash
# Record the measurement-hygiene fixtures on a GPU machine:
#
#     scripts/record-hygiene.sh DEBS_DIR OUT_DIR
#
# 1. tests/programs/hygiene_bench.py in its three cases (clean, warm-l2, unsync), each run once under
#    Nsight Systems: OUT_DIR/hygiene_<case>/{<case>.json, <case>.nsys-rep, <case>.sqlite, PROVENANCE.md}.
#    `coach check` must flag warm-l2 and unsync and pass clean (tests/test_hygiene.py).
# 2. The strided/coalesced copy (tests/data/ncu_strided_copy/copy_strided_vs_coalesced.cu) under Nsight
#    Systems and Nsight Compute, for the joined view (`coach join`):
#    OUT_DIR/joined_strided_copy/{strided_copy.nsys-rep, strided_copy.sqlite, strided_copy.ncu-rep, PROVENANCE.md}.
#
# DEBS_DIR holds libdw1 and libelf1 for the Nsight Systems bundled with Nsight Compute
# (scripts/fetch-nsys-deps.sh, scripts/nsys-env.sh). Needs python3 with torch and triton, nvcc, ncu.
# Each program runs from a scratch folder with a minimal environment (nsys stores both in its report).
# Copy each OUT_DIR/<case>/ folder to tests/data/<case>/.
debs="${1:?usage: scripts/record-hygiene.sh DEBS_DIR OUT_DIR}"
out="${2:?usage: scripts/record-hygiene.sh DEBS_DIR OUT_DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/nsys-env.sh
source "$root/scripts/nsys-env.sh" "$debs"
set -euo pipefail
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python="$(command -v "${PYTHON:-python3}")"
nsys_flags=(--trace=cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite true)
clean_env=(env -i "PATH=$PATH" "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" "HOME=$work")

versions() {
    echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "- gpu, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
    echo "- clocks (SM, max SM, memory MHz) at the start: $(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader,nounits)"
    echo "- nsys: $(nsys --version | tail -1)"
}

cp "$root/tests/programs/hygiene_bench.py" "$work/"
for case in clean warm-l2 unsync; do
    dest="$out/hygiene_${case//-/_}"
    mkdir -p "$dest"
    (
        cd "$work"
        "${clean_env[@]}" nsys profile "${nsys_flags[@]}" --output "$case" \
            "$python" hygiene_bench.py --case "$case" --out "$case.json"
        nsys export --type sqlite --force-overwrite true --output "$case.sqlite" "$case.nsys-rep"
    )
    cp "$work/$case.json" "$work/$case.nsys-rep" "$work/$case.sqlite" "$dest/"
    {
        echo "# hygiene_bench.py --case $case"
        echo
        echo "Recorded by scripts/record-hygiene.sh: tests/programs/hygiene_bench.py run once under Nsight Systems,"
        echo "from a scratch folder with a minimal environment (PATH, LD_LIBRARY_PATH, HOME)."
        echo
        versions
        echo "- $("$python" -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)')"
        echo "- command: nsys profile ${nsys_flags[*]} --output $case python3 hygiene_bench.py --case $case --out $case.json"
        echo "- export: nsys export --type sqlite --output $case.sqlite $case.nsys-rep"
        echo
        echo "\`$case.json\` is the program's own result (times_ms from its timer; see the program's docstring)."
    } > "$dest/PROVENANCE.md"
    echo "wrote $dest"
done

dest="$out/joined_strided_copy"
mkdir -p "$dest"
src="$root/tests/data/ncu_strided_copy/copy_strided_vs_coalesced.cu"
build=(nvcc -arch=sm_90 -O3 -lineinfo -o "$work/strided_copy" "$src")
"${build[@]}"
(
    cd "$work"
    "${clean_env[@]}" nsys profile "${nsys_flags[@]}" --output strided_copy ./strided_copy
    nsys export --type sqlite --force-overwrite true --output strided_copy.sqlite strided_copy.nsys-rep
    ncu --set full --import-source yes --clock-control none -f -o strided_copy ./strided_copy
)
cp "$work/strided_copy.nsys-rep" "$work/strided_copy.sqlite" "$work/strided_copy.ncu-rep" "$dest/"
{
    echo "# strided_copy: the same program under Nsight Systems and Nsight Compute"
    echo
    echo "Recorded by scripts/record-hygiene.sh for the joined timeline + kernel view (\`coach join\`)."
    echo
    versions
    echo "- ncu: $(ncu --version | tail -1)"
    echo "- nvcc: $(nvcc --version | tail -1)"
    echo "- build: ${build[*]} (source: tests/data/ncu_strided_copy/copy_strided_vs_coalesced.cu)"
    echo "- nsys: nsys profile ${nsys_flags[*]} --output strided_copy ./strided_copy; nsys export --type sqlite"
    echo "- ncu: ncu --set full --import-source yes --clock-control none -f -o strided_copy ./strided_copy"
} > "$dest/PROVENANCE.md"
echo "wrote $dest"
