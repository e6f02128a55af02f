#!/usr/bin/env bash
# Record a folder of per-rank Nsight Systems reports on a GPU machine: tests/programs/ranks.py run as
# WORLD concurrent processes ("ranks", one CUDA context each, all on one GPU), each under its own
# nsys, rank SLOW_RANK the straggler. Then NVIDIA's own analyses of each report and of all together.
#
#     scripts/record-ranks.sh OUT_DIR
#
# Writes, in OUT_DIR (commit it as tests/data/nsys_ranks/):
#   rank<R>.nsys-rep, rank<R>.sqlite   each rank's report and its SQLite export (repacked, see below)
#   rank<R>.log                        the rank's own output
#   nvidia/rank<R>/                    nsys stats and recipes of that report (scripts/export-nvidia-outputs.sh)
#   nvidia/all/                        the recipes run over all WORLD reports at once (one rank each)
#   nvidia/all-dask-futures/           two of them again with --mode dask-futures, where the recipes'
#                                      Python has Dask (see DASK_WHEELS); its log says why if not
#   PROVENANCE.md, nsys_version.txt, nvidia-smi.txt
#
# Needs nsys on PATH (see scripts/nsys-env.sh) and Python with torch ($PYTHON, default python3).
# Optional: WORLD (8), SLOW_RANK (5), STEPS (4); DASK_WHEELS, a folder of wheels for dask and
# distributed and their dependencies (on a machine with a registry: `pip download --only-binary=:all:
# --python-version 3.12 --platform manylinux_2_17_x86_64 -d DIR dask distributed`), installed under
# /tmp for the dask-futures run only.
#
# Each rank runs from a scratch folder with a minimal environment (nsys stores the working folder and
# the environment in its report). The SQLite exports are repacked with 1 KiB pages (PRAGMA page_size;
# VACUUM): every table and row stays as nsys exported it, at about half the size, since most of a
# small export is the 4 KiB pages of its ~45 mostly empty tables.
set -euo pipefail
out="${1:?usage: scripts/record-ranks.sh OUT_DIR}"
python="${PYTHON:-python3}"
world="${WORLD:-8}"; slow="${SLOW_RANK:-5}"; steps="${STEPS:-4}"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$here/tests/programs/ranks.py" "$work/"
cd "$work"
nsys --version > "$out/nsys_version.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/nvidia-smi.txt" || true
"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" >> "$out/nvidia-smi.txt"

minimal_env=(env -i HOME="$work" LANG=C.UTF-8 PATH="$PATH")
[ -n "${LD_LIBRARY_PATH:-}" ] && minimal_env+=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
profile=(nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite true)
program=(ranks.py --world "$world" --slow-rank "$slow" --steps "$steps")

started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
pids=()
for r in $(seq 0 $((world - 1))); do
    "${minimal_env[@]}" "${profile[@]}" --output "rank$r" "$python" "${program[@]}" --rank "$r" > "rank$r.log" 2>&1 &
    pids+=("$!")
done
failed=0
for r in "${!pids[@]}"; do
    if ! wait "${pids[$r]}"; then echo "rank $r failed:" >&2; tail -n 20 "rank$r.log" >&2; failed=1; fi
done
[ "$failed" = 0 ] || exit 1

for r in $(seq 0 $((world - 1))); do
    nsys export --type sqlite --force-overwrite true --output "rank$r.sqlite" "rank$r.nsys-rep" > /dev/null
    "$python" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA page_size=1024'); c.execute('VACUUM'); c.close()" "rank$r.sqlite"
done
cp rank*.nsys-rep rank*.sqlite rank*.log "$out/"

reports=()
for r in $(seq 0 $((world - 1))); do reports+=("$work/rank$r.nsys-rep"); done
rm -rf "$out/nvidia"
for rep in "${reports[@]}"; do  # one report per job: a dozen recipes each, on a machine with cores to spare
    "$here/scripts/export-nvidia-outputs.sh" "$out/nvidia" "$rep" &
done
wait
"$here/scripts/export-nvidia-outputs.sh" --together all "$out/nvidia" "${reports[@]}"

if [ -n "${DASK_WHEELS:-}" ]; then
    # wheels are zip files: unpacked as they are, no pip needed (the recording machine's Python may lack it)
    "$python" -c "import glob, sys, zipfile; [zipfile.ZipFile(w).extractall('/tmp/coach-dask') for w in glob.glob(sys.argv[1] + '/*.whl')]" "$DASK_WHEELS"
    export PYTHONPATH="/tmp/coach-dask${PYTHONPATH:+:$PYTHONPATH}"
fi
RECIPES="cuda_gpu_kern_sum cuda_api_sync" RECIPE_MODE=dask-futures \
    "$here/scripts/export-nvidia-outputs.sh" --together all-dask-futures "$out/nvidia" "${reports[@]}"

cat > "$out/PROVENANCE.md" <<EOF
# rank0..rank$((world - 1)): one report per rank

Recorded on $(head -n 2 "$out/nvidia-smi.txt" | tail -n 1) ($(sed -n 3p "$out/nvidia-smi.txt")), $(cat "$out/nsys_version.txt"),
started $started, by scripts/record-ranks.sh: $world processes of tests/programs/ranks.py
(\`${program[*]} --rank R\`) at once on one GPU, one CUDA context each, each under
\`${profile[*]}\`, from a scratch folder with a minimal environment. Rank $slow is the straggler: an
extra element-wise kernel after every GEMM and a device synchronisation after each.

\`rank<R>.sqlite\` is \`nsys export --type sqlite\` of \`rank<R>.nsys-rep\`, repacked with 1 KiB pages
(\`PRAGMA page_size=1024; VACUUM\`): the same tables and rows, smaller file.

\`nvidia/rank<R>/\`: \`nsys stats\` CSVs and \`nsys recipe\` outputs of each report
(scripts/export-nvidia-outputs.sh; gpu_gaps with \`--gap 0\`). \`nvidia/all/\`: the recipes over all
$world reports at once (Rank = position in files.parquet). \`nvidia/all-dask-futures/\`: two recipes
again with \`--mode dask-futures\` (its logs say whether Dask was there). Recipe failures, if any, are
listed in each folder's failures.txt.

Sizes: $(du -ch "$out"/rank*.sqlite | tail -n 1 | cut -f1) of SQLite exports, $(du -ch "$out"/rank*.nsys-rep | tail -n 1 | cut -f1) of reports, $(du -sh "$out/nvidia" | cut -f1) of NVIDIA outputs.
EOF
echo "wrote $out"
