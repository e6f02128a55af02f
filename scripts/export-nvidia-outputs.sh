#!/usr/bin/env bash
# Produce NVIDIA's own views of recorded reports, for cross-checking coach's readers:
#   - for each .ncu-rep: `ncu --import --csv` of the raw and details pages, in the tool's own
#     units and in base units;
#   - for each .nsys-rep: `nsys stats` (CSV) and a set of `nsys recipe` outputs.
#
#     scripts/export-nvidia-outputs.sh OUT_DIR REPORT...
#
# Needs ncu and nsys on PATH (see scripts/nsys-env.sh). Writes OUT_DIR/<report-stem>/...
set -uo pipefail
out="${1:?usage: scripts/export-nvidia-outputs.sh OUT_DIR REPORT...}"; shift
mkdir -p "$out"
out="$(cd "$out" && pwd)"
RECIPES="cuda_gpu_kern_sum cuda_api_sum cuda_gpu_mem_time_sum cuda_gpu_mem_size_sum nvtx_gpu_proj_trace nvtx_gpu_proj_sum nvtx_sum cuda_gpu_time_util_map gpu_gaps cuda_memcpy_async cuda_memcpy_sync cuda_api_sync"
STATS="cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,nvtx_gpu_proj_sum,cuda_gpu_trace,cuda_api_trace"

for rep in "$@"; do
    rep="$(cd "$(dirname "$rep")" && pwd)/$(basename "$rep")"
    stem="$(basename "$rep")"; stem="${stem%.*}"
    dest="$out/$stem"; mkdir -p "$dest"
    case "$rep" in
    *.ncu-rep)
        ncu --version > "$dest/ncu_version.txt" 2>&1
        ncu --import "$rep" --csv --page raw > "$dest/raw.csv" 2> "$dest/raw.err"
        ncu --import "$rep" --csv --page raw --print-units base > "$dest/raw_base_units.csv" 2>> "$dest/raw.err"
        ncu --import "$rep" --csv --page details > "$dest/details.csv" 2> "$dest/details.err"
        ncu --import "$rep" --csv --page details --print-units base > "$dest/details_base_units.csv" 2>> "$dest/details.err"
        ncu --import "$rep" --csv --page details --print-details all --print-rule-details > "$dest/details_all.csv" 2>> "$dest/details.err"
        ncu --import "$rep" --csv --page raw --print-fp --print-units base > "$dest/raw_fp_base_units.csv" 2>> "$dest/raw.err"
        ;;
    *.nsys-rep)
        nsys --version > "$dest/nsys_version.txt" 2>&1
        scratch="$(mktemp -d)"; cp "$rep" "$scratch/"
        ( cd "$scratch" && nsys stats --force-export=true --report "$STATS" --format csv \
              --output "$dest/stats" "$scratch/$(basename "$rep")" > "$dest/stats.log" 2>&1 )
        nsys recipe --help > "$dest/recipe_help.txt" 2>&1
        for r in $RECIPES; do
            ( cd "$scratch" && timeout 300 nsys recipe "$r" --input "$scratch/$(basename "$rep")" \
                  --output "$dest/recipe_$r" > "$dest/recipe_$r.log" 2>&1 ) || echo "recipe $r failed" >> "$dest/failures.txt"
        done
        rm -rf "$scratch"
        ;;
    *) echo "skipping $rep: not a .ncu-rep or .nsys-rep" >&2 ;;
    esac
done
