#!/usr/bin/env bash
# Record the corpus of tests/programs/wild on a GPU machine: each program under Nsight Systems and the
# PyTorch profiler, and the CUDA/Triton/torch kernels under Nsight Compute with every section set
# (basic, detailed, full, custom section subsets, a --metrics list alone), so that the rules meet
# reports with metrics missing; and NVIDIA's CSV views of some of them.
#
#     scripts/record-wild.sh OUT_DIR [PART...]
#
# PART is nsys, kineto or ncu (default: all three, in that order); each takes about 3-5 minutes on an
# H200, so on a machine that limits one command's time, run them one per call into the same OUT_DIR.
# Writes, in OUT_DIR:
#   nsys/<case>.nsys-rep, nsys/<case>.sqlite   the report and its SQLite export (1 KiB pages, VACUUM)
#   kineto/<case>.json.gz                      torch.profiler traces of the profiled steps
#   ncu/<program>.<collection>.ncu-rep         one report per section set or metric list
#   ncu/csv/<report>.{raw,details}.csv         ncu --import ... --csv views of the reports
#   ncu/csv/memory_patterns.summary.csv        ncu --csv --print-summary per-kernel of a basic run
#   logs/<case>.log                            each run's output (the programs print one JSON line)
#   provenance.json                            GPU, driver, tool versions, commands, date
#   cases.tsv                                  case, tool, command, exit code, seconds
# A case that fails is logged (exit code in cases.tsv) and the others go on. ONLY=REGEX records only
# the cases whose name matches (e.g. ONLY='^dataloader' scripts/record-wild.sh OUT nsys kineto).
#
# Needs nsys and ncu on PATH (scripts/nsys-env.sh makes the nsys bundled with Nsight Compute usable),
# nvcc, and python3 with torch and triton ($PYTHON). Every run happens in a scratch folder with a
# minimal environment: nsys stores the working folder and the whole environment in its report.
set -uo pipefail
out="${1:?usage: scripts/record-wild.sh OUT_DIR [nsys|kineto|ncu ...]}"
shift
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(nsys kineto ncu)
python="${PYTHON:-python3}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"/{nsys,kineto,ncu/csv,logs}
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root"/tests/programs/wild/*.py "$root"/tests/programs/wild/*.cu "$work/"
cd "$work"

minimal_env=(env -i HOME="$work" LANG=C.UTF-8 PATH="$PATH" PYTHONUNBUFFERED=1)
[ -n "${LD_LIBRARY_PATH:-}" ] && minimal_env+=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && minimal_env+=(CUDA_VISIBLE_DEVICES="$CUDA_VISIBLE_DEVICES")
nsys_profile=(nsys profile --sample=none --cpuctxsw=none --force-overwrite true)
nsys_trace=(--trace=cuda,nvtx)  # unless a case names its own
ncu_profile=(ncu --clock-control none --import-source yes -f)
[ -f "$out/cases.tsv" ] || printf 'case\ttool\tcommand\texit\tseconds\n' > "$out/cases.tsv"

record() {  # record CASE TOOL COMMAND...: run it, log it, note its exit code and time
    local case="$1" tool="$2"
    shift 2
    if [ -n "${ONLY:-}" ] && ! [[ "$case" =~ $ONLY ]]; then return 0; fi
    local t0=$SECONDS rc=0
    echo "-- $tool $case: $*"
    "${minimal_env[@]}" "$@" > "$out/logs/$tool-$case.log" 2>&1 || rc=$?
    printf '%s\t%s\t%s\t%s\t%s\n' "$case" "$tool" "$*" "$rc" "$((SECONDS - t0))" >> "$out/cases.tsv"
    tail -n 2 "$out/logs/$tool-$case.log"
    return 0
}

export_sqlite() {  # the .sqlite export of nsys/CASE.nsys-rep, repacked with 1 KiB pages
    local rep="$out/nsys/$1.nsys-rep"
    [ -f "$rep" ] || return 0
    nsys export --type sqlite --force-overwrite true --output "$out/nsys/$1.sqlite" "$rep" > /dev/null 2>&1 &&
        "$python" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA page_size=1024'); c.execute('VACUUM'); c.close()" "$out/nsys/$1.sqlite"
}

