#!/usr/bin/env bash
# bench/round2j_gpu.sh: GPU busy of tune runs on gemm_tiled (milliseconds per kernel) with
# the set-up on the device, compiling ahead and compiled candidates first: the model and
# random search at 40 and 100 candidates, two seeds of the model at 40; each run's time
# line. Table last; one file under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-26s %s' "$1" "$2")"); }
for t in "40 model 1" "40 model 2" "100 model 1" "40 random 1" "100 random 1"; do
  set -- $t
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua $1 --seed $3 --timing-budget 0.3 --promote off --method $2 > "$T/busy.log" 2>&1
  row "gemm_tiled $1 $2 seed $3" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-190)"
  row "  best" "$(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c1-120)"
  cat "$T"/gpu_busy.*/tune.log >> "$O/tune_runs.log"
  rm -rf "$T"/gpu_busy.*
done
echo; for r in "${rows[@]}"; do echo "$r"; done
