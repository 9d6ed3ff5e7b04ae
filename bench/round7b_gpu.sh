#!/usr/bin/env bash
# bench/round7b_gpu.sh (round 2, session 11, after the review's mends): every GPU test;
# then gemm_tiled model 100 (seeds 9, 11, 13) and random 100 (seed 10), alternated:
#   base: every compiler at the parent's niceness under the old slot rule
#         (KLOOP_COMPILE_NICE=0), think run whole (the Lua in $VARIANT: lua/ with
#         kloop.search.slice's enabled = false);
#   new:  compile priorities (urgent at once, guesses below) and think sliced.
# Each run's waits and thinks logged. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
: "${VARIANT:=var/noslice}"
export VARIANT
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
one() { # LABEL BIN NICE BUSY_OPTIONS...
  local label=$1 bin=$2 nice=$3
  shift 3
  use_bin "$bin"
  fresh_cache
  waits_begin
  if [ -n "$nice" ]; then export KLOOP_COMPILE_NICE=$nice; else unset KLOOP_COMPILE_NICE; fi
  busy_rows "$label" 100 "$@"
  unset KLOOP_COMPILE_NICE
  { echo "== thinks $label: $(awk '$2 == "think" {n++; s += $3; if ($3 > m) m = $3} END {printf "%d, %.2f s, max %.3f", n, s, m}' "$KLOOP_WAITS_LOG")"; } >> $L
  { echo "== compiles $label: $(awk '$2 == "compiled" {n++; if ($7 == "true") {u++; if ($5 > qu) qu = $5} else {g++}} END {printf "%d (urgent %d, most queued %.2f s; guesses %d)", n, u, qu, g}' "$KLOOP_WAITS_LOG")"; } >> $L
  row "  thinks, compiles" "$(tail -2 $L | head -1 | cut -c10- | sed 's/^[^:]*: //'); $(tail -1 $L | sed 's/^[^:]*: //')"
  waits_logged
}
for seed in 9 11 13; do
  one "model$seed base" var 0 --method model --seed $seed
  one "model$seed new" new "" --method model --seed $seed
done
one "random10 base" var 0 --method random --seed 10
one "random10 new" new "" --method random --seed 10
use_bin new
printf '%s\n' "${rows[@]}" | cut -c1-300
