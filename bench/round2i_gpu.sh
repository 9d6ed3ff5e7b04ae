#!/usr/bin/env bash
# bench/round2i_gpu.sh: references masked where they are computed and guard zones written
# on the device (no read-back, no host mask, no host guard patterns at set-up): the GPU
# tests that cover them, `kloop check` of every shipped task, and the breakdowns' start
# times. Table last; at most 8 files under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
rows=()
row() { rows+=("$(printf '%-22s %s' "$1" "$2")"); }
for t in compare_device adversarial isolation compare; do
  $K tests/gpu/$t.lua > "$O/t_$t.log" 2>&1; row "$t" "exit $?: $(tail -1 "$O/t_$t.log" | cut -c1-120)"
done
for t in kernels/*.lua; do
  c=$($K check $t 2>&1 | grep -E '^(verdict|reason|time) ' | tr -s ' ' | tr '\n' ' ' | cut -c1-150)
  row "check $(basename $t .lua)" "$c"
done
for t in saxpy stencil gemm_tiled; do
  $K bench/eval_breakdown.lua 8 0.3 kernels/$t.lua > "$O/bd_$t.log" 2>&1
  row "breakdown $t" "$(tail -1 "$O/bd_$t.log" | cut -c12-170)"
  row "  start" "$(grep '^start:' "$O/bd_$t.log" | cut -c1-170)"
done
echo; for r in "${rows[@]}"; do echo "$r"; done