nsys_case() {  # nsys_case CASE [nsys options ...] -- PROGRAM ARGS...
    local case="$1"
    shift
    local opts=()
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    [[ " ${opts[*]} " == *" --trace="* ]] || opts+=("${nsys_trace[@]}")
    record "$case" nsys "${nsys_profile[@]}" "${opts[@]}" --output "$out/nsys/$case" "$@"
    export_sqlite "$case"
}

build() {
    nvcc -arch=sm_90 -O3 -lineinfo -o memory_patterns memory_patterns.cu &&
        nvcc -arch=sm_90 -O2 -o setup_allocs setup_allocs.cu
}

part_nsys() {
    nsys_case dataloader_workers0 -- "$python" dataloader_train.py --workers 0 --nvtx-ops
    nsys_case dataloader_workers4 -- "$python" dataloader_train.py --workers 4 --nvtx-ops
    nsys_case compile_from_start -- "$python" compile_triton.py --from-start
    nsys_case compile_steady -- "$python" compile_triton.py
    nsys_case decode_eager -- "$python" decode_graphs.py --mode eager
    nsys_case decode_graph -- "$python" decode_graphs.py --mode graph
    nsys_case multiprocess_sync -- "$python" multiprocess_sync.py --procs 4
    nsys_case nvtx_heavy -- "$python" nvtx_heavy.py
    nsys_case healthy_gemm -- "$python" healthy_gemm.py
    nsys_case host_python_bound -- "$python" host_python_bound.py
    nsys_case sdpa_math -- "$python" sdpa_attention.py --impl math
    nsys_case sdpa_fused -- "$python" sdpa_attention.py --impl fused
    nsys_case setup_allocs_once -- ./setup_allocs
    nsys_case setup_allocs_loop -- ./setup_allocs 50
    # layouts that cannot be had otherwise: no CUDA trace at all, and NVTX without CUDA
    nsys_case healthy_gemm_osrt_only --trace=osrt -- "$python" healthy_gemm.py --steps 4
    nsys_case healthy_gemm_nvtx_only --trace=nvtx -- "$python" healthy_gemm.py --steps 4
}

part_kineto() {
    local k="$out/kineto"
    record dataloader_workers0 kineto "$python" dataloader_train.py --workers 0 --kineto "$k/dataloader_workers0.json.gz"
    record dataloader_workers4 kineto "$python" dataloader_train.py --workers 4 --kineto "$k/dataloader_workers4.json.gz"
    record compile_from_start kineto "$python" compile_triton.py --from-start --kineto "$k/compile_from_start.json.gz"
    record compile_steady kineto "$python" compile_triton.py --kineto "$k/compile_steady.json.gz"
    record decode_eager kineto "$python" decode_graphs.py --mode eager --kineto "$k/decode_eager.json.gz"
    record decode_graph kineto "$python" decode_graphs.py --mode graph --kineto "$k/decode_graph.json.gz"
    record multiprocess_sync kineto "$python" multiprocess_sync.py --procs 4 --kineto-dir "$k/multiprocess_sync"
    record nvtx_heavy kineto "$python" nvtx_heavy.py --kineto "$k/nvtx_heavy.json.gz"
    record healthy_gemm kineto "$python" healthy_gemm.py --kineto "$k/healthy_gemm.json.gz"
    record host_python_bound kineto "$python" host_python_bound.py --kineto "$k/host_python_bound.json.gz"
    record sdpa_math kineto "$python" sdpa_attention.py --impl math --kineto "$k/sdpa_math.json.gz"
    record sdpa_fused kineto "$python" sdpa_attention.py --impl fused --kineto "$k/sdpa_fused.json.gz"
}

#: Nsight Compute collections: name and options. The --metrics list is what roofline and memory
#: scripts ask for: time, DRAM bytes, L2 sectors of L1 traffic, global instructions, throughputs.
NCU_METRICS="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum"
NCU_METRICS+=",lts__t_sectors_srcunit_tex_op_write.sum,smsp__inst_executed_op_global_ld.sum"
NCU_METRICS+=",smsp__inst_executed_op_global_st.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"
NCU_METRICS+=",gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
ncu_collections() {
    printf '%s\n' \
        "basic|--set basic" \
        "detailed|--set detailed" \
        "full|--set full" \
        "sol_chart|--section SpeedOfLight --section MemoryWorkloadAnalysis_Chart" \
        "tables|--section LaunchStats --section MemoryWorkloadAnalysis_Tables" \
        "source|--section SourceCounters" \
        "metrics|--metrics $NCU_METRICS"
}

