#!/usr/bin/env bash
# bench/round2k_gpu.sh: the session's last figures: GPU busy of tune runs on gemm_tiled
# (the quickstart's 45-candidate model search, two seeds; random and model at 100), the
# main job (beam on the naive gemm, no model: implicit parameters), the start of the
# microsecond tasks after the parallel conversion. Table last; three files under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
T=$(mktemp -d)
rows=()
row() { rows+=("$(printf '%-26s %s' "$1" "$2")"); }
for t in "45 model 1" "45 model 2" "100 random 1" "100 model 1"; do
  set -- $t
  OUT=$T bash bench/gpu_busy.sh kernels/gemm_tiled.lua $1 --seed $3 --timing-budget 0.3 --promote off --method $2 > "$T/busy.log" 2>&1
  row "gemm_tiled $1 $2 seed $3" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-190)"
  row "  best" "$(grep -h -E '^best:' "$T"/gpu_busy.*/tune.log | cut -c1-120)"
  cat "$T"/gpu_busy.*/tune.log >> "$O/tune_runs.log"
  rm -rf "$T"/gpu_busy.*
done
$K beam kernels/gemm.cu --budget 16 --seed 1 --no-store > "$O/beam.log" 2>&1
row "beam gemm.cu 16" "exit $?: $(grep -E '^run ' "$O/beam.log" | cut -c1-110)"
row "  best" "$(grep -E '^best:' "$O/beam.log" | cut -c1-120)"
row "  time" "$(grep -E '^time:' "$O/beam.log" | cut -c11-190)"
for t in saxpy stencil; do
  $K bench/eval_breakdown.lua 8 0.3 kernels/$t.lua > "$T/bd.log" 2>&1
  cat "$T/bd.log" >> "$O/breakdowns.log"
  row "breakdown $t" "$(tail -1 "$T/bd.log" | cut -c12-170)"
  row "  start" "$(grep '^start:' "$T/bd.log" | cut -c1-170)"
done
echo; for r in "${rows[@]}"; do echo "$r"; done
