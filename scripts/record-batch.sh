#!/usr/bin/env bash
# Record several things on one GPU machine in one go, each into OUT_DIR/<step>/ with its own log,
# and pack each step's folder into OUT_DIR/<prefix><step>.tgz as soon as it finishes (so whatever
# finished is kept if a later step runs out of time): in parts <prefix><step>.tgz.0, .1, ... of at
# most COACH_PART_MIB MiB (default 15) when larger (scripts/pack-recording.sh). The prefix is
# COACH_PACK_PREFIX (default none); with COACH_PACK_DIR set, the archives go there instead of OUT_DIR.
#
#     scripts/record-batch.sh DEBS_DIR OUT_DIR STEP...
#
# Steps:
#   calibrate           ceilings of this GPU (coach.capture.calibrate) -> calibrate/<gpu>.json
#   roofline            scripts/record-roofline.sh (kernels with known FLOPs, under ncu --set full)
#   sync-kinds          scripts/record-nsys-sync-kinds.sh (every kind of CUDA synchronisation, nsys)
#   kineto-cases        tests/data/kineto_timeline_cases/record_kineto_cases.py (PyTorch profiler)
#   profile-examples    `coach profile` on tests/programs: a Triton kernel under ncu --set full and
#                       nsys, and a four-stream torch pipeline under nsys, with NVIDIA's own outputs
#   profile-diagnose    `coach profile --nsys --ncu full` of the Triton program with the whole CLI,
#                       which reads and diagnoses the reports there (needs polars and adbc importable)
#   ranks               scripts/record-ranks.sh (8 per-rank nsys reports)
#   nvidia-outputs      scripts/export-nvidia-outputs.sh on every .nsys-rep in tests/data
#   hygiene             scripts/record-hygiene.sh (benchmarks measured right and wrong, and a joined
#                       nsys + ncu recording)
#   wild:PART,PART,...  scripts/record-wild.sh (tests/programs/wild) for those parts: nsys, kineto, ncu
#                       ("wild:all" for all three; each takes 3-5 minutes)
#   scenarios:A,B,...   scripts/record-scenarios.sh for those scenario ids ("scenarios:all" for all);
#                       COACH_RECORD_TIME_BUDGET_S stops it starting a scenario after that many seconds
#   ladders:A,B,...     python3 -m coach.capture.ladder run A B ... --ncu, when that module exists
#   live:NN,NN,...      `coach run scenario-NN --live --no-interactive` for each (the whole walk-through:
#                       record both variants under the profilers, read, diagnose, compare), one log each
#                       (needs polars and adbc importable)
#
# DEBS_DIR holds libdw1 and libelf1 for the bundled nsys (scripts/fetch-nsys-deps.sh). A step that
# fails is logged and the batch goes on. COACH_BATCH_BUDGET_S (default 560) stops starting new steps
# once that many seconds have passed.
set -uo pipefail
debs="${1:?usage: scripts/record-batch.sh DEBS_DIR OUT_DIR STEP...}"
out="${2:?usage: scripts/record-batch.sh DEBS_DIR OUT_DIR STEP...}"
shift 2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/nsys-env.sh
source "$root/scripts/nsys-env.sh" "$debs"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
budget="${COACH_BATCH_BUDGET_S:-560}"
start=$SECONDS

run_step() {
    local step="$1" name="${1%%:*}" arg="${1#*:}"
    local dir="$out/$name"
    mkdir -p "$dir"
    case "$name" in
    calibrate)
        gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr 'A-Z' 'a-z')"
        python3 -m coach.capture.calibrate "$dir/${gpu:-gpu}.json" ;;
    roofline) "$root/scripts/record-roofline.sh" "$dir" ;;
    sync-kinds) "$root/scripts/record-nsys-sync-kinds.sh" "$dir" ;;
    kineto-cases) python3 "$root/tests/data/kineto_timeline_cases/record_kineto_cases.py" "$dir" ;;
    profile-examples)
        python3 -m coach.capture profile --ncu full --kernel softmax_kernel --launch-count 1 --nsys \
            --out "$dir/triton_softmax" -- python3 "$root/tests/programs/triton_softmax.py" &&
        python3 -m coach profile --nsys --out "$dir/torch_multistream" -- \
            python3 "$root/tests/programs/torch_multistream.py" &&
        for name in triton_softmax torch_multistream; do
            "$root/scripts/export-nvidia-outputs.sh" "$dir/nvidia/$name" "$dir/$name/report.nsys-rep"
        done ;;
    profile-diagnose)  # the whole coach CLI on the GPU machine: profile, export, read, diagnose
        python3 -m coach profile --nsys --ncu full --kernel softmax_kernel --launch-count 1 \
            --out "$dir/triton_softmax" -- python3 "$root/tests/programs/triton_softmax.py" ;;
    ranks) "$root/scripts/record-ranks.sh" "$dir" ;;
    nvidia-outputs)  # NVIDIA's stats and recipes for the Nsight Systems reports shipped in tests/data
        for rep in "$root"/tests/data/*/*.nsys-rep; do
            "$root/scripts/export-nvidia-outputs.sh" "$dir" "$rep"
        done ;;
    hygiene) "$root/scripts/record-hygiene.sh" "$debs" "$dir" ;;
    wild)
        if [ "$arg" = all ] || [ "$arg" = wild ]; then set --; else set -- ${arg//,/ }; fi
        "$root/scripts/record-wild.sh" "$dir" "$@" ;;
    scenarios)
        if [ "$arg" = all ] || [ "$arg" = scenarios ]; then set -- --all; else set -- ${arg//,/ }; fi
        "$root/scripts/record-scenarios.sh" "$debs" "$dir" "$@" \
            ${COACH_RECORD_TIME_BUDGET_S:+--time-budget "$COACH_RECORD_TIME_BUDGET_S"} ;;
    ladders) python3 -m coach.capture.ladder run ${arg//,/ } --ncu --out "$dir" ;;
    live)
        local rc=0 id
        for id in ${arg//,/ }; do
            echo "-- scenario-$id: start at $((SECONDS - start)) s"
            python3 -m coach run "scenario-$id" --live --no-interactive > "$dir/live-scenario-$id.log" 2>&1 || rc=$?
            tail -3 "$dir/live-scenario-$id.log"
        done
        return $rc ;;
    *) echo "unknown step $step" >&2; return 2 ;;
    esac
}

for step in "$@"; do
    name="${step%%:*}"
    if (( SECONDS - start > budget )); then
        echo "== $step: skipped, the batch has run $((SECONDS - start)) s of its $budget s budget" | tee -a "$out/batch.log"
        continue
    fi
    t0=$SECONDS
    echo "== $step: start at $((t0 - start)) s" | tee -a "$out/batch.log"
    run_step "$step" > "$out/$name.log" 2>&1
    rc=$?
    echo "== $step: exit $rc after $((SECONDS - t0)) s" | tee -a "$out/batch.log"
    tail -5 "$out/$name.log"
    mv "$out/$name.log" "$out/$name/step.log"
    "$root/scripts/pack-recording.sh" "$out/$name" "${COACH_PACK_DIR:-$out}" "${COACH_PACK_PREFIX:-}$name" \
        "${COACH_PART_MIB:-15}" | tee -a "$out/batch.log"
done
if [ -n "${COACH_PACK_DIR:-}" ]; then cp "$out/batch.log" "$COACH_PACK_DIR/${COACH_PACK_PREFIX:-}batch.log"; fi
