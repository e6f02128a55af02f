#!/usr/bin/env bash
# Record a CPU-only Nsight Systems report with NVTX annotations, and its SQLite export, with
# whatever nsys is on PATH (or $NSYS). Needs no GPU: it makes a real export of that nsys's schema.
#
#     scripts/record-nsys-nvtx-cpu.sh OUT_DIR
#
# Writes OUT_DIR/nvtx_cpu.nsys-rep, OUT_DIR/nvtx_cpu.sqlite and OUT_DIR/nsys_version.txt, from
# tests/data/nsys_nvtx_cpu_2022/nvtx_cpu.c compiled against the NVTX3 headers that ship with nsys.
set -euo pipefail
out="${1:?usage: scripts/record-nsys-nvtx-cpu.sh OUT_DIR}"
nsys="${NSYS:-nsys}"
here="$(cd "$(dirname "$0")/.." && pwd)"
src="$here/tests/data/nsys_nvtx_cpu_2022/nvtx_cpu.c"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The NVTX3 headers live in the nsys installation (target-linux-x64/nvtx/include).
nsys_bin="$(readlink -f "$(command -v "$nsys")")"
include="$(dirname "$nsys_bin")/nvtx/include"
[ -f "$include/nvtx3/nvToolsExt.h" ] || { echo "no NVTX3 headers under $include" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O1 -Wall -I "$include" "$src" -o "$work/nvtx_cpu" -ldl -lpthread

cd "$work"
"$nsys" --version > "$out/nsys_version.txt"
"$nsys" profile --trace=nvtx,osrt --sample=none --cpuctxsw=none --force-overwrite true \
    --output nvtx_cpu ./nvtx_cpu
# Debian's nsys 2022.4 looks for its importer beside the target binaries, where the package does not
# put it, and leaves a .qdstrm; run the importer from the host folder ourselves.
if [ ! -f nvtx_cpu.nsys-rep ] && [ -f nvtx_cpu.qdstrm ]; then
    importer="$(dirname "$nsys_bin")/../host-linux-x64/QdstrmImporter"
    [ -x "$importer" ] || importer="$(dirname "$(dirname "$nsys_bin")")/host-linux-x64/QdstrmImporter"
    [ -x "$importer" ] || importer="/usr/lib/nsight-systems/host-linux-x64/QdstrmImporter"
    "$importer" -i nvtx_cpu.qdstrm
fi
"$nsys" export --type sqlite --force-overwrite true --output nvtx_cpu.sqlite nvtx_cpu.nsys-rep
cp nvtx_cpu.nsys-rep nvtx_cpu.sqlite "$out/"
echo "wrote $out/nvtx_cpu.nsys-rep and $out/nvtx_cpu.sqlite"
