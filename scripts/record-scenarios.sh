#!/usr/bin/env bash
# Record scenarios on a GPU machine, with nothing installed beyond the GPU stack (torch, cupy):
#
#     scripts/record-scenarios.sh DEBS_DIR OUT_DIR [SCENARIO...] [--only LIST] [--all] [--skip-existing] ...
#
# DEBS_DIR holds libdw1 and libelf1 (scripts/fetch-nsys-deps.sh), which the Nsight Systems bundled
# with Nsight Compute needs (scripts/nsys-env.sh). Everything after OUT_DIR goes to
# `python3 -m coach.capture record`. Prints the machine's doctor report first, for the log.
# Afterwards, on any machine with coach installed: coach record --import OUT_DIR
debs="${1:?usage: scripts/record-scenarios.sh DEBS_DIR OUT_DIR [SCENARIO...] [options]}"
out="${2:?usage: scripts/record-scenarios.sh DEBS_DIR OUT_DIR [SCENARIO...] [options]}"
shift 2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/nsys-env.sh
source "$root/scripts/nsys-env.sh" "$debs"
set -euo pipefail
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -m coach.capture doctor --quick || true
python3 -m coach.capture record "$@" --out "$out"
