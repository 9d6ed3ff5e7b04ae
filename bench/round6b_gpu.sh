#!/usr/bin/env bash
# bench/round6b_gpu.sh (round 2, session 10): side by side on one machine, empty compile
# caches, gemm_tiled model 100 (seeds 7 and 3) and random 100 (seed 9):
#   base: compilers beside the worker (KLOOP_COMPILE_NICE=0), think run whole (the Lua in
#         $VARIANT: lua/ with kloop.search.slice's enabled = false);
#   nice: compilers below the worker (compile.NICE, 10), think whole;
#   both: nice, and think sliced between the worker's replies (the session's code).
# Each run's waits and thinks logged. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
: "${VARIANT:=var/noslice}"
export VARIANT
one() { # LABEL BIN NICE BUSY_OPTIONS...
  local label=$1 bin=$2 nice=$3
  shift 3
  use_bin "$bin"
  fresh_cache
  waits_begin
  KLOOP_COMPILE_NICE=$nice busy_rows "$label" 100 "$@"
  { echo "== thinks $label: $(awk '$2 == "think" {n++; s += $3; if ($3 > m) m = $3} END {printf "%d, %.2f s, max %.3f", n, s, m}' "$KLOOP_WAITS_LOG")"; } >> $L
  row "  thinks" "$(tail -1 $L | cut -c4-)"
  waits_logged
}
for seed in 7 3; do
  one "model$seed base" var 0 --method model --seed $seed
  one "model$seed nice" var 10 --method model --seed $seed
  one "model$seed both" new 10 --method model --seed $seed
done
one "random9 base" var 0 --method random --seed 9
one "random9 both" new 10 --method random --seed 9
use_bin new
printf '%s\n' "${rows[@]}" | cut -c1-300
