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
for seed in 9 11 13; do
  ab_row "model$seed base" var 0 --method model --seed $seed
  ab_row "model$seed new" new "" --method model --seed $seed
done
ab_row "random10 base" var 0 --method random --seed 10
ab_row "random10 new" new "" --method random --seed 10
use_bin new
printf '%s\n' "${rows[@]}" | cut -c1-300
