#!/usr/bin/env bash
# bench/round2l_gpu.sh: GPU busy of tune runs on gemm_tiled once the first batches compile
# while the worker starts and the library reference is kept per GPU: a first run (fresh
# machine), then random and model at 100 and the quickstart's 45. Table last.
set -uo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-26s %s' "$1" "$2")"); }
for t in "45 model 1" "100 random 1" "100 random 2" "100 model 1" "45 model 2"; do
  set -- $t
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua $1 --seed $3 --timing-budget 0.3 --promote off --method $2 > "$T/busy.log" 2>&1
  row "gemm_tiled $1 $2 seed $3" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-190)"
  row "  best" "$(grep -h -E '^(best|library):' "$T"/gpu_busy.*/tune.log | cut -c1-120 | tr '\n' ' ')"
  cat "$T"/gpu_busy.*/tune.log >> "$O/tune_runs.log"
  rm -rf "$T"/gpu_busy.*
done
echo; for r in "${rows[@]}"; do echo "$r"; done