ncu_case() {  # ncu_case PROGRAM COLLECTION FILTER... -- COMMAND...
    local program="$1" name="$2"
    shift 2
    local opts=()
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    record "$program.$name" ncu "${ncu_profile[@]}" "${opts[@]}" -o "$out/ncu/$program.$name" "$@"
}

ncu_csv() {  # NVIDIA's CSV pages of a report
    local rep="$out/ncu/$1.ncu-rep"
    [ -f "$rep" ] || return 0
    ncu --import "$rep" --csv --page raw --print-units base > "$out/ncu/csv/$1.raw.csv" 2> /dev/null
    ncu --import "$rep" --csv --page details > "$out/ncu/csv/$1.details.csv" 2> /dev/null
}

part_ncu() {
    local line name opts
    while IFS='|' read -r name opts; do
        # shellcheck disable=SC2086  # opts is a list of options
        ncu_case memory_patterns "$name" $opts -- ./memory_patterns
    done < <(ncu_collections)
    for name in basic full metrics; do ncu_csv "memory_patterns.$name"; done
    record memory_patterns.summary ncu ncu --clock-control none --set basic --csv --print-summary per-kernel ./memory_patterns
    [ -f "$out/logs/ncu-memory_patterns.summary.log" ] &&
        cp "$out/logs/ncu-memory_patterns.summary.log" "$out/ncu/csv/memory_patterns.summary.csv"
    for name in basic full metrics; do
        line="$(ncu_collections | grep "^$name|")"
        # shellcheck disable=SC2086
        ncu_case triton_kernels "$name" ${line#*|} -k "regex:vector_add|matmul_no_dot" -c 2 -- "$python" triton_kernels.py --iters 1
    done
    ncu_case healthy_gemm full --set full -k "regex:gemm|nvjet|cutlass|sm90" -c 1 -- "$python" healthy_gemm.py --steps 1 --warmup 0
    ncu_case sdpa_math basic --set basic --launch-skip 3 -c 3 -- "$python" sdpa_attention.py --impl math --steps 1 --warmup 1
    ncu_case sdpa_math full --set full --launch-skip 3 -c 3 -- "$python" sdpa_attention.py --impl math --steps 1 --warmup 1
    ncu_case sdpa_fused full --set full -k "regex:flash|fmha|attention" -c 1 -- "$python" sdpa_attention.py --impl fused --steps 1 --warmup 1
    ncu_csv sdpa_math.full
}

provenance() {
    local gpu ncu_v nsys_v nvcc_v torch_v
    gpu="$(nvidia-smi --query-gpu=name,driver_version,count --format=csv,noheader 2>/dev/null | head -1)"
    ncu_v="$(ncu --version 2>/dev/null | tail -1)"
    nsys_v="$(nsys --version 2>/dev/null | tail -1)"
    nvcc_v="$(nvcc --version 2>/dev/null | tail -1)"
    torch_v="$("$python" -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)' 2>/dev/null)"
    "$python" - "$out/provenance.json" "$gpu" "$ncu_v" "$nsys_v" "$nvcc_v" "$torch_v" "${parts[*]}" <<'EOF'
import datetime, json, os, platform, sys
path, gpu, ncu, nsys, nvcc, torch, parts = sys.argv[1:]
old = json.load(open(path)) if os.path.exists(path) else {}
old.setdefault("parts", {})[parts] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
old.update({"gpu": gpu, "ncu": ncu, "nsys": nsys, "nvcc": nvcc, "torch_cuda_triton": torch, "cpu": platform.processor(),
            "cpu_count": os.cpu_count(), "host_os": platform.platform(), "recorded_by": "scripts/record-wild.sh",
            "nsys_profile": "nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none (osrt/nvtx-only cases say so)",
            "ncu_profile": "ncu --clock-control none --import-source yes, then each collection's options (cases.tsv)"})
json.dump(old, open(path, "w"), indent=2, sort_keys=True)
EOF
}

build || { echo "nvcc failed" >&2; exit 1; }
for part in "${parts[@]}"; do
    case "$part" in
    nsys|kineto|ncu) echo "== $part: start"; t0=$SECONDS; "part_$part"; echo "== $part: $((SECONDS - t0)) s" ;;
    *) echo "unknown part $part (nsys, kineto, ncu)" >&2; exit 2 ;;
    esac
done
provenance
echo "wrote $out"
