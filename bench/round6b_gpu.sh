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
for seed in 7 3; do
  ab_row "model$seed base" var 0 --method model --seed $seed
  ab_row "model$seed nice" var 10 --method model --seed $seed
  ab_row "model$seed both" new 10 --method model --seed $seed
done
ab_row "random9 base" var 0 --method random --seed 9
ab_row "random9 both" new 10 --method random --seed 9
use_bin new
printf '%s\n' "${rows[@]}" | cut -c1-300
