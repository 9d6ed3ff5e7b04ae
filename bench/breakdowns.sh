#!/usr/bin/env bash
# bench/breakdowns.sh: bench/eval_breakdown.lua (8 candidates, timing budget 0.3 s) on each
# TASK name (kernels/NAME.lua): candidates per minute and the start's steps, a table
# last; each breakdown appended to $OUT/breakdowns.log.
# usage: bash bench/breakdowns.sh saxpy stencil gemm_tiled
set -uo pipefail
cd "$(dirname "$0")/.."
K=${KLOOP:-build/kloop}
O=${OUT:-/tmp}
T=$(mktemp)
trap 'rm -f "$T"' EXIT
rows=()
for t in "$@"; do
  $K bench/eval_breakdown.lua 8 0.3 "kernels/$t.lua" > "$T" 2>&1
  cat "$T" >> "$O/breakdowns.log"
  rows+=("$(printf '%-28s %s' "breakdown $t" "$(tail -1 "$T" | cut -c12-170)")")
  rows+=("$(printf '%-28s %s' "  start" "$(grep '^start:' "$T" | cut -c1-170)")")
done
for r in "${rows[@]}"; do echo "$r"; done
