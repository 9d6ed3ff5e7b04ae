#!/usr/bin/env bash
# bench/round7a_gpu.sh (round 2, session 11): every GPU test; the evaluations of stencil
# (22) and saxpy (6) traced (bench/eval_breakdown.lua), before (build/old/kloop, 89ed8c0)
# and after (one state-check launch where there were two); their exhaustive tunes side by
# side; then gemm_tiled model 100 (seeds 3, 5, 7) and random 100 (seed 9), alternated:
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
for b in old new; do
  use_bin $b
  for t in stencil:22 saxpy:6; do
    fresh_cache
    { echo "== breakdown $b ${t%%:*}"; timeout 120 $K bench/eval_breakdown.lua "${t##*:}" 0.3 "kernels/${t%%:*}.lua" 2>&1; } > "$T/bd.txt"
    cat "$T/bd.txt" >> $L
    row "bd $b ${t%%:*}" "$(grep -E '^check_regions' "$T/bd.txt" | tr -s ' ' | cut -c1-40); $(grep -E '^BREAKDOWN' "$T/bd.txt" | sed 's/.*wall, //' | cut -c1-120)"
  done
done
micro_side_by_side
for seed in 7 3 5; do
  ab_row "model$seed base" var 0 --method model --seed $seed
  ab_row "model$seed new" new "" --method model --seed $seed
done
ab_row "random9 base" var 0 --method random --seed 9
ab_row "random9 new" new "" --method random --seed 9
use_bin new
printf '%s\n' "${rows[@]}" | cut -c1-300
