#!/usr/bin/env bash
# Record the correctness scenarios (scenario-21 on) on a GPU machine: build each program with nvcc,
# run its buggy and fixed variants plain and under compute-sanitizer, keep the text reports, the
# --xml files, the programs' output and the provenance.
#
#     scripts/record-sanitizer.sh OUT_DIR [SCENARIO...]      (no ids: every correctness scenario)
#
# Needs nvcc and compute-sanitizer (looked for on PATH, then in /usr/local/cuda/bin; or set
# COACH_COMPUTE_SANITIZER), a GPU, and python3: nothing else. Writes OUT_DIR/<scenario-id>/ with a
# manifest.json each. COACH_SANITIZER_BUDGET_S (default 270) stops starting new scenarios once that
# many seconds have passed; rerun with the same OUT_DIR to finish (recorded ones are skipped). The
# folder is packed into OUT_DIR.tgz at the end. Afterwards, on any machine with coach installed:
# coach record --import OUT_DIR
out="${1:?usage: scripts/record-sanitizer.sh OUT_DIR [SCENARIO...]}"
shift
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
set -euo pipefail
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if ! command -v compute-sanitizer >/dev/null && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
fi
if [ $# -eq 0 ]; then set -- --all; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
compute-sanitizer --version || true
status=0
python3 -m coach.capture sanitize "$@" --out "$out" --skip-existing --time-budget "${COACH_SANITIZER_BUDGET_S:-270}" ||
    status=$?
# text reports, XML, program output and manifests: small, and smaller packed (OUT_DIR.tgz, in parts
# of at most 15 MiB if it were larger; coach record --import reads either)
"$root/scripts/pack-recording.sh" "$out" "$(dirname "$out")" "$(basename "$out")"
echo "packed into $(dirname "$out")/$(basename "$out").tgz"
exit $status
