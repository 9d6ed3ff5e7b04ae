#!/usr/bin/env bash
# bench/workers_scaling.sh: a host task's tune run with 1 and with 2 local workers
# (--workers), alternating, REPS times each; prints each run's wall time and the ratio of
# the medians. Same seed and --method random: the same candidates both ways.
# usage: bench/workers_scaling.sh [BUILD_DIR] [BUDGET] [REPS] [TASK]
set -u
B=${1:-build}
BUDGET=${2:-24}
REPS=${3:-3}
TASK=${4:-examples/cpu/sgemm_blocked.c}
cd "$(dirname "$0")/.."
run() {
  local s e
  s=$(date +%s.%N)
  "$B/kloop" strategies/tune.lua "$TASK" --method random --budget "$BUDGET" --seed 4 --timing-budget 0.02 \
    --no-store --promote off --quiet --workers "$1" >/dev/null 2>&1 || echo "run failed (--workers $1)" >&2
  e=$(date +%s.%N)
  awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2f\n", b - a }'
}
one=() two=()
for _ in $(seq "$REPS"); do one+=("$(run 1)"); two+=("$(run 2)"); done
med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
m1=$(med "${one[@]}") m2=$(med "${two[@]}")
echo "--workers 1: ${one[*]} s (median $m1)"
echo "--workers 2: ${two[*]} s (median $m2)"
awk -v a="$m1" -v b="$m2" -v n="$BUDGET" 'BEGIN { printf "SCALING: %d candidates, 2 workers %.2fx the rate of 1 (%.1f vs %.1f per minute)\n", n, a / b, 60 * n / b, 60 * n / a }'
