#!/usr/bin/env bash
# bench/tune_busy.sh: GPU busy (bench/gpu_busy.sh) and the summary's time line of tune
# runs, one per RUN ("BUDGET METHOD SEED"); a table of them last, every run's log
# appended to $OUT/tune_runs.log.
# usage: bash bench/tune_busy.sh [TASK] RUN...   e.g. bench/tune_busy.sh kernels/gemm_tiled.lua "100 random 1"
# Environment: TIMING_BUDGET (0.3), OUT (/tmp).
set -uo pipefail
cd "$(dirname "$0")/.."
TASK=kernels/gemm_tiled.lua
case "${1:-}" in *.lua|*.cu|*.c) TASK=$1; shift ;; esac
O=${OUT:-/tmp}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
rows=()
row() { rows+=("$(printf '%-28s %s' "$1" "$2")"); }
for run in "$@"; do
  set -- $run
  OUT=$T bash bench/gpu_busy.sh "$TASK" "$1" --seed "$3" --timing-budget "${TIMING_BUDGET:-0.3}" --promote off --method "$2" \
    > "$T/busy.log" 2>&1
  row "$(basename "$TASK" .lua) $1 $2 seed $3" "$(grep -E '^(GPU_BUSY|WALL)' "$T/busy.log" | cut -c1-60 | tr '\n' ' ')"
  row "  time" "$(grep -h -E '^time:' "$T"/gpu_busy.*/tune.log | cut -c11-190)"
  row "  best" "$(grep -h -E '^(best|library):' "$T"/gpu_busy.*/tune.log | cut -c1-120 | tr '\n' ' ')"
  cat "$T"/gpu_busy.*/tune.log >> "$O/tune_runs.log"
  rm -rf "$T"/gpu_busy.*
done
for r in "${rows[@]}"; do echo "$r"; done
