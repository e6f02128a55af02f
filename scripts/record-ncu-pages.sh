#!/usr/bin/env bash
# Record Nsight Compute's text pages of three small reports, in every page and print variant the
# installed ncu has, so that the text reader (coach/ingest/ncu_text.py) is tested on what ncu really
# prints rather than on layouts rebuilt by hand.
#
#     scripts/record-ncu-pages.sh OUT_DIR
#
# Profiles three kernels of tests/programs/wild/memory_patterns.cu (copy_coalesced, copy_strided,
# transpose_conflict: a coalesced copy, a strided copy, a bank-conflicted shared transpose) three
# times, with --set basic, --set full and a section subset without the speed of light, then prints
# each report with `ncu --import R.ncu-rep` in each variant below; a fourth, live run (no -o) keeps
# what a terminal shows: ncu's details interleaved with the program's own output and ==PROF== lines.
# About 30 s of GPU time on an H200 (the three profiles and the live run); the imports use the CPU.
# Writes, in OUT_DIR:
#   reports/<profile>.ncu-rep           the three reports
#   pages/<profile>/<variant>.txt       ncu --import's stdout for each variant (.err: its stderr, if any)
#   pages/live_basic.txt                the live run's stdout and stderr together, as `2>&1` keeps them
#   pages.tsv                           profile, variant, options, exit code, bytes of stdout
#   ncu-version.txt, ncu-help.txt       `ncu --version`, `ncu --help`
#   provenance.txt                      GPU, driver, nvcc, date, the profiling commands
# A variant that the installed ncu refuses is kept: its .err and exit code say why.
#
# NCU is the ncu to use (default: /opt/nvidia/nsight-compute/2025.3.1/ncu where it exists, else ncu
# on PATH); nvcc must be on PATH.
set -uo pipefail
out="${1:?usage: scripts/record-ncu-pages.sh OUT_DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
default_ncu=/opt/nvidia/nsight-compute/2025.3.1/ncu
[ -x "$default_ncu" ] || default_ncu=ncu
ncu="${NCU:-$default_ncu}"
mkdir -p "$out"/{reports,pages}
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root/tests/programs/wild/memory_patterns.cu" "$work/"
cd "$work" || exit 1
nvcc -arch=sm_90 -O3 -lineinfo -o memory_patterns memory_patterns.cu || { echo "nvcc failed" >&2; exit 1; }

"$ncu" --version > "$out/ncu-version.txt" 2>&1
"$ncu" --help > "$out/ncu-help.txt" 2>&1
kernels="regex:^(copy_coalesced|copy_strided|transpose_conflict)$"
profile=("$ncu" --clock-control none --import-source yes -f -k "$kernels")
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "nvcc: $(nvcc --version | tail -1)"
    echo "ncu: $(tail -1 "$out/ncu-version.txt")"
    echo "build: nvcc -arch=sm_90 -O3 -lineinfo -o memory_patterns memory_patterns.cu"
} > "$out/provenance.txt"

#: profile name and its collection options
profiles() {
    printf '%s\n' \
        "basic|--set basic" \
        "full|--set full" \
        "subset|--section LaunchStats --section Occupancy --section WarpStateStats --section SourceCounters"
}

while IFS='|' read -r name opts; do
    t0=$SECONDS
    # shellcheck disable=SC2086  # opts is a list of options
    "${profile[@]}" $opts -o "$out/reports/$name" ./memory_patterns > "$out/reports/$name.log" 2>&1
    echo "profile $name: exit $?, $((SECONDS - t0)) s: ${profile[*]} $opts -o reports/$name ./memory_patterns" \
        | tee -a "$out/provenance.txt"
done < <(profiles)

t0=$SECONDS
"$ncu" --clock-control none -k "$kernels" --set basic ./memory_patterns > "$out/pages/live_basic.txt" 2>&1
echo "live: exit $?, $((SECONDS - t0)) s: $ncu --clock-control none -k '$kernels' --set basic ./memory_patterns 2>&1" \
    | tee -a "$out/provenance.txt"

#: variant name and its print options (after ncu --import R.ncu-rep)
variants() {
    printf '%s\n' \
        "default|" \
        "details|--page details" \
        "details_units_base|--page details --print-units base" \
        "details_units_auto|--page details --print-units auto" \
        "details_all|--page details --print-details all" \
        "details_header|--page details --print-details header" \
        "details_body|--page details --print-details body" \
        "details_metric_name|--page details --print-metric-name name" \
        "details_label_name|--page details --print-metric-name label-name" \
        "details_details_all|--page details --details-all" \
        "details_rule_details|--page details --print-rule-details" \
        "details_instances|--page details --print-metric-instances values" \
        "details_mangled|--page details --print-kernel-base mangled" \
        "details_fp|--page details --print-fp" \
        "raw|--page raw" \
        "raw_units_base|--page raw --print-units base" \
        "source|--page source" \
        "source_cuda|--page source --print-source cuda" \
        "session|--page session" \
        "summary_per_gpu|--print-summary per-gpu" \
        "summary_per_kernel|--print-summary per-kernel" \
        "summary_per_kernel_units_base|--print-summary per-kernel --print-units base" \
        "summary_per_nvtx|--print-summary per-nvtx" \
        "csv_details|--csv --page details" \
        "csv_details_units_base|--csv --page details --print-units base" \
        "csv_raw|--csv --page raw" \
        "csv_raw_units_base|--csv --page raw --print-units base" \
        "csv_source|--csv --page source" \
        "csv_session|--csv --page session" \
        "csv_summary_per_gpu|--csv --print-summary per-gpu" \
        "csv_summary_per_kernel|--csv --print-summary per-kernel"
}

printf 'profile\tvariant\toptions\texit\tbytes\n' > "$out/pages.tsv"
while IFS='|' read -r name _; do
    rep="$out/reports/$name.ncu-rep"
    [ -f "$rep" ] || continue
    mkdir -p "$out/pages/$name"
    while IFS='|' read -r variant opts; do
        page="$out/pages/$name/$variant"
        # shellcheck disable=SC2086
        "$ncu" --import "$rep" $opts > "$page.txt" 2> "$page.err"
        rc=$?
        [ -s "$page.err" ] || rm -f "$page.err"
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$variant" "$opts" "$rc" "$(wc -c < "$page.txt")" >> "$out/pages.tsv"
    done < <(variants)
done < <(profiles)
echo "done: $(wc -l < "$out/pages.tsv") lines in pages.tsv"
