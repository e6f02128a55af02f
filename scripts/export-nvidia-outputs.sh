#!/usr/bin/env bash
# Produce NVIDIA's own views of recorded reports, for cross-checking coach's readers:
#   - for each .ncu-rep: `ncu --import --csv` of the raw and details pages, in the tool's own
#     units and in base units;
#   - for each .nsys-rep: `nsys stats` (CSV) and a set of `nsys recipe` outputs.
#
#     scripts/export-nvidia-outputs.sh OUT_DIR REPORT...
#     scripts/export-nvidia-outputs.sh --together NAME OUT_DIR REPORT.nsys-rep...
#
# Writes OUT_DIR/<report-stem>/... per report; for an .nsys-rep it refuses a folder that exists (nsys
# recipe keeps an existing output, so the outputs of two reports of one name would mix). With
# --together, runs the recipes once over all the .nsys-rep reports given (their multi-report mode: one
# rank per report) into OUT_DIR/NAME/; set
# RECIPE_MODE (none, concurrent, dask-futures) to choose how nsys runs them, and RECIPES (a
# space-separated list) to run other recipes than the default set.
#
# Each recipe log starts with the command line that made it ("+ nsys recipe ..."): coach's tests
# read the --gap that gpu_gaps ran with from there. gpu_gaps runs with --gap 0 (every gap; NVIDIA's
# default lists only gaps over 500 ms). `nsys recipe NAME --help` goes to recipe_NAME.help.
#
# Needs ncu and nsys on PATH (see scripts/nsys-env.sh).
set -uo pipefail
together=""
if [ "${1:-}" = "--together" ]; then together="${2:?usage: --together NAME OUT_DIR REPORT...}"; shift 2; fi
out="${1:?usage: scripts/export-nvidia-outputs.sh [--together NAME] OUT_DIR REPORT...}"; shift
mkdir -p "$out"
out="$(cd "$out" && pwd)"
RECIPES="${RECIPES:-cuda_gpu_kern_sum cuda_api_sum cuda_gpu_mem_time_sum cuda_gpu_mem_size_sum nvtx_gpu_proj_trace nvtx_gpu_proj_sum nvtx_sum cuda_gpu_time_util_map gpu_gaps cuda_memcpy_async cuda_memcpy_sync cuda_api_sync}"
STATS="cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,nvtx_gpu_proj_sum,cuda_gpu_trace,cuda_api_trace"

recipe_args() {
    case "$1" in
    gpu_gaps) echo "--gap 0" ;;
    esac
}

# run_recipes DEST SCRATCH REPORT...: every recipe over the reports (already in SCRATCH) together.
run_recipes() {
    local dest="$1" scratch="$2"; shift 2
    nsys recipe --help > "$dest/recipe_help.txt" 2>&1
    for r in $RECIPES; do
        nsys recipe "$r" --help > "$dest/recipe_$r.help" 2>&1
        # shellcheck disable=SC2046 # recipe_args is meant to split into words
        local cmd=(nsys recipe "$r" --input "$@" --output "$dest/recipe_$r" ${RECIPE_MODE:+--mode "$RECIPE_MODE"} $(recipe_args "$r"))
        echo "+ ${cmd[*]}" > "$dest/recipe_$r.log"
        ( cd "$scratch" && timeout 600 "${cmd[@]}" >> "$dest/recipe_$r.log" 2>&1 ) \
            || echo "recipe $r failed (see recipe_$r.log)" >> "$dest/failures.txt"
        rm -f "$dest/recipe_$r"/*.ipynb   # the notebooks the recipes write for the GUI; coach reads the tables
    done
}

# fresh DEST: refuse to mix the outputs of two reports (say, two reports named "report") in one folder
fresh() {
    if [ -e "$1" ]; then
        echo "export-nvidia-outputs.sh: $1 exists: each report needs a folder of its own (remove it to redo it)" >&2
        exit 1
    fi
    mkdir -p "$1"
}

if [ -n "$together" ]; then
    dest="$out/$together"; fresh "$dest"
    nsys --version > "$dest/nsys_version.txt" 2>&1
    scratch="$(mktemp -d)"; inputs=()
    for rep in "$@"; do
        case "$rep" in *.nsys-rep) cp "$rep" "$scratch/"; inputs+=("$scratch/$(basename "$rep")") ;;
                       *) echo "skipping $rep: --together takes .nsys-rep reports" >&2 ;; esac
    done
    run_recipes "$dest" "$scratch" "${inputs[@]}"
    rm -rf "$scratch"
    exit 0
fi

for rep in "$@"; do
    rep="$(cd "$(dirname "$rep")" && pwd)/$(basename "$rep")"
    stem="$(basename "$rep")"; stem="${stem%.*}"
    dest="$out/$stem"
    case "$rep" in
    *.ncu-rep)
        mkdir -p "$dest"   # every file is rewritten whole
        ncu --version > "$dest/ncu_version.txt" 2>&1
        ncu --import "$rep" --csv --page raw > "$dest/raw.csv" 2> "$dest/raw.err"
        ncu --import "$rep" --csv --page raw --print-units base > "$dest/raw_base_units.csv" 2>> "$dest/raw.err"
        ncu --import "$rep" --csv --page details > "$dest/details.csv" 2> "$dest/details.err"
        ncu --import "$rep" --csv --page details --print-units base > "$dest/details_base_units.csv" 2>> "$dest/details.err"
        ncu --import "$rep" --csv --page details --print-details all --print-rule-details > "$dest/details_all.csv" 2>> "$dest/details.err"
        ncu --import "$rep" --csv --page raw --print-fp --print-units base > "$dest/raw_fp_base_units.csv" 2>> "$dest/raw.err"
        ;;
    *.nsys-rep)
        fresh "$dest"      # nsys recipe will not write into an existing folder: old and new would mix
        nsys --version > "$dest/nsys_version.txt" 2>&1
        scratch="$(mktemp -d)"; cp "$rep" "$scratch/"
        ( cd "$scratch" && nsys stats --force-export=true --report "$STATS" --format csv \
              --output "$dest/stats" "$scratch/$(basename "$rep")" > "$dest/stats.log" 2>&1 )
        run_recipes "$dest" "$scratch" "$scratch/$(basename "$rep")"
        rm -rf "$scratch"
        ;;
    *) echo "skipping $rep: not a .ncu-rep or .nsys-rep" >&2 ;;
    esac
done
