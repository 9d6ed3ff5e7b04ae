#!/usr/bin/env bash
# bench/round2h_gpu.sh: compiling ahead (strategy.upcoming) and all compilers at once, on
# the GPU: tune runs with GPU busy and the summary's time line, and the breakdowns with
# the start's steps and the set-up's calls. Table last; at most 8 files under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-20s %s' "$1" "$2")"); }
for t in "gemm_tiled 24 model" "gemm_tiled 40 model" "gemm_tiled 40 random" "stencil 21 exhaustive"; do
  set -- $t
  OUT=$T bash bench/gpu_busy.sh kernels/$1.lua $2 --seed 1 --timing-budget 0.3 --promote off --method $3 > "$T/busy.log" 2>&1
  row "busy $1 $2 $3" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-190)"
  cat "$T"/gpu_busy.*/tune.log >> "$O/tune_runs.log"
  rm -rf "$T"/gpu_busy.*
done
for t in saxpy stencil gemm_tiled; do
  $K bench/eval_breakdown.lua 8 0.3 kernels/$t.lua > "$O/bd_$t.log" 2>&1
  row "breakdown $t" "$(tail -1 "$O/bd_$t.log" | cut -c12-170)"
  row "  start" "$(grep '^start:' "$O/bd_$t.log" | cut -c1-170)"
done
echo; for r in "${rows[@]}"; do echo "$r"; done
