#!/usr/bin/env bash
# bench/round7c_gpu.sh (round 2, session 11, the session's last call): every GPU test;
# then gemm_tiled model 100 (seeds 9, 11, 13), alternated:
#   base: every compiler at the parent's niceness under the old slot rule
#         (KLOOP_COMPILE_NICE=0), think run whole (the Lua in $VARIANT: lua/ with
#         kloop.search.slice's enabled = false);
#   prev: compile priorities (urgent at once, guesses below) and think sliced in requests
#         only (the Lua in var/prev: the commit before);
#   new:  and sliced in the waits for a batch's binaries too (Evaluator:step_think).
# Each run's waits and thinks logged. One log; a table last.
cd "$(dirname "$0")/.."
. bench/round_lib.sh
: "${VARIANT:=var/noslice}"
export VARIANT
gpu_tests_logged
row "GPU tests" "$(grep -c 'exit 0' "$T/gpu_tests.txt") of $(grep -c '^gpu ' "$T/gpu_tests.txt") exit 0"
for seed in 9 11 13; do
  VARIANT=var/noslice ab_row "model$seed base" var 0 --method model --seed $seed
  VARIANT=var/prev ab_row "model$seed prev" var "" --method model --seed $seed
  ab_row "model$seed new" new "" --method model --seed $seed
done
use_bin new
printf '%s\n' "${rows[@]}" | cut -c1-300
